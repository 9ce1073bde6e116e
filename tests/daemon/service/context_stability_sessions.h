// Sessions for the context-stability tests (issue 29: the same context after a cache drop,
// and the prefix kept from one context to the next): the recorded trajectories in the
// shared folder, and synthetic sessions unlike them, each built from a fixed seed so every
// run is the same. The synthetic ones vary what the recorded ones hold fixed: a long
// conversation without tools, rounds of parallel calls with outputs of up to a few
// kilobytes, a long run of tiny outputs with a rare huge one, and several tasks in one
// session with the user's messages long.
#pragma once

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/message.h"
#include "test_util.h"

namespace missy::testing {

// The trajectories in the shared folder, sorted by name (none when it is not there).
inline std::vector<std::string> TrajectoryFiles() {
  const std::string readme = TrajectoryPath("README.md");
  std::vector<std::string> files;
  if (readme.empty()) return files;
  for (const auto& e :
       std::filesystem::directory_iterator(std::filesystem::path(readme).parent_path())) {
    if (e.path().extension() == ".jsonl") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The recorded sessions in `files` as one long session, one after the other (the first
// one's system message only).
inline std::vector<Message> OneSession(const std::vector<std::string>& files) {
  std::vector<Message> conv;
  for (const std::string& file : files) {
    for (Message& m : LoadTrajectory(file)) {
      if (m.role == Role::kSystem && !conv.empty()) continue;
      conv.push_back(std::move(m));
    }
  }
  return conv;
}

struct StabilitySession {
  std::string name;
  std::vector<Message> messages;  // a system prompt first
};

namespace stability_detail {

class Gen {
 public:
  explicit Gen(unsigned seed) : rng_(seed) {}
  int Pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  // `lines` lines of text shaped like `kind` (a log, source code, prose, JSON).
  std::string Text(const std::string& kind, int lines) {
    static const char* kWords[] = {"buffer", "index",  "commit", "socket", "parser", "window",
                                   "thread", "record", "budget", "anchor", "vector", "stream",
                                   "digest", "cursor", "ledger", "schema"};
    std::string out;
    for (int l = 0; l < lines; ++l) {
      const std::string w = kWords[Pick(0, 15)];
      const std::string n = std::to_string(Pick(0, 99999));
      if (kind == "log") {
        out += "[" + n + "] " + w + ": processed " + std::to_string(Pick(1, 900)) + " items in " +
               std::to_string(Pick(1, 90)) + "ms\n";
      } else if (kind == "code") {
        out += "  auto " + w + "_" + n + " = Make" + w + "(ctx, " + std::to_string(l) + ");\n";
      } else if (kind == "json") {
        out += "{\"" + w + "\": " + n + ", \"ok\": " + (Pick(0, 1) ? "true" : "false") + "},\n";
      } else {
        out += "The " + w + " " + n + " should be checked before the " + kWords[Pick(0, 15)] +
               " is released, since otherwise it is read twice. ";
        if (l % 4 == 3) out += "\n";
      }
    }
    return out;
  }

 private:
  std::mt19937 rng_;
};

inline Message Calls(const std::vector<std::pair<std::string, std::string>>& id_and_args,
                     const std::string& tool) {
  std::vector<ToolCall> calls;
  for (const auto& [id, args] : id_and_args) calls.push_back(ToolCall{id, "function", tool, args});
  return Message::AssistantCalls(std::move(calls));
}

// A design discussion without tools: long user messages and longer answers.
inline StabilitySession Conversation() {
  Gen g(2911);
  StabilitySession s{"synthetic-conversation", {Message::System("You are a design reviewer.")}};
  s.messages.push_back(Message::User("Task: review the storage design in docs/storage.md and " +
                                     g.Text("prose", 6)));
  for (int turn = 0; turn < 90; ++turn) {
    s.messages.push_back(Message::Assistant(g.Text("prose", g.Pick(4, 40))));
    s.messages.push_back(
        Message::User("Turn " + std::to_string(turn) + ": " + g.Text("prose", g.Pick(1, 12))));
  }
  s.messages.push_back(Message::Assistant("Summary of the review."));
  return s;
}

// Rounds of three to five parallel calls, outputs of 0.5-6 KB, few user messages (a
// tail of sixteen messages stays well within the budget: larger ones fill it alone, and
// then rule 1 squeezes the tail and no eviction policy keeps a prefix).
inline StabilitySession ParallelCalls() {
  Gen g(2912);
  StabilitySession s{"synthetic-parallel", {Message::System("You are a build agent.")}};
  int call = 0;
  for (int task = 0; task < 3; ++task) {
    s.messages.push_back(Message::User("Task " + std::to_string(task) +
                                       ": make the tests in tests/unit_" + std::to_string(task) +
                                       " pass on every platform"));
    for (int round = 0; round < 14; ++round) {
      std::vector<std::pair<std::string, std::string>> ids;
      const int n = g.Pick(3, 5);
      for (int c = 0; c < n; ++c) {
        const std::string n = std::to_string(++call);
        ids.emplace_back("p" + n, R"({"command":"make -C build/target_)" + n + R"("})");
      }
      s.messages.push_back(Calls(ids, "shell"));
      for (const auto& [id, args] : ids) {
        s.messages.push_back(Message::ToolResult(id, g.Text("log", g.Pick(10, 80)), "shell"));
      }
      if (g.Pick(0, 3) == 0) s.messages.push_back(Message::Assistant(g.Text("prose", 2)));
    }
    s.messages.push_back(Message::Assistant("Task " + std::to_string(task) + " done."));
  }
  return s;
}

// A long run of single calls with tiny outputs, one in forty huge (60-120 KB).
inline StabilitySession TinyOutputs() {
  Gen g(2913);
  StabilitySession s{"synthetic-tiny", {Message::System("You are a careful editor.")}};
  s.messages.push_back(Message::User("Task: rename the config keys listed in keys.json"));
  for (int i = 0; i < 260; ++i) {
    const std::string id = "t" + std::to_string(i);
    s.messages.push_back(
        Calls({{id, R"({"path":"src/key_)" + std::to_string(i) + R"(.json"})"}}, "read_file"));
    const bool huge = g.Pick(0, 39) == 0;
    s.messages.push_back(Message::ToolResult(
        id, huge ? g.Text("json", g.Pick(1500, 3000)) : g.Text("json", g.Pick(1, 4)), "read_file"));
    if (i % 25 == 24) s.messages.push_back(Message::User("Keep going: " + g.Text("prose", 1)));
  }
  s.messages.push_back(Message::Assistant("All keys renamed."));
  return s;
}

// Several tasks one after the other, long user messages, code and prose answers.
inline StabilitySession ManyTasks() {
  Gen g(2914);
  StabilitySession s{"synthetic-tasks", {Message::System("You are a coding agent.")}};
  int call = 0;
  for (int task = 0; task < 6; ++task) {
    s.messages.push_back(
        Message::User("Task " + std::to_string(task) + ": " + g.Text("prose", g.Pick(8, 30))));
    const int steps = g.Pick(8, 20);
    for (int step = 0; step < steps; ++step) {
      const std::string id = "m" + std::to_string(++call);
      s.messages.push_back(
          Calls({{id, R"({"path":"src/mod_)" + std::to_string(call) + R"(.cc"})"}}, "edit"));
      s.messages.push_back(Message::ToolResult(id, g.Text("code", g.Pick(5, 160)), "edit"));
      if (g.Pick(0, 2) == 0) s.messages.push_back(Message::Assistant(g.Text("prose", 3)));
    }
    s.messages.push_back(Message::Assistant("Task " + std::to_string(task) + " is done."));
  }
  return s;
}

}  // namespace stability_detail

inline std::vector<StabilitySession> StabilitySessions() {
  return {stability_detail::Conversation(), stability_detail::ParallelCalls(),
          stability_detail::TinyOutputs(), stability_detail::ManyTasks()};
}

}  // namespace missy::testing

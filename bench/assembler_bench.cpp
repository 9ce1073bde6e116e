// Context assembly benchmark (issue 4), in-process:
//  1. AssembleContext time (p50/p99) for synthetic sessions of 1k, 10k and 100k messages,
//     with no summary (worst case: the whole history is live) and with summaries covering
//     all but the newest 2,000 messages (the steady state once the summarizer runs);
//  2. prefix stability over a replay of the real trajectories at 30,000 tokens: the share
//     of consecutive requests whose message list starts with the previous one, and the
//     share of context tokens that a provider's prompt cache could reuse;
//  3. `--export DIR` writes the 10k-message history, its per-message token counts and our
//     own result, for bench/context/trim_compare.mjs (LangChain's trimMessages).
//
// Usage: assembler_bench [--quick] [--export DIR]
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/assembler.h"
#include "core/context_checks.h"
#include "core/message_json.h"

namespace {

using missy::AssembleContext;
using missy::AssembledContext;
using missy::ContextInput;
using missy::Message;
using missy::MessageTokenCounter;
using missy::Role;
using missy::StoredMessage;
using missy::ToolCall;
using Clock = std::chrono::steady_clock;

std::string LogLines(std::mt19937_64& rng, size_t bytes) {
  static const char* const kLines[] = {
      "src/server/handler.cc:142: error: use of undeclared identifier 'conn'\n",
      "PASS tests/unit/test_parser.py::test_roundtrip[utf8] 0.02s\n",
      "{\"level\":\"info\",\"ts\":1732200000,\"msg\":\"request done\",\"status\":200}\n",
      "drwxr-xr-x  5 agent agent  4096 Nov 21 16:00 node_modules\n",
      "    at Object.<anonymous> (/app/src/index.js:17:11)\n",
  };
  std::string s;
  while (s.size() < bytes) s += kLines[rng() % 5];
  return s;
}

// A coding-agent-like session: user turns, chained and parallel tool calls, mostly small
// outputs with the occasional large one.
std::vector<Message> SyntheticSession(size_t n_messages, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Message> out;
  out.reserve(n_messages + 8);
  int id = 0;
  while (out.size() < n_messages) {
    out.push_back(Message::User("Please continue with task " + std::to_string(out.size()) +
                                ": make the failing test pass and keep the API stable."));
    const int rounds = 1 + static_cast<int>(rng() % 4);
    for (int r = 0; r < rounds && out.size() < n_messages; ++r) {
      const int calls = rng() % 6 == 0 ? 2 + static_cast<int>(rng() % 2) : 1;
      std::vector<ToolCall> tc;
      for (int c = 0; c < calls; ++c) {
        tc.push_back({"call_" + std::to_string(++id), "function", "bash",
                      "{\"command\":\"grep -rn conn src/ | head -50\"}"});
      }
      out.push_back(Message::AssistantCalls(tc, rng() % 2 ? "" : "Checking the handler."));
      for (const ToolCall& c : tc) {
        const size_t bytes = rng() % 20 == 0 ? 5000 + rng() % 25000 : 80 + rng() % 900;
        out.push_back(Message::ToolResult(c.id, LogLines(rng, bytes), "bash"));
      }
    }
    out.push_back(Message::Assistant("Done: the handler now checks the connection before use."));
  }
  // End on a complete group: drop a trailing partial group if the size cut one.
  while (!out.empty() && out.back().role != Role::kAssistant) out.pop_back();
  return out;
}

std::vector<StoredMessage> Store(const std::vector<Message>& msgs,
                                 const MessageTokenCounter& counter) {
  std::vector<StoredMessage> out;
  out.reserve(msgs.size());
  for (const Message& m : msgs) {
    StoredMessage s;
    s.seq = static_cast<int64_t>(out.size() + 1);
    s.created_at_ms = 1'732'000'000'000 + s.seq * 1000;
    s.tokens = counter.CountMessage(m);
    s.message = m;
    out.push_back(std::move(s));
  }
  return out;
}

// CPU time of this thread: unlike wall time, barely affected by other processes on a
// shared machine.
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void TimeAssembly(const MessageTokenCounter& counter, bool quick) {
  std::printf("## Assembly time (in-process, heuristic counter, Release)\n\n");
  std::printf(
      "Wall time and this thread's CPU time per AssembleContext call; on a loaded machine\n"
      "the CPU columns are the ones to compare.\n\n");
  std::printf(
      "| messages | history tokens | budget | summaries | runs | p50 ms | p99 ms | CPU p50 ms | "
      "CPU p99 ms | kept msgs | used tokens |\n");
  std::printf("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t n : {size_t{1000}, size_t{10000}, size_t{100000}}) {
    ContextInput base;
    base.history = Store(SyntheticSession(n, 42 + n), counter);
    base.system_prompt = "You are a careful coding agent. Follow the repository's conventions.";
    base.tool_tokens = 1500;
    int64_t history_tokens = 0;
    for (const StoredMessage& m : base.history) history_tokens += m.tokens;
    for (int64_t total : {int64_t{30000}, int64_t{168000}}) {
      for (bool summarized : {false, true}) {
        ContextInput in = base;
        in.budget.total = total;
        if (summarized && in.history.size() > 2000) {
          // Leaf summaries of ~200 messages each over everything but the newest 2,000,
          // cut on group starts; only the last few fit.
          size_t begin = 0;
          const size_t end_all = in.history.size() - 2000;
          while (begin < end_all) {
            size_t end = std::min(begin + 200, end_all);
            while (end < in.history.size() && in.history[end].message.role == Role::kTool) ++end;
            in.summaries.push_back({"sum_" + std::to_string(begin), 0, in.history[begin].seq,
                                    in.history[end - 1].seq, static_cast<int64_t>(end - begin), 0,
                                    0, std::string(2400, 's'), 0});
            begin = end;
          }
        } else if (summarized) {
          continue;
        }
        const int runs = quick ? 5 : (n >= 100000 ? 40 : n >= 10000 ? 150 : 400);
        std::vector<double> ms, cpu;
        AssembledContext last;
        for (int i = 0; i < runs; ++i) {
          const double c0 = ThreadCpuMs();
          auto t0 = Clock::now();
          auto r = AssembleContext(in, counter);
          auto t1 = Clock::now();
          cpu.push_back(ThreadCpuMs() - c0);
          if (!r.ok()) {
            std::printf("assembly failed: %s\n", r.status().ToString().c_str());
            return;
          }
          ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
          if (i == runs - 1) last = std::move(*r);
        }
        std::printf("| %zu | %lld | %lld | %s | %d | %.3f | %.3f | %.3f | %.3f | %lld | %lld |\n",
                    n, static_cast<long long>(history_tokens), static_cast<long long>(total),
                    summarized ? std::to_string(in.summaries.size()).c_str() : "none", runs,
                    Percentile(ms, 0.5), Percentile(ms, 0.99), Percentile(cpu, 0.5),
                    Percentile(cpu, 0.99), static_cast<long long>(last.report.kept_messages),
                    static_cast<long long>(last.report.used_tokens));
      }
    }
  }
  std::printf("\n");
}

std::vector<Message> LoadJsonl(const std::filesystem::path& path) {
  std::vector<Message> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    auto m = missy::ParseMessage(boost::json::parse(line));
    if (m.ok()) out.push_back(std::move(*m));
  }
  return out;
}

struct Stability {
  int pairs = 0, identical = 0, front_evicted = 0, other = 0;
  int64_t reusable_tokens = 0, context_tokens = 0;
  int requests = 0;
  int64_t used_tokens = 0;
};

// Replays one session at 30,000 tokens, asking before each assistant message; pruning
// decisions are persisted between requests as the daemon does.
void ReplayForStability(const std::vector<Message>& msgs, const MessageTokenCounter& counter,
                        Stability& st, bool anchored = false) {
  ContextInput in;
  in.budget.total = 30000;
  size_t start = 0;
  if (!msgs.empty() && msgs[0].role == Role::kSystem) {
    in.system_prompt = msgs[0].PlainText();
    start = 1;
  }
  std::optional<AssembledContext> prev;
  for (size_t i = start; i < msgs.size(); ++i) {
    if (msgs[i].role == Role::kAssistant && !in.history.empty()) {
      auto r = AssembleContext(in, counter);
      if (!r.ok()) {
        std::printf("replay failed: %s\n", r.status().ToString().c_str());
        return;
      }
      ++st.requests;
      st.used_tokens += r->report.used_tokens;
      // Cache-friendly eviction: the daemon feeds back the previous first kept seq, and
      // after a move the tool outputs it squeezed.
      if (anchored) {
        in.eviction.anchor_seq = r->report.first_kept_seq;
        if (r->report.eviction != "anchored") {
          in.anchored_squeezed_through = r->report.squeezed_through_seq;
        }
      }
      for (int64_t seq : r->report.newly_pruned_seqs) {
        in.history[static_cast<size_t>(seq - 1)].flags |= missy::kFlagPruned;
      }
      if (prev) {
        missy::PrefixComparison c = missy::ComparePrefix(*prev, *r);
        ++st.pairs;
        st.identical += c.identical;
        st.front_evicted += !c.identical && c.front_evicted_only;
        st.other += !c.identical && !c.front_evicted_only;
        // Cacheable = the message tokens of the common prefix over all message tokens
        // (reserves for an unknown system prompt or tools are not messages).
        for (size_t k = 0; k < r->messages.size(); ++k) {
          const int64_t t = counter.CountMessage(r->messages[k]);
          st.context_tokens += t;
          if (k < c.common_messages) st.reusable_tokens += t;
        }
      }
      prev = std::move(*r);
    }
    StoredMessage s;
    s.seq = static_cast<int64_t>(in.history.size() + 1);
    s.tokens = counter.CountMessage(msgs[i]);
    s.message = msgs[i];
    in.history.push_back(std::move(s));
  }
}

void PrefixStability(const MessageTokenCounter& counter) {
  const std::filesystem::path dir =
      std::filesystem::path(MISSY_SOURCE_DIR).parent_path() / "shared/data/trajectories";
  if (!std::filesystem::exists(dir)) {
    std::printf("(no trajectories at %s: prefix stability skipped)\n\n", dir.c_str());
    return;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".jsonl") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::printf("## Prefix stability (replay of the real trajectories, 30,000-token budget)\n\n");
  std::printf(
      "Identical prefix: the request's message list starts with the previous one (a full\n"
      "prompt-cache hit). Front-evicted: only old history groups were dropped from the\n"
      "front (allowed without a compaction event). Cache-reusable tokens: message tokens\n"
      "of the common leading run over all message tokens sent.\n\n");
  std::printf(
      "| session | eviction | requests | identical prefix | only front-evicted | other | "
      "cache-reusable tokens | mean used tokens |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
  auto row = [](const std::string& name, const char* mode, const Stability& s) {
    auto pct = [&](int v) { return s.pairs ? 100.0 * v / s.pairs : 0.0; };
    std::printf("| %s | %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %lld |\n", name.c_str(), mode,
                s.requests, pct(s.identical), pct(s.front_evicted), pct(s.other),
                s.context_tokens ? 100.0 * static_cast<double>(s.reusable_tokens) /
                                       static_cast<double>(s.context_tokens)
                                 : 0.0,
                static_cast<long long>(s.requests ? s.used_tokens / s.requests : 0));
  };
  std::vector<Message> concatenated;
  std::vector<std::pair<std::string, std::vector<Message>>> sessions;
  for (const auto& f : files) {
    sessions.emplace_back(f.filename().string(), LoadJsonl(f));
    for (const Message& m : sessions.back().second) {
      if (m.role != Role::kSystem) concatenated.push_back(m);
    }
  }
  for (bool anchored : {false, true}) {
    const char* mode = anchored ? "anchored (slack 0.2)" : "fill (rule 3)";
    Stability all;
    for (const auto& [name, msgs] : sessions) {
      Stability s;
      ReplayForStability(msgs, counter, s, anchored);
      row(name, mode, s);
      all.pairs += s.pairs;
      all.identical += s.identical;
      all.front_evicted += s.front_evicted;
      all.other += s.other;
      all.reusable_tokens += s.reusable_tokens;
      all.context_tokens += s.context_tokens;
      all.requests += s.requests;
      all.used_tokens += s.used_tokens;
    }
    row("**all sessions**", mode, all);
    Stability longrun;
    ReplayForStability(concatenated, counter, longrun, anchored);
    row("all six back to back (" + std::to_string(concatenated.size()) + " msgs)", mode, longrun);
  }
  std::printf("\n");
}

// Tool pairs an output breaks, counted like trim_compare.mjs: results that answer no call
// of the assistant message right before them, and calls left without their result.
int BrokenPairs(const std::vector<Message>& msgs) {
  int broken = 0;
  std::vector<std::string> open;
  for (const Message& m : msgs) {
    if (m.role == Role::kTool) {
      auto it = std::find(open.begin(), open.end(), m.tool_call_id);
      if (it == open.end()) {
        ++broken;
      } else {
        open.erase(it);
      }
    } else {
      broken += static_cast<int>(open.size());
      open.clear();
      for (const ToolCall& c : m.tool_calls) open.push_back(c.id);
    }
  }
  return broken + static_cast<int>(open.size());
}

// Writes the 10k history for the LangChain comparison, with our own results.
void Export(const std::string& dir, const MessageTokenCounter& counter) {
  std::filesystem::create_directories(dir);
  std::vector<Message> msgs = SyntheticSession(10000, 42 + 10000);
  std::vector<StoredMessage> history = Store(msgs, counter);
  ContextInput in;
  in.budget.total = 30000;
  in.budget.memory_fraction = 0;
  in.budget.learnings_fraction = 0;
  in.system_prompt = "You are a careful coding agent. Follow the repository's conventions.";
  in.tool_tokens = 0;
  in.tool_output_max_tokens = 1'000'000'000;  // same messages as trimMessages sees: no rule 6
  in.pruning.enabled = false;
  in.history = history;
  std::vector<double> ms, cpu;
  AssembledContext ctx;
  for (int i = 0; i < 50; ++i) {
    const double c0 = ThreadCpuMs();
    auto t0 = Clock::now();
    auto r = AssembleContext(in, counter);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    cpu.push_back(ThreadCpuMs() - c0);
    ctx = std::move(*r);
  }
  boost::json::object o;
  o["budget"] = in.budget.total;
  boost::json::array messages, tokens;
  messages.push_back(missy::MessageToJson(Message::System(in.system_prompt)));
  tokens.push_back(counter.CountMessage(Message::System(in.system_prompt)));
  for (const StoredMessage& s : history) {
    messages.push_back(missy::MessageToJson(s.message));
    tokens.push_back(s.tokens);
  }
  o["messages"] = std::move(messages);
  o["tokens"] = std::move(tokens);
  o["ours"] = boost::json::object{{"p50_ms", Percentile(ms, 0.5)},
                                  {"p99_ms", Percentile(ms, 0.99)},
                                  {"cpu_p50_ms", Percentile(cpu, 0.5)},
                                  {"messages", ctx.messages.size()},
                                  {"tokens", ctx.report.used_tokens},
                                  {"broken_pairs", BrokenPairs(ctx.messages)},
                                  {"problem", missy::FindToolPairProblem(ctx.messages)}};
  // A sweep of budgets: where a cut lands depends on the budget.
  boost::json::array sweep;
  for (int64_t budget = 20000; budget < 40000; budget += 1000) {
    in.budget.total = budget;
    auto r = AssembleContext(in, counter);
    sweep.push_back(boost::json::object{{"budget", budget},
                                        {"messages", r->messages.size()},
                                        {"broken_pairs", BrokenPairs(r->messages)}});
  }
  o["sweep"] = std::move(sweep);
  std::ofstream(dir + "/history10k.json") << boost::json::serialize(o);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string export_dir;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--export") == 0 && i + 1 < argc) export_dir = argv[++i];
  }
  const MessageTokenCounter counter(std::make_shared<missy::HeuristicTokenCounter>());
  if (!export_dir.empty()) {
    Export(export_dir, counter);
    return 0;
  }
  TimeAssembly(counter, quick);
  PrefixStability(counter);
  return 0;
}

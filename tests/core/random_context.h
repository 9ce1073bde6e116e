// Random conversations and context inputs for the assembler's property tests: random
// sizes, tool-call shapes (chained, parallel, ids reused across rounds), budgets,
// summaries, memory, learnings and pruning flags; 10% of the conversations are corrupted
// (orphans, duplicates, missing results). Deterministic for a given generator state.
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "context_test_helpers.h"
#include "core/assembler.h"
#include "core/groups.h"

namespace missy::testing {

struct Generated {
  std::vector<Message> conv;
  bool corrupted = false;
};

inline std::string RandomText(std::mt19937_64& rng, size_t len) {
  static const char* const kWords[] = {"build", "error:", "{\"k\":", "1234", "src/main.cc",
                                       "日本",  "ok",     "\n",      "é",    "result:"};
  std::string s;
  while (s.size() < len) {
    s += kWords[rng() % 10];
    s += ' ';
  }
  return s;
}

inline Generated RandomConversation(std::mt19937_64& rng) {
  Generated g;
  std::uniform_int_distribution<int> turns_dist(0, rng() % 4 == 0 ? 80 : 20);
  const int turns = turns_dist(rng);
  int next_id = 0;
  if (rng() % 5 == 0) g.conv.push_back(Message::System(RandomText(rng, 20)));
  for (int t = 0; t < turns; ++t) {
    g.conv.push_back(Message::User(RandomText(rng, 1 + rng() % 150)));
    const int steps = static_cast<int>(rng() % 7);
    for (int s = 0; s < steps; ++s) {
      if (rng() % 3 == 0) {
        g.conv.push_back(Message::Assistant(RandomText(rng, 1 + rng() % 300)));
        continue;
      }
      const int calls = rng() % 5 == 0 ? 2 + static_cast<int>(rng() % 3) : 1;
      std::vector<ToolCall> tc;
      for (int c = 0; c < calls; ++c) {
        // Sometimes reuse "call_0" in a new round (legal).
        std::string id =
            (c == 0 && rng() % 10 == 0) ? "call_0" : "call_" + std::to_string(++next_id);
        tc.push_back({id, "function", "bash", "{\"command\":\"ls\"}"});
      }
      g.conv.push_back(Message::AssistantCalls(tc, rng() % 2 ? "" : "let me look"));
      std::vector<size_t> order(calls);
      for (int c = 0; c < calls; ++c) order[c] = c;
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t c : order) {
        size_t len = rng() % 6 == 0 ? 2000 + rng() % 15000 : 1 + rng() % 400;
        g.conv.push_back(Message::ToolResult(tc[c].id, RandomText(rng, len), "bash"));
      }
    }
    if (rng() % 2) g.conv.push_back(Message::Assistant(RandomText(rng, 1 + rng() % 200)));
  }
  if (!g.conv.empty() && rng() % 10 == 0) {
    g.corrupted = true;
    const int mutations = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < mutations && !g.conv.empty(); ++k) {
      size_t i = rng() % g.conv.size();
      switch (rng() % 3) {
        case 0:
          g.conv.erase(g.conv.begin() + i);
          break;
        case 1:
          g.conv.insert(g.conv.begin() + i, g.conv[i]);
          break;
        default:
          std::swap(g.conv[i], g.conv[rng() % g.conv.size()]);
          break;
      }
    }
  }
  return g;
}

// A random input over `conv` (the caller checks budget.Validate()).
inline ContextInput RandomContextInput(std::mt19937_64& rng, const std::vector<Message>& conv,
                                       const MessageTokenCounter& counter) {
  ContextInput in;
  in.history = Store(conv, counter);
  for (StoredMessage& m : in.history) {
    if (m.message.role == Role::kTool && rng() % 20 == 0) m.flags |= kFlagPruned;
  }
  in.budget.total = static_cast<int64_t>(rng() % 40000);
  in.budget.system_reserve =
      static_cast<int64_t>(rng() % 2) * std::min<int64_t>(in.budget.total / 4, 2000);
  in.budget.tool_definitions_reserve =
      static_cast<int64_t>(rng() % 2) * std::min<int64_t>(in.budget.total / 4, 2000);
  in.budget.memory_fraction = (rng() % 30) / 100.0;
  in.budget.learnings_fraction = (rng() % 10) / 100.0;
  in.budget.fresh_tail_count = static_cast<int64_t>(rng() % 24);
  if (rng() % 2) in.system_prompt = RandomText(rng, rng() % 600);
  if (rng() % 2) in.tool_tokens = static_cast<int64_t>(rng() % 1500);
  in.tool_output_max_tokens = 50 + static_cast<int64_t>(rng() % 3000);
  in.threshold_pct = (rng() % 100) / 100.0;
  in.pruning.enabled = rng() % 2;
  in.pruning.protect_tool_tokens = static_cast<int64_t>(rng() % 20000);
  in.pruning.minimum_freed_tokens = static_cast<int64_t>(rng() % 10000);
  for (int k = static_cast<int>(rng() % 4); k > 0; --k) {
    in.memory.push_back({"memory", "m" + std::to_string(k), RandomText(rng, rng() % 800), 1.0});
  }
  for (int k = static_cast<int>(rng() % 8); k > 0; --k) {
    in.learnings.push_back(
        {"l" + std::to_string(k), "task", "success", RandomText(rng, rng() % 300), 0});
  }
  // Summaries over a group-aligned prefix of the history, in 1-3 consecutive pieces.
  if (!in.history.empty() && rng() % 2) {
    MessageAt at = [&](size_t i) -> const Message& { return in.history[i].message; };
    size_t cut = GroupStartAtOrBefore(in.history.size(), at, rng() % in.history.size());
    size_t begin = 0;
    for (int piece = 1 + static_cast<int>(rng() % 3); piece > 0 && begin < cut; --piece) {
      size_t end = piece == 1 ? cut
                              : GroupStartAtOrBefore(in.history.size(), at,
                                                     begin + 1 + rng() % (cut - begin));
      if (end <= begin) end = cut;
      in.summaries.push_back({"s" + std::to_string(begin), 0, in.history[begin].seq,
                              in.history[end - 1].seq, static_cast<int64_t>(end - begin), 0, 0,
                              RandomText(rng, rng() % 1500), 0});
      begin = end;
    }
  }
  if (rng() % 2) in.new_message = Message::User(RandomText(rng, 1 + rng() % 200));
  if (rng() % 3 == 0 && !in.history.empty()) {
    in.eviction.anchor_seq = 1 + static_cast<int64_t>(rng() % in.history.size());
    in.eviction.slack_fraction = (rng() % 50) / 100.0;
  }
  if (rng() % 2) {  // the task: the first user message (sometimes a later one)
    for (const StoredMessage& m : in.history) {
      if (m.message.role != Role::kUser) continue;
      in.task = m;
      if (rng() % 4 != 0) break;
    }
    in.task_max_tokens = 20 + static_cast<int64_t>(rng() % 400);
  }
  return in;
}

}  // namespace missy::testing

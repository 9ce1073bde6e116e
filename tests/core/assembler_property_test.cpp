// Property test of AssembleContext over thousands of random histories: random sizes,
// random tool-call shapes (chained, parallel, ids reused across rounds), random budgets,
// summaries, memory, learnings, pruning flags; 10% of the histories are corrupted
// (orphans, duplicates, missing results) to exercise the sanitizer on the way.
// Seeded: MISSY_PROPERTY_SEED=<n> replays a run; every failure prints its seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>

#include "context_test_helpers.h"
#include "core/assembler.h"
#include "core/truncation.h"
#include "core/groups.h"
#include "core/sanitizer.h"
#include "random_context.h"

namespace missy {
namespace {

// Independent check of provider validity: every aTC is immediately followed by exactly
// one result per call (any order), ids non-empty and unique, no other tool message.
std::string CheckToolPairs(const std::vector<Message>& msgs) {
  size_t i = 0;
  while (i < msgs.size()) {
    const Message& m = msgs[i];
    if (m.role == Role::kTool) return "orphan tool result at " + std::to_string(i);
    if (m.role == Role::kAssistant && m.HasToolCalls()) {
      std::set<std::string> open;
      for (const ToolCall& c : m.tool_calls) {
        if (c.id.empty()) return "empty call id at " + std::to_string(i);
        if (!open.insert(c.id).second) return "repeated call id at " + std::to_string(i);
      }
      size_t j = i + 1;
      for (; j < msgs.size() && msgs[j].role == Role::kTool; ++j) {
        if (open.erase(msgs[j].tool_call_id) != 1) {
          return "result " + msgs[j].tool_call_id + " at " + std::to_string(j) +
                 " answers no open call (orphan or duplicate)";
        }
      }
      if (!open.empty())
        return "call " + *open.begin() + " at " + std::to_string(i) + " unanswered";
      i = j;
      continue;
    }
    ++i;
  }
  return "";
}

TEST(AssemblerPropertyTest, RandomHistoriesKeepEveryInvariant) {
  uint64_t base_seed = 20261121;
  if (const char* env = std::getenv("MISSY_PROPERTY_SEED"))
    base_seed = std::strtoull(env, nullptr, 10);
  const int kRuns = std::getenv("MISSY_PROPERTY_SEED") ? 1 : 3000;
  const MessageTokenCounter bytes = testing::BytesCounter();
  const MessageTokenCounter heuristic(std::make_shared<HeuristicTokenCounter>());
  int ok_runs = 0, overflow_runs = 0, squeezed_runs = 0, pruned_runs = 0, truncated_runs = 0,
      dropped_runs = 0, task_runs = 0;
  for (int run = 0; run < kRuns; ++run) {
    const uint64_t seed = base_seed + static_cast<uint64_t>(run);
    SCOPED_TRACE("seed=" + std::to_string(seed) +
                 " (rerun with MISSY_PROPERTY_SEED=" + std::to_string(seed) + ")");
    std::mt19937_64 rng(seed);
    const MessageTokenCounter& counter = rng() % 3 == 0 ? heuristic : bytes;
    testing::Generated g = testing::RandomConversation(rng);

    ContextInput in = testing::RandomContextInput(rng, g.conv, counter);
    if (in.budget.Validate().ok() == false) continue;

    Result<AssembledContext> res = AssembleContext(in, counter);
    // Independent view: sanitized history + new message, and its fresh tail.
    const size_t n_hist = in.history.size();
    std::vector<Message> all;
    for (const StoredMessage& m : in.history) all.push_back(m.message);
    if (in.new_message) all.push_back(*in.new_message);
    SanitizeResult san = SanitizeForProvider(all);
    std::vector<size_t> hist_kept;  // sanitized history indices
    for (size_t i : san.kept) {
      if (i < n_hist) hist_kept.push_back(i);
    }
    MessageAt hat = [&](size_t k) -> const Message& { return in.history[hist_kept[k]].message; };
    // The fresh tail counts the new message (kept last, after the history).
    MessageAt all_at = [&](size_t k) -> const Message& {
      return san.kept[k] < n_hist ? in.history[san.kept[k]].message : *in.new_message;
    };
    const size_t tail_k = std::min(
        FreshTailStart(san.kept.size(), all_at, in.budget.fresh_tail_count), hist_kept.size());
    int64_t tail_stored = 0;
    for (size_t k = tail_k; k < hist_kept.size(); ++k)
      tail_stored += in.history[hist_kept[k]].tokens;
    if (in.new_message && !san.kept.empty() && san.kept.back() == n_hist) {
      tail_stored += counter.CountMessage(*in.new_message);
    }
    const int64_t system = in.system_prompt.empty()
                               ? in.budget.system_reserve
                               : counter.CountMessage(Message::System(in.system_prompt));
    const int64_t tools = in.tool_tokens >= 0 ? in.tool_tokens : in.budget.tool_definitions_reserve;
    const int64_t available = in.budget.total - system - tools;

    if (!res.ok()) {
      ASSERT_EQ(res.status().code(), StatusCode::kContextOverflow) << res.status().ToString();
      // Only when even the stored fresh tail could not fit.
      ASSERT_GT(tail_stored, available) << res.status().ToString();
      ++overflow_runs;
      continue;
    }
    ++ok_runs;
    const AssembledContext& ctx = *res;
    const ContextReport& r = ctx.report;

    // 1. Never over budget, and the report adds up.
    int64_t sum = in.system_prompt.empty() ? in.budget.system_reserve : 0;
    sum += tools;
    for (const Message& m : ctx.messages) sum += counter.CountMessage(m);
    ASSERT_EQ(sum, r.used_tokens);
    ASSERT_LE(r.used_tokens, in.budget.total);
    ASSERT_LE(r.memory_tokens, r.memory_budget);
    ASSERT_LE(r.learnings_tokens, r.learnings_budget);
    ASSERT_LE(r.learnings_items, 5);

    // 2. Valid for any provider.
    ASSERT_EQ(CheckToolPairs(ctx.messages), "") << testing::Shape(ctx.messages);

    // 3. Whole sanitized groups only; seqs increasing.
    ASSERT_TRUE(std::is_sorted(ctx.kept_seqs.begin(), ctx.kept_seqs.end()));
    std::set<int64_t> kept(ctx.kept_seqs.begin(), ctx.kept_seqs.end());
    ASSERT_EQ(kept.size(), ctx.kept_seqs.size());
    for (const GroupSpan& grp : ComputeGroups(hist_kept.size(), hat)) {
      size_t in_ctx = 0;
      for (size_t k = grp.begin; k < grp.end; ++k)
        in_ctx += kept.count(in.history[hist_kept[k]].seq);
      ASSERT_TRUE(in_ctx == 0 || in_ctx == grp.size())
          << "group at sanitized index " << grp.begin << " split";
    }

    // 4. Fresh tail present whenever it fits.
    if (tail_stored <= available) {
      ASSERT_FALSE(r.tail_squeezed);
      for (size_t k = tail_k; k < hist_kept.size(); ++k) {
        ASSERT_TRUE(kept.count(in.history[hist_kept[k]].seq)) << "fresh tail message missing";
      }
    } else {
      ++squeezed_runs;
    }

    // 5. The kept evictable part is a contiguous suffix of the evictable history.
    const int64_t first_fresh = r.first_fresh_seq == 0 ? INT64_MAX : r.first_fresh_seq;
    std::vector<int64_t> evictable, kept_evictable;
    for (size_t i : hist_kept) {
      if (in.history[i].seq < first_fresh) evictable.push_back(in.history[i].seq);
    }
    for (int64_t s : ctx.kept_seqs) {
      if (s < first_fresh) kept_evictable.push_back(s);
    }
    ASSERT_LE(kept_evictable.size(), evictable.size());
    ASSERT_TRUE(std::equal(kept_evictable.begin(), kept_evictable.end(),
                           evictable.end() - static_cast<long>(kept_evictable.size())))
        << "kept evictable part is not contiguous";
    // ... and nothing in it is covered by an included summary.
    for (const SummaryView& s : in.summaries) {
      if (std::find(r.included_summary_ids.begin(), r.included_summary_ids.end(), s.id) ==
          r.included_summary_ids.end()) {
        continue;
      }
      for (int64_t seq : kept_evictable) ASSERT_FALSE(seq >= s.first_seq && seq <= s.last_seq);
    }
    // 6. Newly pruned seqs are tool results not pruned before.
    for (int64_t s : r.newly_pruned_seqs) {
      const StoredMessage& m = in.history[static_cast<size_t>(s - 1)];
      ASSERT_EQ(m.message.role, Role::kTool);
      ASSERT_EQ(m.flags & kFlagPruned, 0u);
    }
    // 7. Deterministic (checked on a sample: it doubles the cost).
    if (run % 8 == 0) {
      Result<AssembledContext> again = AssembleContext(in, counter);
      ASSERT_TRUE(again.ok());
      ASSERT_EQ(again->messages, ctx.messages);
    }

    // 8. The task is in the context (kept, or pinned whole or cut), unless what the last
    // turn leaves is less than its header and a cut's marker.
    if (in.task) {
      bool has_task = kept.count(in.task->seq) > 0;
      int64_t history_side = 0;
      for (const Message& m : ctx.messages) {
        has_task = has_task || m.text.rfind(TaskHeader(in.task->seq), 0) == 0;
        if (m.role != Role::kSystem) history_side += counter.CountMessage(m);
      }
      // Its header and the marker of a cut: a task is never sent as less than that.
      const int64_t header = counter.CountMessage(Message::User(
          TaskHeader(in.task->seq) + "\n" + TruncationMarker(in.task->tokens) + "\n"));
      ASSERT_TRUE(has_task || r.history_budget - history_side < header)
          << "task " << in.task->seq << " missing with " << r.history_budget - history_side
          << " tokens left";
      task_runs += has_task;
    }
    pruned_runs += !r.newly_pruned_seqs.empty();
    truncated_runs += !r.truncated.empty();
    dropped_runs += r.dropped_messages > 0;
  }
  std::printf(
      "property: %d ok, %d overflow, %d squeezed, %d pruned, %d truncated, %d dropped, %d with "
      "their task\n",
      ok_runs, overflow_runs, squeezed_runs, pruned_runs, truncated_runs, dropped_runs, task_runs);
  if (kRuns > 1) {
    // The generator must reach every interesting path, or the test proves little.
    EXPECT_GT(ok_runs, kRuns / 2);
    EXPECT_GT(overflow_runs, 0);
    EXPECT_GT(squeezed_runs, 0);
    EXPECT_GT(pruned_runs, 0);
    EXPECT_GT(truncated_runs, 0);
    EXPECT_GT(dropped_runs, 0);
    EXPECT_GT(task_runs, kRuns / 3);
  }
}

}  // namespace
}  // namespace missy

// Replays the real trajectories of /work/shared/data/trajectories (and a synthetic
// 500-turn session) message by message at a 30,000-token budget with the heuristic
// counter, asking for a context before every assistant message as an agent would, and
// validates every context: within budget, no orphan, no split group, fresh tail present.
// Pruning decisions are persisted between requests as the daemon does (sticky flags).
// Also measures prefix stability between consecutive requests.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "core/assembler.h"
#include "core/context_checks.h"
#include "core/groups.h"
#include "core/message_json.h"
#include "core/sanitizer.h"
#include "test_util.h"

namespace missy {
namespace {

std::vector<Message> SyntheticSession(int turns) {
  std::mt19937_64 rng(500);
  std::vector<Message> out;
  out.push_back(Message::System("You are a coding agent."));
  for (int t = 0; t < turns; ++t) {
    out.push_back(Message::User("step " + std::to_string(t) + ": fix the next failing test"));
    const int calls = t % 7 == 0 ? 3 : 1;
    std::vector<ToolCall> tc;
    for (int c = 0; c < calls; ++c) {
      tc.push_back({"call_" + std::to_string(t) + "_" + std::to_string(c), "function", "bash",
                    "{\"command\":\"make test TEST=" + std::to_string(t) + "\"}"});
    }
    out.push_back(Message::AssistantCalls(tc));
    for (const ToolCall& c : tc) {
      std::string output;
      const size_t lines = 2 + rng() % (t % 11 == 0 ? 600 : 60);
      for (size_t l = 0; l < lines; ++l) {
        output += "src/module_" + std::to_string(l % 13) + ".cc:" + std::to_string(l) +
                  ": error: expected ';' before '}' token\n";
      }
      out.push_back(Message::ToolResult(c.id, output, "bash"));
    }
    out.push_back(Message::Assistant("Fixed step " + std::to_string(t) + "."));
  }
  return out;
}

struct ReplayStats {
  int contexts = 0;
  int identical = 0;
  int front_evicted = 0;
  int broken_by_pruning = 0;
  int broken_by_squeeze = 0;  // an anchor's move squeezed older tool outputs
  int pruning_events = 0;
  int64_t max_used = 0;
};

ReplayStats Replay(const std::string& name, const std::vector<Message>& messages,
                   bool anchored = false) {
  const MessageTokenCounter counter(std::make_shared<HeuristicTokenCounter>());
  ReplayStats stats;
  ContextInput in;  // Missy defaults: total 30,000
  in.budget.total = 30000;
  size_t start = 0;
  if (!messages.empty() && messages[0].role == Role::kSystem) {
    in.system_prompt = messages[0].PlainText();
    start = 1;
  }
  std::optional<AssembledContext> prev;
  for (size_t i = start; i < messages.size(); ++i) {
    const Message& m = messages[i];
    if (m.role == Role::kAssistant && !in.history.empty()) {
      SCOPED_TRACE(name + " before message " + std::to_string(i + 1));
      Result<AssembledContext> res = AssembleContext(in, counter);
      EXPECT_TRUE(res.ok()) << res.status().ToString();
      if (!res.ok()) return stats;
      const AssembledContext& ctx = *res;
      ++stats.contexts;
      stats.max_used = std::max(stats.max_used, ctx.report.used_tokens);
      EXPECT_LE(ctx.report.used_tokens, 30000);
      int64_t sum = in.tool_tokens < 0 ? in.budget.tool_definitions_reserve : in.tool_tokens;
      if (in.system_prompt.empty()) sum += in.budget.system_reserve;  // unknown: reserved
      for (const Message& x : ctx.messages) sum += counter.CountMessage(x);
      EXPECT_EQ(sum, ctx.report.used_tokens);
      EXPECT_EQ(FindToolPairProblem(ctx.messages), "");
      EXPECT_TRUE(ctx.report.sanitized.empty()) << "real trajectories are valid";
      // No split group, fresh tail present (the trajectories' tails always fit here).
      std::set<int64_t> kept(ctx.kept_seqs.begin(), ctx.kept_seqs.end());
      for (const GroupSpan& g : ComputeGroups(in.history)) {
        size_t n = 0;
        for (size_t k = g.begin; k < g.end; ++k) n += kept.count(in.history[k].seq);
        EXPECT_TRUE(n == 0 || n == g.size()) << "split group at seq " << in.history[g.begin].seq;
      }
      EXPECT_FALSE(ctx.report.tail_squeezed);
      const size_t tail = FreshTailStart(in.history, in.budget.fresh_tail_count);
      for (size_t k = tail; k < in.history.size(); ++k) {
        EXPECT_TRUE(kept.count(in.history[k].seq)) << "fresh tail seq " << in.history[k].seq;
      }
      if (anchored) {  // as the daemon keeps its anchor (ContextService::AnchorState)
        in.eviction.anchor_seq = ctx.report.first_kept_seq;
        if (ctx.report.eviction != "anchored") {
          in.anchored_squeezed_through = ctx.report.squeezed_through_seq;
        }
      }
      // Persist the pruning decision, as the daemon does.
      for (int64_t seq : ctx.report.newly_pruned_seqs) {
        in.history[static_cast<size_t>(seq - 1)].flags |= kFlagPruned;
      }
      if (prev) {
        PrefixComparison c = ComparePrefix(*prev, ctx);
        if (c.identical) {
          ++stats.identical;
        } else if (c.front_evicted_only) {
          ++stats.front_evicted;
        } else if (ctx.report.squeezed_through_seq > prev->report.squeezed_through_seq) {
          ++stats.broken_by_squeeze;  // a move squeezed older tool outputs: a compaction too
        } else {
          // Without a compaction event (here: pruning) the prefix must survive.
          EXPECT_FALSE(ctx.report.newly_pruned_seqs.empty())
              << "prefix broken without pruning; common=" << c.common_messages;
          ++stats.broken_by_pruning;
        }
      }
      stats.pruning_events += !ctx.report.newly_pruned_seqs.empty();
      prev = ctx;
    }
    StoredMessage s;
    s.seq = static_cast<int64_t>(in.history.size() + 1);
    s.tokens = counter.CountMessage(m);
    s.message = m;
    in.history.push_back(std::move(s));
  }
  return stats;
}

std::vector<std::string> TrajectoryFiles(std::filesystem::path* dir) {
  const std::string readme = testing::TrajectoryPath("README.md");
  if (readme.empty() || !std::filesystem::exists(readme)) return {};
  *dir = std::filesystem::path(readme).parent_path();
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(*dir)) {
    if (e.path().extension() == ".jsonl") files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ReplayTest, RealTrajectoriesAt30kTokens) {
  std::filesystem::path dir;
  std::vector<std::string> files = TrajectoryFiles(&dir);
  if (files.empty()) GTEST_SKIP() << "no trajectories";
  ASSERT_GE(files.size(), 6u);
  int total_contexts = 0;
  for (const std::string& f : files) {
    std::vector<Message> messages = testing::LoadTrajectory((dir / f).string());
    ASSERT_FALSE(messages.empty()) << f;
    ReplayStats s = Replay(f, messages);
    total_contexts += s.contexts;
    std::printf(
        "replay %-36s %4zu msgs %4d contexts: identical prefix %4d, front-evicted %4d, "
        "broken by pruning %2d (pruning events %2d), max used %lld\n",
        f.c_str(), messages.size(), s.contexts, s.identical, s.front_evicted, s.broken_by_pruning,
        s.pruning_events, static_cast<long long>(s.max_used));
    EXPECT_GT(s.contexts, 0) << f;
  }
  EXPECT_GT(total_contexts, 500);
}

// Cache-friendly eviction: the daemon feeds back first_kept_seq as the anchor. Every
// invariant still holds, and most consecutive requests share their whole prefix.
TEST(ReplayTest, AnchoredEvictionKeepsPrefixesStable) {
  std::filesystem::path dir;
  std::vector<std::string> files = TrajectoryFiles(&dir);
  if (files.empty()) GTEST_SKIP() << "no trajectories";
  int pairs = 0, identical = 0;
  for (const std::string& f : files) {
    ReplayStats s = Replay(f + " (anchored)", testing::LoadTrajectory((dir / f).string()), true);
    pairs += s.contexts - 1;
    identical += s.identical;
  }
  std::printf("anchored eviction: %d of %d consecutive requests with an identical prefix\n",
              identical, pairs);
  EXPECT_GE(identical * 100, pairs * 85);
}

TEST(ReplayTest, Synthetic500Turns) {
  std::vector<Message> messages = SyntheticSession(500);
  ReplayStats s = Replay("synthetic-500", messages);
  std::printf(
      "replay synthetic-500 %zu msgs %d contexts: identical %d, front-evicted %d, "
      "broken by pruning %d (pruning events %d), max used %lld\n",
      messages.size(), s.contexts, s.identical, s.front_evicted, s.broken_by_pruning,
      s.pruning_events, static_cast<long long>(s.max_used));
  EXPECT_EQ(s.contexts, 1000);  // two assistant messages per turn
  EXPECT_GT(s.front_evicted, 0) << "a 500-turn session must evict at 30,000 tokens";
}

}  // namespace
}  // namespace missy

// FoldedHistory and the assembler's folded path: a context assembled from a folded
// prefix plus a window must be exactly the one the whole history gives (same messages,
// same report, byte for byte), or say needs_more_history.
#include "core/folded_history.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <cstdlib>
#include <random>

#include "context_test_helpers.h"
#include "core/assembler.h"
#include "core/context_report_json.h"
#include "random_context.h"

namespace missy {
namespace {

using testing::BytesCounter;
using testing::Conv;
using testing::Store;

std::string ReportJson(const ContextReport& r) {
  return boost::json::serialize(ContextReportToJson(r));
}

// Folds history[0, cut) of `in` into `folded` and keeps the rest as the window.
ContextInput FoldAt(const ContextInput& in, size_t cut, FoldedHistory& folded,
                    const MessageTokenCounter& counter) {
  ContextInput out = in;
  folded = FoldedHistory();
  folded.Fold(std::span<const StoredMessage>(in.history.data(), cut), counter);
  out.history.assign(in.history.begin() + static_cast<long>(cut), in.history.end());
  out.folded = &folded;
  return out;
}

TEST(FoldedHistoryTest, FoldRecordsSanitizerDecisionsAndRanks) {
  const MessageTokenCounter counter = BytesCounter();
  // u aTC(A) t(A) t(B: orphan) u aTC(C: unanswered when the folded part ends)
  std::vector<StoredMessage> h = Store(Conv("u aTC(A) t(A) t(B) u aTC(C)"), counter);
  FoldedHistory f;
  f.Fold(h, counter);
  ASSERT_EQ(f.size(), 6u);
  EXPECT_TRUE(f.messages()[0].kept);
  EXPECT_TRUE(f.messages()[1].kept);
  EXPECT_TRUE(f.messages()[2].kept);
  EXPECT_FALSE(f.messages()[3].kept);  // orphan
  EXPECT_TRUE(f.messages()[4].kept);
  EXPECT_FALSE(f.messages()[5].kept);  // unanswered call
  EXPECT_EQ(f.kept_count(), 4);
  EXPECT_EQ(f.messages()[4].kept_rank, 3);
  ASSERT_EQ(f.sanitized().size(), 2u);
  EXPECT_EQ(f.sanitized()[0].seq, 4);
  EXPECT_EQ(f.sanitized()[0].reason, "orphan_result");
  EXPECT_EQ(f.sanitized()[1].seq, 6);
  EXPECT_EQ(f.sanitized()[1].reason, "unanswered_call");
  // The pruned form's own text: the id "A" (no name) with one token per byte.
  EXPECT_EQ(f.messages()[2].id_name_tokens, 1);
  // Coverage of seqs 2..3 (the whole first tool group): kept members only.
  EXPECT_EQ(f.CountKeptIn({{2, 4}}), 2);
  EXPECT_EQ(f.CountKeptIn({{1, 6}}), 4);
  EXPECT_EQ(f.CountKeptIn({}), 0);
  auto last = f.LastKeptGroup({{5, 5}});
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->first_seq, 5);
  EXPECT_TRUE(last->covered);

  f.Unfold(4);
  EXPECT_EQ(f.size(), 3u);
  EXPECT_TRUE(f.sanitized().empty());
  EXPECT_EQ(f.kept_count(), 3);
}

TEST(FoldedHistoryTest, StatsAndThePruneWalkFollowCoverageFlagsAndCap) {
  const MessageTokenCounter counter = BytesCounter();
  std::vector<StoredMessage> h = Store(Conv("u aTC(A) t(A) u aTC(B) t(B)"), counter);
  h[2].message.text = std::string(500, 'x');
  h[2].tokens = counter.CountMessage(h[2].message);
  h[5].message.text = std::string(50, 'y');
  h[5].tokens = counter.CountMessage(h[5].message);
  FoldedHistory f;
  f.Fold(h, counter);
  FoldedStatsKey key{100, 10, {}};
  const FoldedStats& all = f.Stats(key);
  EXPECT_EQ(all.kept, 6);
  EXPECT_EQ(all.uncovered, 6);
  EXPECT_EQ(all.users, (std::vector<uint32_t>{0, 3}));
  // The 500-byte result costs the cap (100); pruned it costs 10 + "A".
  const int64_t small = h[5].tokens;
  EXPECT_EQ(all.tool_before.back(), 100 + small);
  EXPECT_EQ(all.freed_before.back(), (100 - 11) + (small - 11));

  PruningOptions o;
  o.protect_user_turns = 1;
  o.protect_tool_tokens = 0;
  // Saturated on arrival: both results are candidates.
  FoldedPrune p = f.ContinuePruneWalk(key, o, /*users_seen=*/1, /*tool_total=*/1);
  EXPECT_EQ(p.freed, (100 - 11) + (small - 11));
  EXPECT_EQ(f.PruneSeqs(key, p), (std::vector<int64_t>{3, 6}));
  // The newest `small` tokens of tool output are protected: only the big one remains.
  o.protect_tool_tokens = small;
  p = f.ContinuePruneWalk(key, o, 1, 0);
  EXPECT_EQ(f.PruneSeqs(key, p), (std::vector<int64_t>{3}));
  EXPECT_EQ(p.freed, 100 - 11);
  // One user turn protected and none seen yet: counting starts at the newer user message,
  // so only the older result is a candidate; with two, counting starts at the oldest
  // message and there is nothing older.
  o.protect_tool_tokens = 0;
  p = f.ContinuePruneWalk(key, o, 0, 0);
  EXPECT_EQ(f.PruneSeqs(key, p), (std::vector<int64_t>{3}));
  o.protect_user_turns = 2;
  EXPECT_TRUE(f.PruneSeqs(key, f.ContinuePruneWalk(key, o, 0, 0)).empty());
  o.protect_user_turns = 3;  // more turns protected than there are: nothing
  EXPECT_EQ(f.ContinuePruneWalk(key, o, 0, 1000).freed, 0);

  key.summaries = {{2, 2}};  // covers the first tool group (through its call)
  const FoldedStats& covered = f.Stats(key);
  EXPECT_EQ(covered.uncovered, 4);
  o.protect_user_turns = 0;
  EXPECT_EQ(f.PruneSeqs(key, f.ContinuePruneWalk(key, o, 0, 0)), (std::vector<int64_t>{6}));

  f.AddFlags({6}, kFlagPruned);
  const FoldedStats& after = f.Stats(key);
  EXPECT_EQ(after.tool_before.back(), 0);
  EXPECT_EQ(f.ContinuePruneWalk(key, o, 0, 0).freed, 0);
}

TEST(FoldedHistoryTest, FoldingInPiecesEqualsFoldingAtOnce) {
  const MessageTokenCounter counter = BytesCounter();
  std::vector<StoredMessage> h =
      Store(Conv("u aTC(A) t(A) t(A) u a aTC(B) t(B) u aTC(C,D) t(D) u t(X) a"), counter);
  FoldedHistory once, pieces;
  once.Fold(h, counter);
  pieces.Fold(std::span<const StoredMessage>(h.data(), 4), counter);
  pieces.Fold(std::span<const StoredMessage>(h.data() + 4, 4), counter);
  pieces.Fold(std::span<const StoredMessage>(h.data() + 8, h.size() - 8), counter);
  ASSERT_EQ(once.size(), pieces.size());
  for (size_t i = 0; i < once.size(); ++i) {
    EXPECT_EQ(once.messages()[i].kept, pieces.messages()[i].kept) << i;
    EXPECT_EQ(once.messages()[i].kept_rank, pieces.messages()[i].kept_rank) << i;
  }
  ASSERT_EQ(once.sanitized().size(), pieces.sanitized().size());
  for (size_t i = 0; i < once.sanitized().size(); ++i) {
    EXPECT_EQ(once.sanitized()[i].seq, pieces.sanitized()[i].seq);
    EXPECT_EQ(once.sanitized()[i].detail, pieces.sanitized()[i].detail);
  }
}

// The heart of it: over thousands of random inputs, folding at any safe cut gives the
// whole history's context exactly, or asks for more history.
TEST(FoldedHistoryTest, FoldedAssemblyEqualsWholeHistoryAssembly) {
  uint64_t base_seed = 20261124;
  if (const char* env = std::getenv("MISSY_PROPERTY_SEED"))
    base_seed = std::strtoull(env, nullptr, 10);
  const int kRuns = std::getenv("MISSY_PROPERTY_SEED") ? 1 : 2000;
  const MessageTokenCounter bytes = BytesCounter();
  const MessageTokenCounter heuristic(std::make_shared<HeuristicTokenCounter>());
  int compared = 0, needed_more = 0, compared_pruned = 0, compared_sanitized = 0,
      compared_dropped = 0, compared_anchored = 0;
  for (int run = 0; run < kRuns; ++run) {
    const uint64_t seed = base_seed + static_cast<uint64_t>(run);
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const MessageTokenCounter& counter = rng() % 3 == 0 ? heuristic : bytes;
    testing::Generated g = testing::RandomConversation(rng);
    if (rng() % 3 == 0) {  // an autonomous agent's session: one user message, then its work
      bool first = true;
      for (Message& m : g.conv) {
        if (m.role != Role::kUser) continue;
        if (!first) m = Message::Assistant(m.text);
        first = false;
      }
    }
    ContextInput in = testing::RandomContextInput(rng, g.conv, counter);
    if (!in.budget.Validate().ok()) continue;
    Result<AssembledContext> whole = AssembleContext(in, counter);
    ASSERT_FALSE(whole.ok() && whole->needs_more_history);
    std::vector<size_t> cuts;  // a sample of the safe cuts (all of them cost too much)
    for (size_t cut = 1; cut < in.history.size(); ++cut) {
      if (IsSafeFoldCut(in.history[cut].message)) cuts.push_back(cut);
    }
    std::shuffle(cuts.begin(), cuts.end(), rng);
    if (cuts.size() > 6) cuts.resize(6);
    for (size_t cut : cuts) {
      SCOPED_TRACE("cut=" + std::to_string(cut));
      FoldedHistory folded;
      ContextInput part = FoldAt(in, cut, folded, counter);
      Result<AssembledContext> got = AssembleContext(part, counter);
      if (got.ok() && got->needs_more_history) {
        ++needed_more;
        continue;
      }
      ASSERT_EQ(got.ok(), whole.ok()) << (got.ok() ? whole.status() : got.status()).ToString();
      if (!whole.ok()) {
        ASSERT_EQ(got.status().ToString(), whole.status().ToString());
        continue;
      }
      ++compared;
      ASSERT_EQ(got->messages, whole->messages);
      ASSERT_EQ(got->system, whole->system);
      ASSERT_EQ(got->kept_seqs, whole->kept_seqs);
      ASSERT_EQ(ReportJson(got->report), ReportJson(whole->report));
      compared_pruned += !whole->report.newly_pruned_seqs.empty() &&
                         whole->report.newly_pruned_seqs.front() < in.history[cut].seq;
      compared_sanitized += !folded.sanitized().empty();
      compared_dropped += whole->report.dropped_messages > 0;
      compared_anchored += whole->report.eviction != "fill";
    }
  }
  std::printf(
      "folded: %d compared, %d needed more history, %d pruned in the folded part, "
      "%d sanitized there, %d with drops, %d anchored\n",
      compared, needed_more, compared_pruned, compared_sanitized, compared_dropped,
      compared_anchored);
  if (kRuns > 1) {  // the comparisons must reach every part of the folded path
    EXPECT_GT(compared, 1000);
    EXPECT_GT(needed_more, 100);
    EXPECT_GT(compared_pruned, 10);
    EXPECT_GT(compared_sanitized, 10);
    EXPECT_GT(compared_dropped, 100);
    EXPECT_GT(compared_anchored, 10);
  }
}

}  // namespace
}  // namespace missy

#include "core/summary_plan.h"

#include <gtest/gtest.h>

namespace missy {
namespace {

// u aTC t t a, repeated: each round is 5 messages of `tokens` each.
std::vector<PlanMessage> Rounds(int rounds, int64_t tokens) {
  std::vector<PlanMessage> out;
  int64_t seq = 0;
  for (int r = 0; r < rounds; ++r) {
    for (Role role : {Role::kUser, Role::kAssistant, Role::kTool, Role::kTool, Role::kAssistant}) {
      out.push_back({++seq, role, tokens});
    }
  }
  return out;
}

TEST(SummaryPlanTest, LeafChunksAreWholeGroupsWithinTheLimitAndLeaveTheTail) {
  const std::vector<PlanMessage> m = Rounds(20, 100);  // 100 messages, 10,000 tokens
  SummarizerOptions o;
  o.leaf_chunk_tokens = 1200;
  const std::vector<LeafChunk> chunks = PlanLeafChunks(m, /*fresh_tail_count=*/12, o);
  ASSERT_FALSE(chunks.empty());
  size_t expect_begin = 0;
  for (const LeafChunk& c : chunks) {
    EXPECT_EQ(c.begin, expect_begin);  // contiguous, no gap, no overlap
    EXPECT_LE(c.tokens, 1200);
    EXPECT_NE(m[c.begin].role, Role::kTool) << "a chunk starts inside a group";
    if (c.end < m.size()) EXPECT_NE(m[c.end].role, Role::kTool) << "a chunk ends inside a group";
    expect_begin = c.end;
  }
  // The tail (last 12, moved back to a group start at index 87: u aTC t t a ... ) is left.
  EXPECT_LE(chunks.back().end, 88u);
  EXPECT_GE(chunks.back().end, 80u);
}

TEST(SummaryPlanTest, ASmallTrailingChunkWaitsUnlessForced) {
  SummarizerOptions o;
  o.leaf_chunk_tokens = 1000;
  // 30 messages of 100 tokens, no tail: chunks of 1000, 1000, then 1000; with 25 the last
  // chunk is 500 (half a chunk: kept), with 23 it is 300 (waits).
  std::vector<PlanMessage> m;
  for (int64_t i = 1; i <= 23; ++i) m.push_back({i, Role::kUser, 100});
  EXPECT_EQ(PlanLeafChunks(m, 0, o).size(), 2u);
  EXPECT_EQ(PlanLeafChunks(m, 0, o, /*force=*/true).size(), 3u);
  m.resize(5);  // 500 tokens: one chunk of exactly half
  EXPECT_EQ(PlanLeafChunks(m, 0, o).size(), 1u);
  m.resize(4);
  EXPECT_TRUE(PlanLeafChunks(m, 0, o).empty());
  EXPECT_TRUE(PlanLeafChunks(m, 10, o, true).empty());  // all of it is the fresh tail
}

TEST(SummaryPlanTest, AGroupLargerThanAChunkIsAChunkOfItsOwn) {
  SummarizerOptions o;
  o.leaf_chunk_tokens = 1000;
  std::vector<PlanMessage> m = {{1, Role::kUser, 100},
                                {2, Role::kAssistant, 100},
                                {3, Role::kTool, 5000},
                                {4, Role::kUser, 100}};
  const std::vector<LeafChunk> chunks = PlanLeafChunks(m, 0, o, true);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[1].begin, 1u);
  EXPECT_EQ(chunks[1].end, 3u);
  EXPECT_EQ(chunks[1].tokens, 5100);
}

TEST(SummaryPlanTest, CondensesTheOldestFanoutAtTheLowestFullDepth) {
  SummarizerOptions o;
  o.condensed_fanout = 4;
  std::vector<PlanSummary> s = {{"a", 0, 1}, {"b", 0, 10}, {"c", 0, 20}};
  EXPECT_TRUE(PlanCondensation(s, o).empty());
  s.push_back({"e", 0, 40});
  s.push_back({"d", 0, 30});
  s.push_back({"x", 1, 0});
  EXPECT_EQ(PlanCondensation(s, o), (std::vector<std::string>{"a", "b", "c", "d"}));
  // While all of them fit the room, nothing is condensed.
  for (PlanSummary& x : s) x.tokens = 1000;
  EXPECT_TRUE(PlanCondensation(s, o, /*room_tokens=*/6000).empty());
  EXPECT_EQ(PlanCondensation(s, o, /*room_tokens=*/5999).size(), 4u);
  std::vector<PlanSummary> upper = {
      {"p", 1, 1}, {"q", 1, 50}, {"r", 1, 90}, {"s", 1, 120}, {"t", 0, 200}};
  EXPECT_EQ(PlanCondensation(upper, o), (std::vector<std::string>{"p", "q", "r", "s"}));
}

}  // namespace
}  // namespace missy

#include "core/groups.h"

#include <gtest/gtest.h>

#include "context_test_helpers.h"

namespace missy {
namespace {

using testing::Conv;

std::string Spans(const std::vector<GroupSpan>& groups) {
  std::string out;
  for (const GroupSpan& g : groups) {
    if (!out.empty()) out += " ";
    out += "[" + std::to_string(g.begin) + "," + std::to_string(g.end) +
           (g.has_tool_calls ? ")*" : ")");
  }
  return out;
}

TEST(GroupsTest, Boundaries) {
  struct Case {
    const char* conv;
    const char* groups;  // [begin,end), * = tool-call group
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"u a", "[0,1) [1,2)"},
      {"u aTC(A) t(A) a", "[0,1) [1,3)* [3,4)"},
      // Chained: each call is its own group.
      {"u aTC(A) t(A) aTC(B) t(B) aTC(C) t(C) a", "[0,1) [1,3)* [3,5)* [5,7)* [7,8)"},
      // Parallel: one group with every result, in any order.
      {"u aTC(A,B,C) t(B) t(C) t(A) a", "[0,1) [1,5)* [5,6)"},
      // Parallel then chained.
      {"u aTC(A,B) t(A) t(B) aTC(C) t(C)", "[0,1) [1,4)* [4,6)*"},
      // A stray leading result forms its own group; a cut before it splits nothing.
      {"t(A) u", "[0,1) [1,2)"},
      {"s u aTC(A) t(A)", "[0,1) [1,2) [2,4)*"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.conv);
    std::vector<Message> m = Conv(c.conv);
    EXPECT_EQ(Spans(ComputeGroups(m)), c.groups);
  }
}

TEST(GroupsTest, FreshTailStartMovesBackToGroupStart) {
  struct Case {
    const char* conv;
    int64_t count;
    size_t start;
  };
  const std::vector<Case> cases = {
      {"u a u a", 2, 2},
      {"u a u a", 0, 4},
      {"u a u a", 10, 0},
      // Last 2 = t(B) a -> moved back to aTC(A,B) at 1.
      {"u aTC(A,B) t(A) t(B) a", 2, 1},
      // Last 1 = t(C) -> back to aTC(C) at 4, not further (chained groups are separate).
      {"u aTC(A) t(A) u aTC(C) t(C)", 1, 4},
      // Boundary exactly on a group start stays.
      {"u aTC(A) t(A) u aTC(C) t(C)", 3, 3},
      // Parallel group of 4 results: the cut inside moves to the call.
      {"u aTC(A,B,C,D) t(A) t(B) t(C) t(D)", 3, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.conv) + " count=" + std::to_string(c.count));
    std::vector<Message> m = Conv(c.conv);
    EXPECT_EQ(FreshTailStart(
                  m.size(), [&](size_t i) -> const Message& { return m[i]; }, c.count),
              c.start);
  }
}

TEST(GroupsTest, TurnsStartAtUserMessages) {
  std::vector<Message> m = Conv("s u aTC(A) t(A) a u a");
  MessageAt at = [&](size_t i) -> const Message& { return m[i]; };
  EXPECT_EQ(TurnStarts(m.size(), at), (std::vector<size_t>{1, 5}));
  EXPECT_EQ(LastTurnStart(m.size(), at), 5u);
  std::vector<Message> none = Conv("a a");
  EXPECT_EQ(LastTurnStart(none.size(), [&](size_t i) -> const Message& { return none[i]; }), 2u);
}

TEST(GroupsTest, StoredHistoryOverload) {
  std::vector<StoredMessage> h = testing::Store(Conv("u aTC(A) t(A) a"), testing::BytesCounter());
  EXPECT_EQ(Spans(ComputeGroups(h)), "[0,1) [1,3)* [3,4)");
  EXPECT_EQ(FreshTailStart(h, 2), 1u);
}

TEST(GroupsTest, ChunksForSummariesCutOnGroupBoundaries) {
  struct Case {
    const char* conv;
    int64_t max_tokens;  // every message costs 10
    const char* chunks;
  };
  const std::vector<Case> cases = {
      {"u a u a", 20, "[0,2) [2,4)"},
      // The 3-message group never splits: 30 > 25 gives it a chunk of its own.
      {"u aTC(A,B) t(A) t(B) a", 25, "[0,1) [1,4)* [4,5)"},
      {"u aTC(A) t(A) aTC(B) t(B) a", 40, "[0,3)* [3,6)*"},
      {"u a", 1000, "[0,2)"},
      {"", 10, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.conv) + " max=" + std::to_string(c.max_tokens));
    std::vector<Message> m = Conv(c.conv);
    EXPECT_EQ(Spans(ChunkOnGroups(
                  0, m.size(), [&](size_t i) -> const Message& { return m[i]; },
                  [](size_t) -> int64_t { return 10; }, c.max_tokens)),
              c.chunks);
  }
}

}  // namespace
}  // namespace missy

#include "daemon/service/history_cache.h"

#include <gtest/gtest.h>

namespace missy {
namespace {

std::vector<StoredMessage> Rows(int64_t first, int64_t last) {
  std::vector<StoredMessage> rows;
  for (int64_t seq = first; seq <= last; ++seq) {
    StoredMessage m;
    m.seq = seq;
    m.message = Message::User("m" + std::to_string(seq));
    rows.push_back(std::move(m));
  }
  return rows;
}

TEST(HistoryCacheTest, AppendsContinueAndGapsInvalidate) {
  HistoryCache cache;
  EXPECT_EQ(cache.Find("s"), nullptr);
  cache.Put("s", Rows(1, 3));
  cache.Appended("s", Rows(4, 5));
  auto h = cache.Find("s");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->size(), 5u);
  EXPECT_EQ(h->back().message.text, "m5");
  cache.Appended("s", Rows(7, 7));  // a gap: the cache no longer knows the history
  EXPECT_EQ(cache.Find("s"), nullptr);
  EXPECT_EQ(cache.cached_messages(), 0u);
}

TEST(HistoryCacheTest, FlagsAreAppliedByseq) {
  HistoryCache cache;
  cache.Put("s", Rows(1, 10));
  cache.FlagsAdded("s", {2, 9, 42}, kFlagPruned);
  auto h = cache.Find("s");
  EXPECT_EQ((*h)[1].flags, kFlagPruned);
  EXPECT_EQ((*h)[8].flags, kFlagPruned);
  EXPECT_EQ((*h)[0].flags, kFlagNone);
}

TEST(HistoryCacheTest, EvictsLeastRecentlyUsedBeyondTheByteBound) {
  const size_t four = 4 * ApproxBytes(Rows(1, 1)[0]);
  HistoryCache cache(/*max_bytes=*/2 * four + four / 2);
  cache.Put("a", Rows(1, 4));
  cache.Put("b", Rows(1, 4));
  ASSERT_NE(cache.Find("a"), nullptr);  // a is now the most recent
  cache.Put("c", Rows(1, 4));           // three entries exceed the bound: b goes
  EXPECT_EQ(cache.Find("b"), nullptr);
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_NE(cache.Find("c"), nullptr);
  EXPECT_EQ(cache.cached_messages(), 8u);
  EXPECT_EQ(cache.cached_bytes(), 2 * four);
  EXPECT_LE(cache.cached_bytes(), cache.max_bytes());
  auto huge = cache.Put("huge", Rows(1, 11));  // larger than the whole cache: not kept
  EXPECT_EQ(huge->size(), 11u);                // but handed back to the caller
  EXPECT_EQ(cache.Find("huge"), nullptr);
}

TEST(HistoryCacheTest, ChargesContentSoOneLargeMessageOutweighsManySmallOnes) {
  std::vector<StoredMessage> big = Rows(1, 1);
  big[0].message = Message::ToolResult("call_1", std::string(400 * 1024, 'x'));
  const size_t big_bytes = ApproxBytes(big[0]);
  EXPECT_GE(big_bytes, 400u * 1024);
  HistoryCache cache(/*max_bytes=*/big_bytes + 50 * ApproxBytes(Rows(1, 1)[0]));
  cache.Put("small", Rows(1, 40));  // 40 small messages fit beside the big one
  cache.Put("big", std::move(big));
  EXPECT_NE(cache.Find("small"), nullptr);
  cache.Appended("small", Rows(41, 60));  // now over the bound: "big" is the oldest
  EXPECT_EQ(cache.Find("big"), nullptr);
  EXPECT_EQ(cache.Find("small")->size(), 60u);
  cache.SetMaxBytes(0);  // the most recently used entry stays even over the bound
  EXPECT_EQ(cache.cached_sessions(), 1u);
}

}  // namespace
}  // namespace missy

#include "daemon/history_cache.h"

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

TEST(HistoryCacheTest, EvictsLeastRecentlyUsedBeyondTheBound) {
  HistoryCache cache(/*max_messages=*/10);
  cache.Put("a", Rows(1, 4));
  cache.Put("b", Rows(1, 4));
  ASSERT_NE(cache.Find("a"), nullptr);  // a is now the most recent
  cache.Put("c", Rows(1, 4));           // 12 > 10: b goes
  EXPECT_EQ(cache.Find("b"), nullptr);
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_NE(cache.Find("c"), nullptr);
  EXPECT_EQ(cache.cached_messages(), 8u);
  cache.Put("huge", Rows(1, 11));  // larger than the whole cache: not kept
  EXPECT_EQ(cache.Find("huge"), nullptr);
}

}  // namespace
}  // namespace missy

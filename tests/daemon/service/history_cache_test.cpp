#include "daemon/service/history_cache.h"

#include <gtest/gtest.h>

namespace missy {
namespace {

std::vector<StoredMessage> Rows(int64_t first, int64_t last, size_t bytes = 0) {
  std::vector<StoredMessage> rows;
  for (int64_t seq = first; seq <= last; ++seq) {
    StoredMessage m;
    m.seq = seq;
    m.tokens = 10;
    m.message = Message::User("m" + std::to_string(seq) + std::string(bytes, 'x'));
    rows.push_back(std::move(m));
  }
  return rows;
}

HistoryWindow Window(int64_t last, size_t bytes = 0) {
  HistoryWindow w;
  EXPECT_TRUE(w.Append(Rows(1, last, bytes)));
  return w;
}

TEST(HistoryCacheTest, AppendsContinueAndGapsInvalidate) {
  HistoryCache cache;
  EXPECT_EQ(cache.Find("s"), nullptr);
  cache.Put("s", Window(3));
  cache.Appended("s", Rows(4, 5));
  auto h = cache.Find("s");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->window().size(), 5u);
  EXPECT_EQ(h->window().back().message.text, "m5");
  EXPECT_EQ(cache.cached_messages(), 5u);
  EXPECT_EQ(cache.cached_bytes(), h->ApproxBytes());
  cache.Appended("s", Rows(7, 7));  // a gap: the cache no longer knows the history
  EXPECT_EQ(cache.Find("s"), nullptr);
  EXPECT_EQ(cache.cached_messages(), 0u);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(HistoryCacheTest, FlagsAreAppliedByseq) {
  HistoryCache cache;
  cache.Put("s", Window(10));
  cache.FlagsAdded("s", {2, 9, 42}, kFlagPruned);
  auto h = cache.Find("s");
  EXPECT_EQ(h->window()[1].flags, kFlagPruned);
  EXPECT_EQ(h->window()[8].flags, kFlagPruned);
  EXPECT_EQ(h->window()[0].flags, kFlagNone);
}

TEST(HistoryCacheTest, EvictsLeastRecentlyUsedBeyondTheByteBound) {
  const size_t one = Window(4).ApproxBytes();
  HistoryCache cache(/*max_bytes=*/2 * one + one / 2);
  cache.Put("a", Window(4));
  cache.Put("b", Window(4));
  ASSERT_NE(cache.Find("a"), nullptr);  // a is now the most recent
  cache.Put("c", Window(4));            // three entries exceed the bound: b goes
  EXPECT_EQ(cache.Find("b"), nullptr);
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_NE(cache.Find("c"), nullptr);
  EXPECT_EQ(cache.cached_messages(), 8u);
  EXPECT_EQ(cache.cached_bytes(), 2 * one);
  EXPECT_LE(cache.cached_bytes(), cache.max_bytes());
  auto huge = cache.Put("huge", Window(11, 100));  // larger than the whole cache: not kept
  EXPECT_EQ(huge->window().size(), 11u);           // but handed back to the caller
  EXPECT_EQ(cache.Find("huge"), nullptr);
}

TEST(HistoryCacheTest, ChargesContentSoOneLargeMessageOutweighsManySmallOnes) {
  HistoryWindow big;
  std::vector<StoredMessage> rows = Rows(1, 1);
  rows[0].message = Message::ToolResult("call_1", std::string(400 * 1024, 'x'));
  ASSERT_TRUE(big.Append(std::move(rows)));
  const size_t big_bytes = big.ApproxBytes();
  EXPECT_GE(big_bytes, 400u * 1024);
  const size_t small_bytes = Window(40).ApproxBytes();
  HistoryCache cache(/*max_bytes=*/big_bytes + small_bytes + small_bytes / 4);
  cache.Put("small", Window(40));  // 40 small messages fit beside the big one
  cache.Put("big", std::move(big));
  EXPECT_NE(cache.Find("small"), nullptr);
  cache.Appended("small", Rows(41, 60));  // now over the bound: "big" is the oldest
  EXPECT_EQ(cache.Find("big"), nullptr);
  EXPECT_EQ(cache.Find("small")->window().size(), 60u);
  cache.SetMaxBytes(0);  // the most recently used entry stays even over the bound
  EXPECT_EQ(cache.cached_sessions(), 1u);
}

TEST(HistoryCacheTest, RechargeFollowsAFoldOfTheEntry) {
  HistoryCache cache;
  cache.Put("s", Window(1000, 1000));  // about 1 MB of content
  auto h = cache.Find("s");
  const size_t before = cache.cached_bytes();
  EXPECT_GE(before, 1000u * 1000);
  WindowKeep keep;
  keep.tokens = 500;  // 50 messages of 10 tokens
  keep.messages = 10;
  h->set_keep(keep);
  const MessageTokenCounter counter(std::make_shared<HeuristicTokenCounter>());
  ASSERT_TRUE(h->Fold(counter));
  EXPECT_EQ(cache.cached_bytes(), before);  // not charged again yet
  cache.Recharge("s");
  EXPECT_EQ(cache.cached_messages(), 50u);
  EXPECT_EQ(cache.known_messages(), 1000u);
  EXPECT_EQ(cache.cached_bytes(), h->ApproxBytes());
  EXPECT_LT(cache.cached_bytes(), before / 10);
}

}  // namespace
}  // namespace missy

namespace missy {
namespace {

class ManualClock final : public Clock {
 public:
  int64_t NowMs() const override { return now; }
  int64_t now = 1000;
};

TEST(HistoryCacheTest, SessionsUnusedForTheIdleTimeAreReleased) {
  ManualClock clock;
  HistoryCache cache;
  cache.SetIdleRelease(&clock, 60'000);
  cache.Put("old", Window(5));
  clock.now += 30'000;
  cache.Put("recent", Window(5));
  clock.now += 20'000;
  EXPECT_EQ(cache.EvictIdle(), 0u);       // "old" unused for 50 s
  ASSERT_NE(cache.Find("old"), nullptr);  // used again: its idle time starts over
  clock.now += 45'000;                    // "recent" unused for 65 s, "old" for 45 s
  EXPECT_EQ(cache.EvictIdle(), 1u);
  EXPECT_EQ(cache.Find("recent"), nullptr);
  EXPECT_EQ(cache.cached_sessions(), 1u);
  clock.now += 61'000;
  cache.Put("new", Window(2));  // any access releases what has been idle too long
  EXPECT_EQ(cache.cached_sessions(), 1u);
  EXPECT_EQ(cache.Find("old"), nullptr);
  EXPECT_EQ(cache.cached_bytes(), cache.Find("new")->ApproxBytes());
  cache.SetIdleRelease(&clock, 0);  // 0: only the byte bound evicts
  clock.now += 1'000'000;
  EXPECT_EQ(cache.EvictIdle(), 0u);
  EXPECT_EQ(cache.cached_sessions(), 1u);
}

}  // namespace
}  // namespace missy

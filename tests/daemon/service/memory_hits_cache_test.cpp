#include "daemon/service/memory_hits_cache.h"

#include <gtest/gtest.h>

namespace missy {
namespace {

std::vector<MemoryHit> Hits(const std::string& id) { return {MemoryHit{"memory", id, "t", 1.0}}; }

TEST(MemoryHitsCacheTest, ReusedUntilTheDaemonChangesSomethingOrTheTtlEnds) {
  MemoryHitsCache cache;
  cache.Put("a", "fix the build", cache.Stamp("a"), 1000, Hits("m1"));
  ASSERT_TRUE(cache.Find("a", "fix the build", 1001).has_value());
  EXPECT_EQ(cache.Find("a", "fix the build", 1001)->front().id, "m1");
  EXPECT_FALSE(cache.Find("a", "another query", 1001).has_value());
  cache.ContentChanged("a");  // its own history is excluded from its search
  EXPECT_TRUE(cache.Find("a", "fix the build", 1002).has_value());
  cache.ContentChanged("b");  // another session's messages: bounded by the ttl only
  EXPECT_TRUE(cache.Find("a", "fix the build", 1003).has_value());
  EXPECT_FALSE(cache.Find("a", "fix the build", 1000 + 10001).has_value());
  cache.Put("a", "fix the build", cache.Stamp("a"), 1004, Hits("m2"));
  cache.ContentChanged("");  // a memory item or an import: everyone's results may change
  EXPECT_FALSE(cache.Find("a", "fix the build", 1005).has_value());
}

TEST(MemoryHitsCacheTest, AChangeDuringTheSearchKeepsItsResultOut) {
  MemoryHitsCache cache;
  const uint64_t stamp = cache.Stamp("a");
  cache.ContentChanged("");  // a memory item was added meanwhile
  cache.Put("a", "q", stamp, 1000, Hits("stale"));
  EXPECT_FALSE(cache.Find("a", "q", 1000).has_value());
  EXPECT_EQ(cache.size(), 0u);
}

TEST(MemoryHitsCacheTest, EntriesExpireAndTheLeastRecentSessionGoesFirst) {
  MemoryHitsCache cache(/*capacity=*/2, /*ttl_ms=*/100);
  cache.Put("a", "q", cache.Stamp("a"), 1000, Hits("a"));
  EXPECT_FALSE(cache.Find("a", "q", 1101).has_value());  // older than the ttl
  cache.Put("a", "q", cache.Stamp("a"), 2000, Hits("a"));
  cache.Put("b", "q", cache.Stamp("b"), 2000, Hits("b"));
  ASSERT_TRUE(cache.Find("a", "q", 2001).has_value());  // a is now the most recent
  cache.Put("c", "q", cache.Stamp("c"), 2002, Hits("c"));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_FALSE(cache.Find("b", "q", 2003).has_value());
  EXPECT_TRUE(cache.Find("a", "q", 2003).has_value());
  EXPECT_TRUE(cache.Find("c", "q", 2003).has_value());
}

}  // namespace
}  // namespace missy

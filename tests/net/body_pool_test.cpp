// BodyPool (daemon/net/body_pool.cpp): large bodies' memory is reused, within bounds.
#include "daemon/net/body_pool.h"

#include <gtest/gtest.h>

namespace missy::net {
namespace {

TEST(BodyPool, ANextTurnsSlightlyLargerBodyIsReadIntoTheLastOnesMemory) {
  BodyPool pool;
  const size_t size = 3 << 20;
  std::string first = pool.Take(size);
  ASSERT_EQ(first.size(), size);
  EXPECT_EQ(first.find_first_not_of('\0'), std::string::npos);
  EXPECT_GE(first.capacity(), size + size / 8);  // room for the conversation to grow
  first.assign(size, 'x');
  const char* memory = first.data();
  pool.Give(std::move(first));
  EXPECT_EQ(pool.kept_buffers(), 1u);

  std::string next = pool.Take(size + 4096);
  EXPECT_EQ(next.data(), memory);
  ASSERT_EQ(next.size(), size + 4096);
  // Not zeroed again (the read overwrites every byte): the old body up to its size, zeros
  // where it grew.
  EXPECT_EQ(next.find_first_not_of('x'), size);
  EXPECT_EQ(next.find_first_not_of('\0', size), std::string::npos);
  EXPECT_EQ(pool.kept_buffers(), 0u);
  EXPECT_EQ(pool.kept_bytes(), 0u);
}

TEST(BodyPool, SmallBodiesAreNotKeptAndTheBoundDropsTheSmallestFirst) {
  BodyPool pool;
  pool.Give(std::string(1000, 'a'));
  EXPECT_EQ(pool.kept_buffers(), 0u);
  std::vector<const char*> memory;
  for (size_t i = 0; i < BodyPool::kMaxBuffers + 2; ++i) {
    std::string b = pool.Take(BodyPool::kMinBytes * (i + 1));
    memory.push_back(b.data());
    pool.Give(std::move(b));
    // Each Take above found no kept buffer large enough: all are still kept.
  }
  EXPECT_EQ(pool.kept_buffers(), BodyPool::kMaxBuffers);
  // The largest survived: a Take of its size gets it.
  std::string largest = pool.Take(BodyPool::kMinBytes * (BodyPool::kMaxBuffers + 2));
  EXPECT_EQ(largest.data(), memory.back());
  // A buffer over the byte bound is never kept.
  std::string huge;
  huge.reserve(BodyPool::kMaxBytes + 1);
  pool.Give(std::move(huge));
  EXPECT_EQ(pool.kept_buffers(), BodyPool::kMaxBuffers - 1);
}

}  // namespace
}  // namespace missy::net

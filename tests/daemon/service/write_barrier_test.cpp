#include "daemon/service/write_barrier.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace missy {
namespace {

TEST(WriteBarrierTest, ARequestRunsAtOnceWhenNoWriteIsOpen) {
  WriteBarrier barrier;
  std::vector<std::string> ran;
  barrier.WhenSettled([&] { ran.push_back("read"); });
  EXPECT_EQ(ran, std::vector<std::string>{"read"});
  const WriteBarrier::Ticket t = barrier.Begin();
  barrier.End(t);
  barrier.WhenSettled([&] { ran.push_back("after"); });
  EXPECT_EQ(ran, (std::vector<std::string>{"read", "after"}));
  EXPECT_EQ(barrier.open_writes(), 0u);
}

TEST(WriteBarrierTest, ARequestWaitsForEveryWriteBegunBeforeItAndOnlyThose) {
  WriteBarrier barrier;
  std::vector<std::string> ran;
  const WriteBarrier::Ticket first = barrier.Begin();
  const WriteBarrier::Ticket second = barrier.Begin();
  barrier.WhenSettled([&] { ran.push_back("a"); });  // waits for first and second
  const WriteBarrier::Ticket third = barrier.Begin();  // begun after "a": never holds it
  barrier.WhenSettled([&] { ran.push_back("b"); });   // waits for all three
  barrier.End(second);
  EXPECT_TRUE(ran.empty());
  barrier.End(first);
  EXPECT_EQ(ran, std::vector<std::string>{"a"});
  EXPECT_EQ(barrier.open_writes(), 1u);
  barrier.End(third);
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "b"}));
}

TEST(WriteBarrierTest, AHeldRequestRunsOnTheThreadThatEndsTheWrite) {
  WriteBarrier barrier;
  const WriteBarrier::Ticket t = barrier.Begin();
  std::thread::id ran_on;
  barrier.WhenSettled([&] { ran_on = std::this_thread::get_id(); });
  std::thread writer([&] { barrier.End(t); });
  const std::thread::id writer_id = writer.get_id();
  writer.join();
  EXPECT_EQ(ran_on, writer_id);
}

}  // namespace
}  // namespace missy

// RelayThreads (daemon/proxy/relay_threads.cpp): a proxied request runs at once on a thread
// of its own, an idle one reused; idle threads end; the pool waits for running tasks.
#include "daemon/proxy/relay_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <thread>

namespace missy::proxy {
namespace {

using namespace std::chrono_literals;

// Waits until `done` holds, for at most 5 s.
template <typename F>
bool Eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Turns one after the other (each once the last one's thread is idle again) run on the
// same thread: no thread is created per turn.
TEST(RelayThreadsTest, ATaskAfterAnotherReusesItsThread) {
  RelayThreads pool;
  std::set<std::thread::id> ids;
  for (int turn = 0; turn < 20; ++turn) {
    std::promise<std::thread::id> ran;
    pool.Run([&] { ran.set_value(std::this_thread::get_id()); });
    ids.insert(ran.get_future().get());
    ASSERT_TRUE(Eventually([&] { return pool.idle() == 1; }));
    EXPECT_EQ(pool.threads(), 1u);
  }
  EXPECT_EQ(ids.size(), 1u);
  EXPECT_NE(*ids.begin(), std::this_thread::get_id());
}

// Tasks that block (a relay waits for its upstream) never wait for each other: eight that
// each wait until all eight run complete, on eight threads.
TEST(RelayThreadsTest, BlockingTasksEachGetAThreadAtOnce) {
  RelayThreads pool;
  std::atomic<int> started{0};
  std::atomic<int> together{0};  // tasks that saw all eight started
  std::atomic<int> finished{0};
  for (int round = 0; round < 3; ++round) {  // the later rounds on the idle threads
    started = 0;
    together = 0;
    finished = 0;
    for (int i = 0; i < 8; ++i) {
      pool.Run([&] {
        ++started;
        if (Eventually([&] { return started.load() == 8; })) ++together;
        ++finished;
      });
    }
    ASSERT_TRUE(Eventually([&] { return finished.load() == 8; })) << "round " << round;
    EXPECT_EQ(together.load(), 8) << "round " << round;
    EXPECT_TRUE(Eventually([&] { return pool.idle() == 8; }));
    EXPECT_EQ(pool.threads(), 8u);
  }
}

// A thread idle for longer than the pool keeps one ends; the next task gets a new one.
TEST(RelayThreadsTest, IdleThreadsEnd) {
  RelayThreads pool(50ms);
  std::promise<void> ran;
  pool.Run([&] { ran.set_value(); });
  ran.get_future().get();
  EXPECT_TRUE(Eventually([&] { return pool.threads() == 0; }));
  std::promise<void> again;
  pool.Run([&] { again.set_value(); });
  EXPECT_EQ(again.get_future().wait_for(5s), std::future_status::ready);
}

// The pool's end waits for the tasks still running.
TEST(RelayThreadsTest, TheEndWaitsForRunningTasks) {
  std::atomic<bool> finished{false};
  {
    RelayThreads pool;
    std::promise<void> started;
    pool.Run([&] {
      started.set_value();
      std::this_thread::sleep_for(100ms);
      finished = true;
    });
    started.get_future().get();
  }
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace missy::proxy

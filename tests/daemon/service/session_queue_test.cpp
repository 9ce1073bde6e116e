#include "daemon/service/session_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace missy {
namespace {

constexpr std::chrono::seconds kWaitLimit{10};

TEST(ServiceSessionQueueTest, OneSessionRunsOneTaskAtATimeInOrderAcrossReleasingThreads) {
  SessionQueue queue;
  constexpr int kTasks = 60;
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> releasers;
  std::atomic<int> active{0};
  std::atomic<int> max_active{0};
  std::promise<void> all_done;

  for (int i = 0; i < kTasks; ++i) {
    queue.Run("s", [&, i](SessionQueue::Release release) {
      const int now = ++active;
      int seen = max_active.load();
      while (now > seen && !max_active.compare_exchange_weak(seen, now)) {
      }
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
      // Released later, from a thread of its own: the next task starts there.
      releasers.emplace_back([&, i, release = std::move(release)] {
        --active;
        if (i == kTasks - 1) all_done.set_value();
        release();
      });
    });
  }
  ASSERT_EQ(all_done.get_future().wait_for(kWaitLimit), std::future_status::ready);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (std::thread& t : releasers) t.join();
  }
  ASSERT_EQ(order.size(), static_cast<size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(max_active.load(), 1);
  EXPECT_EQ(queue.busy_sessions(), 0u);
}

TEST(ServiceSessionQueueTest, TasksQueuedFromManyThreadsNeverOverlap) {
  SessionQueue queue;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50;
  std::atomic<int> active{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> ran{0};
  std::mutex mu;
  std::vector<std::vector<int>> seen_by_thread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        queue.Run("s", [&, t, i](SessionQueue::Release release) {
          if (++active != 1) ++overlaps;
          {
            std::lock_guard<std::mutex> lock(mu);
            seen_by_thread[t].push_back(i);
          }
          ++ran;
          --active;
          release();
        });
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(ran.load(), kThreads * kPerThread);
  EXPECT_EQ(overlaps.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(seen_by_thread[t].size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) EXPECT_EQ(seen_by_thread[t][i], i) << "thread " << t;
  }
  EXPECT_EQ(queue.busy_sessions(), 0u);
}

TEST(ServiceSessionQueueTest, DifferentSessionsDoNotWaitForEachOther) {
  SessionQueue queue;
  SessionQueue::Release release_a;
  bool ran_a2 = false, ran_b = false;
  queue.Run("a", [&](SessionQueue::Release r) { release_a = std::move(r); });
  queue.Run("a", [&](SessionQueue::Release) { ran_a2 = true; });
  EXPECT_FALSE(ran_a2);  // behind the first task of "a"
  EXPECT_EQ(queue.busy_sessions(), 1u);
  queue.Run("b", [&](SessionQueue::Release) { ran_b = true; });
  EXPECT_TRUE(ran_b);  // "b" was idle: ran at once, while "a" is busy
  EXPECT_FALSE(ran_a2);
  release_a();
  EXPECT_TRUE(ran_a2);
  EXPECT_EQ(queue.busy_sessions(), 0u);
}

TEST(ServiceSessionQueueTest, DifferentSessionsRunConcurrently) {
  SessionQueue queue;
  std::promise<void> a_started, b_ran;
  std::shared_future<void> b_ran_f = b_ran.get_future().share();
  std::atomic<bool> a_saw_b{false};
  // The task of "a" waits, inside the queue, for the task of "b": if the two were
  // serialised, it would time out.
  std::thread a([&] {
    queue.Run("a", [&](SessionQueue::Release release) {
      a_started.set_value();
      a_saw_b = b_ran_f.wait_for(kWaitLimit) == std::future_status::ready;
      release();
    });
  });
  ASSERT_EQ(a_started.get_future().wait_for(kWaitLimit), std::future_status::ready);
  queue.Run("b", [&](SessionQueue::Release release) {
    b_ran.set_value();
    release();
  });
  a.join();
  EXPECT_TRUE(a_saw_b.load());
  EXPECT_EQ(queue.busy_sessions(), 0u);
}

TEST(ServiceSessionQueueTest, ADroppedReleaseStillLetsTheNextTaskRun) {
  SessionQueue queue;
  // Dropped inside the task.
  queue.Run("s", [](SessionQueue::Release) {});
  bool ran = false;
  queue.Run("s", [&](SessionQueue::Release) { ran = true; });
  EXPECT_TRUE(ran);

  // Kept, then destroyed uncalled on another thread: the next task starts there.
  SessionQueue::Release kept;
  queue.Run("s", [&](SessionQueue::Release r) { kept = std::move(r); });
  std::atomic<bool> ran_next{false};
  std::thread::id ran_on;
  queue.Run("s", [&](SessionQueue::Release) {
    ran_on = std::this_thread::get_id();
    ran_next = true;
  });
  EXPECT_FALSE(ran_next.load());
  std::thread::id dropper_id;
  std::thread dropper([&, r = std::move(kept)]() mutable {
    dropper_id = std::this_thread::get_id();
    SessionQueue::Release gone = std::move(r);
  });
  dropper.join();
  EXPECT_TRUE(ran_next.load());
  EXPECT_EQ(ran_on, dropper_id);
  EXPECT_EQ(queue.busy_sessions(), 0u);
}

TEST(ServiceSessionQueueTest, ReleasingTwiceReleasesOnce) {
  SessionQueue queue;
  SessionQueue::Release first, second;
  bool third_ran = false;
  queue.Run("s", [&](SessionQueue::Release r) { first = std::move(r); });
  queue.Run("s", [&](SessionQueue::Release r) { second = std::move(r); });
  queue.Run("s", [&](SessionQueue::Release) { third_ran = true; });
  first();
  first();  // must not start the third while the second still runs
  EXPECT_FALSE(third_ran);
  ASSERT_TRUE(second);
  second();
  EXPECT_TRUE(third_ran);
  first = nullptr;
  second = nullptr;
  EXPECT_EQ(queue.busy_sessions(), 0u);
}

}  // namespace
}  // namespace missy

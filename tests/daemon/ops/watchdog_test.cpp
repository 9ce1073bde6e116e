// The watchdog pings only while both the event loop and the storage writer answer.
#include "daemon/ops/watchdog.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace missy::ops {
namespace {

using namespace std::chrono_literals;

// A write probe the test answers by hand (a stuck writer never answers).
struct FakeWriter {
  std::mutex mu;
  std::vector<std::function<void()>> pending;
  int issued = 0;
  Watchdog::WriteProbe Probe() {
    return [this](std::function<void()> committed) {
      std::lock_guard<std::mutex> lock(mu);
      ++issued;
      pending.push_back(std::move(committed));
    };
  }
  void CommitAll() {
    std::vector<std::function<void()>> run;
    {
      std::lock_guard<std::mutex> lock(mu);
      run.swap(pending);
    }
    for (auto& f : run) f();
  }
};

class WatchdogTest : public ::testing::Test {
 protected:
  WatchdogTest() { spdlog::set_level(spdlog::level::off); }
  ~WatchdogTest() override { spdlog::set_level(spdlog::level::warn); }
  FakeWriter writer;
  int pings = 0;
  Watchdog dog{1h, writer.Probe(), [this] { ++pings; }};
};

TEST_F(WatchdogTest, PingsWhileTheLoopBeatsAndTheWriterCommits) {
  dog.Arm();
  EXPECT_EQ(pings, 1);  // start-up completed
  EXPECT_EQ(writer.issued, 1);
  for (int i = 0; i < 3; ++i) {
    dog.LoopBeat();
    writer.CommitAll();
    EXPECT_TRUE(dog.Tick()) << "tick " << i;
  }
  EXPECT_EQ(pings, 4);
  EXPECT_EQ(writer.issued, 4);  // one probe per tick
}

TEST_F(WatchdogTest, AStuckWriterStopsThePingsUntilItCommitsAgain) {
  dog.Arm();
  dog.LoopBeat();
  writer.CommitAll();
  EXPECT_TRUE(dog.Tick());
  // The writer hangs: the probe issued by that tick never commits.
  for (int i = 0; i < 3; ++i) {
    dog.LoopBeat();
    EXPECT_FALSE(dog.Tick()) << "tick " << i;
  }
  EXPECT_EQ(pings, 2);
  EXPECT_EQ(writer.issued, 2);  // no pile of probes behind the stuck one
  // It recovers: the pending probe commits, the next tick pings and probes again.
  writer.CommitAll();
  dog.LoopBeat();
  EXPECT_TRUE(dog.Tick());
  EXPECT_EQ(pings, 3);
  EXPECT_EQ(writer.issued, 3);
}

TEST_F(WatchdogTest, ASilentLoopStopsThePings) {
  dog.Arm();
  writer.CommitAll();
  EXPECT_FALSE(dog.Tick());  // no LoopBeat since Arm
  EXPECT_EQ(pings, 1);
  writer.CommitAll();
  dog.LoopBeat();
  EXPECT_TRUE(dog.Tick());
  // A beat counts for one tick only.
  writer.CommitAll();
  EXPECT_FALSE(dog.Tick());
  EXPECT_EQ(pings, 2);
}

TEST_F(WatchdogTest, AnAnswerAfterTheWatchdogIsGoneIsIgnored) {
  FakeWriter late;
  {
    Watchdog short_lived(1h, late.Probe(), [] {});
    short_lived.Arm();
  }
  late.CommitAll();  // must not touch the destroyed watchdog (ASan would say so)
  EXPECT_EQ(late.issued, 1);
}

TEST(WatchdogThreadTest, TicksEveryPeriodOnItsOwnThread) {
  spdlog::set_level(spdlog::level::off);
  std::atomic<int> pings{0};
  Watchdog dog(
      20ms, [](std::function<void()> committed) { committed(); }, [&pings] { pings.fetch_add(1); });
  std::atomic<bool> stop{false};
  std::thread loop([&] {
    while (!stop) {
      dog.LoopBeat();
      std::this_thread::sleep_for(2ms);
    }
  });
  dog.Start();
  std::this_thread::sleep_for(300ms);
  dog.Stop();
  const int after_stop = pings.load();
  std::this_thread::sleep_for(60ms);
  stop = true;
  loop.join();
  spdlog::set_level(spdlog::level::warn);
  EXPECT_GE(after_stop, 5);  // 1 at Start, then ~14 ticks in 300 ms on a busy machine
  EXPECT_LE(after_stop, 17);
  EXPECT_EQ(pings.load(), after_stop);  // nothing after Stop
}

}  // namespace
}  // namespace missy::ops

// Watchdog: pings the service manager every `period` (half its WatchdogSec) only while
// the daemon is alive where it matters: the event loop beat since the previous tick
// (LoopBeat(), from a loop timer) and the storage writer committed the no-op write issued
// at the previous tick. A stuck loop or writer stops the pings, so the manager restarts
// the daemon instead of leaving it hung. Thread-safe; a probe answered after the
// Watchdog is gone is ignored.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace missy::ops {

class Watchdog {
 public:
  // Starts one no-op write; calls `committed` once it committed (or failed: the writer
  // answered either way), on any thread.
  using WriteProbe = std::function<void(std::function<void()> committed)>;

  Watchdog(std::chrono::milliseconds period, WriteProbe probe, std::function<void()> ping);
  ~Watchdog();  // Stop()
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The event loop is alive (call it several times per period from a loop timer).
  void LoopBeat();

  // Pings once (start-up just completed) and issues the first write probe.
  void Arm();
  // One decision: pings iff the loop beat and a write probe committed since the previous
  // Tick (or Arm); then issues the next probe unless the last one is still pending.
  // Returns whether it pinged.
  bool Tick();

  // Arm(), then Tick() every period on a thread of its own, until Stop(). Idempotent.
  void Start();
  void Stop();

 private:
  struct State {
    std::mutex mu;
    bool loop_beat = false;
    bool probe_pending = false;
    bool probe_answered = false;
  };
  void Probe();

  const std::chrono::milliseconds period_;
  WriteProbe probe_;
  std::function<void()> ping_;
  std::shared_ptr<State> state_ = std::make_shared<State>();

  std::mutex thread_mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace missy::ops

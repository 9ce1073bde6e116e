// The watchdog's probes and pings. See watchdog.h.
#include "daemon/ops/watchdog.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace missy::ops {

Watchdog::Watchdog(std::chrono::milliseconds period, WriteProbe probe, std::function<void()> ping)
    : period_(period), probe_(std::move(probe)), ping_(std::move(ping)) {}

Watchdog::~Watchdog() { Stop(); }

void Watchdog::LoopBeat() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->loop_beat = true;
}

void Watchdog::Probe() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->probe_pending) return;
    state_->probe_pending = true;
  }
  std::weak_ptr<State> weak = state_;
  probe_([weak] {
    std::shared_ptr<State> state = weak.lock();
    if (!state) return;
    std::lock_guard<std::mutex> lock(state->mu);
    state->probe_pending = false;
    state->probe_answered = true;
  });
}

void Watchdog::Arm() {
  ping_();
  Probe();
}

bool Watchdog::Tick() {
  bool healthy = false;
  bool loop = false;
  bool writer = false;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    loop = state_->loop_beat;
    writer = state_->probe_answered;
    healthy = loop && writer;
    state_->loop_beat = false;
    state_->probe_answered = false;
  }
  if (healthy) {
    ping_();
  } else {
    spdlog::warn("watchdog: not pinging ({}{})", loop ? "" : "event loop silent",
                 writer ? ""
                 : loop ? "storage writer silent"
                        : ", storage writer silent");
  }
  Probe();
  return healthy;
}

void Watchdog::Start() {
  std::lock_guard<std::mutex> lock(thread_mu_);
  if (thread_.joinable() || stop_) return;
  Arm();
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(thread_mu_);
    while (!wake_.wait_for(lock, period_, [this] { return stop_; })) {
      lock.unlock();
      Tick();
      lock.lock();
    }
  });
}

void Watchdog::Stop() {
  {
    std::lock_guard<std::mutex> lock(thread_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace missy::ops

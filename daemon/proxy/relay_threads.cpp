#include "daemon/proxy/relay_threads.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace missy::proxy {

// Each queued task has claimed one idle thread: the waiting threads are `idle` plus the
// tasks queued, so a task never waits for a busy thread.
struct RelayThreads::State {
  std::mutex mu;
  std::condition_variable work;  // a task queued, or stopping
  std::condition_variable gone;  // a thread ended
  std::deque<std::function<void()>> queue;
  size_t idle = 0;
  size_t threads = 0;
  bool stopping = false;
  std::chrono::milliseconds idle_for{0};

  static void Loop(const std::shared_ptr<State>& self, std::function<void()> task) {
    State& s = *self;
    for (;;) {
      task();
      task = nullptr;
      std::unique_lock<std::mutex> lock(s.mu);
      ++s.idle;
      s.work.wait_for(lock, s.idle_for, [&] { return !s.queue.empty() || s.stopping; });
      if (!s.queue.empty()) {  // a task claimed this thread (or another idle one)
        task = std::move(s.queue.front());
        s.queue.pop_front();
        continue;
      }
      --s.idle;  // idle for too long, or stopping: this thread ends
      --s.threads;
      s.gone.notify_all();
      return;
    }
  }
};

RelayThreads::RelayThreads(std::chrono::milliseconds idle_for)
    : state_(std::make_shared<State>()) {
  state_->idle_for = idle_for;
}

RelayThreads::~RelayThreads() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->stopping = true;
  state_->work.notify_all();
  state_->gone.wait(lock, [this] { return state_->threads == 0; });
}

void RelayThreads::Run(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->idle > 0) {
      --state_->idle;
      state_->queue.push_back(std::move(task));
      state_->work.notify_one();
      return;
    }
    ++state_->threads;
  }
  std::thread([state = state_, task = std::move(task)]() mutable {
    State::Loop(state, std::move(task));
  }).detach();
}

size_t RelayThreads::threads() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->threads;
}

size_t RelayThreads::idle() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->idle;
}

}  // namespace missy::proxy

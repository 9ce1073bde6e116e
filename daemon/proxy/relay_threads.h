// RelayThreads: the threads proxied requests run on. A request blocks its thread for its
// whole upstream call (minutes, for a long answer), so their number is not bounded here:
// a task runs on an idle thread when there is one, else on a new one. A thread idle for
// `idle_for` ends. Creating a thread took 0.3 ms of each turn on the bench's machine
// (bench/proxy/RESULTS.md); an agent's next turn now reuses the last one's thread.
//
// Thread-safe. The destructor waits for the tasks running and lets the idle threads go.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

namespace missy::proxy {

class RelayThreads {
 public:
  explicit RelayThreads(std::chrono::milliseconds idle_for = std::chrono::seconds(60));
  ~RelayThreads();
  RelayThreads(const RelayThreads&) = delete;
  RelayThreads& operator=(const RelayThreads&) = delete;

  // Runs `task` now on a thread of its own (an idle one or a new one).
  void Run(std::function<void()> task);
  // Threads alive now (running a task or idle), and of them the idle ones.
  size_t threads() const;
  size_t idle() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the threads, which may end after this
};

}  // namespace missy::proxy

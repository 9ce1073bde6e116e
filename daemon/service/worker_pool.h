// WorkerPool: a few threads that run the service layer's continuations, so that work
// following a commit (the next queued task of a session, encoding an answer) never
// runs on the storage writer's thread, where it would delay the next group commit.
// Post() is thread-safe and never blocks; after Stop() a posted task runs inline.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace missy {

class WorkerPool {
 public:
  explicit WorkerPool(int threads = 2);
  ~WorkerPool();  // Stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Post(std::function<void()> task);
  // Returns once every task posted so far (and those they posted) has run.
  void Drain();
  // Drains, then joins the threads.
  void Stop();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> tasks_;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace missy

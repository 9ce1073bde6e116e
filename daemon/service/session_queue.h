// SessionQueue: runs work for one session one piece at a time, without holding a lock
// across a commit. A task receives a `release` function and calls it when its work is
// finished (possibly later, from another thread, e.g. after its write committed); the
// next task queued for the same session then starts on the thread that released.
// Tasks of different sessions run concurrently. Thread-safe. A task that never calls
// release blocks its session: release is also called when the function is destroyed
// uncalled.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace missy {

class SessionQueue {
 public:
  using Release = std::function<void()>;
  using Task = std::function<void(Release release)>;

  // Runs `task` now if the session is idle, else after the tasks queued before it.
  void Run(const std::string& session_id, Task task);
  // Sessions with a task running or queued.
  size_t busy_sessions() const;

 private:
  void Start(const std::string& session_id, Task task);
  void Finish(const std::string& session_id);

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::deque<Task>> waiting_;  // present: a task is running
};

}  // namespace missy

#include "daemon/service/session_queue.h"

#include <atomic>

namespace missy {

namespace {

// Calls `fn` once: when invoked, or when the last copy is destroyed uncalled.
class OnceGuard {
 public:
  explicit OnceGuard(std::function<void()> fn) : fn_(std::move(fn)) {}
  ~OnceGuard() { Fire(); }
  void Fire() {
    if (!fired_.exchange(true)) fn_();
  }

 private:
  std::function<void()> fn_;
  std::atomic<bool> fired_{false};
};

}  // namespace

void SessionQueue::Run(const std::string& session_id, Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, idle] = waiting_.try_emplace(session_id);
    if (!idle) {
      it->second.push_back(std::move(task));
      return;
    }
  }
  Start(session_id, std::move(task));
}

void SessionQueue::Start(const std::string& session_id, Task task) {
  auto guard = std::make_shared<OnceGuard>([this, session_id] { Finish(session_id); });
  task([guard] { guard->Fire(); });
}

void SessionQueue::Finish(const std::string& session_id) {
  Task next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = waiting_.find(session_id);
    if (it == waiting_.end()) return;
    if (it->second.empty()) {
      waiting_.erase(it);
      return;
    }
    next = std::move(it->second.front());
    it->second.pop_front();
  }
  Start(session_id, std::move(next));
}

size_t SessionQueue::busy_sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

}  // namespace missy

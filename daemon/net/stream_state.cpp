// StreamState. See stream_state.h.
#include "daemon/net/stream_state.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace missy::net {

bool StreamState::NotifyLocked() {
  if (notified_) return false;
  notified_ = true;
  return true;
}

bool StreamState::Write(std::shared_ptr<const std::string> chunk) {
  if (!chunk || chunk->empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (dead_.load() || ended_.load()) return false;
  unsent_ += chunk->size();
  if (unsent_ > limit_) {
    spdlog::warn("stream cut: the peer reads too slowly ({} unsent bytes, limit {})", unsent_,
                 limit_);
    cut_ = true;
    dead_ = true;
    queue_.clear();
    return NotifyLocked();
  }
  queue_.push_back(std::move(chunk));
  return NotifyLocked();
}

bool StreamState::End() {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_.exchange(true) || dead_.load()) return false;
  return NotifyLocked();
}

StreamState::Batch StreamState::Take(size_t max_bytes) {
  Batch batch;
  std::lock_guard<std::mutex> lock(mu_);
  notified_ = false;
  if (cut_) {
    batch.cut = true;
    return batch;
  }
  while (!queue_.empty() && (batch.chunks.empty() || batch.bytes < max_bytes)) {
    batch.bytes += queue_.front()->size();
    batch.chunks.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  if (queue_.empty() && ended_.load() && !end_taken_) {
    end_taken_ = true;
    batch.last = true;
  }
  return batch;
}

size_t StreamState::unsent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unsent_;
}

bool StreamState::WaitSent(std::chrono::milliseconds max) const {
  std::unique_lock<std::mutex> lock(mu_);
  return sent_.wait_for(lock, max, [&] { return unsent_ == 0 || dead_.load(); });
}

void StreamState::Written(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  unsent_ -= std::min(unsent_, bytes);
  if (unsent_ == 0) sent_.notify_all();
}

void StreamState::MarkDead() {
  std::lock_guard<std::mutex> lock(mu_);
  dead_ = true;
  queue_.clear();
  unsent_ = 0;
  sent_.notify_all();
}

}  // namespace missy::net

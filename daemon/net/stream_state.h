// StreamState: the queue between one BodyStream (written on any thread) and its
// connection (which drains it on its strand). No Asio here.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace missy::net {

// The queue between one BodyStream (any thread) and its connection (its strand).
class StreamState {
 public:
  explicit StreamState(size_t limit) : limit_(limit) {}

  // Producer side; each returns true when the connection must be notified (at most one
  // notification is outstanding). Over `limit` unsent bytes the stream is cut.
  bool Write(std::shared_ptr<const std::string> chunk);
  bool End();
  bool closed() const { return dead_.load() || ended_.load(); }
  size_t unsent() const;
  // Waits, at most `max`, until no written byte is left unsent (or the connection is gone).
  // True when none is.
  bool WaitSent(std::chrono::milliseconds max) const;

  // Connection side.
  struct Batch {
    std::vector<std::shared_ptr<const std::string>> chunks;
    size_t bytes = 0;
    bool last = false;  // End() was called and every chunk is in this or an earlier batch
    bool cut = false;   // the producer overran the limit: close the connection
  };
  // Up to about `max_bytes` of queued chunks (at least one). Clears the notification.
  Batch Take(size_t max_bytes);
  // `bytes` of taken chunks were written.
  void Written(size_t bytes);
  // The connection is gone; later writes are dropped.
  void MarkDead();

 private:
  bool NotifyLocked();

  const size_t limit_;
  mutable std::mutex mu_;
  mutable std::condition_variable sent_;  // unsent_ fell to 0, or the connection went
  std::deque<std::shared_ptr<const std::string>> queue_;
  size_t unsent_ = 0;  // queued or being written
  bool end_taken_ = false;
  bool cut_ = false;
  bool notified_ = false;
  std::atomic<bool> dead_{false};
  std::atomic<bool> ended_{false};
};

}  // namespace missy::net

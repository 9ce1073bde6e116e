#include "daemon/net/body_pool.h"

#include <algorithm>

namespace missy::net {

BodyPool& BodyPool::Shared() {
  static BodyPool* pool = new BodyPool();  // never destroyed: bodies may come back at exit
  return *pool;
}

std::string BodyPool::Take(size_t size) {
  std::string out;
  if (size >= kMinBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    // The smallest kept buffer that holds `size` (they are sorted largest first).
    for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it) {
      if (it->capacity() >= size) {
        bytes_ -= it->capacity();
        out = std::move(*it);
        buffers_.erase(std::next(it).base());
        break;
      }
    }
  }
  if (out.capacity() < size) out.reserve(size + size / 8);
  // A kept buffer keeps its old size (its bytes are overwritten by the read): resizing
  // fills only what it grows by, not the whole body (a memset of 9 MB a turn).
  out.resize(size);
  return out;
}

void BodyPool::Give(std::string&& body) {
  if (body.capacity() < kMinBytes || body.capacity() > kMaxBytes) return;
  std::string kept = std::move(body);  // not cleared: see Take
  std::lock_guard<std::mutex> lock(mu_);
  bytes_ += kept.capacity();
  buffers_.push_back(std::move(kept));
  std::sort(buffers_.begin(), buffers_.end(),
            [](const std::string& a, const std::string& b) { return a.capacity() > b.capacity(); });
  // Room is made by dropping the smallest: the large ones are the costly ones to fault in.
  while (buffers_.size() > kMaxBuffers || bytes_ > kMaxBytes) {
    bytes_ -= buffers_.back().capacity();
    buffers_.pop_back();
  }
}

size_t BodyPool::kept_buffers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buffers_.size();
}

size_t BodyPool::kept_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace missy::net

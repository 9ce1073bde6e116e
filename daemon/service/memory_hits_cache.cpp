#include "daemon/service/memory_hits_cache.h"

namespace missy {

void MemoryHitsCache::ContentChanged(const std::string& session_id) {
  if (!session_id.empty()) return;  // a session's content: the ttl bounds its effect
  std::lock_guard<std::mutex> lock(mu_);
  ++changes_;
}

uint64_t MemoryHitsCache::Stamp(const std::string& /*session_id*/) const {
  std::lock_guard<std::mutex> lock(mu_);
  return changes_;
}

std::optional<std::vector<MemoryHit>> MemoryHitsCache::Find(const std::string& session_id,
                                                            const std::string& query,
                                                            int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(session_id);
  if (it == entries_.end()) return std::nullopt;
  const Entry& e = it->second;
  if (e.query != query || e.stamp != changes_ || now_ms - e.at_ms > ttl_ms_ || now_ms < e.at_ms) {
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return e.hits;
}

void MemoryHitsCache::Put(const std::string& session_id, const std::string& query, uint64_t stamp,
                          int64_t now_ms, std::vector<MemoryHit> hits) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stamp != changes_) return;  // something changed daemon-wide while searching
  auto it = entries_.find(session_id);
  if (it == entries_.end()) {
    lru_.push_front(session_id);
    it = entries_.emplace(session_id, Entry{}).first;
    it->second.lru = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  it->second.query = query;
  it->second.stamp = stamp;
  it->second.at_ms = now_ms;
  it->second.hits = std::move(hits);
  while (entries_.size() > capacity_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
}

size_t MemoryHitsCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace missy

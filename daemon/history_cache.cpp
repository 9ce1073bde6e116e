#include "daemon/history_cache.h"

#include <algorithm>

namespace missy {

void HistoryCache::Touch(Slot& slot, const std::string& session_id) {
  lru_.erase(slot.lru);
  lru_.push_front(session_id);
  slot.lru = lru_.begin();
}

std::shared_ptr<std::vector<StoredMessage>> HistoryCache::Find(const std::string& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it == slots_.end()) return nullptr;
  Touch(it->second, session_id);
  return it->second.history;
}

void HistoryCache::Put(const std::string& session_id, std::vector<StoredMessage> history) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it != slots_.end()) {
    total_ -= it->second.history->size();
    lru_.erase(it->second.lru);
    slots_.erase(it);
  }
  if (history.size() > max_messages_) return;  // too large to keep
  total_ += history.size();
  lru_.push_front(session_id);
  slots_[session_id] = Slot{std::make_shared<std::vector<StoredMessage>>(std::move(history)), lru_.begin()};
  EvictLocked();
}

void HistoryCache::Appended(const std::string& session_id, const std::vector<StoredMessage>& rows) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it == slots_.end() || rows.empty()) return;
  std::vector<StoredMessage>& h = *it->second.history;
  const int64_t last = h.empty() ? 0 : h.back().seq;
  if (rows.front().seq != last + 1) {  // not a continuation: reload next time
    total_ -= h.size();
    lru_.erase(it->second.lru);
    slots_.erase(it);
    return;
  }
  h.insert(h.end(), rows.begin(), rows.end());
  total_ += rows.size();
  Touch(it->second, session_id);
  EvictLocked();
}

void HistoryCache::FlagsAdded(const std::string& session_id, const std::vector<int64_t>& seqs,
                              uint32_t flags) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it == slots_.end()) return;
  std::vector<StoredMessage>& h = *it->second.history;
  for (int64_t seq : seqs) {
    auto m = std::lower_bound(h.begin(), h.end(), seq,
                              [](const StoredMessage& a, int64_t s) { return a.seq < s; });
    if (m != h.end() && m->seq == seq) m->flags |= flags;
  }
}

void HistoryCache::Invalidate(const std::string& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it == slots_.end()) return;
  total_ -= it->second.history->size();
  lru_.erase(it->second.lru);
  slots_.erase(it);
}

void HistoryCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  slots_.clear();
  lru_.clear();
  total_ = 0;
}

size_t HistoryCache::cached_messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

void HistoryCache::EvictLocked() {
  while (total_ > max_messages_ && lru_.size() > 1) {
    const std::string victim = lru_.back();
    auto it = slots_.find(victim);
    total_ -= it->second.history->size();
    slots_.erase(it);
    lru_.pop_back();
  }
}

}  // namespace missy

#include "daemon/service/history_cache.h"

#include <algorithm>

namespace missy {

void HistoryCache::Touch(Slot& slot, const std::string& session_id) {
  slot.last_used_ms = NowMs();
  lru_.erase(slot.lru);
  lru_.push_front(session_id);
  slot.lru = lru_.begin();
}

void HistoryCache::ChargeLocked(Slot& slot) {
  total_messages_ -= slot.messages;
  total_known_ -= slot.known;
  total_bytes_ -= slot.bytes;
  slot.messages = slot.history->window().size();
  slot.known = slot.history->message_count();
  slot.bytes = slot.history->ApproxBytes();
  total_messages_ += slot.messages;
  total_known_ += slot.known;
  total_bytes_ += slot.bytes;
}

void HistoryCache::EraseLocked(std::unordered_map<std::string, Slot>::iterator it) {
  total_messages_ -= it->second.messages;
  total_known_ -= it->second.known;
  total_bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  slots_.erase(it);
}

HistoryCache::History HistoryCache::Find(const std::string& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it == slots_.end()) return nullptr;
  Touch(it->second, session_id);
  History found = it->second.history;
  EvictIdleLocked();
  return found;
}

Result<HistoryCache::History> HistoryCache::GetOrLoad(
    const std::string& session_id, const std::function<Result<HistoryWindow>()>& load) {
  if (History cached = Find(session_id)) return cached;
  Result<HistoryWindow> loaded = load();
  if (!loaded.ok()) return loaded.status();
  return Put(session_id, std::move(*loaded));
}

HistoryCache::History HistoryCache::Put(const std::string& session_id, HistoryWindow history) {
  auto shared = std::make_shared<HistoryWindow>(std::move(history));
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = slots_.find(session_id); it != slots_.end()) EraseLocked(it);
  if (shared->ApproxBytes() > max_bytes_) return shared;  // too large to keep: still returned
  lru_.push_front(session_id);
  Slot& slot = slots_[session_id];
  slot.history = shared;
  slot.lru = lru_.begin();
  slot.last_used_ms = NowMs();
  ChargeLocked(slot);
  EvictLocked();
  return shared;
}

void HistoryCache::Appended(const std::string& session_id, std::vector<StoredMessage> rows) {
  if (rows.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it == slots_.end()) return;
  if (!it->second.history->Append(std::move(rows))) {  // not a continuation: reload next time
    EraseLocked(it);
    return;
  }
  ChargeLocked(it->second);
  Touch(it->second, session_id);
  EvictLocked();
}

void HistoryCache::FlagsAdded(const std::string& session_id, const std::vector<int64_t>& seqs,
                              uint32_t flags) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it == slots_.end()) return;
  it->second.history->AddFlags(seqs, flags);
}

void HistoryCache::Recharge(const std::string& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it == slots_.end()) return;
  ChargeLocked(it->second);
  if (it->second.bytes > max_bytes_) {
    EraseLocked(it);
    return;
  }
  EvictLocked();
}

void HistoryCache::Invalidate(const std::string& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it != slots_.end()) EraseLocked(it);
}

void HistoryCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  slots_.clear();
  lru_.clear();
  total_messages_ = 0;
  total_known_ = 0;
  total_bytes_ = 0;
}

void HistoryCache::SetMaxBytes(size_t max_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  max_bytes_ = max_bytes;
  EvictLocked();
}

size_t HistoryCache::cached_messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_messages_;
}

size_t HistoryCache::known_messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_known_;
}

size_t HistoryCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_bytes_;
}

size_t HistoryCache::cached_sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size();
}

size_t HistoryCache::max_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_bytes_;
}

void HistoryCache::EvictLocked() {
  // The most recent entry stays even over the bound (it is in use right now).
  while (total_bytes_ > max_bytes_ && lru_.size() > 1) EraseLocked(slots_.find(lru_.back()));
  EvictIdleLocked();
}

size_t HistoryCache::EvictIdleLocked() {
  if (idle_ms_ <= 0 || clock_ == nullptr) return 0;
  const int64_t before = NowMs() - idle_ms_;
  size_t n = 0;
  while (!lru_.empty()) {
    auto it = slots_.find(lru_.back());
    if (it->second.last_used_ms >= before) break;  // the rest were used more recently
    EraseLocked(it);
    ++n;
  }
  return n;
}

void HistoryCache::SetIdleRelease(const Clock* clock, int64_t idle_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  clock_ = clock;
  idle_ms_ = idle_ms;
}

size_t HistoryCache::EvictIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  return EvictIdleLocked();
}

}  // namespace missy

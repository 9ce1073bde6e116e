#include "daemon/service/history_cache.h"

#include <algorithm>

namespace missy {

size_t ApproxBytes(const StoredMessage& m) {
  size_t bytes = sizeof(StoredMessage) + m.message.text.capacity() +
                 m.message.tool_call_id.capacity() + m.message.name.capacity();
  for (const ContentPart& p : m.message.parts) {
    bytes += sizeof(ContentPart) + p.text.capacity() + p.image_url.capacity() + p.detail.capacity();
  }
  for (const ToolCall& c : m.message.tool_calls) {
    bytes += sizeof(ToolCall) + c.id.capacity() + c.type.capacity() + c.name.capacity() +
             c.arguments.capacity();
  }
  return bytes;
}

namespace {

size_t ApproxBytes(const std::vector<StoredMessage>& history) {
  size_t bytes = 0;
  for (const StoredMessage& m : history) bytes += ApproxBytes(m);
  return bytes;
}

}  // namespace

void HistoryCache::Touch(Slot& slot, const std::string& session_id) {
  lru_.erase(slot.lru);
  lru_.push_front(session_id);
  slot.lru = lru_.begin();
}

void HistoryCache::EraseLocked(std::unordered_map<std::string, Slot>::iterator it) {
  total_messages_ -= it->second.messages;
  total_bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  slots_.erase(it);
}

HistoryCache::History HistoryCache::Find(const std::string& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it == slots_.end()) return nullptr;
  Touch(it->second, session_id);
  return it->second.history;
}

Result<HistoryCache::History> HistoryCache::GetOrLoad(
    const std::string& session_id,
    const std::function<Result<std::vector<StoredMessage>>()>& load) {
  if (History cached = Find(session_id)) return cached;
  Result<std::vector<StoredMessage>> loaded = load();
  if (!loaded.ok()) return loaded.status();
  return Put(session_id, std::move(*loaded));
}

HistoryCache::History HistoryCache::Put(const std::string& session_id,
                                        std::vector<StoredMessage> history) {
  auto shared = std::make_shared<std::vector<StoredMessage>>(std::move(history));
  const size_t bytes = ApproxBytes(*shared);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = slots_.find(session_id); it != slots_.end()) EraseLocked(it);
  if (bytes > max_bytes_) return shared;  // too large to keep: the caller still gets it
  total_messages_ += shared->size();
  total_bytes_ += bytes;
  lru_.push_front(session_id);
  slots_[session_id] = Slot{shared, shared->size(), bytes, lru_.begin()};
  EvictLocked();
  return shared;
}

void HistoryCache::Appended(const std::string& session_id, std::vector<StoredMessage> rows) {
  if (rows.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session_id);
  if (it == slots_.end()) return;
  std::vector<StoredMessage>& h = *it->second.history;
  const int64_t last = h.empty() ? 0 : h.back().seq;
  if (rows.front().seq != last + 1) {  // not a continuation: reload next time
    EraseLocked(it);
    return;
  }
  const size_t bytes = ApproxBytes(rows);
  total_messages_ += rows.size();
  total_bytes_ += bytes;
  it->second.messages += rows.size();
  it->second.bytes += bytes;
  h.insert(h.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
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
  if (it != slots_.end()) EraseLocked(it);
}

void HistoryCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  slots_.clear();
  lru_.clear();
  total_messages_ = 0;
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
}

}  // namespace missy

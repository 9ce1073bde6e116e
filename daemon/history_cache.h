// HistoryCache: the stored messages of recently used sessions, kept in memory so that a
// context request does not reload and re-parse a whole history from SQLite. The Api is
// the only writer of messages, so it keeps the cache coherent: appends and flag changes
// are applied here after they commit; anything else invalidates. Bounded by a total
// message count (least recently used sessions are evicted). Thread-safe; callers hold
// the session's lock while they use an entry.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/message.h"

namespace missy {

class HistoryCache {
 public:
  explicit HistoryCache(size_t max_messages = 250000) : max_messages_(max_messages) {}

  // The cached history of `session_id`, or null. The entry stays valid while the caller
  // holds the session lock (eviction only drops the cache's reference).
  std::shared_ptr<std::vector<StoredMessage>> Find(const std::string& session_id);
  // Caches a freshly loaded history.
  void Put(const std::string& session_id, std::vector<StoredMessage> history);
  // Applies committed appends; drops the entry if they do not continue it.
  void Appended(const std::string& session_id, const std::vector<StoredMessage>& rows);
  // Applies committed flag changes.
  void FlagsAdded(const std::string& session_id, const std::vector<int64_t>& seqs, uint32_t flags);
  void Invalidate(const std::string& session_id);
  void Clear();
  size_t cached_messages() const;

 private:
  struct Slot {
    std::shared_ptr<std::vector<StoredMessage>> history;
    std::list<std::string>::iterator lru;
  };
  void Touch(Slot& slot, const std::string& session_id);
  void EvictLocked();

  const size_t max_messages_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Slot> slots_;
  std::list<std::string> lru_;  // most recently used first
  size_t total_ = 0;
};

}  // namespace missy

// HistoryCache: the stored messages of recently used sessions, kept in memory so that a
// context request does not reload and re-parse a whole history from SQLite. The
// service layer is the only writer of messages, so it keeps the cache coherent:
// appends and flag changes are applied here after they commit; anything else
// invalidates. Bounded by the bytes its entries hold (content included, charged by
// ApproxBytes): the least recently used sessions are evicted first. Thread-safe;
// callers serialise their use of one session's entry (SessionQueue), and an entry they
// hold stays valid after eviction (eviction only drops the cache's reference).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/message.h"
#include "core/status.h"

namespace missy {

// What a stored message costs in memory, content included (an estimate from the
// strings' sizes plus the fixed size of the structures).
size_t ApproxBytes(const StoredMessage& m);

class HistoryCache {
 public:
  using History = std::shared_ptr<std::vector<StoredMessage>>;
  static constexpr size_t kDefaultMaxBytes = size_t{64} << 20;

  explicit HistoryCache(size_t max_bytes = kDefaultMaxBytes) : max_bytes_(max_bytes) {}

  // The cached history of `session_id`, or null.
  History Find(const std::string& session_id);
  // The cached history, or the one `load` returns (then cached if it fits).
  Result<History> GetOrLoad(const std::string& session_id,
                            const std::function<Result<std::vector<StoredMessage>>()>& load);
  // Caches a freshly loaded history (not kept if larger than the whole bound).
  History Put(const std::string& session_id, std::vector<StoredMessage> history);
  // Applies committed appends; drops the entry if they do not continue it.
  void Appended(const std::string& session_id, std::vector<StoredMessage> rows);
  // Applies committed flag changes.
  void FlagsAdded(const std::string& session_id, const std::vector<int64_t>& seqs, uint32_t flags);
  void Invalidate(const std::string& session_id);
  void Clear();
  // Changes the bound (evicting down to it).
  void SetMaxBytes(size_t max_bytes);

  size_t cached_messages() const;
  size_t cached_bytes() const;
  size_t cached_sessions() const;
  size_t max_bytes() const;

 private:
  struct Slot {
    History history;
    size_t messages = 0;  // charged when cached (the vector may be borrowed meanwhile)
    size_t bytes = 0;
    std::list<std::string>::iterator lru;
  };
  void Touch(Slot& slot, const std::string& session_id);
  void EraseLocked(std::unordered_map<std::string, Slot>::iterator it);
  void EvictLocked();

  size_t max_bytes_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Slot> slots_;
  std::list<std::string> lru_;  // most recently used first
  size_t total_messages_ = 0;
  size_t total_bytes_ = 0;
};

}  // namespace missy

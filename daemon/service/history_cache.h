// HistoryCache: the histories of recently used sessions, kept in memory so that a context
// request does not reload and re-parse them from SQLite. Each entry is a HistoryWindow
// (core/history_window.h): the newest messages with content, the older ones folded to a
// few bytes each, so an entry costs what its window holds, not what the session stores.
// The service layer is the only writer of messages, so it keeps the cache coherent:
// appends and flag changes are applied here after they commit; anything else
// invalidates. Bounded by the bytes its entries hold (HistoryWindow::ApproxBytes,
// content included): the least recently used sessions are evicted first. Thread-safe;
// callers serialise their use of one session's entry (SessionQueue) and call Recharge
// after they fold or unfold it; an entry they hold stays valid after eviction (eviction
// only drops the cache's reference).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/history_window.h"
#include "core/message.h"
#include "core/status.h"
#include "daemon/service/ports.h"

namespace missy {

class HistoryCache {
 public:
  using History = std::shared_ptr<HistoryWindow>;
  static constexpr size_t kDefaultMaxBytes = size_t{64} << 20;

  explicit HistoryCache(size_t max_bytes = kDefaultMaxBytes) : max_bytes_(max_bytes) {}

  // Entries unused for `idle_ms` (by `clock`) are released by EvictIdle and by every
  // access; idle_ms 0 or no clock: only the byte bound evicts.
  void SetIdleRelease(const Clock* clock, int64_t idle_ms);
  // Releases the entries unused for the idle time; returns how many.
  size_t EvictIdle();

  // The cached history of `session_id`, or null.
  History Find(const std::string& session_id);
  // The cached history, or the one `load` returns (then cached if it fits).
  Result<History> GetOrLoad(const std::string& session_id,
                            const std::function<Result<HistoryWindow>()>& load);
  // Caches a freshly loaded history (not kept if larger than the whole bound).
  History Put(const std::string& session_id, HistoryWindow history);
  // Applies committed appends; drops the entry if they do not continue it.
  void Appended(const std::string& session_id, std::vector<StoredMessage> rows);
  // Applies committed flag changes.
  void FlagsAdded(const std::string& session_id, const std::vector<int64_t>& seqs, uint32_t flags);
  // Charges the entry again after its holder folded or unfolded it (evicting others if
  // it grew; dropping it if it no longer fits at all).
  void Recharge(const std::string& session_id);
  void Invalidate(const std::string& session_id);
  void Clear();
  // Changes the bound (evicting down to it).
  void SetMaxBytes(size_t max_bytes);

  // Messages held with their content (window messages), and all messages known.
  size_t cached_messages() const;
  size_t known_messages() const;
  size_t cached_bytes() const;
  size_t cached_sessions() const;
  size_t max_bytes() const;

 private:
  struct Slot {
    History history;
    size_t messages = 0;  // charged (the window may be borrowed meanwhile)
    size_t known = 0;
    size_t bytes = 0;
    int64_t last_used_ms = 0;
    std::list<std::string>::iterator lru;
  };
  void Touch(Slot& slot, const std::string& session_id);
  void ChargeLocked(Slot& slot);
  void EraseLocked(std::unordered_map<std::string, Slot>::iterator it);
  void EvictLocked();
  size_t EvictIdleLocked();
  int64_t NowMs() const { return clock_ != nullptr ? clock_->NowMs() : 0; }

  size_t max_bytes_;
  const Clock* clock_ = nullptr;  // guarded by mu_, with idle_ms_
  int64_t idle_ms_ = 0;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Slot> slots_;
  std::list<std::string> lru_;  // most recently used first
  size_t total_messages_ = 0;
  size_t total_known_ = 0;
  size_t total_bytes_ = 0;
};

}  // namespace missy

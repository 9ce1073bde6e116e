// MemoryHitsCache: the memory search result of a session's last context, reused while
// nothing it could see has changed. In an agent's tool loop the query (the last user
// message) stays the same for many context requests, and the full-text search ranks
// every matching row — over a long history that is most of a context's cost.
//
// Validity: daemon-wide changes (memory items, learnings, imports) invalidate every
// entry at once. Sessions' own messages and summaries do not: with many agents busy,
// some session changes all the time, and searching again on every context made the
// search most of the daemon's work as history grew. Their effect is bounded instead by
// `ttl_ms`: a context may miss what other sessions wrote in the last 10 s, as it may miss
// what the index has not caught up with yet (the context path never waits for the
// index). Bounded: at most `capacity` sessions (least recent out). Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/context_types.h"

namespace missy {

class MemoryHitsCache {
 public:
  explicit MemoryHitsCache(size_t capacity = 1024, int64_t ttl_ms = 10000)
      : capacity_(capacity), ttl_ms_(ttl_ms) {}

  // Something searchable changed: content of `session_id` (bounded by the ttl only), or
  // "" = daemon-wide (memory items, imports): every entry becomes invalid.
  void ContentChanged(const std::string& session_id);

  // Taken before searching; Put() with it stores nothing if a change came meanwhile.
  uint64_t Stamp(const std::string& session_id) const;
  std::optional<std::vector<MemoryHit>> Find(const std::string& session_id,
                                             const std::string& query, int64_t now_ms);
  void Put(const std::string& session_id, const std::string& query, uint64_t stamp, int64_t now_ms,
           std::vector<MemoryHit> hits);
  size_t size() const;

 private:
  struct Entry {
    std::string query;
    uint64_t stamp = 0;
    int64_t at_ms = 0;
    std::vector<MemoryHit> hits;
    std::list<std::string>::iterator lru;
  };

  const size_t capacity_;
  const int64_t ttl_ms_;
  mutable std::mutex mu_;
  uint64_t changes_ = 0;  // daemon-wide changes
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // most recent first
};

}  // namespace missy

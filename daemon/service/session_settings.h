// SessionSettings: what an append needs of its session (model, strict, window, the
// summarizer's choice), kept in memory so that an append reads no session row: the
// counters come from the append's own write (MessageStore::Append). A session's
// settings change only when it is deleted (and perhaps created again under its id), so
// an entry is dropped then; the system prompt, tools and metadata are not kept (an
// append does not need them, and they can be large). Bounded; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/session.h"

namespace missy {

class SessionSettings {
 public:
  static constexpr size_t kDefaultMaxSessions = 4096;

  explicit SessionSettings(size_t max_sessions = kDefaultMaxSessions)
      : max_sessions_(max_sessions == 0 ? 1 : max_sessions) {}

  // The settings of `id` (counters, anchor, system prompt, tools and metadata unset),
  // or nullopt when not known here.
  std::optional<Session> Find(const std::string& id) const;
  // Taken before reading a session from the database: Put with it keeps what was read
  // only if no session was forgotten meanwhile (that read may predate a delete).
  uint64_t Stamp() const;
  void Put(const Session& session, uint64_t stamp);
  // The session was deleted (or created): its settings must be read again.
  void Forget(const std::string& id);
  size_t size() const;

 private:
  const size_t max_sessions_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Session> sessions_;
  uint64_t generation_ = 0;  // bumped by every Forget
};

}  // namespace missy

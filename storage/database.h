// Database: missyd's SQLite store (WAL, busy_timeout, migrations keyed on
// PRAGMA user_version). Thread-safe: any method may be called from any thread.
// Every write method returns only after its transaction committed; on error nothing
// of the call is stored. A database whose user_version is newer than this build
// knows is refused by Open() with kCorruption, and left untouched.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/audit_event.h"
#include "core/message.h"
#include "core/session.h"
#include "core/status.h"

namespace missy {

// A message to append: the message plus what was computed for it before storing.
struct NewMessage {
  Message message;
  int64_t tokens = 0;
  uint32_t flags = kFlagNone;
};

// How Open() treats the file. Defaults are what the daemon uses.
struct DatabaseOptions {
  bool read_only = false;       // open without write access: every write fails kUnavailable
  int busy_timeout_ms = 5000;   // wait this long for another process's lock
  int64_t max_page_count = 0;   // > 0: cap the file at this many pages (writes beyond
                                // it fail kUnavailable, as on a full disk)
  int max_batch = 1024;         // group commit: at most this many writes per transaction
};

struct ListOptions {
  int limit = 100;  // at most this many rows
  int offset = 0;
};

class Database {
 public:
  // Opens (creating if absent) and migrates to the latest schema version.
  static Result<std::unique_ptr<Database>> Open(const std::string& path);
  static Result<std::unique_ptr<Database>> Open(const std::string& path,
                                                const DatabaseOptions& options);
  virtual ~Database() = default;

  // The schema version this build writes.
  static int LatestSchemaVersion();
  virtual int SchemaVersion() = 0;

  // Sessions. CreateSession fails with kAlreadyExists on a duplicate id.
  virtual Status CreateSession(const Session& session) = 0;
  virtual Result<Session> GetSession(std::string_view id) = 0;  // kNotFound
  virtual Result<std::vector<Session>> ListSessions(const ListOptions& options) = 0;

  // Appends a batch atomically: seqs continue from the session's last seq; the
  // session's message_count, total_tokens, last_seq and updated_at_ms are updated in
  // the same transaction. Returns the stored rows (with seq and created_at_ms).
  virtual Result<std::vector<StoredMessage>> AppendMessages(std::string_view session_id,
                                                            const std::vector<NewMessage>& batch,
                                                            int64_t now_ms) = 0;
  // Messages with seq > after_seq, in seq order, at most `limit` (0 = all).
  virtual Result<std::vector<StoredMessage>> LoadMessages(std::string_view session_id,
                                                          int64_t after_seq = 0,
                                                          int64_t limit = 0) = 0;

  // Audit events. Assigns seq and prev_chain_hash, stores, returns the stored event.
  virtual Result<AuditEvent> AppendAuditEvent(const AuditEvent& event) = 0;
  // Events with seq > since_seq in order; `event_type` filters when non-empty.
  virtual Result<std::vector<AuditEvent>> AuditSince(int64_t since_seq, int limit,
                                                     std::string_view event_type = {}) = 0;
};

}  // namespace missy

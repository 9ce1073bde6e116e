// AuditLog: the persisted audit events (DESIGN.md §6), a SHA-256 hash chain: each
// event carries the hash of the previous event's line, and retention keeps the hash of
// the last deleted event as the chain's anchor, so the kept suffix still verifies.
// Outbox cursors record how far an external publisher (the broker bridge) got.
// Thread-safe; reads use Database::Read, writes take the caller's Txn (or wrap one
// Database::Write). The chain's tail is cached for the writer (shared by every AuditLog
// over the same Database) and forgotten when a write that appended is rolled back.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/audit_event.h"
#include "core/status.h"
#include "storage/database.h"
#include "storage/records.h"

namespace missy {

class AuditLog {
 public:
  explicit AuditLog(Database& db) : db_(db) {}

  // Assigns seq (the next one) and prev_chain_hash, stores the event, returns it as
  // stored. It becomes visible, and may be published, once the write commits
  // (Txn::OnCommit).
  Result<AuditEvent> Append(Txn& txn, const AuditEvent& event);
  Result<AuditEvent> Append(const AuditEvent& event);
  // Events with seq > since_seq in order, at most `limit` (<= 0: all); `event_type`
  // filters when non-empty.
  Result<std::vector<AuditEvent>> Since(int64_t since_seq, int limit,
                                        std::string_view event_type = {});
  // The context.built event whose detail names `context_id` (kNotFound when there is
  // none, or retention deleted it). Indexed (schema v14).
  Result<AuditEvent> FindContextBuilt(std::string_view context_id);
  // A session's context.built events with seq < before_seq (<= 0: any), newest first, at
  // most `limit`. Indexed (schema v14).
  Result<std::vector<AuditEvent>> ContextsBuilt(std::string_view session_id, int64_t before_seq,
                                                int limit);
  // Walks the chain from the retention anchor; reports the first broken seq.
  Result<AuditVerifyReport> Verify();
  // Applies retention (deletes a prefix); returns how many events were deleted.
  Result<int64_t> Prune(Txn& txn, const AuditRetention& retention);
  Result<int64_t> Prune(const AuditRetention& retention);

  // The last seq the outbox `name` published (0 if it never advanced).
  Result<int64_t> OutboxCursor(std::string_view name);
  // Moves the cursor to `seq` unless it is already there or beyond (never back).
  // kInvalidArgument for an empty name or a negative seq.
  Status AdvanceOutbox(Txn& txn, std::string_view name, int64_t seq);
  Status AdvanceOutbox(std::string_view name, int64_t seq);

 private:
  Database& db_;
};

}  // namespace missy

// AuditBus: the one path every audit event takes (DESIGN.md §6).
//  1. append to the hash chain inside a write transaction (the caller's, so an event
//     batches with the writes it describes, or one of its own through group commit);
//  2. persist: the event exists once that transaction committed;
//  3. publish to the audit socket's subscribers after the commit, never before, in seq
//     order (commit hooks run in order on the writer thread);
//  4. replay the backlog to a resuming subscriber by cursor, in bounded pages;
//  5. keep named outbox cursors (how far an external broker has acknowledged).
// Thread-safe. Emit() never blocks on a commit; a failed write is logged, never thrown.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "daemon/audit/audit_detail.h"
#include "daemon/audit/audit_feed.h"

namespace missy {

class AuditLog;
class Clock;
class Database;
class Txn;

struct AuditRecord {
  std::string event_type;  // "context.built", ...
  std::string category;    // context|memory|provider|daemon|security
  std::string result;      // allow|deny|error
  std::string session_id;  // may be empty
  AuditDetail detail;
};

class AuditBus {
 public:
  using Publisher = std::function<void(int64_t seq, const std::string& type, std::string line)>;

  AuditBus(Database& db, AuditLog& log, const Clock& clock);

  // Where committed events go (the audit socket). Set before events flow.
  void SetPublisher(Publisher publisher);
  // In-process subscribers (GET /v1/audit/stream): each committed event goes to them
  // too, before the publisher.
  AuditFeed& feed() { return feed_; }

  // Appends the event inside `txn`: it commits with the caller's other writes and is
  // published after that commit (dropped, with the chain intact, if it rolls back).
  Status Append(Txn& txn, const AuditRecord& record);

  // Commits the event on its own (group commit batches it with other writes) and
  // returns at once.
  void Emit(AuditRecord record);
  // The same, waiting for the commit (startup and shutdown events).
  Status EmitAndWait(AuditRecord record);

  // `done` runs (on the writer thread) once every event emitted before this call has
  // been committed and published: a read of the log after it sees them all.
  void AfterPending(std::function<void(Status)> done);

  // One page of the backlog for a subscriber (the net BacklogProvider contract): the
  // events with seq > after_seq, at most `max_lines` examined, those matching `types`
  // (all when empty) as lines; *last_seq_seen is the highest seq examined (after_seq
  // when there was none). Throws std::runtime_error when the log cannot be read.
  std::vector<std::string> BacklogPage(const std::vector<std::string>& types, int64_t after_seq,
                                       size_t max_lines, int64_t* last_seq_seen);

  // How far the consumer `name` (e.g. "nats") has acknowledged; 0 if never.
  Result<int64_t> OutboxCursor(std::string_view name);
  // Moves the cursor forward (never back).
  Status AdvanceOutbox(std::string_view name, int64_t seq);

 private:
  Database& db_;
  AuditLog& log_;
  const Clock& clock_;
  std::mutex mu_;
  Publisher publisher_;  // guarded by mu_
  AuditFeed feed_;
};

}  // namespace missy

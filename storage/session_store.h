// SessionStore: the sessions table. Thread-safe (state lives in the Database); reads
// use Database::Read, writes take the caller's Txn (or wrap one Database::Write).
// The message counters of a session (message_count, total_tokens, last_seq,
// updated_at_ms) are maintained by MessageStore::Append.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/session.h"
#include "core/status.h"
#include "storage/database.h"
#include "storage/records.h"

namespace missy {

// What deleting a session removed (rows of each table).
struct SessionDeletion {
  int64_t messages = 0;
  int64_t summaries = 0;
  int64_t memory_items = 0;  // the items scoped to the session (global ones stay)
  int64_t jobs = 0;
};

class SessionStore {
 public:
  explicit SessionStore(Database& db) : db_(db) {}

  // kInvalidArgument for an empty id, kAlreadyExists for a duplicate (the first stays).
  Status Create(Txn& txn, const Session& session);
  Status Create(const Session& session);

  Result<Session> Get(std::string_view id);  // kNotFound
  // Inside a write (sees the transaction's own changes).
  Result<Session> Get(Txn& txn, std::string_view id);
  // In creation order (created_at_ms, then id).
  Result<std::vector<Session>> List(const ListOptions& options);

  // Persists the session's context anchor (Session::anchor_seq): the first kept seq of
  // its last context, so that a restarted daemon rebuilds the same prefix. kNotFound
  // for an unknown session, kInvalidArgument for seq < 0.
  // With it, Session::anchor_summaries (the summaries a context at the anchor shows) and
  // Session::anchor_stub_through (those of them it shows short) and
  // Session::anchor_squeezed_through (the tool outputs it shows squeezed).
  Status SetAnchor(Txn& txn, std::string_view session_id, int64_t seq, int64_t summaries = 0,
                   int64_t stub_through = 0, int64_t squeezed_through = 0);
  Status SetAnchor(std::string_view session_id, int64_t seq, int64_t summaries = 0,
                   int64_t stub_through = 0, int64_t squeezed_through = 0);
  // Persists Session::anchor_memory (the memory hits a context at the anchor shows, as the
  // service encodes them). kNotFound for an unknown session.
  Status SetAnchorMemory(Txn& txn, std::string_view session_id, std::string_view memory_json);

  // Deletes the session with its messages, summaries, session-scoped memory items and
  // jobs, in the caller's transaction (the FTS indexes follow through their triggers;
  // messages above the index watermark were never indexed and are simply gone).
  // Learnings, calibration and audit events are kept. kNotFound (field "session_id").
  Result<SessionDeletion> Delete(Txn& txn, std::string_view session_id);
  Result<SessionDeletion> Delete(std::string_view session_id);

  // kNotFound (field "session_id") unless the session exists; for other stores' writes.
  static Status MustExist(Txn& txn, std::string_view session_id);

 private:
  Database& db_;
};

}  // namespace missy

#include "storage/session_store.h"

#include <string>

#include "storage/sqlite.h"
#include "storage/store_util.h"

namespace missy {
namespace {

using sqlite::Connection;
using sqlite::Statement;

const char kColumns[] =
    "id, model, system_prompt, tools_json, metadata_json, context_window, strict, created_at_ms, "
    "updated_at_ms, message_count, total_tokens, last_seq, anchor_seq, summarizer_backend, "
    "summarizer_provider, anchor_summaries, anchor_stub_through, anchor_memory, "
    "anchor_squeezed_through";

Session FromRow(const Statement& s) {
  Session out;
  out.id = s.Text(0);
  out.model = s.Text(1);
  out.system_prompt = s.Text(2);
  out.tools_json = s.Text(3);
  out.metadata_json = s.Text(4);
  out.context_window = s.Int(5);
  out.strict = s.Int(6) != 0;
  out.created_at_ms = s.Int(7);
  out.updated_at_ms = s.Int(8);
  out.message_count = s.Int(9);
  out.total_tokens = s.Int(10);
  out.last_seq = s.Int(11);
  out.anchor_seq = s.Int(12);
  out.summarizer_backend = s.Text(13);
  out.summarizer_provider = s.Text(14);
  out.anchor_summaries = s.Int(15);
  out.anchor_stub_through = s.Int(16);
  out.anchor_memory = s.Text(17);
  out.anchor_squeezed_through = s.Int(18);
  return out;
}

Status NotFound(std::string_view id, const char* field) {
  return Status::NotFound("session '" + std::string(id) + "' not found", field);
}

Result<Session> ReadSession(Connection& c, std::string_view id) {
  MISSY_ASSIGN_STMT(q, c, std::string("SELECT ") + kColumns + " FROM sessions WHERE id = ?1");
  q.Bind(1, id);
  MISSY_ASSIGN_NEXT(row, q, "read session");
  if (!row) return NotFound(id, "id");
  return FromRow(q);
}

}  // namespace

Status SessionStore::Create(Txn& txn, const Session& session) {
  if (session.id.empty()) return Status::InvalidArgument("session id must not be empty", "id");
  Connection& c = txn.conn();
  MISSY_ASSIGN_STMT(insert, c,
                    "INSERT INTO sessions (id, model, system_prompt, tools_json, metadata_json, "
                    "context_window, strict, created_at_ms, updated_at_ms, anchor_seq, "
                    "summarizer_backend, summarizer_provider) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                    "?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT (id) DO NOTHING");
  insert.Bind(1, session.id)
      .Bind(2, session.model)
      .Bind(3, session.system_prompt)
      .Bind(4, session.tools_json)
      .Bind(5, session.metadata_json)
      .Bind(6, session.context_window)
      .Bind(7, session.strict ? 1 : 0)
      .Bind(8, session.created_at_ms)
      .Bind(9, session.updated_at_ms != 0 ? session.updated_at_ms : session.created_at_ms)
      .Bind(10, session.anchor_seq)
      .Bind(11, session.summarizer_backend)
      .Bind(12, session.summarizer_provider);
  MISSY_RETURN_IF_ERROR(insert.Run("create session '" + session.id + "'"));
  if (c.Changes() == 0) {
    return Status::AlreadyExists("session '" + session.id + "' already exists", "id");
  }
  return Status::Ok();
}

Status SessionStore::Create(const Session& session) {
  if (session.id.empty()) return Status::InvalidArgument("session id must not be empty", "id");
  return db_.Write([&](Txn& txn) { return Create(txn, session); });
}

Result<Session> SessionStore::Get(std::string_view id) {
  return store_util::ReadValue<Session>(db_, [&](Connection& c) { return ReadSession(c, id); });
}

Result<Session> SessionStore::Get(Txn& txn, std::string_view id) {
  return ReadSession(txn.conn(), id);
}

Result<std::vector<Session>> SessionStore::List(const ListOptions& options) {
  std::vector<Session> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kColumns +
                          " FROM sessions ORDER BY created_at_ms, id LIMIT ?1 OFFSET ?2");
    store_util::BindPage(q, options);
    return store_util::CollectRows(q, FromRow, "list sessions", out);
  }));
  return out;
}

Status SessionStore::SetAnchor(Txn& txn, std::string_view session_id, int64_t seq,
                               int64_t summaries, int64_t stub_through,
                               int64_t squeezed_through) {
  if (seq < 0) return Status::InvalidArgument("anchor seq must be >= 0", "anchor_seq");
  Connection& c = txn.conn();
  MISSY_ASSIGN_STMT(update, c,
                    "UPDATE sessions SET anchor_seq = ?2, anchor_summaries = ?3, "
                    "anchor_stub_through = ?4, anchor_squeezed_through = ?5 WHERE id = ?1");
  update.Bind(1, session_id)
      .Bind(2, seq)
      .Bind(3, summaries)
      .Bind(4, stub_through)
      .Bind(5, squeezed_through);
  MISSY_RETURN_IF_ERROR(update.Run("set the anchor of session '" + std::string(session_id) + "'"));
  if (c.Changes() == 0) return NotFound(session_id, "session_id");
  return Status::Ok();
}

Status SessionStore::SetAnchorMemory(Txn& txn, std::string_view session_id,
                                     std::string_view memory_json) {
  Connection& c = txn.conn();
  MISSY_ASSIGN_STMT(update, c, "UPDATE sessions SET anchor_memory = ?2 WHERE id = ?1");
  update.Bind(1, session_id).Bind(2, memory_json);
  MISSY_RETURN_IF_ERROR(
      update.Run("set the anchor memory of session '" + std::string(session_id) + "'"));
  if (c.Changes() == 0) return NotFound(session_id, "session_id");
  return Status::Ok();
}

Status SessionStore::SetAnchor(std::string_view session_id, int64_t seq, int64_t summaries,
                               int64_t stub_through, int64_t squeezed_through) {
  if (seq < 0) return Status::InvalidArgument("anchor seq must be >= 0", "anchor_seq");
  return db_.Write([&](Txn& txn) {
    return SetAnchor(txn, session_id, seq, summaries, stub_through, squeezed_through);
  });
}

Result<SessionDeletion> SessionStore::Delete(Txn& txn, std::string_view session_id) {
  MISSY_RETURN_IF_ERROR(MustExist(txn, session_id));
  Connection& c = txn.conn();
  // Children first, explicitly: the counts are the answer, and each table's delete
  // trigger keeps its FTS index in step (messages_ad only for rows the indexer reached).
  auto remove = [&](const char* sql, const char* what) -> Result<int64_t> {
    MISSY_ASSIGN_STMT(q, c, sql);
    q.Bind(1, session_id);
    MISSY_RETURN_IF_ERROR(
        q.Run(std::string("delete the ") + what + " of session '" + std::string(session_id) + "'"));
    return static_cast<int64_t>(c.Changes());
  };
  SessionDeletion out;
  Result<int64_t> n = remove(
      "DELETE FROM message_digests WHERE id IN (SELECT id FROM messages WHERE session_id = ?1)",
      "message digests");
  if (!n.ok()) return n.status();
  n = remove("DELETE FROM messages WHERE session_id = ?1", "messages");
  if (!n.ok()) return n.status();
  out.messages = *n;
  n = remove("DELETE FROM summaries WHERE session_id = ?1", "summaries");
  if (!n.ok()) return n.status();
  out.summaries = *n;
  n = remove("DELETE FROM memory_items WHERE session_id = ?1", "memory items");
  if (!n.ok()) return n.status();
  out.memory_items = *n;
  n = remove("DELETE FROM jobs WHERE session_id = ?1", "jobs");
  if (!n.ok()) return n.status();
  out.jobs = *n;
  n = remove("DELETE FROM sessions WHERE id = ?1", "row");
  if (!n.ok()) return n.status();
  if (*n == 0) return NotFound(session_id, "session_id");
  return out;
}

Result<SessionDeletion> SessionStore::Delete(std::string_view session_id) {
  SessionDeletion out;
  MISSY_RETURN_IF_ERROR(db_.Write([&](Txn& txn) -> Status {
    Result<SessionDeletion> r = Delete(txn, session_id);
    if (!r.ok()) return r.status();
    out = *r;
    return Status::Ok();
  }));
  return out;
}

Status SessionStore::MustExist(Txn& txn, std::string_view session_id) {
  MISSY_ASSIGN_STMT(q, txn.conn(), "SELECT 1 FROM sessions WHERE id = ?1");
  q.Bind(1, session_id);
  MISSY_ASSIGN_NEXT(row, q, "read session");
  if (!row) return NotFound(session_id, "session_id");
  return Status::Ok();
}

}  // namespace missy

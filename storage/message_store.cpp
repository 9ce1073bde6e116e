#include "storage/message_store.h"

#include <algorithm>
#include <string>
#include <utility>

#include "storage/json_strings.h"
#include "storage/session_store.h"
#include "storage/sqlite.h"
#include "storage/store_util.h"

namespace missy {
namespace {

using sqlite::Connection;
using sqlite::Statement;

const char kColumns[] =
    "seq, created_at_ms, tokens, flags, role, content, tool_calls, tool_call_id, name";
// kColumns of `messages m` (joined with its digests).
const char kQualifiedColumns[] =
    "m.seq, m.created_at_ms, m.tokens, m.flags, m.role, m.content, m.tool_calls, "
    "m.tool_call_id, m.name";

Status UnknownRole(std::string_view session_id, int64_t seq, std::string_view role) {
  return Status::Corruption("session '" + std::string(session_id) + "' message " +
                            std::to_string(seq) + ": unknown stored role '" + std::string(role) +
                            "'");
}

Result<StoredMessage> FromRow(const Statement& s, std::string_view session_id) {
  StoredMessage out;
  out.seq = s.Int(0);
  out.created_at_ms = s.Int(1);
  out.tokens = s.Int(2);
  out.flags = static_cast<uint32_t>(s.Int(3));
  auto where = [&] {
    return "session '" + std::string(session_id) + "' message " + std::to_string(out.seq);
  };
  const std::string_view role = s.TextView(4);
  auto parsed_role = ParseRole(role);
  if (!parsed_role) return UnknownRole(session_id, out.seq, role);
  out.message.role = *parsed_role;
  Status st = ContentFromJsonText(s.TextView(5), out.message);
  if (!st.ok()) return Status::Corruption(where() + ": stored content: " + st.message());
  const std::string_view calls_json = s.TextView(6);
  if (calls_json != "[]") {
    auto calls = ToolCallsFromJsonText(calls_json);
    if (!calls.ok()) {
      return Status::Corruption(where() + ": stored tool_calls: " + calls.status().message());
    }
    out.message.tool_calls = std::move(*calls);
  }
  out.message.tool_call_id = s.Text(7);
  out.message.name = s.Text(8);
  return out;
}

// Steps `q` (selecting kColumns, then the extract when `extracts`) to the end.
Status CollectMessages(Statement& q, std::string_view session_id, std::string_view what,
                       std::vector<StoredMessage>& out, bool extracts = false) {
  for (;;) {
    MISSY_ASSIGN_NEXT(row, q, what);
    if (!row) return Status::Ok();
    auto m = FromRow(q, session_id);
    if (!m.ok()) return m.status();
    if (extracts) m->extract = std::string(q.BlobView(9));
    out.push_back(std::move(*m));
  }
}

Status SessionMustExist(Connection& c, std::string_view session_id) {
  MISSY_ASSIGN_STMT(q, c, "SELECT 1 FROM sessions WHERE id = ?1");
  q.Bind(1, session_id);
  MISSY_ASSIGN_NEXT(row, q, "read session");
  if (!row) {
    return Status::NotFound("session '" + std::string(session_id) + "' not found", "session_id");
  }
  return Status::Ok();
}

std::string LoadWhat(std::string_view session_id) {
  return "load messages of session '" + std::string(session_id) + "'";
}

// Messages with seq > after_seq in seq order, at most `limit` (0 = all), with their
// extracts when `extracts`. kNotFound for an unknown session.
Result<std::vector<StoredMessage>> LoadAfter(Database& db, std::string_view session_id,
                                             int64_t after_seq, int64_t limit, bool extracts) {
  std::vector<StoredMessage> out;
  MISSY_RETURN_IF_ERROR(db.Read([&](Connection& c) -> Status {
    MISSY_ASSIGN_STMT(
        q, c,
        extracts ? std::string("SELECT ") + kQualifiedColumns +
                       ", d.extract FROM messages m LEFT JOIN message_digests d ON d.id = m.id "
                       "WHERE m.session_id = ?1 AND m.seq > ?2 ORDER BY m.seq LIMIT ?3"
                 : std::string("SELECT ") + kColumns +
                       " FROM messages WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3");
    q.Bind(1, session_id).Bind(2, after_seq).Bind(3, limit > 0 ? limit : int64_t{-1});
    MISSY_RETURN_IF_ERROR(CollectMessages(q, session_id, LoadWhat(session_id), out, extracts));
    return out.empty() ? SessionMustExist(c, session_id) : Status::Ok();
  }));
  return out;
}

}  // namespace

EncodedBatch::EncodedBatch(std::vector<NewMessage>&& batch) {
  rows_.reserve(batch.size());
  for (NewMessage& m : batch) {
    Row row{std::move(m), {}, {}, {}};
    row.content_json = ContentToJsonText(row.source.message);
    if (!row.source.message.tool_calls.empty()) {
      row.tool_calls_json = ToolCallsToJsonText(row.source.message.tool_calls);
    }
    // A string's plain text is the string itself: bound from the message, not copied.
    if (row.source.message.content_form == ContentForm::kParts) {
      row.text = row.source.message.PlainText();
    }
    rows_.push_back(std::move(row));
  }
  batch.clear();
}

Result<std::vector<StoredMessage>> MessageStore::Append(Txn& txn, std::string_view session_id,
                                                        EncodedBatch&& batch, int64_t now_ms,
                                                        SessionCounters* after) {
  Connection& c = txn.conn();
  int64_t batch_tokens = 0;
  for (const EncodedBatch::Row& row : batch.rows_) batch_tokens += row.source.tokens;
  const int64_t n = static_cast<int64_t>(batch.rows_.size());
  int64_t seq = 0;
  {
    MISSY_ASSIGN_STMT(last, c,
                      "SELECT last_seq, message_count, total_tokens, anchor_seq, "
                      "anchor_summaries, anchor_stub_through, anchor_squeezed_through FROM "
                      "sessions WHERE id = ?1");
    last.Bind(1, session_id);
    MISSY_ASSIGN_NEXT(row, last, "read session");
    if (!row) {
      return Status::NotFound("session '" + std::string(session_id) + "' not found", "session_id");
    }
    seq = last.Int(0);
    if (after != nullptr) {
      *after = SessionCounters{
          last.Int(1) + n, last.Int(2) + batch_tokens, seq + n, now_ms, last.Int(3), last.Int(4),
          last.Int(5), last.Int(6)};
    }
  }
  // (UPDATE ... RETURNING would save the SELECT, but SQLite buffers RETURNING rows in
  // an ephemeral table: measurably more writer CPU per append than the point read.)
  {
    MISSY_ASSIGN_STMT(update, c,
                      "UPDATE sessions SET message_count = message_count + ?2, "
                      "total_tokens = total_tokens + ?3, last_seq = ?4, updated_at_ms = ?5 "
                      "WHERE id = ?1");
    update.Bind(1, session_id).Bind(2, n).Bind(3, batch_tokens).Bind(4, seq + n).Bind(5, now_ms);
    MISSY_RETURN_IF_ERROR(update.Run("update session"));
  }
  std::vector<StoredMessage> stored;
  stored.reserve(batch.rows_.size());
  MISSY_ASSIGN_STMT(insert, c,
                    "INSERT INTO messages (session_id, seq, role, content, tool_calls, "
                    "tool_call_id, name, created_at_ms, tokens, flags, text) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  MISSY_ASSIGN_STMT(digest, c, kInsertDigestSql);
  for (EncodedBatch::Row& row : batch.rows_) {
    ++seq;
    Message& m = row.source.message;
    const std::string_view text = m.content_form == ContentForm::kString ? std::string_view(m.text)
                                  : m.content_form == ContentForm::kParts
                                      ? std::string_view(row.text)
                                      : std::string_view();
    // Everything bound without a copy lives until the step below is done.
    insert.BindStatic(1, session_id)
        .Bind(2, seq)
        .BindStatic(3, RoleName(m.role))
        .BindStatic(4, row.content_json)
        .BindStatic(5, row.tool_calls_json.empty() ? std::string_view("[]")
                                                   : std::string_view(row.tool_calls_json))
        .BindStatic(6, m.tool_call_id)
        .BindStatic(7, m.name)
        .Bind(8, now_ms)
        .Bind(9, row.source.tokens)
        .Bind(10, static_cast<int64_t>(row.source.flags))
        .BindStatic(11, text);
    Status st = insert.Run();
    insert.Reset();  // drops the bindings of this row's text before it moves
    if (st.ok()) {
      digest.Bind(1, c.LastInsertRowId())
          .BindStatic(2, RoleName(m.role))
          .Bind(3, row.source.tokens)
          .Bind(4, now_ms)
          .BindBlobStaticOrNull(5, row.source.extract);
      st = digest.Run();
      digest.Reset();
    }
    if (!st.ok()) {
      return Status(st.code(),
                    "append to session '" + std::string(session_id) + "': " + st.message());
    }
    // The extract stays behind: what a caller caches of the message does not hold it.
    stored.push_back(
        StoredMessage{seq, now_ms, row.source.tokens, row.source.flags, std::move(m), {}});
  }
  return stored;
}

Result<std::vector<StoredMessage>> MessageStore::Append(Txn& txn, std::string_view session_id,
                                                        std::vector<NewMessage>&& batch,
                                                        int64_t now_ms) {
  return Append(txn, session_id, EncodedBatch(std::move(batch)), now_ms);
}

Result<std::vector<StoredMessage>> MessageStore::Append(std::string_view session_id,
                                                        std::vector<NewMessage>&& batch,
                                                        int64_t now_ms) {
  EncodedBatch encoded(std::move(batch));  // serialised here, off the writer thread
  return store_util::WriteValue<std::vector<StoredMessage>>(
      db_, [&](Txn& txn) { return Append(txn, session_id, std::move(encoded), now_ms); });
}

Result<std::vector<StoredMessage>> MessageStore::Load(std::string_view session_id,
                                                      int64_t after_seq, int64_t limit) {
  return LoadAfter(db_, session_id, after_seq, limit, /*extracts=*/false);
}

Result<std::vector<StoredMessage>> MessageStore::LoadWithExtracts(std::string_view session_id,
                                                                  int64_t after_seq,
                                                                  int64_t limit) {
  return LoadAfter(db_, session_id, after_seq, limit, /*extracts=*/true);
}

Result<std::vector<StoredMessage>> MessageStore::Load(std::string_view session_id,
                                                      const std::vector<int64_t>& seqs) {
  std::vector<int64_t> sorted = seqs;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<StoredMessage> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_RETURN_IF_ERROR(SessionMustExist(c, session_id));
    MISSY_ASSIGN_STMT(
        q, c,
        std::string("SELECT ") + kColumns + " FROM messages WHERE session_id = ?1 AND seq = ?2");
    for (int64_t seq : sorted) {
      q.Bind(1, session_id).Bind(2, seq);
      MISSY_RETURN_IF_ERROR(CollectMessages(q, session_id, LoadWhat(session_id), out));
      q.Reset();
    }
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<StoredMessage>> MessageStore::LoadRange(std::string_view session_id,
                                                           int64_t first_seq, int64_t last_seq,
                                                           bool with_extracts) {
  if (last_seq < first_seq) return std::vector<StoredMessage>{};
  const int64_t n = last_seq - first_seq + 1;
  return with_extracts ? LoadWithExtracts(session_id, first_seq - 1, n)
                       : Load(session_id, first_seq - 1, n);
}

Result<std::vector<StoredMessage>> MessageStore::LoadExtracts(std::string_view session_id,
                                                              int64_t first_seq, int64_t last_seq) {
  std::vector<StoredMessage> out;
  if (last_seq < first_seq) return out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_ASSIGN_STMT(q, c,
                      "SELECT m.seq, d.role, d.tokens, d.created_at_ms, d.extract FROM messages "
                      "m LEFT JOIN message_digests d ON d.id = m.id WHERE m.session_id = ?1 AND "
                      "m.seq BETWEEN ?2 AND ?3 ORDER BY m.seq");
    q.Bind(1, session_id).Bind(2, first_seq).Bind(3, last_seq);
    // Rows without an extract, or without a digest at all (none is written without one,
    // but a message must not drop out of a summary for it): loaded whole.
    std::vector<size_t> whole;
    for (;;) {
      MISSY_ASSIGN_NEXT(row, q, LoadWhat(session_id));
      if (!row) break;
      StoredMessage m;
      m.seq = q.Int(0);
      if (q.IsNull(1)) {
        whole.push_back(out.size());
        out.push_back(std::move(m));
        continue;
      }
      auto role = ParseRole(q.TextView(1));
      if (!role) return UnknownRole(session_id, m.seq, q.TextView(1));
      m.message.role = *role;
      m.tokens = q.Int(2);
      m.created_at_ms = q.Int(3);
      m.extract = std::string(q.BlobView(4));
      if (m.extract.empty()) whole.push_back(out.size());
      out.push_back(std::move(m));
    }
    if (out.empty()) return SessionMustExist(c, session_id);
    if (whole.empty()) return Status::Ok();
    MISSY_ASSIGN_STMT(
        one, c,
        std::string("SELECT ") + kColumns + " FROM messages WHERE session_id = ?1 AND seq = ?2");
    for (size_t i : whole) {
      std::vector<StoredMessage> found;
      one.Bind(1, session_id).Bind(2, out[i].seq);
      MISSY_RETURN_IF_ERROR(CollectMessages(one, session_id, LoadWhat(session_id), found));
      one.Reset();
      if (found.size() != 1) {
        return Status::Corruption("session '" + std::string(session_id) + "' message " +
                                  std::to_string(out[i].seq) + " was not found again");
      }
      out[i] = std::move(found.front());
    }
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<PlanMessage>> MessageStore::LoadPlan(std::string_view session_id,
                                                        int64_t after_seq) {
  std::vector<PlanMessage> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    // The digests: planning needs the cost and the role only, not the content (the row's
    // own columns, read only for a message without a digest, which none should lack).
    MISSY_ASSIGN_STMT(q, c,
                      "SELECT m.seq, coalesce(d.role, m.role), coalesce(d.tokens, m.tokens) FROM "
                      "messages m LEFT JOIN message_digests d ON d.id = m.id WHERE m.session_id "
                      "= ?1 AND m.seq > ?2 ORDER BY m.seq");
    q.Bind(1, session_id).Bind(2, after_seq);
    for (;;) {
      MISSY_ASSIGN_NEXT(row, q, LoadWhat(session_id));
      if (!row) break;
      PlanMessage m;
      m.seq = q.Int(0);
      auto role = ParseRole(q.TextView(1));
      if (!role) return UnknownRole(session_id, m.seq, q.TextView(1));
      m.role = *role;
      m.tokens = q.Int(2);
      out.push_back(m);
    }
    return out.empty() ? SessionMustExist(c, session_id) : Status::Ok();
  }));
  return out;
}

Status MessageStore::AddFlags(Txn& txn, std::string_view session_id,
                              const std::vector<int64_t>& seqs, uint32_t flags) {
  Connection& c = txn.conn();
  MISSY_RETURN_IF_ERROR(SessionStore::MustExist(txn, session_id));
  MISSY_ASSIGN_STMT(update, c,
                    "UPDATE messages SET flags = flags | ?3 WHERE session_id = ?1 AND seq = ?2");
  for (int64_t seq : seqs) {
    update.Bind(1, session_id).Bind(2, seq).Bind(3, static_cast<int64_t>(flags));
    MISSY_RETURN_IF_ERROR(update.Run("set message flags"));
    update.Reset();
  }
  return Status::Ok();
}

Status MessageStore::AddFlags(std::string_view session_id, const std::vector<int64_t>& seqs,
                              uint32_t flags) {
  return db_.Write([&](Txn& txn) { return AddFlags(txn, session_id, seqs, flags); });
}

}  // namespace missy

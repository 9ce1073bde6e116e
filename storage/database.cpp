#include "storage/database.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <boost/json.hpp>

#include <random>

#include "storage/fts_query.h"
#include "storage/json_strings.h"
#include "storage/missy_import.h"
#include "storage/schema.h"
#include "storage/sqlite_util.h"

namespace missy {
namespace {

using sqlite::Connection;
using sqlite::Statement;

constexpr char kZeroHash[] = "0000000000000000000000000000000000000000000000000000000000000000";

#define MISSY_ASSIGN_STMT(var, conn, sql)      \
  auto var##_or = (conn).Prepare(sql);         \
  if (!var##_or.ok()) return var##_or.status(); \
  Statement& var = *var##_or

// A message row, serialised by the caller's thread so the writer only binds.
struct MessageRow {
  std::string role;
  std::string content;
  std::string tool_calls;
  std::string text;
  const NewMessage* source = nullptr;
};

const char kSessionColumns[] =
    "id, model, system_prompt, tools_json, metadata_json, context_window, strict, created_at_ms, "
    "updated_at_ms, message_count, total_tokens, last_seq";

Session SessionFromRow(const Statement& s) {
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
  return out;
}

const char kMessageColumns[] =
    "seq, created_at_ms, tokens, flags, role, content, tool_calls, tool_call_id, name";

Result<StoredMessage> MessageFromRow(const Statement& s, std::string_view session_id) {
  StoredMessage out;
  out.seq = s.Int(0);
  out.created_at_ms = s.Int(1);
  out.tokens = s.Int(2);
  out.flags = static_cast<uint32_t>(s.Int(3));
  auto where = [&] { return "session '" + std::string(session_id) + "' message " + std::to_string(out.seq); };
  std::string role = s.Text(4);
  auto parsed_role = ParseRole(role);
  if (!parsed_role) return Status::Corruption(where() + ": unknown stored role '" + role + "'");
  out.message.role = *parsed_role;
  Status st = ContentFromJsonText(s.Text(5), out.message);
  if (!st.ok()) return Status::Corruption(where() + ": stored content: " + st.message());
  auto calls = ToolCallsFromJsonText(s.Text(6));
  if (!calls.ok()) return Status::Corruption(where() + ": stored tool_calls: " + calls.status().message());
  out.message.tool_calls = std::move(*calls);
  out.message.tool_call_id = s.Text(7);
  out.message.name = s.Text(8);
  return out;
}

const char kAuditColumns[] =
    "seq, timestamp_ms, session_id, task_id, event_type, category, result, detail_json, prev_chain_hash";

AuditEvent AuditFromRow(const Statement& s) {
  AuditEvent e;
  e.seq = s.Int(0);
  e.timestamp_ms = s.Int(1);
  e.session_id = s.Text(2);
  e.task_id = s.Text(3);
  e.event_type = s.Text(4);
  e.category = s.Text(5);
  e.result = s.Text(6);
  e.detail_json = s.Text(7);
  e.prev_chain_hash = s.Text(8);
  return e;
}


namespace json = boost::json;

using storage_json::StringsFromJson;
using storage_json::StringsToJson;

std::string GenerateId(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   (static_cast<uint64_t>(std::random_device{}()) << 32)};
  static const char kHex[] = "0123456789abcdef";
  uint64_t r = rng();
  std::string out(prefix);
  for (int i = 0; i < 16; ++i) out += kHex[(r >> (60 - 4 * i)) & 0xf];
  return out;
}

bool IsUniqueViolation(int rc) {
  return rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY;
}

const char kSummaryColumns[] =
    "id, session_id, depth, content, tokens, first_seq, last_seq, child_ids, parent_id, start_ms, end_ms, "
    "descendant_count, artifacts, created_at_ms";

SummaryRecord SummaryFromRow(const Statement& s) {
  SummaryRecord r;
  r.id = s.Text(0);
  r.session_id = s.Text(1);
  r.depth = static_cast<int>(s.Int(2));
  r.content = s.Text(3);
  r.tokens = s.Int(4);
  r.first_seq = s.Int(5);
  r.last_seq = s.Int(6);
  r.child_ids = StringsFromJson(s.Text(7));
  r.parent_id = s.Text(8);
  r.start_ms = s.Int(9);
  r.end_ms = s.Int(10);
  r.descendant_count = s.Int(11);
  r.artifacts_json = s.Text(12);
  r.created_at_ms = s.Int(13);
  return r;
}

const char kMemoryColumns[] = "id, text, tags, session_id, pinned, created_at_ms";

MemoryItem MemoryFromRow(const Statement& s) {
  MemoryItem m;
  m.id = s.Text(0);
  m.text = s.Text(1);
  m.tags = StringsFromJson(s.Text(2));
  m.session_id = s.Text(3);
  m.pinned = s.Int(4) != 0;
  m.created_at_ms = s.Int(5);
  return m;
}

const char kLearningColumns[] = "id, task_type, outcome, lesson, approach, session_id, created_at_ms";

LearningRecord LearningFromRow(const Statement& s) {
  LearningRecord l;
  l.id = s.Text(0);
  l.task_type = s.Text(1);
  l.outcome = s.Text(2);
  l.lesson = s.Text(3);
  l.approach = StringsFromJson(s.Text(4));
  l.session_id = s.Text(5);
  l.created_at_ms = s.Int(6);
  return l;
}

const char kJobColumns[] =
    "id, kind, session_id, state, attempts, payload, next_run_at_ms, lease_until_ms, last_error, created_at_ms, "
    "updated_at_ms";

Job JobFromRow(const Statement& s) {
  Job j;
  j.id = s.Int(0);
  j.kind = s.Text(1);
  j.session_id = s.Text(2);
  j.state = s.Text(3);
  j.attempts = static_cast<int>(s.Int(4));
  j.payload_json = s.Text(5);
  j.next_run_at_ms = s.Int(6);
  j.lease_until_ms = s.Int(7);
  j.last_error = s.Text(8);
  j.created_at_ms = s.Int(9);
  j.updated_at_ms = s.Int(10);
  return j;
}

Result<Job> LoadJob(Connection& c, int64_t id) {
  MISSY_ASSIGN_STMT(q, c, std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?1");
  q.Bind(1, id);
  int rc = q.Step();
  if (rc == SQLITE_ROW) return JobFromRow(q);
  if (rc == SQLITE_DONE) return Status::NotFound("job " + std::to_string(id) + " not found", "id");
  return c.Error(rc, "read job");
}

Status SessionMustExist(Connection& c, std::string_view session_id) {
  MISSY_ASSIGN_STMT(q, c, "SELECT 1 FROM sessions WHERE id = ?1");
  q.Bind(1, session_id);
  int rc = q.Step();
  if (rc == SQLITE_ROW) return Status::Ok();
  if (rc == SQLITE_DONE) {
    return Status::NotFound("session '" + std::string(session_id) + "' not found", "session_id");
  }
  return c.Error(rc, "read session");
}

// A read transaction on a reader connection: one consistent snapshot for several
// statements. Ends (COMMIT of a read-only transaction) on destruction.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(Connection& c) : c_(c) { ok_ = c_.Exec("BEGIN", "begin read").ok(); }
  ~ReadSnapshot() {
    if (ok_) (void)c_.Exec("COMMIT", "end read");
  }
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;

 private:
  Connection& c_;
  bool ok_ = false;
};

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(std::string path, DatabaseOptions options, std::unique_ptr<Connection> writer)
      : path_(std::move(path)), options_(options), writer_(std::move(writer)) {
    writer_thread_ = std::thread([this] { WriterLoop(); });
  }

  ~SqliteDatabase() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    writer_thread_.join();
  }

  int SchemaVersion() override {
    auto reader = AcquireReader();
    if (!reader.ok()) return -1;
    auto v = reader->conn->QueryInt("PRAGMA user_version");
    return v.ok() ? static_cast<int>(*v) : -1;
  }

  Status CreateSession(const Session& session) override {
    if (session.id.empty()) return Status::InvalidArgument("session id must not be empty", "id");
    return Write([&](Connection& c) -> Status {
      MISSY_ASSIGN_STMT(insert, c,
                        "INSERT INTO sessions (id, model, system_prompt, tools_json, metadata_json, "
                        "context_window, strict, created_at_ms, updated_at_ms) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (id) DO NOTHING");
      insert.Bind(1, session.id)
          .Bind(2, session.model)
          .Bind(3, session.system_prompt)
          .Bind(4, session.tools_json)
          .Bind(5, session.metadata_json)
          .Bind(6, session.context_window)
          .Bind(7, session.strict ? 1 : 0)
          .Bind(8, session.created_at_ms)
          .Bind(9, session.updated_at_ms != 0 ? session.updated_at_ms : session.created_at_ms);
      MISSY_RETURN_IF_ERROR(insert.Run("create session '" + session.id + "'"));
      if (sqlite3_changes(c.db()) == 0) {
        return Status::AlreadyExists("session '" + session.id + "' already exists", "id");
      }
      return Status::Ok();
    });
  }

  Result<Session> GetSession(std::string_view id) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    MISSY_ASSIGN_STMT(q, *reader->conn,
                      std::string("SELECT ") + kSessionColumns + " FROM sessions WHERE id = ?1");
    q.Bind(1, id);
    int rc = q.Step();
    if (rc == SQLITE_ROW) return SessionFromRow(q);
    if (rc == SQLITE_DONE) return Status::NotFound("session '" + std::string(id) + "' not found", "id");
    return reader->conn->Error(rc, "read session");
  }

  Result<std::vector<Session>> ListSessions(const ListOptions& options) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    MISSY_ASSIGN_STMT(q, *reader->conn,
                      std::string("SELECT ") + kSessionColumns +
                          " FROM sessions ORDER BY created_at_ms, id LIMIT ?1 OFFSET ?2");
    q.Bind(1, static_cast<int64_t>(options.limit < 0 ? -1 : options.limit))
        .Bind(2, static_cast<int64_t>(options.offset < 0 ? 0 : options.offset));
    std::vector<Session> out;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) out.push_back(SessionFromRow(q));
    if (rc != SQLITE_DONE) return reader->conn->Error(rc, "list sessions");
    return out;
  }

  Result<std::vector<StoredMessage>> AppendMessages(std::string_view session_id,
                                                    const std::vector<NewMessage>& batch,
                                                    int64_t now_ms) override {
    // Serialise in the caller's thread: the writer only binds and steps.
    std::vector<MessageRow> rows;
    rows.reserve(batch.size());
    int64_t batch_tokens = 0;
    for (const NewMessage& m : batch) {
      rows.push_back(MessageRow{std::string(RoleName(m.message.role)), ContentToJsonText(m.message),
                                ToolCallsToJsonText(m.message.tool_calls), m.message.PlainText(), &m});
      batch_tokens += m.tokens;
    }
    std::vector<StoredMessage> stored;
    Status st = Write([&](Connection& c) -> Status {
      stored.clear();
      MISSY_ASSIGN_STMT(last, c, "SELECT last_seq FROM sessions WHERE id = ?1");
      last.Bind(1, session_id);
      int rc = last.Step();
      if (rc == SQLITE_DONE) {
        return Status::NotFound("session '" + std::string(session_id) + "' not found", "session_id");
      }
      if (rc != SQLITE_ROW) return c.Error(rc, "read session '" + std::string(session_id) + "'");
      int64_t seq = last.Int(0);
      last.Reset();
      MISSY_ASSIGN_STMT(insert, c,
                        "INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, "
                        "name, created_at_ms, tokens, flags, text) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
      for (const MessageRow& row : rows) {
        ++seq;
        insert.Bind(1, session_id)
            .Bind(2, seq)
            .Bind(3, row.role)
            .Bind(4, row.content)
            .Bind(5, row.tool_calls)
            .Bind(6, row.source->message.tool_call_id)
            .Bind(7, row.source->message.name)
            .Bind(8, now_ms)
            .Bind(9, row.source->tokens)
            .Bind(10, static_cast<int64_t>(row.source->flags))
            .Bind(11, row.text);
        int irc = insert.Step();
        if (irc != SQLITE_DONE) return c.Error(irc, "append to session '" + std::string(session_id) + "'");
        sqlite3_reset(insert.get());
        stored.push_back(StoredMessage{seq, now_ms, row.source->tokens, row.source->flags, row.source->message});
      }
      MISSY_ASSIGN_STMT(update, c,
                        "UPDATE sessions SET message_count = message_count + ?2, "
                        "total_tokens = total_tokens + ?3, last_seq = ?4, updated_at_ms = ?5 WHERE id = ?1");
      update.Bind(1, session_id)
          .Bind(2, static_cast<int64_t>(rows.size()))
          .Bind(3, batch_tokens)
          .Bind(4, seq)
          .Bind(5, now_ms);
      return update.Run("update session '" + std::string(session_id) + "'");
    });
    if (!st.ok()) return st;
    return stored;
  }

  Result<std::vector<StoredMessage>> LoadMessages(std::string_view session_id, int64_t after_seq,
                                                  int64_t limit) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kMessageColumns +
                          " FROM messages WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3");
    q.Bind(1, session_id).Bind(2, after_seq).Bind(3, limit > 0 ? limit : int64_t{-1});
    std::vector<StoredMessage> out;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      auto m = MessageFromRow(q, session_id);
      if (!m.ok()) return m.status();
      out.push_back(std::move(*m));
    }
    if (rc != SQLITE_DONE) return c.Error(rc, "load messages of session '" + std::string(session_id) + "'");
    if (out.empty()) {
      q.Reset();
      MISSY_ASSIGN_STMT(exists, c, "SELECT 1 FROM sessions WHERE id = ?1");
      exists.Bind(1, session_id);
      rc = exists.Step();
      if (rc == SQLITE_DONE) {
        return Status::NotFound("session '" + std::string(session_id) + "' not found", "session_id");
      }
      if (rc != SQLITE_ROW) return c.Error(rc, "read session");
    }
    return out;
  }

  Result<AuditEvent> AppendAuditEvent(const AuditEvent& event) override {
    AuditEvent stored = event;
    Status st = Write([&](Connection& c) -> Status {
      auto tail = AuditTail(c);
      if (!tail.ok()) return tail.status();
      stored.seq = tail->first + 1;
      stored.prev_chain_hash = tail->second;
      MISSY_ASSIGN_STMT(insert, c,
                        "INSERT INTO audit_events (seq, timestamp_ms, session_id, task_id, event_type, "
                        "category, result, detail_json, prev_chain_hash) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
      insert.Bind(1, stored.seq)
          .Bind(2, stored.timestamp_ms)
          .Bind(3, stored.session_id)
          .Bind(4, stored.task_id)
          .Bind(5, stored.event_type)
          .Bind(6, stored.category)
          .Bind(7, stored.result)
          .Bind(8, stored.detail_json)
          .Bind(9, stored.prev_chain_hash);
      MISSY_RETURN_IF_ERROR(insert.Run("append audit event"));
      std::pair<int64_t, std::string> head{stored.seq, sqlite::Sha256Hex(AuditEventToJsonLine(stored))};
      MISSY_RETURN_IF_ERROR(PutMeta(c, "audit_head", std::to_string(head.first) + ":" + head.second));
      audit_tail_ = std::move(head);
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return stored;
  }

  Result<std::vector<AuditEvent>> AuditSince(int64_t since_seq, int limit,
                                             std::string_view event_type) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    std::string sql = std::string("SELECT ") + kAuditColumns + " FROM audit_events WHERE seq > ?1 " +
                      (event_type.empty() ? "" : "AND event_type = ?3 ") + "ORDER BY seq LIMIT ?2";
    MISSY_ASSIGN_STMT(q, c, sql);
    q.Bind(1, since_seq).Bind(2, static_cast<int64_t>(limit > 0 ? limit : -1));
    if (!event_type.empty()) q.Bind(3, event_type);
    std::vector<AuditEvent> out;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) out.push_back(AuditFromRow(q));
    if (rc != SQLITE_DONE) return c.Error(rc, "read audit events");
    return out;
  }

  Status AddMessageFlags(std::string_view session_id, const std::vector<int64_t>& seqs,
                         uint32_t flags) override {
    return Write([&](Connection& c) -> Status {
      MISSY_RETURN_IF_ERROR(SessionMustExist(c, session_id));
      MISSY_ASSIGN_STMT(update, c, "UPDATE messages SET flags = flags | ?3 WHERE session_id = ?1 AND seq = ?2");
      for (int64_t seq : seqs) {
        update.Bind(1, session_id).Bind(2, seq).Bind(3, static_cast<int64_t>(flags));
        int rc = update.Step();
        if (rc != SQLITE_DONE) return c.Error(rc, "set message flags");
        sqlite3_reset(update.get());
      }
      return Status::Ok();
    });
  }

  // --- Summaries ----------------------------------------------------------------
  Result<SummaryRecord> InsertSummary(const SummaryRecord& summary) override {
    SummaryRecord stored = summary;
    if (stored.id.empty()) stored.id = GenerateId("sum_");
    if (stored.depth < 0) return Status::InvalidArgument("depth must be >= 0", "depth");
    if (stored.last_seq < stored.first_seq) {
      return Status::InvalidArgument("last_seq is before first_seq", "last_seq");
    }
    const std::string child_json = StringsToJson(stored.child_ids);
    Status st = Write([&](Connection& c) -> Status {
      MISSY_RETURN_IF_ERROR(SessionMustExist(c, stored.session_id));
      MISSY_ASSIGN_STMT(insert, c,
                        "INSERT INTO summaries (id, session_id, depth, content, tokens, first_seq, last_seq, "
                        "child_ids, parent_id, start_ms, end_ms, descendant_count, artifacts, created_at_ms) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
      insert.Bind(1, stored.id)
          .Bind(2, stored.session_id)
          .Bind(3, stored.depth)
          .Bind(4, stored.content)
          .Bind(5, stored.tokens)
          .Bind(6, stored.first_seq)
          .Bind(7, stored.last_seq)
          .Bind(8, child_json)
          .Bind(10, stored.start_ms)
          .Bind(11, stored.end_ms)
          .Bind(12, stored.descendant_count)
          .Bind(13, stored.artifacts_json)
          .Bind(14, stored.created_at_ms);
      if (stored.parent_id.empty()) {
        insert.BindNull(9);
      } else {
        insert.Bind(9, stored.parent_id);
      }
      int rc = insert.Step();
      if (IsUniqueViolation(rc)) return Status::AlreadyExists("summary '" + stored.id + "' already exists", "id");
      if (rc != SQLITE_DONE) return c.Error(rc, "insert summary");
      insert.Reset();
      if (!stored.child_ids.empty()) {
        MISSY_ASSIGN_STMT(child, c, "SELECT session_id, parent_id FROM summaries WHERE id = ?1");
        MISSY_ASSIGN_STMT(adopt, c, "UPDATE summaries SET parent_id = ?2 WHERE id = ?1");
        for (const std::string& id : stored.child_ids) {
          child.Bind(1, id);
          rc = child.Step();
          if (rc == SQLITE_DONE) return Status::NotFound("child summary '" + id + "' not found", "child_ids");
          if (rc != SQLITE_ROW) return c.Error(rc, "read child summary");
          if (child.Text(0) != stored.session_id) {
            return Status::InvalidArgument("child summary '" + id + "' belongs to another session", "child_ids");
          }
          if (!child.IsNull(1)) {
            return Status::Conflict("child summary '" + id + "' is already condensed into '" + child.Text(1) + "'",
                                    "child_ids");
          }
          sqlite3_reset(child.get());
          adopt.Bind(1, id).Bind(2, stored.id);
          rc = adopt.Step();
          if (rc != SQLITE_DONE) return c.Error(rc, "set summary parent");
          sqlite3_reset(adopt.get());
        }
      } else if (stored.first_seq > 0) {
        MISSY_ASSIGN_STMT(cover, c,
                          "UPDATE messages SET summary_id = ?2 WHERE session_id = ?1 AND seq BETWEEN ?3 AND ?4");
        cover.Bind(1, stored.session_id).Bind(2, stored.id).Bind(3, stored.first_seq).Bind(4, stored.last_seq);
        MISSY_RETURN_IF_ERROR(cover.Run("mark messages summarized"));
      }
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return stored;
  }

  Result<SummaryRecord> GetSummary(std::string_view id) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    return ReadSummary(*reader->conn, id);
  }

  Result<std::vector<SummaryRecord>> ListSummaries(std::string_view session_id, bool uncondensed_only) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    ReadSnapshot snapshot(c);
    MISSY_RETURN_IF_ERROR(SessionMustExist(c, session_id));
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kSummaryColumns + " FROM summaries WHERE session_id = ?1 " +
                          (uncondensed_only ? "AND parent_id IS NULL " : "") + "ORDER BY first_seq, depth, n");
    q.Bind(1, session_id);
    return CollectRows<SummaryRecord>(c, q, SummaryFromRow, "list summaries");
  }

  Result<std::vector<SummaryRecord>> SummaryChildren(std::string_view id) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    ReadSnapshot snapshot(c);
    auto parent = ReadSummary(c, id);
    if (!parent.ok()) return parent.status();
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kSummaryColumns +
                          " FROM summaries WHERE parent_id = ?1 ORDER BY first_seq, n");
    q.Bind(1, id);
    return CollectRows<SummaryRecord>(c, q, SummaryFromRow, "list summary children");
  }

  Result<std::vector<StoredMessage>> SummaryMessages(std::string_view id) override {
    auto summary = GetSummary(id);
    if (!summary.ok()) return summary.status();
    if (summary->first_seq <= 0) return std::vector<StoredMessage>{};
    return LoadMessages(summary->session_id, summary->first_seq - 1, summary->last_seq - summary->first_seq + 1);
  }

  // --- Memory items -------------------------------------------------------------
  Result<MemoryItem> AddMemoryItem(const MemoryItem& item) override {
    MemoryItem stored = item;
    if (stored.id.empty()) stored.id = GenerateId("mem_");
    if (stored.text.empty()) return Status::InvalidArgument("memory text must not be empty", "text");
    const std::string tags = StringsToJson(stored.tags);
    Status st = Write([&](Connection& c) -> Status {
      MISSY_ASSIGN_STMT(insert, c,
                        "INSERT INTO memory_items (id, text, tags, session_id, pinned, created_at_ms) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
      insert.Bind(1, stored.id).Bind(2, stored.text).Bind(3, tags).Bind(5, stored.pinned ? 1 : 0).Bind(6, stored.created_at_ms);
      if (stored.session_id.empty()) {
        insert.BindNull(4);
      } else {
        insert.Bind(4, stored.session_id);
      }
      int rc = insert.Step();
      if (IsUniqueViolation(rc)) return Status::AlreadyExists("memory item '" + stored.id + "' already exists", "id");
      if (rc != SQLITE_DONE) return c.Error(rc, "add memory item");
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return stored;
  }

  Result<MemoryItem> GetMemoryItem(std::string_view id) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    MISSY_ASSIGN_STMT(q, c, std::string("SELECT ") + kMemoryColumns + " FROM memory_items WHERE id = ?1");
    q.Bind(1, id);
    int rc = q.Step();
    if (rc == SQLITE_ROW) return MemoryFromRow(q);
    if (rc == SQLITE_DONE) return Status::NotFound("memory item '" + std::string(id) + "' not found", "id");
    return c.Error(rc, "read memory item");
  }

  Result<std::vector<MemoryItem>> ListMemoryItems(const ListOptions& options, std::string_view session_id) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kMemoryColumns +
                          " FROM memory_items WHERE (?3 = '' OR session_id IS NULL OR session_id = ?3) "
                          "ORDER BY created_at_ms DESC, n DESC LIMIT ?1 OFFSET ?2");
    BindPage(q, options);
    q.Bind(3, session_id);
    return CollectRows<MemoryItem>(c, q, MemoryFromRow, "list memory items");
  }

  Status UpdateMemoryItem(const MemoryItem& item) override {
    if (item.text.empty()) return Status::InvalidArgument("memory text must not be empty", "text");
    const std::string tags = StringsToJson(item.tags);
    return Write([&](Connection& c) -> Status {
      MISSY_ASSIGN_STMT(update, c, "UPDATE memory_items SET text = ?2, tags = ?3, pinned = ?4 WHERE id = ?1");
      update.Bind(1, item.id).Bind(2, item.text).Bind(3, tags).Bind(4, item.pinned ? 1 : 0);
      MISSY_RETURN_IF_ERROR(update.Run("update memory item"));
      if (sqlite3_changes(c.db()) == 0) return Status::NotFound("memory item '" + item.id + "' not found", "id");
      return Status::Ok();
    });
  }

  Status DeleteMemoryItem(std::string_view id) override {
    return DeleteById("DELETE FROM memory_items WHERE id = ?1", id, "memory item");
  }

  // --- Learnings ----------------------------------------------------------------
  Result<LearningRecord> AddLearning(const LearningRecord& learning) override {
    LearningRecord stored = learning;
    if (stored.id.empty()) stored.id = GenerateId("lrn_");
    if (stored.lesson.empty()) return Status::InvalidArgument("lesson must not be empty", "lesson");
    const std::string approach = StringsToJson(stored.approach);
    Status st = Write([&](Connection& c) -> Status {
      MISSY_ASSIGN_STMT(insert, c,
                        "INSERT INTO learnings (id, task_type, outcome, lesson, approach, session_id, created_at_ms) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
      insert.Bind(1, stored.id)
          .Bind(2, stored.task_type)
          .Bind(3, stored.outcome)
          .Bind(4, stored.lesson)
          .Bind(5, approach)
          .Bind(7, stored.created_at_ms);
      if (stored.session_id.empty()) {
        insert.BindNull(6);
      } else {
        insert.Bind(6, stored.session_id);
      }
      int rc = insert.Step();
      if (IsUniqueViolation(rc)) return Status::AlreadyExists("learning '" + stored.id + "' already exists", "id");
      if (rc != SQLITE_DONE) return c.Error(rc, "add learning");
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return stored;
  }

  Result<std::vector<LearningRecord>> ListLearnings(const ListOptions& options, std::string_view task_type) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kLearningColumns +
                          " FROM learnings WHERE (?3 = '' OR task_type = ?3) "
                          "ORDER BY created_at_ms DESC, n DESC LIMIT ?1 OFFSET ?2");
    BindPage(q, options);
    q.Bind(3, task_type);
    return CollectRows<LearningRecord>(c, q, LearningFromRow, "list learnings");
  }

  Status DeleteLearning(std::string_view id) override {
    return DeleteById("DELETE FROM learnings WHERE id = ?1", id, "learning");
  }

  // --- Search -------------------------------------------------------------------
  Result<std::vector<MemoryHit>> Search(const SearchOptions& options) override {
    std::vector<MemoryHit> hits;
    const std::vector<std::string> terms = fts::QueryTerms(options.query);
    if (terms.empty() || options.max_results <= 0) return hits;
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    // Appends are acknowledged before their text is indexed: bring the index up to
    // date first (through the writer, so the index rows and the watermark commit
    // together). If that fails (read-only file, disk full), the rows still above the
    // watermark are indexed into a temporary table of this connection instead, so a
    // search never misses a committed message either way.
    if (options.messages) {
      auto progress = IndexProgress(c);
      if (!progress.ok()) return progress.status();
      if (progress->newest > progress->indexed) (void)Write([](Connection& w) { return IndexPending(w, -1).status(); });
    }
    ReadSnapshot snapshot(c);
    bool pending = false;
    if (options.messages) {
      auto filled = IndexPendingIntoTemp(c);
      if (!filled.ok()) return filled.status();
      pending = *filled;
    }
    for (bool all_terms : {true, false}) {
      if (!all_terms && terms.size() == 1) break;
      std::vector<std::string> used = all_terms ? terms : RarestTerms(c, terms);
      const std::string match = fts::BuildMatchExpression(used, all_terms);
      MISSY_RETURN_IF_ERROR(SearchSources(c, options, match, pending, hits));
      if (!hits.empty()) break;
    }
    if (pending) (void)c.Exec("DELETE FROM temp.pending_messages_fts");
    std::stable_sort(hits.begin(), hits.end(),
                     [](const MemoryHit& a, const MemoryHit& b) { return a.score > b.score; });
    if (hits.size() > static_cast<size_t>(options.max_results)) hits.resize(static_cast<size_t>(options.max_results));
    return hits;
  }

  // --- Jobs ---------------------------------------------------------------------
  Result<EnqueueResult> EnqueueJob(std::string_view kind, std::string_view session_id,
                                   std::string_view payload_json, int64_t now_ms) override {
    if (kind.empty()) return Status::InvalidArgument("job kind must not be empty", "kind");
    EnqueueResult result;
    Status st = Write([&](Connection& c) -> Status {
      MISSY_ASSIGN_STMT(existing, c,
                        "SELECT id FROM jobs WHERE session_id = ?1 AND kind = ?2 AND state IN ('queued', 'running')");
      existing.Bind(1, session_id).Bind(2, kind);
      int rc = existing.Step();
      if (rc != SQLITE_ROW && rc != SQLITE_DONE) return c.Error(rc, "read jobs");
      int64_t id;
      if (rc == SQLITE_ROW) {
        id = existing.Int(0);
        result.created = false;
      } else {
        existing.Reset();
        MISSY_ASSIGN_STMT(insert, c,
                          "INSERT INTO jobs (kind, session_id, state, payload, next_run_at_ms, created_at_ms, "
                          "updated_at_ms) VALUES (?1, ?2, 'queued', ?3, ?4, ?4, ?4)");
        insert.Bind(1, kind).Bind(2, session_id).Bind(3, payload_json.empty() ? "{}" : payload_json).Bind(4, now_ms);
        MISSY_RETURN_IF_ERROR(insert.Run("enqueue job"));
        id = sqlite3_last_insert_rowid(c.db());
        result.created = true;
      }
      existing.Reset();
      auto job = LoadJob(c, id);
      if (!job.ok()) return job.status();
      result.job = std::move(*job);
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return result;
  }

  Result<std::optional<Job>> ClaimJob(int64_t now_ms, int64_t lease_ms) override {
    std::optional<Job> claimed;
    Status st = Write([&](Connection& c) -> Status {
      MISSY_RETURN_IF_ERROR(RequeueExpired(c, now_ms).status());
      MISSY_ASSIGN_STMT(next, c,
                        "SELECT id FROM jobs WHERE state = 'queued' AND next_run_at_ms <= ?1 "
                        "ORDER BY next_run_at_ms, id LIMIT 1");
      next.Bind(1, now_ms);
      int rc = next.Step();
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return c.Error(rc, "find a due job");
      int64_t id = next.Int(0);
      next.Reset();
      MISSY_ASSIGN_STMT(claim, c,
                        "UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_until_ms = ?2, "
                        "updated_at_ms = ?3 WHERE id = ?1");
      claim.Bind(1, id).Bind(2, now_ms + lease_ms).Bind(3, now_ms);
      MISSY_RETURN_IF_ERROR(claim.Run("claim job"));
      auto job = LoadJob(c, id);
      if (!job.ok()) return job.status();
      claimed = std::move(*job);
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return claimed;
  }

  Status CompleteJob(int64_t id, int64_t now_ms) override {
    return Write([&](Connection& c) -> Status {
      auto job = LoadJob(c, id);
      if (!job.ok()) return job.status();
      if (job->state != "running") {
        return Status::Conflict("job " + std::to_string(id) + " is " + job->state + ", not running", "id");
      }
      MISSY_ASSIGN_STMT(done, c,
                        "UPDATE jobs SET state = 'done', lease_until_ms = 0, last_error = '', updated_at_ms = ?2 "
                        "WHERE id = ?1");
      done.Bind(1, id).Bind(2, now_ms);
      return done.Run("complete job");
    });
  }

  Result<Job> FailJob(int64_t id, std::string_view error, int64_t now_ms, const RetryPolicy& policy) override {
    Job updated;
    Status st = Write([&](Connection& c) -> Status {
      auto job = LoadJob(c, id);
      if (!job.ok()) return job.status();
      if (job->state != "running") {
        return Status::Conflict("job " + std::to_string(id) + " is " + job->state + ", not running", "id");
      }
      const bool give_up = job->attempts >= policy.max_attempts;
      int64_t delay = policy.base_delay_ms;
      for (int i = 1; i < job->attempts && delay < policy.max_delay_ms; ++i) delay *= 2;
      delay = std::min(delay, policy.max_delay_ms);
      MISSY_ASSIGN_STMT(fail, c,
                        "UPDATE jobs SET state = ?2, next_run_at_ms = ?3, lease_until_ms = 0, last_error = ?4, "
                        "updated_at_ms = ?5 WHERE id = ?1");
      fail.Bind(1, id)
          .Bind(2, give_up ? "failed" : "queued")
          .Bind(3, give_up ? job->next_run_at_ms : now_ms + delay)
          .Bind(4, error)
          .Bind(5, now_ms);
      MISSY_RETURN_IF_ERROR(fail.Run("fail job"));
      auto reloaded = LoadJob(c, id);
      if (!reloaded.ok()) return reloaded.status();
      updated = std::move(*reloaded);
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return updated;
  }

  Result<int64_t> RequeueExpiredJobs(int64_t now_ms) override {
    int64_t n = 0;
    Status st = Write([&](Connection& c) -> Status {
      auto r = RequeueExpired(c, now_ms);
      if (!r.ok()) return r.status();
      n = *r;
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return n;
  }

  Result<Job> GetJob(int64_t id) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    return LoadJob(*reader->conn, id);
  }

  Result<std::vector<Job>> ListJobs(const ListOptions& options, std::string_view state) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kJobColumns +
                          " FROM jobs WHERE (?3 = '' OR state = ?3) ORDER BY id DESC LIMIT ?1 OFFSET ?2");
    BindPage(q, options);
    q.Bind(3, state);
    return CollectRows<Job>(c, q, JobFromRow, "list jobs");
  }

  // --- Calibration --------------------------------------------------------------
  Result<Calibration> GetCalibration(std::string_view model) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    MISSY_ASSIGN_STMT(q, c, "SELECT model, ratio, samples, updated_at_ms FROM calibration WHERE model = ?1");
    q.Bind(1, model);
    int rc = q.Step();
    if (rc == SQLITE_ROW) return Calibration{q.Text(0), q.Double(1), q.Int(2), q.Int(3)};
    if (rc == SQLITE_DONE) return Status::NotFound("no calibration for model '" + std::string(model) + "'", "model");
    return c.Error(rc, "read calibration");
  }

  Status PutCalibration(const Calibration& cal) override {
    if (cal.model.empty()) return Status::InvalidArgument("model must not be empty", "model");
    return Write([&](Connection& c) -> Status {
      MISSY_ASSIGN_STMT(put, c,
                        "INSERT INTO calibration (model, ratio, samples, updated_at_ms) VALUES (?1, ?2, ?3, ?4) "
                        "ON CONFLICT (model) DO UPDATE SET ratio = excluded.ratio, samples = excluded.samples, "
                        "updated_at_ms = excluded.updated_at_ms");
      put.Bind(1, cal.model).Bind(2, cal.ratio).Bind(3, cal.samples).Bind(4, cal.updated_at_ms);
      return put.Run("store calibration");
    });
  }

  Result<std::vector<Calibration>> ListCalibrations() override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    MISSY_ASSIGN_STMT(q, c, "SELECT model, ratio, samples, updated_at_ms FROM calibration ORDER BY model");
    return CollectRows<Calibration>(
        c, q, [](const Statement& s) { return Calibration{s.Text(0), s.Double(1), s.Int(2), s.Int(3)}; },
        "list calibration");
  }

  // --- Audit chain --------------------------------------------------------------
  Result<AuditVerifyReport> VerifyAuditChain() override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    ReadSnapshot snapshot(c);
    AuditVerifyReport report;
    auto anchor = ReadAnchor(c);
    if (!anchor.ok()) return anchor.status();
    int64_t expected_seq = anchor->first + 1;
    std::string expected_prev = anchor->second;
    MISSY_ASSIGN_STMT(q, c, std::string("SELECT ") + kAuditColumns + " FROM audit_events ORDER BY seq");
    auto broken = [&](int64_t seq, std::string reason) {
      report.ok = false;
      report.broken_seq = seq;
      report.reason = std::move(reason);
    };
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      AuditEvent e = AuditFromRow(q);
      if (report.checked == 0) report.first_seq = e.seq;
      report.last_seq = e.seq;
      ++report.checked;
      if (!report.ok) continue;
      if (e.seq != expected_seq) {
        broken(expected_seq, e.seq > expected_seq
                                 ? "event " + std::to_string(expected_seq) + " is missing (next present is " +
                                       std::to_string(e.seq) + ")"
                                 : "event " + std::to_string(e.seq) + " is before the retention anchor");
        continue;
      }
      if (e.prev_chain_hash != expected_prev) {
        broken(e.seq, "prev_chain_hash of event " + std::to_string(e.seq) + " does not match the hash of " +
                          (e.seq == anchor->first + 1 ? std::string("the chain start")
                                                      : "event " + std::to_string(e.seq - 1)) +
                          " (that event was edited, or this one was inserted or replaced)");
        continue;
      }
      expected_prev = sqlite::Sha256Hex(AuditEventToJsonLine(e));
      expected_seq = e.seq + 1;
    }
    if (rc != SQLITE_DONE) return c.Error(rc, "read audit events");
    q.Reset();
    if (report.ok) {
      // The head recorded at each append catches an edited or removed last event.
      auto head = ReadMeta(c, "audit_head");
      if (!head.ok()) return head.status();
      if (head->has_value()) {
        const std::string& value = **head;
        size_t colon = value.find(':');
        int64_t head_seq = colon == std::string::npos ? -1 : std::atoll(value.substr(0, colon).c_str());
        std::string head_hash = colon == std::string::npos ? "" : value.substr(colon + 1);
        if (head_seq > expected_seq - 1) {
          broken(expected_seq, "event " + std::to_string(expected_seq) + " is missing (the chain head is " +
                                   std::to_string(head_seq) + ")");
        } else if (head_seq == expected_seq - 1 && head_hash != expected_prev) {
          broken(head_seq, "event " + std::to_string(head_seq) + " does not match the recorded chain head (edited)");
        } else if (head_seq < expected_seq - 1) {
          broken(head_seq + 1, "event " + std::to_string(head_seq + 1) + " was added after the recorded chain head");
        }
      }
    }
    return report;
  }

  Result<int64_t> PruneAuditEvents(const AuditRetention& retention) override {
    int64_t deleted = 0;
    Status st = Write([&](Connection& c) -> Status {
      int64_t cutoff = 0;  // delete seq <= cutoff
      if (retention.max_events > 0) {
        MISSY_ASSIGN_STMT(q, c, "SELECT seq FROM audit_events ORDER BY seq DESC LIMIT 1 OFFSET ?1");
        q.Bind(1, retention.max_events);
        int rc = q.Step();
        if (rc == SQLITE_ROW) cutoff = q.Int(0);
        else if (rc != SQLITE_DONE) return c.Error(rc, "audit retention");
      }
      if (retention.min_timestamp_ms > 0) {
        // Only a prefix may go (the chain stays contiguous): up to the first event
        // that is recent enough.
        MISSY_ASSIGN_STMT(q, c,
                          "SELECT (SELECT min(seq) FROM audit_events WHERE timestamp_ms >= ?1), "
                          "(SELECT max(seq) FROM audit_events)");
        q.Bind(1, retention.min_timestamp_ms);
        int rc = q.Step();
        if (rc != SQLITE_ROW) return c.Error(rc, "audit retention");
        int64_t by_age = q.IsNull(0) ? q.Int(1) : q.Int(0) - 1;
        cutoff = std::max(cutoff, by_age);
      }
      if (cutoff <= 0) return Status::Ok();
      MISSY_ASSIGN_STMT(last, c, std::string("SELECT ") + kAuditColumns + " FROM audit_events WHERE seq = ?1");
      last.Bind(1, cutoff);
      int rc = last.Step();
      if (rc == SQLITE_DONE) return Status::Ok();  // already below the anchor
      if (rc != SQLITE_ROW) return c.Error(rc, "audit retention");
      const std::string anchor_hash = sqlite::Sha256Hex(AuditEventToJsonLine(AuditFromRow(last)));
      last.Reset();
      MISSY_ASSIGN_STMT(del, c, "DELETE FROM audit_events WHERE seq <= ?1");
      del.Bind(1, cutoff);
      MISSY_RETURN_IF_ERROR(del.Run("delete old audit events"));
      deleted = sqlite3_changes(c.db());
      MISSY_RETURN_IF_ERROR(PutMeta(c, "audit_anchor_seq", std::to_string(cutoff)));
      MISSY_RETURN_IF_ERROR(PutMeta(c, "audit_anchor_hash", anchor_hash));
      audit_tail_.reset();
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return deleted;
  }

  Result<MissyImportReport> ImportMissy(const std::string& missy_db_path, const MessageTokenCounter* counter,
                                        int64_t now_ms) override {
    return ImportMissyDatabase(*this, missy_db_path, counter, now_ms);
  }

  WriterStats GetWriterStats() override {
    std::lock_guard lock(mu_);
    return stats_;
  }

  Status WriteTransaction(const std::function<Status(Connection&)>& fn) override {
    return Write([&](Connection& c) { return fn(c); });
  }

 private:
  template <typename T, typename RowFn>
  static Result<std::vector<T>> CollectRows(Connection& c, Statement& q, RowFn row, std::string_view what) {
    std::vector<T> out;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) out.push_back(row(q));
    if (rc != SQLITE_DONE) return c.Error(rc, what);
    return out;
  }

  static void BindPage(Statement& q, const ListOptions& options) {
    q.Bind(1, static_cast<int64_t>(options.limit < 0 ? -1 : options.limit))
        .Bind(2, static_cast<int64_t>(options.offset < 0 ? 0 : options.offset));
  }

  static Result<SummaryRecord> ReadSummary(Connection& c, std::string_view id) {
    MISSY_ASSIGN_STMT(q, c, std::string("SELECT ") + kSummaryColumns + " FROM summaries WHERE id = ?1");
    q.Bind(1, id);
    int rc = q.Step();
    if (rc == SQLITE_ROW) return SummaryFromRow(q);
    if (rc == SQLITE_DONE) return Status::NotFound("summary '" + std::string(id) + "' not found", "id");
    return c.Error(rc, "read summary");
  }

  Status DeleteById(const char* sql, std::string_view id, std::string_view what) {
    return Write([&](Connection& c) -> Status {
      MISSY_ASSIGN_STMT(del, c, sql);
      del.Bind(1, id);
      MISSY_RETURN_IF_ERROR(del.Run("delete " + std::string(what)));
      if (sqlite3_changes(c.db()) == 0) {
        return Status::NotFound(std::string(what) + " '" + std::string(id) + "' not found", "id");
      }
      return Status::Ok();
    });
  }

  static Result<int64_t> RequeueExpired(Connection& c, int64_t now_ms) {
    MISSY_ASSIGN_STMT(q, c,
                      "UPDATE jobs SET state = 'queued', lease_until_ms = 0, last_error = 'lease expired', "
                      "updated_at_ms = ?1 WHERE state = 'running' AND lease_until_ms < ?1");
    q.Bind(1, now_ms);
    MISSY_RETURN_IF_ERROR(q.Run("requeue expired jobs"));
    return static_cast<int64_t>(sqlite3_changes(c.db()));
  }

  // Runs the search on each selected source and appends the hits (score = -bm25).
  static Status SearchSources(Connection& c, const SearchOptions& o, const std::string& match, bool pending,
                              std::vector<MemoryHit>& hits) {
    const int64_t snippet_tokens = std::clamp(o.snippet_tokens, 1, 64);
    struct Source {
      bool enabled;
      const char* name;
      const char* sql;
    };
    const Source sources[] = {
        // ORDER BY rank (= bm25) lets FTS5 sort internally, so snippet() runs only for
        // the rows actually returned, not for every match.
        {o.memory, "memory",
         "SELECT m.id, m.text, memory_fts.rank FROM memory_fts JOIN memory_items m ON m.n = memory_fts.rowid "
         "WHERE memory_fts MATCH ?1 AND (?2 = '' OR m.session_id IS NULL OR m.session_id = ?2) "
         "AND (?3 = '' OR m.session_id IS NULL OR m.session_id <> ?3) ORDER BY memory_fts.rank LIMIT ?5"},
        {o.summaries, "summary",
         "SELECT s.id, snippet(summaries_fts, 0, '', '', '...', ?4), summaries_fts.rank "
         "FROM summaries_fts JOIN summaries s ON s.n = summaries_fts.rowid "
         "WHERE summaries_fts MATCH ?1 AND (?2 = '' OR s.session_id = ?2) AND (?3 = '' OR s.session_id <> ?3) "
         "ORDER BY summaries_fts.rank LIMIT ?5"},
        {o.messages, "message",
         "SELECT m.session_id || ':' || m.seq, snippet(messages_fts, 0, '', '', '...', ?4), messages_fts.rank "
         "FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
         "WHERE messages_fts MATCH ?1 AND (?2 = '' OR m.session_id = ?2) AND (?3 = '' OR m.session_id <> ?3) "
         "ORDER BY messages_fts.rank LIMIT ?5"},
        // Committed messages the index has not caught up with (see Search).
        {o.messages && pending, "message",
         "SELECT m.session_id || ':' || m.seq, snippet(pending_messages_fts, 0, '', '', '...', ?4), "
         "pending_messages_fts.rank FROM temp.pending_messages_fts JOIN messages m ON m.id = pending_messages_fts.rowid "
         "WHERE pending_messages_fts MATCH ?1 AND (?2 = '' OR m.session_id = ?2) AND (?3 = '' OR m.session_id <> ?3) "
         "ORDER BY pending_messages_fts.rank LIMIT ?5"},
    };
    for (const Source& source : sources) {
      if (!source.enabled) continue;
      MISSY_ASSIGN_STMT(q, c, source.sql);
      q.Bind(1, match)
          .Bind(2, o.session_id)
          .Bind(3, o.exclude_session_id)
          .Bind(4, snippet_tokens)
          .Bind(5, static_cast<int64_t>(o.max_results));
      int rc;
      while ((rc = q.Step()) == SQLITE_ROW) {
        hits.push_back(MemoryHit{source.name, q.Text(0), q.Text(1), -q.Double(2)});
      }
      if (rc != SQLITE_DONE) return c.Error(rc, std::string("search ") + source.name);
    }
    return Status::Ok();
  }

  // --- Deferred message indexing -------------------------------------------------
  // messages_fts holds exactly the messages with id <= the watermark (meta
  // 'messages_fts_indexed', schema version 4); newer ones are pending.
  struct IndexState {
    int64_t indexed = 0;  // the watermark
    int64_t newest = 0;   // max(messages.id)
  };
  static Result<IndexState> IndexProgress(Connection& c) {
    MISSY_ASSIGN_STMT(q, c,
                      "SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'messages_fts_indexed'), 0), "
                      "coalesce((SELECT max(id) FROM messages), 0)");
    int rc = q.Step();
    if (rc != SQLITE_ROW) return c.Error(rc, "read the message index watermark");
    return IndexState{q.Int(0), q.Int(1)};
  }

  // Indexes pending messages in id order, at most `limit` of them (< 0: all), and
  // advances the watermark, in the caller's transaction. Returns how many remain (at most).
  static Result<int64_t> IndexPending(Connection& c, int64_t limit) {
    auto state = IndexProgress(c);
    if (!state.ok()) return state.status();
    if (state->newest <= state->indexed) return int64_t{0};
    int64_t upto = state->newest;
    if (limit >= 0) {
      MISSY_ASSIGN_STMT(bound, c, "SELECT max(id) FROM (SELECT id FROM messages WHERE id > ?1 ORDER BY id LIMIT ?2)");
      bound.Bind(1, state->indexed).Bind(2, std::max<int64_t>(1, limit));
      int rc = bound.Step();
      if (rc != SQLITE_ROW) return c.Error(rc, "find the next messages to index");
      upto = bound.Int(0);
    }
    MISSY_ASSIGN_STMT(insert, c,
                      "INSERT INTO messages_fts (rowid, text) SELECT id, text FROM messages "
                      "WHERE id > ?1 AND id <= ?2 ORDER BY id");
    insert.Bind(1, state->indexed).Bind(2, upto);
    MISSY_RETURN_IF_ERROR(insert.Run("index message text"));
    MISSY_RETURN_IF_ERROR(PutMeta(c, "messages_fts_indexed", std::to_string(upto)));
    return state->newest - upto;  // ids, not rows: an upper bound
  }

  // On a reader inside its snapshot: copies the messages above the watermark into
  // temp.pending_messages_fts. Returns whether there were any.
  static Result<bool> IndexPendingIntoTemp(Connection& c) {
    auto state = IndexProgress(c);
    if (!state.ok()) return state.status();
    if (state->newest <= state->indexed) return false;
    MISSY_RETURN_IF_ERROR(c.Exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.pending_messages_fts USING fts5 "
                                 "(text, tokenize='unicode61 remove_diacritics 2');"
                                 "DELETE FROM temp.pending_messages_fts;",
                                 "prepare the pending message index"));
    MISSY_ASSIGN_STMT(fill, c,
                      "INSERT INTO temp.pending_messages_fts (rowid, text) SELECT id, text FROM messages WHERE id > ?1");
    fill.Bind(1, state->indexed);
    MISSY_RETURN_IF_ERROR(fill.Run("index pending messages"));
    return true;
  }

  // One writer-side index transaction of at most `limit` messages (idle time, or to
  // bound the backlog).
  void RunIndexBatch(int64_t limit) {
    int64_t remaining = 0;
    auto state = IndexProgress(*writer_);  // outside a transaction: no lock when nothing is pending
    Status st = state.status();
    if (st.ok() && state->newest <= state->indexed) {
      std::lock_guard lock(mu_);
      index_backlog_ = 0;
      return;
    }
    if (st.ok()) st = RunStatement("BEGIN IMMEDIATE");
    if (st.ok()) {
      auto left = IndexPending(*writer_, limit);
      st = left.ok() ? RunStatement("COMMIT") : left.status();
      if (left.ok()) remaining = *left;
    }
    if (!st.ok() && writer_->InTransaction()) (void)RunStatement("ROLLBACK");
    std::lock_guard lock(mu_);
    // On failure (disk full, read-only) wait for the next committed write to retry;
    // a search catches up (or falls back) by itself.
    index_backlog_ = st.ok() ? remaining : 0;
    if (st.ok()) ++stats_.index_transactions;
  }

  static Result<std::optional<std::string>> ReadMeta(Connection& c, std::string_view key) {
    MISSY_ASSIGN_STMT(q, c, "SELECT value FROM meta WHERE key = ?1");
    q.Bind(1, key);
    int rc = q.Step();
    if (rc == SQLITE_ROW) return std::optional<std::string>(q.Text(0));
    if (rc == SQLITE_DONE) return std::optional<std::string>();
    return c.Error(rc, "read meta");
  }

  static Status PutMeta(Connection& c, std::string_view key, std::string_view value) {
    MISSY_ASSIGN_STMT(q, c,
                      "INSERT INTO meta (key, value) VALUES (?1, ?2) "
                      "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    q.Bind(1, key).Bind(2, value);
    return q.Run("write meta");
  }

  // The retention anchor: (seq of the last deleted event, hash of its line), or
  // (0, 64 zeros) when nothing was ever deleted.
  static Result<std::pair<int64_t, std::string>> ReadAnchor(Connection& c) {
    auto seq = ReadMeta(c, "audit_anchor_seq");
    if (!seq.ok()) return seq.status();
    auto hash = ReadMeta(c, "audit_anchor_hash");
    if (!hash.ok()) return hash.status();
    if (!seq->has_value() || !hash->has_value()) return std::make_pair(int64_t{0}, std::string(kZeroHash));
    return std::make_pair(static_cast<int64_t>(std::atoll((*seq)->c_str())), **hash);
  }

  // --- Group commit -------------------------------------------------------------
  struct WriteRequest {
    std::function<Status(Connection&)> fn;
    Status status;
    bool done = false;
  };

  // Runs `fn` on the writer thread inside a transaction shared with other
  // concurrent writes (each in its own savepoint, so one failing write does not
  // undo the others). Returns once that transaction committed (or failed).
  Status Write(std::function<Status(Connection&)> fn) {
    WriteRequest request{std::move(fn), Status(), false};
    std::unique_lock lock(mu_);
    if (stopping_) return Status::Unavailable("database " + path_ + " is closing");
    queue_.push_back(&request);
    queue_cv_.notify_one();
    done_cv_.wait(lock, [&] { return request.done; });
    return std::move(request.status);
  }

  // Between write transactions the writer indexes pending message text: once no
  // write arrived for options_.index_idle_ms (right after a commit the queue is
  // empty only because every writer is still being woken), or when the backlog
  // exceeds options_.max_index_backlog (then one index transaction alternates with
  // each write transaction).
  void WriterLoop() {
    std::vector<WriteRequest*> batch;
    auto last_write = std::chrono::steady_clock::now();
    const auto idle = std::chrono::milliseconds(std::max(0, options_.index_idle_ms));
    for (;;) {
      {
        std::unique_lock lock(mu_);
        queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || index_backlog_ > 0; });
        const bool must_index = index_backlog_ > std::max<int64_t>(0, options_.max_index_backlog) && !index_forced_;
        if (queue_.empty() && stopping_) return;  // everything queued was served
        if (queue_.empty() && !must_index) {
          const auto idle_from = last_write + idle;
          if (std::chrono::steady_clock::now() < idle_from &&
              queue_cv_.wait_until(lock, idle_from, [&] { return stopping_ || !queue_.empty(); })) {
            continue;  // a write arrived (or Close): serve it first
          }
        }
        if (queue_.empty() || must_index) {
          index_forced_ = !queue_.empty();
          // Over the bound, index back down to it (and one batch more): a write
          // transaction may add more messages than one batch holds.
          const int64_t batch_size = std::max(1, options_.index_batch);
          const int64_t limit =
              must_index ? std::max(batch_size, index_backlog_ - options_.max_index_backlog + batch_size) : batch_size;
          lock.unlock();
          RunIndexBatch(limit);
          continue;
        }
        index_forced_ = false;
        size_t n = std::min(queue_.size(), static_cast<size_t>(std::max(1, options_.max_batch)));
        batch.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
        queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      }
      const bool committed = RunBatch(batch);
      last_write = std::chrono::steady_clock::now();
      int64_t backlog = -1;
      if (committed) {
        auto state = IndexProgress(*writer_);
        if (state.ok()) backlog = std::max<int64_t>(0, state->newest - state->indexed);
      }
      {
        std::lock_guard lock(mu_);
        if (backlog >= 0) index_backlog_ = backlog;
        stats_.transactions += committed ? 1 : 0;
        stats_.writes += static_cast<int64_t>(batch.size());
        stats_.max_batch = std::max(stats_.max_batch, static_cast<int64_t>(batch.size()));
        for (WriteRequest* r : batch) {
          stats_.failed_writes += r->status.ok() ? 0 : 1;
          r->done = true;
        }
      }
      done_cv_.notify_all();
      batch.clear();
    }
  }

  Status RunStatement(const char* sql) {
    auto stmt = writer_->Prepare(sql);
    if (!stmt.ok()) return stmt.status();
    return stmt->Run(std::string("database ") + path_ + ": " + sql);
  }

  // Returns whether the transaction committed.
  bool RunBatch(const std::vector<WriteRequest*>& batch) {
    auto fail_all = [&](const Status& st) {
      for (WriteRequest* r : batch) r->status = st;
      audit_tail_.reset();
      return false;
    };
    Status begin = RunStatement("BEGIN IMMEDIATE");
    if (!begin.ok()) return fail_all(begin);
    for (WriteRequest* r : batch) {
      Status st = RunStatement("SAVEPOINT w");
      if (st.ok()) st = r->fn(*writer_);
      if (!writer_->InTransaction()) {
        // SQLite rolled the whole transaction back (disk full, I/O error): every
        // write of the batch is lost, so none may be acknowledged.
        return fail_all(st.ok() ? Status::Unavailable("database " + path_ + ": transaction aborted") : st);
      }
      if (st.ok()) st = RunStatement("RELEASE w");
      if (!st.ok()) {
        audit_tail_.reset();
        (void)RunStatement("ROLLBACK TO w");
        (void)RunStatement("RELEASE w");
      }
      r->status = std::move(st);
    }
    Status commit = RunStatement("COMMIT");
    if (!commit.ok()) {
      if (writer_->InTransaction()) (void)RunStatement("ROLLBACK");
      return fail_all(commit);
    }
    return true;
  }

  // The last audit seq and the hash its successor must carry. Cached by the writer;
  // reset whenever a transaction that may have changed it did not commit.
  Result<std::pair<int64_t, std::string>> AuditTail(Connection& c) {
    if (audit_tail_) return *audit_tail_;
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kAuditColumns + " FROM audit_events ORDER BY seq DESC LIMIT 1");
    int rc = q.Step();
    if (rc == SQLITE_ROW) return std::make_pair(q.Int(0), sqlite::Sha256Hex(AuditEventToJsonLine(AuditFromRow(q))));
    if (rc != SQLITE_DONE) return c.Error(rc, "read audit tail");
    q.Reset();
    // Empty table: start from the retention anchor if events were deleted, else zeros.
    return ReadAnchor(c);
  }

  // --- Readers ------------------------------------------------------------------
  struct ReaderLease {
    SqliteDatabase* owner = nullptr;
    std::unique_ptr<Connection> conn;
    ReaderLease(SqliteDatabase* o, std::unique_ptr<Connection> c) : owner(o), conn(std::move(c)) {}
    ReaderLease(ReaderLease&& other) noexcept : owner(other.owner), conn(std::move(other.conn)) {}
    ReaderLease& operator=(ReaderLease&&) = delete;
    ~ReaderLease() {
      if (conn) owner->ReleaseReader(std::move(conn));
    }
  };

  Result<ReaderLease> AcquireReader() {
    {
      std::lock_guard lock(readers_mu_);
      if (!idle_readers_.empty()) {
        auto conn = std::move(idle_readers_.back());
        idle_readers_.pop_back();
        return ReaderLease(this, std::move(conn));
      }
    }
    auto conn = Connection::Open(path_, SQLITE_OPEN_READONLY);
    if (!conn.ok()) return conn.status();
    sqlite3_busy_timeout((*conn)->db(), options_.busy_timeout_ms);
    return ReaderLease(this, std::move(*conn));
  }

  void ReleaseReader(std::unique_ptr<Connection> conn) {
    // A snapshot left open (a failed COMMIT) would pin the connection to old data.
    if (conn->InTransaction()) {
      (void)conn->Exec("ROLLBACK");
      if (conn->InTransaction()) return;  // drop it
    }
    std::lock_guard lock(readers_mu_);
    if (idle_readers_.size() < kMaxIdleReaders) idle_readers_.push_back(std::move(conn));
  }

  // The any-word fallback ranks every row holding any of the words, so common words
  // make it slow and add little: keep the rarest words (by how many messages hold
  // them), at most kMaxAnyWordTerms, and drop those in more than kCommonWordDocs
  // messages while at least two words remain. Without document counts (no vocab
  // table) the longest words are kept instead.
  static std::vector<std::string> RarestTerms(Connection& c, const std::vector<std::string>& terms) {
    std::vector<std::pair<int64_t, std::string>> ranked;
    bool have_counts =
        c.Exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.messages_vocab USING fts5vocab(main, messages_fts, row)")
            .ok();
    auto q = c.Prepare("SELECT doc FROM temp.messages_vocab WHERE term = ?1");
    have_counts = have_counts && q.ok();
    for (const std::string& t : terms) {
      int64_t docs = 0;
      if (have_counts) {
        std::string lower = t;
        for (char& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
        q->Bind(1, lower);
        if (q->Step() == SQLITE_ROW) docs = q->Int(0);
        sqlite3_reset(q->get());
      } else {
        docs = -static_cast<int64_t>(t.size());  // longest first
      }
      ranked.emplace_back(docs, t);
    }
    // Words in no message come last: they cost nothing but may still match memory
    // items or summaries.
    auto key = [](int64_t docs) { return docs == 0 ? INT64_MAX : docs; };
    std::stable_sort(ranked.begin(), ranked.end(),
                     [&](const auto& a, const auto& b) { return key(a.first) < key(b.first); });
    std::vector<std::string> out;
    for (const auto& [docs, t] : ranked) {
      if (out.size() >= kMaxAnyWordTerms || (out.size() >= 2 && docs > kCommonWordDocs)) break;
      out.push_back(t);
    }
    return out;
  }

  static constexpr size_t kMaxIdleReaders = 8;
  static constexpr size_t kMaxAnyWordTerms = 8;
  static constexpr int64_t kCommonWordDocs = 5000;

  const std::string path_;
  const DatabaseOptions options_;
  std::unique_ptr<Connection> writer_;  // used by the writer thread only

  std::mutex mu_;
  std::condition_variable queue_cv_;
  std::condition_variable done_cv_;
  std::deque<WriteRequest*> queue_;
  bool stopping_ = false;
  std::thread writer_thread_;
  std::optional<std::pair<int64_t, std::string>> audit_tail_;  // writer thread only
  WriterStats stats_;                                          // guarded by mu_
  int64_t index_backlog_ = 1;   // messages not yet indexed, approx. (guarded by mu_; 1: look at Open)
  bool index_forced_ = false;   // the last index batch ran although writes were queued

  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Connection>> idle_readers_;
};

}  // namespace

SummaryView ToSummaryView(const SummaryRecord& s) {
  SummaryView v;
  v.id = s.id;
  v.depth = s.depth;
  v.first_seq = s.first_seq;
  v.last_seq = s.last_seq;
  v.message_count = s.descendant_count;
  v.start_ms = s.start_ms;
  v.end_ms = s.end_ms;
  v.text = s.content;
  v.tokens = s.tokens;
  return v;
}

Learning ToLearning(const LearningRecord& l) {
  return Learning{l.id, l.task_type, l.outcome, l.lesson, l.created_at_ms};
}

int Database::LatestSchemaVersion() { return schema::LatestVersion(); }

Result<std::unique_ptr<Database>> Database::Open(const std::string& path) {
  return Open(path, DatabaseOptions{});
}

Result<std::unique_ptr<Database>> Database::Open(const std::string& path, const DatabaseOptions& options) {
  int flags = options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  auto conn = Connection::Open(path, flags);
  if (!conn.ok()) return conn.status();
  Connection& c = **conn;
  sqlite3_busy_timeout(c.db(), options.busy_timeout_ms);
  // Check the version before anything that could write (journal_mode changes the
  // header): a database from a newer missyd is refused and left byte-for-byte alone.
  auto version = schema::CheckVersion(c);
  if (!version.ok()) {
    if (version.status().code() == StatusCode::kCorruption) return version.status();
    return Status(version.status().code(), "database " + path + ": " + version.status().message());
  }
  if (!options.read_only) {
    auto mode = c.Prepare("PRAGMA journal_mode = WAL");
    if (!mode.ok()) return mode.status();
    int rc = mode->Step();
    if (rc != SQLITE_ROW) return c.Error(rc, "database " + path + ": set WAL mode");
    if (mode->Text(0) != "wal") {
      return Status::Unavailable("database " + path + ": cannot use WAL mode (journal_mode is " +
                                 mode->Text(0) + ")");
    }
  }
  // FULL: a commit is on disk (WAL fsynced) before it is acknowledged. NORMAL would
  // lose the last commits on power loss, and group commit makes FULL cheap.
  MISSY_RETURN_IF_ERROR(c.Exec("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; "
                               "PRAGMA journal_size_limit = 67108864;",
                               "database " + path + ": set pragmas"));
  if (options.max_page_count > 0) {
    MISSY_RETURN_IF_ERROR(c.Exec("PRAGMA max_page_count = " + std::to_string(options.max_page_count)));
  }
  MISSY_RETURN_IF_ERROR(schema::Migrate(c));
  return std::unique_ptr<Database>(new SqliteDatabase(path, options, std::move(*conn)));
}

}  // namespace missy

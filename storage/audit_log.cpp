#include "storage/audit_log.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "core/digest.h"
#include "storage/sqlite.h"
#include "storage/store_util.h"

namespace missy {
namespace {

using sqlite::Connection;
using sqlite::Statement;

constexpr char kZeroHash[] = "0000000000000000000000000000000000000000000000000000000000000000";

const char kColumns[] =
    "seq, timestamp_ms, session_id, task_id, event_type, category, result, detail_json, "
    "prev_chain_hash";

AuditEvent FromRow(const Statement& s) {
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

std::string LineHash(const AuditEvent& e) { return Sha256Hex(AuditEventToJsonLine(e)); }

// (seq, hash): the last event and the hash its successor must carry.
using ChainPoint = std::pair<int64_t, std::string>;

// The writer's cached chain tail, shared by every AuditLog over one Database.
struct TailCache {
  std::optional<ChainPoint> tail;
};

Result<std::optional<std::string>> ReadMeta(Connection& c, std::string_view key) {
  MISSY_ASSIGN_STMT(q, c, "SELECT value FROM meta WHERE key = ?1");
  q.Bind(1, key);
  MISSY_ASSIGN_NEXT(row, q, "read meta");
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(q.Text(0));
}

Status PutMeta(Connection& c, std::string_view key, std::string_view value) {
  MISSY_ASSIGN_STMT(q, c,
                    "INSERT INTO meta (key, value) VALUES (?1, ?2) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  q.Bind(1, key).Bind(2, value);
  return q.Run("write meta");
}

// The retention anchor: (seq of the last deleted event, hash of its line), or
// (0, 64 zeros) when nothing was ever deleted.
Result<ChainPoint> ReadAnchor(Connection& c) {
  auto seq = ReadMeta(c, "audit_anchor_seq");
  if (!seq.ok()) return seq.status();
  auto hash = ReadMeta(c, "audit_anchor_hash");
  if (!hash.ok()) return hash.status();
  if (!seq->has_value() || !hash->has_value()) return ChainPoint{0, kZeroHash};
  return ChainPoint{std::atoll((*seq)->c_str()), **hash};
}

Result<ChainPoint> ReadTail(Connection& c) {
  {
    MISSY_ASSIGN_STMT(
        q, c, std::string("SELECT ") + kColumns + " FROM audit_events ORDER BY seq DESC LIMIT 1");
    MISSY_ASSIGN_NEXT(row, q, "read audit tail");
    if (row) return ChainPoint{q.Int(0), LineHash(FromRow(q))};
  }
  // Empty table: start from the retention anchor if events were deleted, else zeros.
  return ReadAnchor(c);
}

// Checks the chain head recorded at each append, which catches an edited or removed
// last event. `expected_seq`/`expected_prev` are where the walk ended.
Status CheckHead(Connection& c, int64_t expected_seq, const std::string& expected_prev,
                 AuditVerifyReport& report) {
  auto head = ReadMeta(c, "audit_head");
  if (!head.ok()) return head.status();
  if (!head->has_value()) return Status::Ok();
  const std::string& value = **head;
  const size_t colon = value.find(':');
  const int64_t head_seq =
      colon == std::string::npos ? -1 : std::atoll(value.substr(0, colon).c_str());
  const std::string head_hash = colon == std::string::npos ? "" : value.substr(colon + 1);
  auto broken = [&](int64_t seq, std::string reason) {
    report.ok = false;
    report.broken_seq = seq;
    report.reason = std::move(reason);
  };
  if (head_seq > expected_seq - 1) {
    broken(expected_seq, "event " + std::to_string(expected_seq) +
                             " is missing (the chain head is " + std::to_string(head_seq) + ")");
  } else if (head_seq == expected_seq - 1 && head_hash != expected_prev) {
    broken(head_seq, "event " + std::to_string(head_seq) +
                         " does not match the recorded chain head (edited)");
  } else if (head_seq < expected_seq - 1) {
    broken(head_seq + 1,
           "event " + std::to_string(head_seq + 1) + " was added after the recorded chain head");
  }
  return Status::Ok();
}

}  // namespace

Result<AuditEvent> AuditLog::Append(Txn& txn, const AuditEvent& event) {
  Connection& c = txn.conn();
  TailCache& cache = txn.WriterState<TailCache>();
  if (!cache.tail) {
    auto tail = ReadTail(c);
    if (!tail.ok()) return tail.status();
    cache.tail = std::move(*tail);
  }
  AuditEvent stored = event;
  stored.seq = cache.tail->first + 1;
  stored.prev_chain_hash = cache.tail->second;
  // From here the cache may be ahead of what commits: forget it on rollback.
  txn.OnRollback([&cache] { cache.tail.reset(); });
  MISSY_ASSIGN_STMT(insert, c,
                    "INSERT INTO audit_events (seq, timestamp_ms, session_id, task_id, "
                    "event_type, category, result, detail_json, prev_chain_hash) "
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
  Status st = insert.Run("append audit event");
  if (!st.ok()) {
    cache.tail.reset();
    return st;
  }
  ChainPoint head{stored.seq, LineHash(stored)};
  st = PutMeta(c, "audit_head", std::to_string(head.first) + ":" + head.second);
  if (!st.ok()) {
    cache.tail.reset();
    return st;
  }
  cache.tail = std::move(head);
  return stored;
}

Result<AuditEvent> AuditLog::Append(const AuditEvent& event) {
  return store_util::WriteValue<AuditEvent>(db_, [&](Txn& txn) { return Append(txn, event); });
}

Result<std::vector<AuditEvent>> AuditLog::Since(int64_t since_seq, int limit,
                                                std::string_view event_type) {
  std::vector<AuditEvent> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    const std::string sql =
        std::string("SELECT ") + kColumns + " FROM audit_events WHERE seq > ?1 " +
        (event_type.empty() ? "" : "AND event_type = ?3 ") + "ORDER BY seq LIMIT ?2";
    MISSY_ASSIGN_STMT(q, c, sql);
    q.Bind(1, since_seq).Bind(2, static_cast<int64_t>(limit > 0 ? limit : -1));
    if (!event_type.empty()) q.Bind(3, event_type);
    return store_util::CollectRows(q, FromRow, "read audit events", out);
  }));
  return out;
}

Result<AuditEvent> AuditLog::FindContextBuilt(std::string_view context_id) {
  std::optional<AuditEvent> found;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    // The expression and the WHERE term are the index's (audit_events_by_context).
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kColumns +
                          " FROM audit_events WHERE event_type = 'context.built' AND CASE WHEN "
                          "json_valid(detail_json) THEN json_extract(detail_json, "
                          "'$.context_id') END = ?1 ORDER BY seq LIMIT 1");
    q.Bind(1, context_id);
    MISSY_ASSIGN_NEXT(row, q, "find context.built");
    if (row) found = FromRow(q);
    return Status::Ok();
  }));
  if (!found) return Status::NotFound("context '" + std::string(context_id) + "' not found");
  return std::move(*found);
}

Result<std::vector<AuditEvent>> AuditLog::ContextsBuilt(std::string_view session_id,
                                                        int64_t before_seq, int limit) {
  std::vector<AuditEvent> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kColumns +
                          " FROM audit_events WHERE event_type = 'context.built' AND "
                          "session_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3");
    q.Bind(1, session_id)
        .Bind(2, before_seq > 0 ? before_seq : INT64_MAX)
        .Bind(3, static_cast<int64_t>(limit > 0 ? limit : -1));
    return store_util::CollectRows(q, FromRow, "read contexts built", out);
  }));
  return out;
}

Result<AuditVerifyReport> AuditLog::Verify() {
  AuditVerifyReport report;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    auto anchor = ReadAnchor(c);
    if (!anchor.ok()) return anchor.status();
    int64_t expected_seq = anchor->first + 1;
    std::string expected_prev = anchor->second;
    auto broken = [&](int64_t seq, std::string reason) {
      report.ok = false;
      report.broken_seq = seq;
      report.reason = std::move(reason);
    };
    {
      MISSY_ASSIGN_STMT(q, c,
                        std::string("SELECT ") + kColumns + " FROM audit_events ORDER BY seq");
      for (;;) {
        MISSY_ASSIGN_NEXT(row, q, "read audit events");
        if (!row) break;
        AuditEvent e = FromRow(q);
        if (report.checked == 0) report.first_seq = e.seq;
        report.last_seq = e.seq;
        ++report.checked;
        if (!report.ok) continue;
        if (e.seq != expected_seq) {
          broken(expected_seq,
                 e.seq > expected_seq
                     ? "event " + std::to_string(expected_seq) + " is missing (next present is " +
                           std::to_string(e.seq) + ")"
                     : "event " + std::to_string(e.seq) + " is before the retention anchor");
          continue;
        }
        if (e.prev_chain_hash != expected_prev) {
          broken(e.seq, "prev_chain_hash of event " + std::to_string(e.seq) +
                            " does not match the hash of " +
                            (e.seq == anchor->first + 1 ? std::string("the chain start")
                                                        : "event " + std::to_string(e.seq - 1)) +
                            " (that event was edited, or this one was inserted or replaced)");
          continue;
        }
        expected_prev = LineHash(e);
        expected_seq = e.seq + 1;
      }
    }
    if (!report.ok) return Status::Ok();
    return CheckHead(c, expected_seq, expected_prev, report);
  }));
  return report;
}

Result<int64_t> AuditLog::Prune(Txn& txn, const AuditRetention& retention) {
  Connection& c = txn.conn();
  int64_t cutoff = 0;  // delete seq <= cutoff
  if (retention.max_events > 0) {
    MISSY_ASSIGN_STMT(q, c, "SELECT seq FROM audit_events ORDER BY seq DESC LIMIT 1 OFFSET ?1");
    q.Bind(1, retention.max_events);
    MISSY_ASSIGN_NEXT(row, q, "audit retention");
    if (row) cutoff = q.Int(0);
  }
  if (retention.min_timestamp_ms > 0) {
    // Only a prefix may go (the chain stays contiguous): up to the first event that is
    // recent enough.
    MISSY_ASSIGN_STMT(q, c,
                      "SELECT (SELECT min(seq) FROM audit_events WHERE timestamp_ms >= ?1), "
                      "(SELECT max(seq) FROM audit_events)");
    q.Bind(1, retention.min_timestamp_ms);
    MISSY_ASSIGN_NEXT(row, q, "audit retention");
    if (!row) return Status::Internal("audit retention: no row");
    const int64_t by_age = q.IsNull(0) ? q.Int(1) : q.Int(0) - 1;
    cutoff = std::max(cutoff, by_age);
  }
  if (cutoff <= 0) return int64_t{0};
  std::string anchor_hash;
  {
    MISSY_ASSIGN_STMT(last, c,
                      std::string("SELECT ") + kColumns + " FROM audit_events WHERE seq = ?1");
    last.Bind(1, cutoff);
    MISSY_ASSIGN_NEXT(row, last, "audit retention");
    if (!row) return int64_t{0};  // already below the anchor
    anchor_hash = LineHash(FromRow(last));
  }
  MISSY_ASSIGN_STMT(del, c, "DELETE FROM audit_events WHERE seq <= ?1");
  del.Bind(1, cutoff);
  MISSY_RETURN_IF_ERROR(del.Run("delete old audit events"));
  const int64_t deleted = c.Changes();
  MISSY_RETURN_IF_ERROR(PutMeta(c, "audit_anchor_seq", std::to_string(cutoff)));
  MISSY_RETURN_IF_ERROR(PutMeta(c, "audit_anchor_hash", anchor_hash));
  // The tail does not move (an emptied table continues from the anchor, which is the
  // last deleted event), but re-reading it costs one query and guards the cache.
  txn.WriterState<TailCache>().tail.reset();
  return deleted;
}

Result<int64_t> AuditLog::Prune(const AuditRetention& retention) {
  return store_util::WriteValue<int64_t>(db_, [&](Txn& txn) { return Prune(txn, retention); });
}

Result<int64_t> AuditLog::OutboxCursor(std::string_view name) {
  return store_util::ReadValue<int64_t>(db_, [&](Connection& c) -> Result<int64_t> {
    MISSY_ASSIGN_STMT(q, c, "SELECT seq FROM outbox_cursors WHERE name = ?1");
    q.Bind(1, name);
    MISSY_ASSIGN_NEXT(row, q, "read outbox cursor");
    return row ? q.Int(0) : int64_t{0};
  });
}

Status AuditLog::AdvanceOutbox(Txn& txn, std::string_view name, int64_t seq) {
  if (name.empty()) return Status::InvalidArgument("outbox name must not be empty", "name");
  if (seq < 0) return Status::InvalidArgument("outbox seq must be >= 0", "seq");
  MISSY_ASSIGN_STMT(q, txn.conn(),
                    "INSERT INTO outbox_cursors (name, seq) VALUES (?1, ?2) "
                    "ON CONFLICT (name) DO UPDATE SET seq = max(seq, excluded.seq)");
  q.Bind(1, name).Bind(2, seq);
  return q.Run("advance outbox cursor");
}

Status AuditLog::AdvanceOutbox(std::string_view name, int64_t seq) {
  if (name.empty()) return Status::InvalidArgument("outbox name must not be empty", "name");
  if (seq < 0) return Status::InvalidArgument("outbox seq must be >= 0", "seq");
  return db_.Write([&](Txn& txn) { return AdvanceOutbox(txn, name, seq); });
}

}  // namespace missy

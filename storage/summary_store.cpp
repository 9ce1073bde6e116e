#include "storage/summary_store.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <tuple>

#include "storage/json_strings.h"
#include "storage/message_store.h"
#include "storage/session_store.h"
#include "storage/sqlite.h"
#include "storage/store_util.h"

namespace missy {
namespace {

using sqlite::Connection;
using sqlite::Statement;

const char kColumns[] =
    "id, session_id, depth, content, tokens, first_seq, last_seq, child_ids, parent_id, "
    "start_ms, end_ms, descendant_count, artifacts, created_at_ms, n";

SummaryRecord FromRow(const Statement& s) {
  SummaryRecord r;
  r.id = s.Text(0);
  r.session_id = s.Text(1);
  r.depth = static_cast<int>(s.Int(2));
  r.content = s.Text(3);
  r.tokens = s.Int(4);
  r.first_seq = s.Int(5);
  r.last_seq = s.Int(6);
  r.child_ids = storage_json::StringsFromJson(s.TextView(7));
  r.parent_id = s.Text(8);
  r.start_ms = s.Int(9);
  r.end_ms = s.Int(10);
  r.descendant_count = s.Int(11);
  r.artifacts_json = s.Text(12);
  r.created_at_ms = s.Int(13);
  r.ordinal = s.Int(14);
  return r;
}

Result<SummaryRecord> ReadSummary(Connection& c, std::string_view id) {
  MISSY_ASSIGN_STMT(q, c, std::string("SELECT ") + kColumns + " FROM summaries WHERE id = ?1");
  q.Bind(1, id);
  MISSY_ASSIGN_NEXT(row, q, "read summary");
  if (!row) return Status::NotFound("summary '" + std::string(id) + "' not found", "id");
  return FromRow(q);
}

Status Validate(const SummaryRecord& s) {
  if (s.depth < 0) return Status::InvalidArgument("depth must be >= 0", "depth");
  if (s.last_seq < s.first_seq) {
    return Status::InvalidArgument("last_seq is before first_seq", "last_seq");
  }
  return Status::Ok();
}

// A leaf's range is its messages' coverage: no message is covered by two leaves. As the
// other leaves do not overlap, only the last one starting at or before this one's end can
// (one index step, however many leaves the session has).
Status MustNotOverlap(Connection& c, const SummaryRecord& leaf) {
  MISSY_ASSIGN_STMT(q, c,
                    "SELECT id, first_seq, last_seq FROM summaries WHERE session_id = ?1 AND "
                    "depth = 0 AND first_seq <= ?2 AND id != ?3 ORDER BY first_seq DESC LIMIT 1");
  q.Bind(1, leaf.session_id).Bind(2, leaf.last_seq).Bind(3, leaf.id);
  MISSY_ASSIGN_NEXT(row, q, "check leaf coverage");
  if (!row || q.Int(2) < leaf.first_seq) return Status::Ok();
  return Status::Conflict("messages " + std::to_string(leaf.first_seq) + ".." +
                              std::to_string(leaf.last_seq) + " overlap summary '" + q.Text(0) +
                              "' (" + std::to_string(q.Int(1)) + ".." + std::to_string(q.Int(2)) +
                              ")",
                          "first_seq");
}

// Makes `parent` the parent of each child (all of the same session, none condensed yet).
Status AdoptChildren(Connection& c, const SummaryRecord& parent) {
  MISSY_ASSIGN_STMT(child, c, "SELECT session_id, parent_id FROM summaries WHERE id = ?1");
  MISSY_ASSIGN_STMT(adopt, c, "UPDATE summaries SET parent_id = ?2 WHERE id = ?1");
  for (const std::string& id : parent.child_ids) {
    child.Bind(1, id);
    MISSY_ASSIGN_NEXT(row, child, "read child summary");
    if (!row) return Status::NotFound("child summary '" + id + "' not found", "child_ids");
    if (child.TextView(0) != parent.session_id) {
      return Status::InvalidArgument("child summary '" + id + "' belongs to another session",
                                     "child_ids");
    }
    if (!child.IsNull(1)) {
      return Status::Conflict(
          "child summary '" + id + "' is already condensed into '" + child.Text(1) + "'",
          "child_ids");
    }
    child.Reset();
    adopt.Bind(1, id).Bind(2, parent.id);
    MISSY_RETURN_IF_ERROR(adopt.Run("set summary parent"));
    adopt.Reset();
  }
  return Status::Ok();
}

}  // namespace

Result<SummaryRecord> SummaryStore::Insert(Txn& txn, const SummaryRecord& summary) {
  MISSY_RETURN_IF_ERROR(Validate(summary));
  SummaryRecord stored = summary;
  if (stored.id.empty()) stored.id = store_util::GenerateId("sum_");
  Connection& c = txn.conn();
  MISSY_RETURN_IF_ERROR(SessionStore::MustExist(txn, stored.session_id));
  {
    MISSY_ASSIGN_STMT(insert, c,
                      "INSERT INTO summaries (id, session_id, depth, content, tokens, first_seq, "
                      "last_seq, child_ids, parent_id, start_ms, end_ms, descendant_count, "
                      "artifacts, created_at_ms) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
    insert.Bind(1, stored.id)
        .Bind(2, stored.session_id)
        .Bind(3, stored.depth)
        .Bind(4, stored.content)
        .Bind(5, stored.tokens)
        .Bind(6, stored.first_seq)
        .Bind(7, stored.last_seq)
        .Bind(8, storage_json::StringsToJson(stored.child_ids))
        .BindOrNull(9, stored.parent_id)
        .Bind(10, stored.start_ms)
        .Bind(11, stored.end_ms)
        .Bind(12, stored.descendant_count)
        .Bind(13, stored.artifacts_json)
        .Bind(14, stored.created_at_ms);
    Status st = insert.Run("insert summary");
    if (st.code() == StatusCode::kAlreadyExists) {
      return Status::AlreadyExists("summary '" + stored.id + "' already exists", "id");
    }
    MISSY_RETURN_IF_ERROR(st);
  }
  if (!stored.child_ids.empty()) {
    MISSY_RETURN_IF_ERROR(AdoptChildren(c, stored));
  } else if (stored.depth == 0 && stored.first_seq > 0) {
    MISSY_RETURN_IF_ERROR(MustNotOverlap(c, stored));
  }
  return stored;
}

Result<SummaryRecord> SummaryStore::Insert(const SummaryRecord& summary) {
  MISSY_RETURN_IF_ERROR(Validate(summary));
  return store_util::WriteValue<SummaryRecord>(db_, [&](Txn& txn) { return Insert(txn, summary); });
}

Result<SummaryRecord> SummaryStore::Get(std::string_view id) {
  return store_util::ReadValue<SummaryRecord>(db_,
                                              [&](Connection& c) { return ReadSummary(c, id); });
}

Result<std::vector<SummaryRecord>> SummaryStore::List(std::string_view session_id,
                                                      bool uncondensed_only) {
  return ListWith(session_id, kColumns, uncondensed_only);
}

Result<std::vector<SummaryRecord>> SummaryStore::ListTop(std::string_view session_id) {
  // FromRow's columns, with literals for the long ones.
  static constexpr char kPlanned[] =
      "id, session_id, depth, '', tokens, first_seq, last_seq, '[]', parent_id, start_ms, "
      "end_ms, descendant_count, '', created_at_ms, n";
  return ListWith(session_id, kPlanned, /*uncondensed_only=*/true);
}

Result<std::vector<SummaryRecord>> SummaryStore::ListWith(std::string_view session_id,
                                                          const char* columns,
                                                          bool uncondensed_only) {
  std::vector<SummaryRecord> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_ASSIGN_STMT(exists, c, "SELECT 1 FROM sessions WHERE id = ?1");
    exists.Bind(1, session_id);
    MISSY_ASSIGN_NEXT(found, exists, "read session");
    if (!found) {
      return Status::NotFound("session '" + std::string(session_id) + "' not found", "session_id");
    }
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + columns + " FROM summaries WHERE session_id = ?1 " +
                          (uncondensed_only ? "AND parent_id IS NULL " : "") +
                          "ORDER BY first_seq, depth, n");
    q.Bind(1, session_id);
    return store_util::CollectRows(q, FromRow, "list summaries", out);
  }));
  return out;
}

Result<std::vector<SummaryRecord>> SummaryStore::ListForContext(std::string_view session_id,
                                                                int64_t through) {
  // FromRow's columns, with literals for those a context does not use: the artifacts
  // (after the content in the row, and long) are never read.
  static constexpr char kShown[] =
      "id, session_id, depth, content, tokens, first_seq, last_seq, '[]', parent_id, "
      "start_ms, end_ms, descendant_count, '', 0, n";
  std::vector<SummaryRecord> out;
  ContextList read;
  bool reused = false;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    out.clear();
    reused = false;
    // The stamp: any summary written for the session (a leaf, a condensed one with its
    // children's parent set in the same write) is a new newest one; a session deleted and
    // made again under its name has new random ids.
    // Two reads of the index and one row: a read of every row's id would load a page per
    // summary (their texts are long), after any write the reader's cache is dropped.
    MISSY_ASSIGN_STMT(stamp, c,
                      "SELECT count(*), coalesce(max(n), 0) FROM summaries WHERE session_id = ?1");
    stamp.Bind(1, session_id);
    MISSY_ASSIGN_NEXT(row, stamp, "stamp the summaries");
    read.through = through;
    if (row) {
      read.count = stamp.Int(0);
      read.newest = stamp.Int(1);
    }
    if (read.count > 0) {
      MISSY_ASSIGN_STMT(newest, c, "SELECT id FROM summaries WHERE n = ?1");
      newest.Bind(1, read.newest);
      MISSY_ASSIGN_NEXT(found, newest, "stamp the summaries");
      if (found) read.newest_id = newest.Text(0);
    }
    {
      std::lock_guard<std::mutex> lock(context_lists_mu_);
      auto it = context_lists_.find(std::string(session_id));
      if (it != context_lists_.end() && it->second.through == through &&
          it->second.count == read.count && it->second.newest == read.newest &&
          it->second.newest_id == read.newest_id) {
        out = it->second.list;
        reused = true;
        return Status::Ok();
      }
    }
    MISSY_ASSIGN_STMT(top, c,
                      std::string("SELECT ") + kShown +
                          " FROM summaries INDEXED BY summaries_uncondensed WHERE session_id = "
                          "?1 AND parent_id IS NULL");
    top.Bind(1, session_id);
    MISSY_RETURN_IF_ERROR(store_util::CollectRows(top, FromRow, "list summaries", out));
    if (through <= 0) return Status::Ok();
    // The parents are among the summaries newer than the snapshot, a range of the table's
    // rowids (every session's: long only for an old anchor in a busy daemon).
    MISSY_ASSIGN_STMT(older, c,
                      std::string("SELECT ") + kShown +
                          " FROM summaries WHERE n <= ?2 AND parent_id IN (SELECT id FROM "
                          "summaries WHERE n > ?2 AND session_id = ?1)");
    older.Bind(1, session_id);
    older.Bind(2, through);
    return store_util::CollectRows(older, FromRow, "list summaries", out);
  }));
  if (reused) return out;
  std::sort(out.begin(), out.end(), [](const SummaryRecord& a, const SummaryRecord& b) {
    return std::tie(a.first_seq, a.depth, a.ordinal) < std::tie(b.first_seq, b.depth, b.ordinal);
  });
  read.list = out;
  std::lock_guard<std::mutex> lock(context_lists_mu_);
  if (context_lists_.size() >= kMaxContextLists) context_lists_.clear();
  context_lists_[std::string(session_id)] = std::move(read);
  return out;
}

Result<int64_t> SummaryStore::CoveredThrough(std::string_view session_id) {
  return store_util::ReadValue<int64_t>(db_, [&](Connection& c) -> Result<int64_t> {
    MISSY_ASSIGN_STMT(q, c,
                      "SELECT coalesce(max(last_seq), 0) FROM summaries WHERE session_id = ?1 "
                      "AND depth = 0");
    q.Bind(1, session_id);
    MISSY_ASSIGN_NEXT(row, q, "read the summaries' coverage");
    return row ? q.Int(0) : int64_t{0};
  });
}

Result<std::vector<SummaryRecord>> SummaryStore::Children(std::string_view id) {
  std::vector<SummaryRecord> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_RETURN_IF_ERROR(ReadSummary(c, id).status());
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kColumns +
                          " FROM summaries WHERE parent_id = ?1 ORDER BY first_seq, n");
    q.Bind(1, id);
    return store_util::CollectRows(q, FromRow, "list summary children", out);
  }));
  return out;
}

Result<std::vector<StoredMessage>> SummaryStore::Messages(std::string_view id) {
  auto summary = Get(id);
  if (!summary.ok()) return summary.status();
  if (summary->first_seq <= 0) return std::vector<StoredMessage>{};
  return MessageStore(db_).LoadRange(summary->session_id, summary->first_seq, summary->last_seq);
}

}  // namespace missy

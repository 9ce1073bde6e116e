#include "storage/message_indexer.h"

#include <algorithm>
#include <string>

#include "storage/sqlite.h"

namespace missy {

using sqlite::Connection;

Result<MessageIndexer::Progress> MessageIndexer::ReadProgress(Connection& c) {
  MISSY_ASSIGN_STMT(q, c,
                    "SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = "
                    "'messages_fts_indexed'), 0), coalesce((SELECT max(id) FROM messages), 0)");
  MISSY_ASSIGN_NEXT(row, q, "read the message index watermark");
  if (!row) return Status::Internal("read the message index watermark: no row");
  return Progress{q.Int(0), q.Int(1)};
}

Result<int64_t> MessageIndexer::Pending(Connection& c) {
  auto progress = ReadProgress(c);
  if (!progress.ok()) return progress.status();
  return std::max<int64_t>(0, progress->newest - progress->indexed);
}

Result<int64_t> MessageIndexer::Run(Connection& c, int64_t limit) { return IndexPending(c, limit); }

Result<int64_t> MessageIndexer::IndexPending(Connection& c, int64_t limit) {
  auto state = ReadProgress(c);
  if (!state.ok()) return state.status();
  if (state->newest <= state->indexed) return int64_t{0};
  int64_t upto = state->newest;
  if (limit >= 0) {
    MISSY_ASSIGN_STMT(bound, c,
                      "SELECT max(id) FROM (SELECT id FROM messages WHERE id > ?1 ORDER BY id "
                      "LIMIT ?2)");
    bound.Bind(1, state->indexed).Bind(2, std::max<int64_t>(1, limit));
    MISSY_ASSIGN_NEXT(row, bound, "find the next messages to index");
    if (row && !bound.IsNull(0)) upto = bound.Int(0);
  }
  MISSY_ASSIGN_STMT(insert, c,
                    "INSERT INTO messages_fts (rowid, text) SELECT id, text FROM messages "
                    "WHERE id > ?1 AND id <= ?2 ORDER BY id");
  insert.Bind(1, state->indexed).Bind(2, upto);
  MISSY_RETURN_IF_ERROR(insert.Run("index message text"));
  MISSY_ASSIGN_STMT(mark, c,
                    "INSERT INTO meta (key, value) VALUES ('messages_fts_indexed', ?1) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  mark.Bind(1, std::to_string(upto));
  MISSY_RETURN_IF_ERROR(mark.Run("advance the message index watermark"));
  return state->newest - upto;  // ids, not rows: an upper bound
}

Status MessageIndexer::CatchUp(Database& db) {
  int64_t pending = 0;
  MISSY_RETURN_IF_ERROR(db.Read([&](Connection& c) -> Status {
    auto progress = ReadProgress(c);
    if (!progress.ok()) return progress.status();
    pending = progress->newest - progress->indexed;
    return Status::Ok();
  }));
  if (pending <= 0) return Status::Ok();
  return db.Write([](Txn& txn) { return IndexPending(txn.conn(), -1).status(); });
}

Result<bool> MessageIndexer::IndexPendingIntoTemp(Connection& c) {
  auto state = ReadProgress(c);
  if (!state.ok()) return state.status();
  if (state->newest <= state->indexed) return false;
  MISSY_RETURN_IF_ERROR(
      c.Exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.pending_messages_fts USING fts5 "
             "(text, tokenize='unicode61 remove_diacritics 2');"
             "DELETE FROM temp.pending_messages_fts;",
             "prepare the pending message index"));
  MISSY_ASSIGN_STMT(fill, c,
                    "INSERT INTO temp.pending_messages_fts (rowid, text) SELECT id, text FROM "
                    "messages WHERE id > ?1");
  fill.Bind(1, state->indexed);
  MISSY_RETURN_IF_ERROR(fill.Run("index pending messages"));
  return true;
}

Status MessageIndexer::ClearTemp(Connection& c) {
  return c.Exec("DELETE FROM temp.pending_messages_fts", "clear the pending message index");
}

}  // namespace missy

#include "storage/text_indexer.h"

#include <algorithm>
#include <string>

#include "storage/sqlite.h"

namespace missy {

using sqlite::Connection;

namespace {

// A table whose text is indexed behind a watermark (schema v4 for messages, v9 for
// summaries). The names are constants, never input.
struct Source {
  const char* table;      // messages | summaries
  const char* key;        // its rowid column
  const char* text;       // the indexed column
  const char* fts;        // the external-content FTS5 table
  const char* watermark;  // the meta key
};
constexpr Source kMessages{"messages", "id", "text", "messages_fts", "messages_fts_indexed"};
constexpr Source kSummaries{"summaries", "n", "content", "summaries_fts", "summaries_fts_indexed"};

Result<TextIndexer::Progress> ReadProgressOf(Connection& c, const Source& s) {
  MISSY_ASSIGN_STMT(q, c,
                    std::string("SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE "
                                "key = '") +
                        s.watermark + "'), 0), coalesce((SELECT max(" + s.key + ") FROM " +
                        s.table + "), 0)");
  const std::string what = std::string("read the ") + s.table + " index watermark";
  MISSY_ASSIGN_NEXT(row, q, what);
  if (!row) return Status::Internal(what + ": no row");
  return TextIndexer::Progress{q.Int(0), q.Int(1)};
}

Result<int64_t> IndexPendingOf(Connection& c, const Source& s, int64_t limit) {
  auto state = ReadProgressOf(c, s);
  if (!state.ok()) return state.status();
  if (state->newest <= state->indexed) return int64_t{0};
  int64_t upto = state->newest;
  if (limit >= 0) {
    MISSY_ASSIGN_STMT(bound, c,
                      std::string("SELECT max(") + s.key + ") FROM (SELECT " + s.key + " FROM " +
                          s.table + " WHERE " + s.key + " > ?1 ORDER BY " + s.key + " LIMIT ?2)");
    bound.Bind(1, state->indexed).Bind(2, std::max<int64_t>(1, limit));
    MISSY_ASSIGN_NEXT(row, bound, std::string("find the next ") + s.table + " to index");
    if (row && !bound.IsNull(0)) upto = bound.Int(0);
  }
  MISSY_ASSIGN_STMT(insert, c,
                    std::string("INSERT INTO ") + s.fts + " (rowid, " + s.text + ") SELECT " +
                        s.key + ", " + s.text + " FROM " + s.table + " WHERE " + s.key +
                        " > ?1 AND " + s.key + " <= ?2 ORDER BY " + s.key);
  insert.Bind(1, state->indexed).Bind(2, upto);
  MISSY_RETURN_IF_ERROR(insert.Run(std::string("index ") + s.table + " text"));
  MISSY_ASSIGN_STMT(mark, c,
                    std::string("INSERT INTO meta (key, value) VALUES ('") + s.watermark +
                        "', ?1) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  mark.Bind(1, std::to_string(upto));
  MISSY_RETURN_IF_ERROR(mark.Run(std::string("advance the ") + s.table + " index watermark"));
  return state->newest - upto;  // keys, not rows: an upper bound
}

Result<int64_t> PendingOf(Connection& c, const Source& s) {
  auto progress = ReadProgressOf(c, s);
  if (!progress.ok()) return progress.status();
  return std::max<int64_t>(0, progress->newest - progress->indexed);
}

// Into temp.pending_<fts>, inside the reader's transaction; returns whether any were.
Result<bool> IndexPendingIntoTempOf(Connection& c, const Source& s) {
  auto state = ReadProgressOf(c, s);
  if (!state.ok()) return state.status();
  if (state->newest <= state->indexed) return false;
  const std::string temp = std::string("temp.pending_") + s.fts;
  MISSY_RETURN_IF_ERROR(c.Exec("CREATE VIRTUAL TABLE IF NOT EXISTS " + temp + " USING fts5 (" +
                                   s.text + ", tokenize='unicode61 remove_diacritics 2');" +
                                   "DELETE FROM " + temp + ";",
                               std::string("prepare the pending ") + s.table + " index"));
  MISSY_ASSIGN_STMT(fill, c,
                    "INSERT INTO " + temp + " (rowid, " + s.text + ") SELECT " + s.key + ", " +
                        s.text + " FROM " + s.table + " WHERE " + s.key + " > ?1");
  fill.Bind(1, state->indexed);
  MISSY_RETURN_IF_ERROR(fill.Run(std::string("index pending ") + s.table));
  return true;
}

// Messages and summaries waiting to be indexed (keys, not rows: an upper bound).
Result<int64_t> PendingBoth(Connection& c) {
  auto messages = PendingOf(c, kMessages);
  if (!messages.ok()) return messages.status();
  auto summaries = PendingOf(c, kSummaries);
  if (!summaries.ok()) return summaries.status();
  return *messages + *summaries;
}

}  // namespace

Result<TextIndexer::Progress> TextIndexer::ReadProgress(Connection& c) {
  return ReadProgressOf(c, kMessages);
}

Result<TextIndexer::Progress> TextIndexer::ReadSummaryProgress(Connection& c) {
  return ReadProgressOf(c, kSummaries);
}

Result<int64_t> TextIndexer::Pending(Connection& c) { return PendingBoth(c); }

Result<int64_t> TextIndexer::Run(Connection& c, int64_t limit) {
  auto messages = IndexPending(c, limit);
  if (!messages.ok()) return messages.status();
  // A summary is some thirty times a chat message's text: fewer of them per run keep the
  // run as short (at least one, so a steady stream of messages cannot starve them).
  auto summaries = IndexPendingSummaries(c, std::max<int64_t>(1, limit / 32));
  if (!summaries.ok()) return summaries.status();
  return *messages + *summaries;
}

Result<int64_t> TextIndexer::IndexPending(Connection& c, int64_t limit) {
  return IndexPendingOf(c, kMessages, limit);
}

Result<int64_t> TextIndexer::IndexPendingSummaries(Connection& c, int64_t limit) {
  return IndexPendingOf(c, kSummaries, limit);
}

Status TextIndexer::CatchUp(Database& db) {
  int64_t pending = 0;
  MISSY_RETURN_IF_ERROR(db.Read([&](Connection& c) -> Status {
    auto n = PendingBoth(c);
    if (!n.ok()) return n.status();
    pending = *n;
    return Status::Ok();
  }));
  if (pending <= 0) return Status::Ok();
  return db.Write([](Txn& txn) {
    MISSY_RETURN_IF_ERROR(IndexPending(txn.conn(), -1).status());
    return IndexPendingSummaries(txn.conn(), -1).status();
  });
}

Result<TextIndexer::PendingInTemp> TextIndexer::IndexPendingIntoTemp(Connection& c) {
  PendingInTemp out;
  auto messages = IndexPendingIntoTempOf(c, kMessages);
  if (!messages.ok()) return messages.status();
  auto summaries = IndexPendingIntoTempOf(c, kSummaries);
  if (!summaries.ok()) return summaries.status();
  out.messages = *messages;
  out.summaries = *summaries;
  return out;
}

Status TextIndexer::ClearTemp(Connection& c, const PendingInTemp& pending) {
  if (pending.messages) {
    MISSY_RETURN_IF_ERROR(
        c.Exec("DELETE FROM temp.pending_messages_fts", "clear the pending message index"));
  }
  if (pending.summaries) {
    MISSY_RETURN_IF_ERROR(
        c.Exec("DELETE FROM temp.pending_summaries_fts", "clear the pending summary index"));
  }
  return Status::Ok();
}

}  // namespace missy

// Internal to storage/: deferred full-text indexing of message text (schema v4) and of
// summary text (v9). messages_fts holds exactly the messages whose id is at or below the
// watermark (meta 'messages_fts_indexed'); newer ones are pending. Likewise summaries_fts
// and 'summaries_fts_indexed' over summaries.n. Index rows and the watermark commit in
// the same transaction, so after a crash the pending rows are simply indexed later. The
// writer runs the indexer between write transactions (BackgroundWork); a search first
// catches the index up (CatchUp), or, when it cannot write (read-only file, disk full),
// indexes the pending rows into temporary tables of its own reader.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "storage/database.h"

namespace missy {

namespace sqlite {
class Connection;
}

class TextIndexer final : public BackgroundWork {
 public:
  Result<int64_t> Pending(sqlite::Connection& conn) override;
  Result<int64_t> Run(sqlite::Connection& conn, int64_t limit) override;

  struct Progress {
    int64_t indexed = 0;  // the watermark
    int64_t newest = 0;   // max(messages.id), max(summaries.n)
  };
  static Result<Progress> ReadProgress(sqlite::Connection& conn);
  static Result<Progress> ReadSummaryProgress(sqlite::Connection& conn);

  // Indexes pending messages in id order, at most `limit` of them (< 0: all), and
  // advances the watermark, in the caller's transaction. Returns how many remain (at
  // most).
  static Result<int64_t> IndexPending(sqlite::Connection& conn, int64_t limit);
  // The same for summaries.
  static Result<int64_t> IndexPendingSummaries(sqlite::Connection& conn, int64_t limit);

  // Brings the index up to date through a write, if anything is pending. Errors
  // (read-only file, disk full) are returned; the caller falls back to
  // IndexPendingIntoTemp.
  static Status CatchUp(Database& db);

  // On a reader, inside its read transaction: copies the messages above their watermark
  // into temp.pending_messages_fts, and the summaries above theirs into
  // temp.pending_summaries_fts. Says which had any.
  struct PendingInTemp {
    bool messages = false;
    bool summaries = false;
  };
  static Result<PendingInTemp> IndexPendingIntoTemp(sqlite::Connection& conn);
  static Status ClearTemp(sqlite::Connection& conn, const PendingInTemp& pending);
};

}  // namespace missy

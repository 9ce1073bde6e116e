// SummaryStore: hierarchical summaries (DESIGN.md §5). Thread-safe; reads use
// Database::Read, writes take the caller's Txn (or wrap one Database::Write). Source
// messages are never deleted: a leaf summary covers its seq range (a message's leaf is the
// one whose range holds its seq; leaves never overlap), a condensed one becomes the parent
// of its children.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/message.h"
#include "core/status.h"
#include "storage/database.h"
#include "storage/records.h"

namespace missy {

class SummaryStore {
 public:
  explicit SummaryStore(Database& db) : db_(db) {}

  // Stores the summary (generating "sum_" + 16 hex digits when id is empty) and, in
  // the same write, sets the parent of each child (child_ids non-empty). A leaf (depth
  // 0) covers the messages first_seq..last_seq: no row is rewritten. kNotFound for an
  // unknown session or child, kInvalidArgument for a negative depth, last_seq <
  // first_seq or a child of another session, kConflict for a child already condensed or
  // a leaf overlapping another leaf, kAlreadyExists for a duplicate id. Returns the
  // record as stored.
  Result<SummaryRecord> Insert(Txn& txn, const SummaryRecord& summary);
  Result<SummaryRecord> Insert(const SummaryRecord& summary);

  Result<SummaryRecord> Get(std::string_view id);  // kNotFound
  // A session's summaries ordered by first_seq then depth; `uncondensed_only` keeps
  // those without a parent (what the assembler shows). kNotFound for an unknown session.
  Result<std::vector<SummaryRecord>> List(std::string_view session_id,
                                          bool uncondensed_only = false);
  // List(session_id, true) without the text, children and artifacts of each: the top of
  // the tree as a summarization run plans on it (Get reads what it then needs).
  Result<std::vector<SummaryRecord>> ListTop(std::string_view session_id);
  // What a context needs, without reading every summary of a long session: the
  // session's summaries without a parent, plus those a context whose anchor snapshot
  // holds the summaries up to ordinal `through` (0: none) shows in place of a newer
  // one: ordinal <= through and condensed by a summary with ordinal > through. In List's
  // order, without child_ids, artifacts and created_at_ms. An unknown session has none.
  // The list is kept per session and read again only when the session's summaries
  // changed (checked in the same read: their count, newest ordinal and its id).
  Result<std::vector<SummaryRecord>> ListForContext(std::string_view session_id, int64_t through);
  // The last seq a leaf summary of the session covers (leaves never overlap and cover
  // from seq 1 up): 0 when it has none, or is unknown. One index read, no text.
  Result<int64_t> CoveredThrough(std::string_view session_id);
  // The summaries a condensed summary was built from (empty for a leaf). kNotFound.
  Result<std::vector<SummaryRecord>> Children(std::string_view id);
  // The messages a summary covers (its seq range), in seq order. kNotFound.
  Result<std::vector<StoredMessage>> Messages(std::string_view id);

 private:
  // List's query, reading `columns` (FromRow's, some of them literals).
  Result<std::vector<SummaryRecord>> ListWith(std::string_view session_id, const char* columns,
                                              bool uncondensed_only);

  Database& db_;

  // ListForContext's last list of each session (a bounded number of sessions), with what
  // it was read for: the snapshot `through` and the stamp of the session's summaries.
  struct ContextList {
    int64_t through = 0;
    int64_t count = 0;
    int64_t newest = 0;  // the ordinal (n) of the newest summary
    std::string newest_id;
    std::vector<SummaryRecord> list;
  };
  static constexpr size_t kMaxContextLists = 256;
  std::mutex context_lists_mu_;
  std::unordered_map<std::string, ContextList> context_lists_;
};

}  // namespace missy

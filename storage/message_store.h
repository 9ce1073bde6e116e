// MessageStore: a session's messages, in per-session seq order from 1. Thread-safe;
// reads use Database::Read, writes take the caller's Txn (or wrap one Database::Write).
// Message text is indexed for search off the append path (storage/text_indexer.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/message.h"
#include "core/status.h"
#include "core/summary_plan.h"
#include "storage/database.h"
#include "storage/records.h"

namespace missy {

// A batch serialised for storage (content and tool calls as JSON text, plain text for
// the search index). Encoding on the caller's thread leaves the writer only binding.
class EncodedBatch {
 public:
  EncodedBatch() = default;
  // Moves the messages in: nothing of their content is copied.
  explicit EncodedBatch(std::vector<NewMessage>&& batch);
  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }

 private:
  friend class MessageStore;
  struct Row {
    NewMessage source;
    std::string content_json;
    std::string tool_calls_json;
    std::string text;
  };
  std::vector<Row> rows_;
};

class MessageStore {
 public:
  // The digest row written with each message (schema v11), keyed by its row id: ?1 id,
  // ?2 role, ?3 tokens, ?4 created_at_ms, ?5 extract (NULL: none). The Missy import
  // writes it too.
  static constexpr char kInsertDigestSql[] =
      "INSERT INTO message_digests (id, role, tokens, created_at_ms, extract) "
      "VALUES (?1, ?2, ?3, ?4, ?5)";

  explicit MessageStore(Database& db) : db_(db) {}

  // Appends a batch atomically: seqs continue from the session's last seq; the
  // session's message_count, total_tokens, last_seq and updated_at_ms are updated in
  // the same write. Returns the stored rows (seq, created_at_ms = now_ms), holding the
  // batch's messages (moved, not copied). kNotFound for an unknown session. An empty
  // batch stores nothing (the session must still exist).
  // `after` (optional) gets the session's counters as this write leaves them.
  Result<std::vector<StoredMessage>> Append(Txn& txn, std::string_view session_id,
                                            EncodedBatch&& batch, int64_t now_ms,
                                            SessionCounters* after = nullptr);
  // Encodes on the writer thread; prefer the EncodedBatch form inside a composed write.
  Result<std::vector<StoredMessage>> Append(Txn& txn, std::string_view session_id,
                                            std::vector<NewMessage>&& batch, int64_t now_ms);
  // Encodes on this thread, then one Database::Write.
  Result<std::vector<StoredMessage>> Append(std::string_view session_id,
                                            std::vector<NewMessage>&& batch, int64_t now_ms);

  // Messages with seq > after_seq, in seq order, at most `limit` (0 = all).
  // kNotFound for an unknown session.
  Result<std::vector<StoredMessage>> Load(std::string_view session_id, int64_t after_seq = 0,
                                          int64_t limit = 0);
  // As Load, with each message's stored extract (empty when it has none): what the
  // summarizer reads. Other loads leave extracts out (caches do not hold them).
  Result<std::vector<StoredMessage>> LoadWithExtracts(std::string_view session_id,
                                                      int64_t after_seq = 0, int64_t limit = 0);
  // The messages with these seqs, in ascending seq order, each once; seqs that are not
  // stored are left out. kNotFound for an unknown session.
  Result<std::vector<StoredMessage>> Load(std::string_view session_id,
                                          const std::vector<int64_t>& seqs);
  // Messages first_seq..last_seq (inclusive), in seq order; with their extracts when
  // `with_extracts` (a summarization chunk).
  Result<std::vector<StoredMessage>> LoadRange(std::string_view session_id, int64_t first_seq,
                                               int64_t last_seq, bool with_extracts = false);
  // Messages first_seq..last_seq, in seq order, with their extracts, for a summarizer that
  // reads extracts only: a message with an extract comes from its digest (seq, role,
  // tokens, created_at_ms and the extract; no content, tool calls, call id, name or
  // flags), one without comes whole. Loading 10,000 messages this way reads about a
  // seventh of the bytes and parses none of their JSON.
  Result<std::vector<StoredMessage>> LoadExtracts(std::string_view session_id, int64_t first_seq,
                                                  int64_t last_seq);
  // What summary planning needs of the messages with seq > after_seq (seq, role, tokens),
  // in seq order, from their digests. kNotFound for an unknown session.
  Result<std::vector<PlanMessage>> LoadPlan(std::string_view session_id, int64_t after_seq = 0);

  // Adds `flags` (bits) to the given messages, e.g. kFlagPruned (sticky pruning).
  // kNotFound for an unknown session; seqs that are not stored are ignored.
  Status AddFlags(Txn& txn, std::string_view session_id, const std::vector<int64_t>& seqs,
                  uint32_t flags);
  Status AddFlags(std::string_view session_id, const std::vector<int64_t>& seqs, uint32_t flags);

 private:
  Database& db_;
};

}  // namespace missy

// Database: missyd's SQLite store (WAL, synchronous=FULL, busy_timeout, migrations
// keyed on PRAGMA user_version). Thread-safe: any method may be called from any thread.
// Writes go to one writer thread that gathers concurrent writes into one transaction
// (group commit, each write in its own savepoint); reads use a pool of read-only
// connections. Every write method returns only after its transaction committed (and
// the WAL was fsynced); on error nothing of the call is stored. Disk full, read-only
// file or I/O error on a write → kUnavailable, and reads keep working. A database
// whose user_version is newer than this build knows is refused by Open() with
// kCorruption, and left untouched.
//
// Message text is indexed for Search() off the append path: appends are acknowledged
// before their text is indexed; a search first brings the index up to date. The
// writer thread indexes pending messages in batches (options.index_batch per
// transaction) once no write arrived for options.index_idle_ms, and between write
// transactions once more than options.max_index_backlog messages wait. The index
// rows and the watermark (the highest message id indexed) commit in the same
// transaction, so after a crash the pending messages are simply indexed later.
// Search() asks the writer to index everything committed so far and waits for that
// commit before querying; when it cannot (read-only file, disk full) it indexes the
// pending messages into a temporary table of its own connection. Either way a
// search sees every message acknowledged before it was called.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/assembler.h"
#include "core/audit_event.h"
#include "core/message.h"
#include "core/session.h"
#include "core/status.h"

namespace missy {

// A message to append: the message plus what was computed for it before storing.
struct NewMessage {
  Message message;
  int64_t tokens = 0;
  uint32_t flags = kFlagNone;
};

// How Open() treats the file. Defaults are what the daemon uses.
struct DatabaseOptions {
  bool read_only = false;       // open without write access: every write fails kUnavailable
  int busy_timeout_ms = 5000;   // wait this long for another process's lock
  int64_t max_page_count = 0;   // > 0: cap the file at this many pages (writes beyond
                                // it fail kUnavailable, as on a full disk)
  int max_batch = 1024;         // group commit: at most this many writes per transaction
  int index_batch = 500;        // message text indexed per index transaction (see top)
  int index_idle_ms = 5;        // the writer indexes after this long without writes
  int64_t max_index_backlog = 100000;  // more messages than this waiting to be indexed:
                                       // index transactions alternate with write ones
};

struct ListOptions {
  int limit = 100;  // at most this many rows
  int offset = 0;
};

// A summary as stored (DESIGN.md §5). Depth 0 covers messages first_seq..last_seq;
// depth d+1 condenses the summaries listed in child_ids (and spans their range).
struct SummaryRecord {
  std::string id;  // empty on insert: generated ("sum_" + 16 hex digits)
  std::string session_id;
  int depth = 0;
  std::string content;
  int64_t tokens = 0;
  int64_t first_seq = 0;  // covered message range (inclusive)
  int64_t last_seq = 0;
  std::vector<std::string> child_ids;  // condensed summaries (depth > 0)
  std::string parent_id;               // the summary that condensed this one; empty if none
  int64_t start_ms = 0;                // time range covered
  int64_t end_ms = 0;
  int64_t descendant_count = 0;  // messages covered, transitively
  // Artifact trail: {"files":[...],"commands":[...],"errors":[...]} as JSON text.
  std::string artifacts_json = R"({"files":[],"commands":[],"errors":[]})";
  int64_t created_at_ms = 0;
};
SummaryView ToSummaryView(const SummaryRecord& s);

struct MemoryItem {
  std::string id;  // empty on insert: generated ("mem_" + 16 hex digits)
  std::string text;
  std::vector<std::string> tags;
  std::string session_id;  // empty: global
  bool pinned = false;
  int64_t created_at_ms = 0;
};

struct LearningRecord {
  std::string id;  // empty on insert: generated ("lrn_" + 16 hex digits)
  std::string task_type;
  std::string outcome;
  std::string lesson;
  std::vector<std::string> approach;
  std::string session_id;  // may be empty
  int64_t created_at_ms = 0;
};
Learning ToLearning(const LearningRecord& l);

// Full-text search over memory items, summaries and message text. The query is raw
// user text: it is quoted before MATCH, so no input can cause a syntax error. All
// words must match; if nothing does, any word may (ranked by bm25).
struct SearchOptions {
  std::string query;
  int max_results = 10;
  std::string session_id;          // only rows of this session (global memory items always match)
  std::string exclude_session_id;  // skip rows of this session (global memory items still match)
  bool memory = true;              // which sources to search
  bool summaries = true;
  bool messages = true;
  int snippet_tokens = 32;  // words per snippet (1..64)
};

// Background work (summarization). At most one queued-or-running job per
// (session_id, kind). A claim leases the job until now + lease; a job whose lease
// expired goes back to the queue.
struct Job {
  int64_t id = 0;
  std::string kind;
  std::string session_id;
  std::string state;  // queued | running | done | failed
  int attempts = 0;   // claims so far
  std::string payload_json = "{}";
  int64_t next_run_at_ms = 0;
  int64_t lease_until_ms = 0;
  std::string last_error;
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
};

struct EnqueueResult {
  Job job;
  bool created = false;  // false: an active job for (session, kind) already existed
};

struct RetryPolicy {
  int max_attempts = 5;             // after this many failed attempts the job is failed
  int64_t base_delay_ms = 1000;     // delay after the first failure; doubles each time
  int64_t max_delay_ms = 300000;
};

// Measured provider/estimate ratio per model (DESIGN.md §3).
struct Calibration {
  std::string model;
  double ratio = 1.0;
  int64_t samples = 0;
  int64_t updated_at_ms = 0;
};

struct AuditVerifyReport {
  bool ok = true;
  int64_t checked = 0;       // events walked
  int64_t first_seq = 0;     // first and last seq present (0 when empty)
  int64_t last_seq = 0;
  int64_t broken_seq = 0;    // first seq where the chain breaks (0 when ok)
  std::string reason;        // why it is broken
};

// Audit retention: events older than max_age or beyond the newest max_events are
// deleted; the hash of the last deleted one is kept as the chain's anchor.
struct AuditRetention {
  int64_t max_events = 0;        // 0: no count limit
  int64_t min_timestamp_ms = 0;  // delete events with timestamp_ms < this (0: no age limit)
};

struct MissyImportReport {
  int64_t sessions = 0;  // rows added by this import
  int64_t messages = 0;
  int64_t summaries = 0;
  int64_t learnings = 0;
  int64_t skipped = 0;   // source rows already imported (or not importable)
};

// Group-commit counters since Open (for /metrics and the benchmark).
struct WriterStats {
  int64_t transactions = 0;  // committed group transactions
  int64_t writes = 0;        // write calls served (committed or failed)
  int64_t failed_writes = 0;
  int64_t max_batch = 0;     // most writes seen in one transaction
  int64_t index_transactions = 0;  // transactions that indexed pending message text
};

namespace sqlite {
class Connection;
}

class Database {
 public:
  // Opens (creating if absent) and migrates to the latest schema version.
  static Result<std::unique_ptr<Database>> Open(const std::string& path);
  static Result<std::unique_ptr<Database>> Open(const std::string& path,
                                                const DatabaseOptions& options);
  virtual ~Database() = default;

  // The schema version this build writes.
  static int LatestSchemaVersion();
  virtual int SchemaVersion() = 0;

  // Sessions. CreateSession fails with kAlreadyExists on a duplicate id.
  virtual Status CreateSession(const Session& session) = 0;
  virtual Result<Session> GetSession(std::string_view id) = 0;  // kNotFound
  virtual Result<std::vector<Session>> ListSessions(const ListOptions& options) = 0;

  // Appends a batch atomically: seqs continue from the session's last seq; the
  // session's message_count, total_tokens, last_seq and updated_at_ms are updated in
  // the same transaction. Returns the stored rows (with seq and created_at_ms).
  virtual Result<std::vector<StoredMessage>> AppendMessages(std::string_view session_id,
                                                            const std::vector<NewMessage>& batch,
                                                            int64_t now_ms) = 0;
  // Messages with seq > after_seq, in seq order, at most `limit` (0 = all).
  virtual Result<std::vector<StoredMessage>> LoadMessages(std::string_view session_id,
                                                          int64_t after_seq = 0,
                                                          int64_t limit = 0) = 0;

  // Adds `flags` (bits) to the given messages, e.g. kFlagPruned (sticky pruning).
  virtual Status AddMessageFlags(std::string_view session_id, const std::vector<int64_t>& seqs,
                                 uint32_t flags) = 0;

  // Summaries. InsertSummary stores the summary and, in the same transaction, marks
  // the messages of first_seq..last_seq as covered (depth 0) or sets parent_id of
  // each child (depth > 0; kNotFound if a child is missing, kConflict if already
  // condensed). kNotFound for an unknown session.
  virtual Result<SummaryRecord> InsertSummary(const SummaryRecord& summary) = 0;
  virtual Result<SummaryRecord> GetSummary(std::string_view id) = 0;  // kNotFound
  // A session's summaries ordered by first_seq then depth; `uncondensed_only` keeps
  // those without a parent (what the assembler shows).
  virtual Result<std::vector<SummaryRecord>> ListSummaries(std::string_view session_id,
                                                           bool uncondensed_only = false) = 0;
  // The summaries a condensed summary was built from (empty for a leaf).
  virtual Result<std::vector<SummaryRecord>> SummaryChildren(std::string_view id) = 0;
  // The messages a summary covers (its seq range), in seq order.
  virtual Result<std::vector<StoredMessage>> SummaryMessages(std::string_view id) = 0;

  // Memory items. Ids are generated when empty; kAlreadyExists on a duplicate id.
  virtual Result<MemoryItem> AddMemoryItem(const MemoryItem& item) = 0;
  virtual Result<MemoryItem> GetMemoryItem(std::string_view id) = 0;  // kNotFound
  // Newest first; `session_id` non-empty: that session's items and global ones.
  virtual Result<std::vector<MemoryItem>> ListMemoryItems(const ListOptions& options,
                                                          std::string_view session_id = {}) = 0;
  virtual Status UpdateMemoryItem(const MemoryItem& item) = 0;  // text, tags, pinned; kNotFound
  virtual Status DeleteMemoryItem(std::string_view id) = 0;     // kNotFound

  // Learnings, newest first; `task_type` filters when non-empty.
  virtual Result<LearningRecord> AddLearning(const LearningRecord& learning) = 0;
  virtual Result<std::vector<LearningRecord>> ListLearnings(const ListOptions& options,
                                                            std::string_view task_type = {}) = 0;
  virtual Status DeleteLearning(std::string_view id) = 0;  // kNotFound

  // Full-text search (see SearchOptions). Most relevant first, at most max_results.
  // An empty or all-punctuation query returns an empty list.
  virtual Result<std::vector<MemoryHit>> Search(const SearchOptions& options) = 0;

  // Job queue. `now_ms` is passed in (no clock in storage).
  virtual Result<EnqueueResult> EnqueueJob(std::string_view kind, std::string_view session_id,
                                           std::string_view payload_json, int64_t now_ms) = 0;
  // Claims the runnable queued job due first (next_run_at_ms <= now), after putting
  // jobs whose lease expired back in the queue. nullopt when none is due.
  virtual Result<std::optional<Job>> ClaimJob(int64_t now_ms, int64_t lease_ms) = 0;
  virtual Status CompleteJob(int64_t id, int64_t now_ms) = 0;  // kConflict unless running
  // Back to the queue after base_delay * 2^(attempts-1) (capped), or failed for good
  // once attempts reached max_attempts. Returns the updated job.
  virtual Result<Job> FailJob(int64_t id, std::string_view error, int64_t now_ms,
                              const RetryPolicy& policy = {}) = 0;
  // Puts running jobs whose lease ended before now_ms back in the queue; returns how many.
  virtual Result<int64_t> RequeueExpiredJobs(int64_t now_ms) = 0;
  virtual Result<Job> GetJob(int64_t id) = 0;  // kNotFound
  // Newest first; `state` filters when non-empty.
  virtual Result<std::vector<Job>> ListJobs(const ListOptions& options, std::string_view state = {}) = 0;

  // Calibration per model.
  virtual Result<Calibration> GetCalibration(std::string_view model) = 0;  // kNotFound
  virtual Status PutCalibration(const Calibration& calibration) = 0;
  virtual Result<std::vector<Calibration>> ListCalibrations() = 0;

  // Audit events. Assigns seq and prev_chain_hash, stores, returns the stored event.
  virtual Result<AuditEvent> AppendAuditEvent(const AuditEvent& event) = 0;
  // Events with seq > since_seq in order; `event_type` filters when non-empty.
  virtual Result<std::vector<AuditEvent>> AuditSince(int64_t since_seq, int limit,
                                                     std::string_view event_type = {}) = 0;
  // Walks the chain from the retention anchor; reports the first broken seq.
  virtual Result<AuditVerifyReport> VerifyAuditChain() = 0;
  // Applies retention; returns how many events were deleted.
  virtual Result<int64_t> PruneAuditEvents(const AuditRetention& retention) = 0;

  // Imports a Missy memory.db (opened read-only, DESIGN.md §11): sessions, turns as
  // messages, summaries with depth and parents, learnings. Idempotent: what was
  // imported before is skipped. `counter` counts imported messages (null: heuristic).
  virtual Result<MissyImportReport> ImportMissy(const std::string& missy_db_path,
                                                const MessageTokenCounter* counter = nullptr,
                                                int64_t now_ms = 0) = 0;

  virtual WriterStats GetWriterStats() = 0;

  // For storage/ internals: runs `fn` on the writer connection inside a group-commit
  // transaction (in its own savepoint). `fn` must not call back into this Database.
  virtual Status WriteTransaction(const std::function<Status(sqlite::Connection&)>& fn) = 0;
};

}  // namespace missy

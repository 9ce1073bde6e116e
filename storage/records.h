// The records the stores read and write (storage/*_store.h). Plain data: no I/O, no
// SQLite, no JSON library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/context_types.h"
#include "core/message.h"
#include "core/session.h"

namespace missy {

struct ListOptions {
  int limit = 100;  // at most this many rows (< 0: no limit)
  int offset = 0;
};

// A session's counters as a write left them (MessageStore::Append): what changes on
// every append, read inside the write so that no read follows it.
struct SessionCounters {
  int64_t message_count = 0;
  int64_t total_tokens = 0;
  int64_t last_seq = 0;
  int64_t updated_at_ms = 0;
  int64_t anchor_seq = 0;
  int64_t anchor_summaries = 0;
  int64_t anchor_stub_through = 0;
  int64_t anchor_squeezed_through = 0;

  void ApplyTo(Session& session) const {
    session.message_count = message_count;
    session.total_tokens = total_tokens;
    session.last_seq = last_seq;
    session.updated_at_ms = updated_at_ms;
    session.anchor_seq = anchor_seq;
    session.anchor_summaries = anchor_summaries;
    session.anchor_stub_through = anchor_stub_through;
    session.anchor_squeezed_through = anchor_squeezed_through;
  }
};

// A message to append: the message plus what was computed for it before storing.
struct NewMessage {
  Message message;
  int64_t tokens = 0;
  uint32_t flags = kFlagNone;
  std::string extract;  // core/message_extract.h; empty: stored as NULL
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
  int64_t ordinal = 0;  // insertion order within the database (read only; 0 before insert)
};

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
  // true: the search sees every message acknowledged before it (catching the index up
  // first, through the writer). false: only what the writer has indexed so far (it
  // indexes within index_idle_ms of the last write) — no wait for a commit, for paths
  // that must not block (the context request).
  bool wait_for_index = true;
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
  int max_attempts = 5;          // after this many failed attempts the job is failed
  int64_t base_delay_ms = 1000;  // delay after the first failure; doubles each time
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
  int64_t checked = 0;    // events walked
  int64_t first_seq = 0;  // first and last seq present (0 when empty)
  int64_t last_seq = 0;
  int64_t broken_seq = 0;  // first seq where the chain breaks (0 when ok)
  std::string reason;      // why it is broken
};

// Audit retention: events older than min_timestamp_ms or beyond the newest max_events
// are deleted (always a prefix of the chain); the hash of the last deleted one is kept
// as the chain's anchor.
struct AuditRetention {
  int64_t max_events = 0;        // 0: no count limit
  int64_t min_timestamp_ms = 0;  // delete events with timestamp_ms < this (0: no age limit)
};

struct MissyImportReport {
  int64_t sessions = 0;  // rows added by this import
  int64_t messages = 0;
  int64_t summaries = 0;
  int64_t learnings = 0;
  int64_t skipped = 0;  // source rows already imported (or not importable)
};

// The views the assembler takes (core/context_types.h).
inline SummaryView ToSummaryView(const SummaryRecord& s) {
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

inline Learning ToLearning(const LearningRecord& l) {
  return Learning{l.id, l.task_type, l.outcome, l.lesson, l.created_at_ms};
}

}  // namespace missy

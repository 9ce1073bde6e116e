// JobStore: the background job queue (summarization) with leases and retries.
// Thread-safe; reads use Database::Read, writes take the caller's Txn (or wrap one
// Database::Write). Time is passed in (no clock in storage). At most one queued or
// running job exists per (session_id, kind).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "storage/database.h"
#include "storage/records.h"

namespace missy {

class JobStore {
 public:
  explicit JobStore(Database& db) : db_(db) {}

  // Queues a job due at now_ms, or returns the active one for (session, kind) with
  // created = false. kInvalidArgument for an empty kind.
  Result<EnqueueResult> Enqueue(Txn& txn, std::string_view kind, std::string_view session_id,
                                std::string_view payload_json, int64_t now_ms);
  Result<EnqueueResult> Enqueue(std::string_view kind, std::string_view session_id,
                                std::string_view payload_json, int64_t now_ms);
  // Whether a queued or running job exists for (session, kind): one cheap read.
  Result<bool> HasActive(std::string_view session_id, std::string_view kind);

  // Claims the runnable queued job due first (next_run_at_ms <= now), after putting
  // jobs whose lease expired back in the queue; leases it until now + lease_ms.
  // nullopt when none is due.
  Result<std::optional<Job>> Claim(Txn& txn, int64_t now_ms, int64_t lease_ms);
  Result<std::optional<Job>> Claim(int64_t now_ms, int64_t lease_ms);
  // A running job's lease, renewed until `until_ms` (a long run that is making progress
  // keeps its job). Nothing for a job that is not running (it was requeued or finished).
  Status ExtendLease(Txn& txn, int64_t id, int64_t until_ms);
  // kNotFound, kConflict unless running.
  Status Complete(Txn& txn, int64_t id, int64_t now_ms);
  Status Complete(int64_t id, int64_t now_ms);
  // Back to the queue after base_delay * 2^(attempts-1) (capped), or failed for good
  // once attempts reached max_attempts. Returns the updated job. kNotFound, kConflict
  // unless running.
  Result<Job> Fail(Txn& txn, int64_t id, std::string_view error, int64_t now_ms,
                   const RetryPolicy& policy = {});
  Result<Job> Fail(int64_t id, std::string_view error, int64_t now_ms,
                   const RetryPolicy& policy = {});
  // Puts running jobs whose lease ended before now_ms back in the queue; returns how many.
  Result<int64_t> RequeueExpired(Txn& txn, int64_t now_ms);
  Result<int64_t> RequeueExpired(int64_t now_ms);

  // At a daemon's start: every running job was claimed by a worker of a daemon that has
  // stopped (one daemon serves a database), so none waits for its lease to end. Each is
  // queued again, due now, or failed for good once it has used max_attempts (a job that
  // stops the daemon each time it runs must not do so forever). Returns how many were
  // queued again and how many failed.
  struct Orphans {
    int64_t requeued = 0;
    int64_t failed = 0;
  };
  Result<Orphans> RequeueOrphaned(int64_t now_ms, const RetryPolicy& policy = {});

  Result<Job> Get(int64_t id);  // kNotFound
  // Newest first; `state` filters when non-empty.
  Result<std::vector<Job>> List(const ListOptions& options, std::string_view state = {});

 private:
  Database& db_;
};

}  // namespace missy

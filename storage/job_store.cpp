#include "storage/job_store.h"

#include <algorithm>
#include <string>

#include "storage/sqlite.h"
#include "storage/store_util.h"

namespace missy {
namespace {

using sqlite::Connection;
using sqlite::Statement;

const char kColumns[] =
    "id, kind, session_id, state, attempts, payload, next_run_at_ms, lease_until_ms, "
    "last_error, created_at_ms, updated_at_ms";

Job FromRow(const Statement& s) {
  Job j;
  j.id = s.Int(0);
  j.kind = s.Text(1);
  j.session_id = s.Text(2);
  j.state = s.Text(3);
  j.attempts = static_cast<int>(s.Int(4));
  j.payload_json = s.Text(5);
  j.next_run_at_ms = s.Int(6);
  j.lease_until_ms = s.Int(7);
  j.last_error = s.Text(8);
  j.created_at_ms = s.Int(9);
  j.updated_at_ms = s.Int(10);
  return j;
}

Result<Job> ReadJob(Connection& c, int64_t id) {
  MISSY_ASSIGN_STMT(q, c, std::string("SELECT ") + kColumns + " FROM jobs WHERE id = ?1");
  q.Bind(1, id);
  MISSY_ASSIGN_NEXT(row, q, "read job");
  if (!row) return Status::NotFound("job " + std::to_string(id) + " not found", "id");
  return FromRow(q);
}

// The job, which must be running (kConflict otherwise).
Result<Job> RunningJob(Connection& c, int64_t id) {
  auto job = ReadJob(c, id);
  if (!job.ok()) return job.status();
  if (job->state != "running") {
    return Status::Conflict("job " + std::to_string(id) + " is " + job->state + ", not running",
                            "id");
  }
  return job;
}

}  // namespace

Result<EnqueueResult> JobStore::Enqueue(Txn& txn, std::string_view kind,
                                        std::string_view session_id, std::string_view payload_json,
                                        int64_t now_ms) {
  if (kind.empty()) return Status::InvalidArgument("job kind must not be empty", "kind");
  Connection& c = txn.conn();
  EnqueueResult result;
  int64_t id = 0;
  {
    MISSY_ASSIGN_STMT(existing, c,
                      "SELECT id FROM jobs WHERE session_id = ?1 AND kind = ?2 AND state IN "
                      "('queued', 'running')");
    existing.Bind(1, session_id).Bind(2, kind);
    MISSY_ASSIGN_NEXT(found, existing, "read jobs");
    if (found) id = existing.Int(0);
  }
  if (id == 0) {
    MISSY_ASSIGN_STMT(insert, c,
                      "INSERT INTO jobs (kind, session_id, state, payload, next_run_at_ms, "
                      "created_at_ms, updated_at_ms) VALUES (?1, ?2, 'queued', ?3, ?4, ?4, ?4)");
    insert.Bind(1, kind)
        .Bind(2, session_id)
        .Bind(3, payload_json.empty() ? std::string_view("{}") : payload_json)
        .Bind(4, now_ms);
    MISSY_RETURN_IF_ERROR(insert.Run("enqueue job"));
    id = c.LastInsertRowId();
    result.created = true;
  }
  auto job = ReadJob(c, id);
  if (!job.ok()) return job.status();
  result.job = std::move(*job);
  return result;
}

Result<EnqueueResult> JobStore::Enqueue(std::string_view kind, std::string_view session_id,
                                        std::string_view payload_json, int64_t now_ms) {
  if (kind.empty()) return Status::InvalidArgument("job kind must not be empty", "kind");
  return store_util::WriteValue<EnqueueResult>(
      db_, [&](Txn& txn) { return Enqueue(txn, kind, session_id, payload_json, now_ms); });
}

Result<bool> JobStore::HasActive(std::string_view session_id, std::string_view kind) {
  return store_util::ReadValue<bool>(db_, [&](Connection& c) -> Result<bool> {
    MISSY_ASSIGN_STMT(q, c,
                      "SELECT 1 FROM jobs WHERE session_id = ?1 AND kind = ?2 AND state IN "
                      "('queued', 'running')");
    q.Bind(1, session_id).Bind(2, kind);
    return q.Next("read jobs");
  });
}

Result<std::optional<Job>> JobStore::Claim(Txn& txn, int64_t now_ms, int64_t lease_ms) {
  Connection& c = txn.conn();
  MISSY_RETURN_IF_ERROR(RequeueExpired(txn, now_ms).status());
  int64_t id = 0;
  {
    MISSY_ASSIGN_STMT(next, c,
                      "SELECT id FROM jobs WHERE state = 'queued' AND next_run_at_ms <= ?1 "
                      "ORDER BY next_run_at_ms, id LIMIT 1");
    next.Bind(1, now_ms);
    MISSY_ASSIGN_NEXT(found, next, "find a due job");
    if (!found) return std::optional<Job>();
    id = next.Int(0);
  }
  MISSY_ASSIGN_STMT(claim, c,
                    "UPDATE jobs SET state = 'running', attempts = attempts + 1, "
                    "lease_until_ms = ?2, updated_at_ms = ?3 WHERE id = ?1");
  claim.Bind(1, id).Bind(2, now_ms + lease_ms).Bind(3, now_ms);
  MISSY_RETURN_IF_ERROR(claim.Run("claim job"));
  auto job = ReadJob(c, id);
  if (!job.ok()) return job.status();
  return std::optional<Job>(std::move(*job));
}

Result<std::optional<Job>> JobStore::Claim(int64_t now_ms, int64_t lease_ms) {
  return store_util::WriteValue<std::optional<Job>>(
      db_, [&](Txn& txn) { return Claim(txn, now_ms, lease_ms); });
}

Status JobStore::ExtendLease(Txn& txn, int64_t id, int64_t until_ms) {
  MISSY_ASSIGN_STMT(extend, txn.conn(),
                    "UPDATE jobs SET lease_until_ms = max(lease_until_ms, ?2) "
                    "WHERE id = ?1 AND state = 'running'");
  extend.Bind(1, id).Bind(2, until_ms);
  return extend.Run("extend job lease");
}

Status JobStore::Complete(Txn& txn, int64_t id, int64_t now_ms) {
  Connection& c = txn.conn();
  MISSY_RETURN_IF_ERROR(RunningJob(c, id).status());
  MISSY_ASSIGN_STMT(done, c,
                    "UPDATE jobs SET state = 'done', lease_until_ms = 0, last_error = '', "
                    "updated_at_ms = ?2 WHERE id = ?1");
  done.Bind(1, id).Bind(2, now_ms);
  return done.Run("complete job");
}

Status JobStore::Complete(int64_t id, int64_t now_ms) {
  return db_.Write([&](Txn& txn) { return Complete(txn, id, now_ms); });
}

Result<Job> JobStore::Fail(Txn& txn, int64_t id, std::string_view error, int64_t now_ms,
                           const RetryPolicy& policy) {
  Connection& c = txn.conn();
  auto job = RunningJob(c, id);
  if (!job.ok()) return job.status();
  const bool give_up = job->attempts >= policy.max_attempts;
  int64_t delay = policy.base_delay_ms;
  for (int i = 1; i < job->attempts && delay < policy.max_delay_ms; ++i) delay *= 2;
  delay = std::min(delay, policy.max_delay_ms);
  MISSY_ASSIGN_STMT(fail, c,
                    "UPDATE jobs SET state = ?2, next_run_at_ms = ?3, lease_until_ms = 0, "
                    "last_error = ?4, updated_at_ms = ?5 WHERE id = ?1");
  fail.Bind(1, id)
      .Bind(2, give_up ? "failed" : "queued")
      .Bind(3, give_up ? job->next_run_at_ms : now_ms + delay)
      .Bind(4, error)
      .Bind(5, now_ms);
  MISSY_RETURN_IF_ERROR(fail.Run("fail job"));
  return ReadJob(c, id);
}

Result<Job> JobStore::Fail(int64_t id, std::string_view error, int64_t now_ms,
                           const RetryPolicy& policy) {
  return store_util::WriteValue<Job>(
      db_, [&](Txn& txn) { return Fail(txn, id, error, now_ms, policy); });
}

Result<int64_t> JobStore::RequeueExpired(Txn& txn, int64_t now_ms) {
  MISSY_ASSIGN_STMT(q, txn.conn(),
                    "UPDATE jobs SET state = 'queued', lease_until_ms = 0, last_error = 'lease "
                    "expired', updated_at_ms = ?1 WHERE state = 'running' AND lease_until_ms < ?1");
  q.Bind(1, now_ms);
  MISSY_RETURN_IF_ERROR(q.Run("requeue expired jobs"));
  return txn.conn().Changes();
}

Result<int64_t> JobStore::RequeueExpired(int64_t now_ms) {
  return store_util::WriteValue<int64_t>(db_,
                                         [&](Txn& txn) { return RequeueExpired(txn, now_ms); });
}

Result<JobStore::Orphans> JobStore::RequeueOrphaned(int64_t now_ms, const RetryPolicy& policy) {
  return store_util::WriteValue<Orphans>(db_, [&](Txn& txn) -> Result<Orphans> {
    Connection& c = txn.conn();
    Orphans out;
    {
      MISSY_ASSIGN_STMT(fail, c,
                        "UPDATE jobs SET state = 'failed', lease_until_ms = 0, last_error = "
                        "'the daemon stopped while it ran, ' || attempts || ' times', "
                        "updated_at_ms = ?1 WHERE state = 'running' AND attempts >= ?2");
      fail.Bind(1, now_ms).Bind(2, static_cast<int64_t>(policy.max_attempts));
      MISSY_RETURN_IF_ERROR(fail.Run("fail orphaned jobs"));
      out.failed = c.Changes();
    }
    MISSY_ASSIGN_STMT(requeue, c,
                      "UPDATE jobs SET state = 'queued', next_run_at_ms = ?1, lease_until_ms = "
                      "0, last_error = 'the daemon stopped while it ran', updated_at_ms = ?1 "
                      "WHERE state = 'running'");
    requeue.Bind(1, now_ms);
    MISSY_RETURN_IF_ERROR(requeue.Run("requeue orphaned jobs"));
    out.requeued = c.Changes();
    return out;
  });
}

Result<Job> JobStore::Get(int64_t id) {
  return store_util::ReadValue<Job>(db_, [&](Connection& c) { return ReadJob(c, id); });
}

Result<std::vector<Job>> JobStore::List(const ListOptions& options, std::string_view state) {
  std::vector<Job> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kColumns +
                          " FROM jobs WHERE (?3 = '' OR state = ?3) ORDER BY id DESC LIMIT ?1 "
                          "OFFSET ?2");
    store_util::BindPage(q, options);
    q.Bind(3, state);
    return store_util::CollectRows(q, FromRow, "list jobs", out);
  }));
  return out;
}

}  // namespace missy

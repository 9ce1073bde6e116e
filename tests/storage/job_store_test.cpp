// The job queue (storage/job_store.cpp): dedup, leases, completion, backoff, expiry.
#include "storage/job_store.h"

#include <gtest/gtest.h>

#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::OpenDbOrDie;
using ::missy::testing::TempDir;

class JobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("m.db");
    db_ = OpenDbOrDie(path_);
    ASSERT_TRUE(db_);
  }
  Job Claim(int64_t now, int64_t lease = 1000) {
    auto r = db_->jobs.Claim(now, lease);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r.ok() && r->has_value()) << "no job due at " << now;
    return r.ok() && r->has_value() ? **r : Job{};
  }
  bool NothingDue(int64_t now) {
    auto r = db_->jobs.Claim(now, 1000);
    return r.ok() && !r->has_value();
  }
  TempDir dir_;
  std::string path_;
  testing::TestDb db_;
};

TEST_F(JobStoreTest, EnqueueIsDeduplicatedPerSessionAndKindWhileActive) {
  auto a = db_->jobs.Enqueue("summarize", "s1", R"({"reason":"threshold"})", 100);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->created);
  EXPECT_EQ(a->job.state, "queued");
  EXPECT_EQ(a->job.payload_json, R"({"reason":"threshold"})");
  auto again = db_->jobs.Enqueue("summarize", "s1", "{}", 101);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->job.id, a->job.id);
  EXPECT_TRUE(db_->jobs.Enqueue("summarize", "s2", "{}", 102)->created);
  EXPECT_TRUE(db_->jobs.Enqueue("condense", "s1", "{}", 103)->created);

  Job running = Claim(200);
  EXPECT_EQ(running.id, a->job.id);
  EXPECT_FALSE(
      db_->jobs.Enqueue("summarize", "s1", "{}", 201)->created);  // running counts as active
  ASSERT_TRUE(db_->jobs.Complete(running.id, 300).ok());
  auto fresh = db_->jobs.Enqueue("summarize", "s1", "{}", 301);  // done: a new one may be queued
  EXPECT_TRUE(fresh->created);
  EXPECT_NE(fresh->job.id, a->job.id);
  EXPECT_EQ(db_->jobs.List({}, "queued")->size(), 3u);
  EXPECT_EQ(db_->jobs.List({}, "done")->size(), 1u);
  EXPECT_EQ(db_->jobs.List({})->size(), 4u);
}

TEST_F(JobStoreTest, ClaimTakesTheDueJobsInOrderWithALease) {
  auto first = db_->jobs.Enqueue("summarize", "a", "{}", 10);
  auto second = db_->jobs.Enqueue("summarize", "b", "{}", 20);
  EXPECT_TRUE(NothingDue(5));  // not yet due
  Job j = Claim(100, 5000);
  EXPECT_EQ(j.id, first->job.id);
  EXPECT_EQ(j.state, "running");
  EXPECT_EQ(j.attempts, 1);
  EXPECT_EQ(j.lease_until_ms, 5100);
  EXPECT_EQ(Claim(100).id, second->job.id);
  EXPECT_TRUE(NothingDue(100));
}

TEST_F(JobStoreTest, CompleteOnlyARunningJob) {
  auto q = db_->jobs.Enqueue("summarize", "a", "{}", 10);
  EXPECT_EQ(db_->jobs.Complete(q->job.id, 11).code(), StatusCode::kConflict);
  EXPECT_EQ(db_->jobs.Complete(999, 11).code(), StatusCode::kNotFound);
  Job j = Claim(20);
  ASSERT_TRUE(db_->jobs.Complete(j.id, 30).ok());
  auto done = db_->jobs.Get(j.id);
  EXPECT_EQ(done->state, "done");
  EXPECT_EQ(done->updated_at_ms, 30);
  EXPECT_EQ(db_->jobs.Complete(j.id, 31).code(), StatusCode::kConflict);
}

TEST_F(JobStoreTest, FailRetriesWithExponentialBackoffThenGivesUp) {
  RetryPolicy policy;
  policy.max_attempts = 3;
  policy.base_delay_ms = 1000;
  auto q = db_->jobs.Enqueue("summarize", "a", "{}", 0);
  Job j = Claim(0);
  auto f1 = db_->jobs.Fail(j.id, "provider timeout", 100, policy);
  ASSERT_TRUE(f1.ok()) << f1.status().ToString();
  EXPECT_EQ(f1->state, "queued");
  EXPECT_EQ(f1->next_run_at_ms, 1100);  // base delay
  EXPECT_EQ(f1->last_error, "provider timeout");
  EXPECT_TRUE(NothingDue(1099));
  j = Claim(1100);
  EXPECT_EQ(j.attempts, 2);
  auto f2 = db_->jobs.Fail(j.id, "429", 1200, policy);
  EXPECT_EQ(f2->next_run_at_ms, 3200);  // doubled
  EXPECT_TRUE(NothingDue(3199));
  j = Claim(3200);
  EXPECT_EQ(j.attempts, 3);
  auto f3 = db_->jobs.Fail(j.id, "still 429", 3300, policy);
  EXPECT_EQ(f3->state, "failed");
  EXPECT_EQ(f3->last_error, "still 429");
  EXPECT_TRUE(NothingDue(1000000));
  EXPECT_EQ(db_->jobs.Fail(j.id, "again", 3400, policy).status().code(), StatusCode::kConflict);
  // A failed job no longer blocks a new one for the same session and kind.
  EXPECT_TRUE(db_->jobs.Enqueue("summarize", "a", "{}", 4000)->created);
}

TEST_F(JobStoreTest, BackoffIsCapped) {
  RetryPolicy policy;
  policy.max_attempts = 100;
  policy.base_delay_ms = 1000;
  policy.max_delay_ms = 5000;
  ASSERT_TRUE(db_->jobs.Enqueue("k", "a", "{}", 0).ok());
  int64_t now = 0;
  int64_t last_delay = 0;
  for (int i = 0; i < 6; ++i) {
    Job j = Claim(now);
    auto f = db_->jobs.Fail(j.id, "x", now, policy);
    last_delay = f->next_run_at_ms - now;
    now = f->next_run_at_ms;
  }
  EXPECT_EQ(last_delay, 5000);
}

TEST_F(JobStoreTest, ExpiredLeasesAreRequeuedAndSurviveRestart) {
  auto q = db_->jobs.Enqueue("summarize", "a", "{}", 0);
  Job j = Claim(100, 1000);       // lease until 1100; the worker then "crashes"
  EXPECT_TRUE(NothingDue(1000));  // still leased
  db_.reset();
  db_ = OpenDbOrDie(path_);  // restart
  auto requeued = db_->jobs.RequeueExpired(1101);
  ASSERT_TRUE(requeued.ok());
  EXPECT_EQ(*requeued, 1);
  auto job = db_->jobs.Get(j.id);
  EXPECT_EQ(job->state, "queued");
  EXPECT_EQ(job->last_error, "lease expired");
  Job again = Claim(1102);
  EXPECT_EQ(again.id, j.id);
  EXPECT_EQ(again.attempts, 2);
  // Once completed, a late completion from the crashed worker conflicts.
  ASSERT_TRUE(db_->jobs.Complete(again.id, 1200).ok());
  EXPECT_EQ(db_->jobs.Complete(again.id, 1201).code(), StatusCode::kConflict);
}

// At a daemon's start, the jobs its last run left running go back to the queue at once,
// however long their lease; one that has used its attempts fails instead. Queued and
// finished jobs are left as they are.
TEST_F(JobStoreTest, OrphanedJobsAreRequeuedAtOnceOrFailedAfterTheirLastAttempt) {
  RetryPolicy policy;
  policy.max_attempts = 2;
  ASSERT_TRUE(db_->jobs.Enqueue("summarize", "once", "{}", 0).ok());
  ASSERT_TRUE(db_->jobs.Enqueue("summarize", "twice", "{}", 0).ok());
  ASSERT_TRUE(db_->jobs.Enqueue("summarize", "done", "{}", 0).ok());
  const Job done = Claim(10, 600000);
  ASSERT_TRUE(db_->jobs.Complete(done.id, 20).ok());
  const Job once = Claim(30, 600000);         // "once": its first attempt, lease for 10 minutes
  const Job twice = Claim(40, 10);            // "twice", whose lease ends at 50
  const Job twice_again = Claim(60, 600000);  // its second attempt
  ASSERT_EQ(twice_again.id, twice.id);
  ASSERT_EQ(twice_again.attempts, 2);
  ASSERT_TRUE(db_->jobs.Enqueue("summarize", "later", "{}", 5000).ok());
  db_.reset();
  db_ = OpenDbOrDie(path_);  // the daemon starts again

  Result<JobStore::Orphans> orphans = db_->jobs.RequeueOrphaned(100, policy);
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  EXPECT_EQ(orphans->requeued, 1);
  EXPECT_EQ(orphans->failed, 1);
  Result<Job> requeued = db_->jobs.Get(once.id);
  EXPECT_EQ(requeued->state, "queued");
  EXPECT_EQ(requeued->next_run_at_ms, 100);
  EXPECT_EQ(requeued->lease_until_ms, 0);
  EXPECT_EQ(requeued->last_error, "the daemon stopped while it ran");
  Result<Job> failed = db_->jobs.Get(twice.id);
  EXPECT_EQ(failed->state, "failed");
  EXPECT_EQ(failed->last_error, "the daemon stopped while it ran, 2 times");
  EXPECT_EQ(db_->jobs.Get(done.id)->state, "done");
  // The requeued job is due now, long before its old lease would have ended.
  const Job again = Claim(101);
  EXPECT_EQ(again.id, once.id);
  EXPECT_EQ(again.attempts, 2);
  EXPECT_TRUE(NothingDue(102));  // "later" is not due yet
  // The daemon stops during that second attempt too: the job has used its attempts.
  orphans = db_->jobs.RequeueOrphaned(103, policy);
  ASSERT_TRUE(orphans.ok());
  EXPECT_EQ(orphans->requeued, 0);
  EXPECT_EQ(orphans->failed, 1);
  EXPECT_EQ(db_->jobs.Get(once.id)->state, "failed");
}

TEST_F(JobStoreTest, ClaimReclaimsAnExpiredLeaseDirectly) {
  auto q = db_->jobs.Enqueue("summarize", "a", "{}", 0);
  Job j = Claim(0, 500);
  EXPECT_TRUE(NothingDue(499));
  Job again = Claim(501, 500);
  EXPECT_EQ(again.id, j.id);
  EXPECT_EQ(again.attempts, 2);
  EXPECT_EQ(again.lease_until_ms, 1001);
}

// A run that makes progress renews its lease: it is not claimed again under it.
TEST_F(JobStoreTest, AnExtendedLeaseKeepsTheJob) {
  auto q = db_->jobs.Enqueue("summarize", "a", "{}", 0);
  Job j = Claim(0, 500);
  ASSERT_TRUE(db_.db->Write([&](Txn& txn) { return db_->jobs.ExtendLease(txn, j.id, 2000); }).ok());
  EXPECT_TRUE(NothingDue(1500));  // the first lease (500) has passed, the renewed one not
  EXPECT_EQ(db_->jobs.Get(j.id)->lease_until_ms, 2000);
  // Never shortened, and nothing for a job that is not running.
  ASSERT_TRUE(db_.db->Write([&](Txn& txn) { return db_->jobs.ExtendLease(txn, j.id, 900); }).ok());
  EXPECT_EQ(db_->jobs.Get(j.id)->lease_until_ms, 2000);
  ASSERT_TRUE(db_->jobs.Complete(j.id, 1600).ok());
  ASSERT_TRUE(db_.db->Write([&](Txn& txn) { return db_->jobs.ExtendLease(txn, j.id, 9000); }).ok());
  EXPECT_EQ(db_->jobs.Get(j.id)->state, "done");
  EXPECT_EQ(db_->jobs.Get(j.id)->lease_until_ms, 0);
}

TEST_F(JobStoreTest, HasActiveSeesQueuedAndRunningJobsOnly) {
  EXPECT_FALSE(*db_->jobs.HasActive("s", "summarize"));
  ASSERT_TRUE(db_->jobs.Enqueue("summarize", "s", "{}", 0).ok());
  EXPECT_TRUE(*db_->jobs.HasActive("s", "summarize"));
  EXPECT_FALSE(*db_->jobs.HasActive("s", "condense"));
  EXPECT_FALSE(*db_->jobs.HasActive("t", "summarize"));
  Job j = Claim(1);
  EXPECT_TRUE(*db_->jobs.HasActive("s", "summarize"));  // running
  ASSERT_TRUE(db_->jobs.Complete(j.id, 2).ok());
  EXPECT_FALSE(*db_->jobs.HasActive("s", "summarize"));
}

TEST_F(JobStoreTest, CompletingAJobComposesWithItsResult) {
  ASSERT_TRUE(db_->sessions.Create(testing::SimpleSession("s")).ok());
  ASSERT_TRUE(db_->jobs.Enqueue("summarize", "s", "{}", 0).ok());
  Job j = Claim(1);
  // The result and the completion commit together: a failing result leaves the job running.
  Status st = db_.db->Write([&](Txn& txn) -> Status {
    MISSY_RETURN_IF_ERROR(db_->jobs.Complete(txn, j.id, 2));
    return db_->sessions.SetAnchor(txn, "ghost", 1);
  });
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(db_->jobs.Get(j.id)->state, "running");
  st = db_.db->Write([&](Txn& txn) -> Status {
    MISSY_RETURN_IF_ERROR(db_->jobs.Complete(txn, j.id, 3));
    return db_->sessions.SetAnchor(txn, "s", 1);
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(db_->jobs.Get(j.id)->state, "done");
  EXPECT_EQ(db_->sessions.Get("s")->anchor_seq, 1);
}

}  // namespace
}  // namespace missy

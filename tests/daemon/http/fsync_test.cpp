// How many commits a context request waits for. A request that changes nothing durable
// answers without waiting for any commit (its context.built event commits afterwards);
// one that prunes commits exactly one transaction before it answers.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <thread>

#include "daemon/service/service_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

std::vector<Message> ToolTurns(int first, int count, int words) {
  std::vector<Message> out;
  for (int i = first; i < first + count; ++i) {
    const std::string n = std::to_string(i);
    out.push_back(Message::User("step " + n));
    out.push_back(CallMessage("call_" + n, "cat"));
    out.push_back(Message::ToolResult("call_" + n, Words(words, "f" + n + "_"), "cat"));
    out.push_back(Message::Assistant("done " + n));
  }
  return out;
}

class FsyncTest : public ServiceFixture {
 protected:
  FsyncTest() {
    // No background indexing transaction may run during a measurement: the writer
    // indexes message text only after this long without writes.
    db_options_.index_idle_ms = 600000;
  }

  void SetUp() override {
    ServiceFixture::SetUp();
    Session s;
    s.id = "s";
    s.system_prompt = "You are terse.";
    ASSERT_TRUE(Create(std::move(s)).ok());
    ASSERT_TRUE(Append("s", ToolTurns(1, 30, 1500)).status.ok());
  }

  int64_t Commits() { return db_->GetWriterStats().commits_with_fsync; }

  struct Measured {
    Result<ContextOutcome> outcome = Status::Internal("no answer");
    int64_t commits_before = 0;
    int64_t commits_at_done = 0;
    // Commits seen at the answer that were not the request's (at most this many: two of
    // them may have shared one group transaction).
    int64_t unrelated_commits = 0;
  };
  // One context request at an 8000-token window; the commit count is read inside Done.
  Measured Measure() {
    Measured m;
    m.commits_before = Commits();
    Awaiter<Result<ContextOutcome>> w;
    auto cb = w.Callback();
    ContextRequest request;
    request.session_id = "s";
    request.context_window = 8000;
    request.max_output_tokens = 1000;
    int64_t at_done = -1;
    const bool job_before = !stores_->jobs.List(ListOptions{})->empty();
    const size_t built_before = stores_->audit.Since(0, 0, "context.built")->size();
    int64_t unrelated = 0;
    services_->context.Build(std::move(request), [&, cb](Result<ContextOutcome> out) {
      // The summarization trigger may commit its job from a worker meanwhile (the
      // request never waits for it): that commit is not the request's. A consistent
      // reading: the commit count is the same before and after looking for the job.
      // So is the context.built event, committed after the answer was sent (on a busy
      // machine that commit can land before this callback runs).
      for (;;) {
        const int64_t commits = Commits();
        const bool job = !stores_->jobs.List(ListOptions{})->empty();
        const bool built = stores_->audit.Since(0, 0, "context.built")->size() > built_before;
        if (Commits() != commits) continue;
        at_done = commits;
        unrelated = (job && !job_before ? 1 : 0) + (built ? 1 : 0);
        break;
      }
      cb(std::move(out));
    });
    std::optional<Result<ContextOutcome>> out = w.Wait();
    if (out) m.outcome = std::move(*out);
    m.commits_at_done = at_done;
    m.unrelated_commits = unrelated;
    return m;
  }
};

TEST_F(FsyncTest, PruningRequestCommitsExactlyOneTransactionBeforeItAnswers) {
  ASSERT_TRUE(Flush().ok());  // nothing else in flight
  Measured first = Measure();
  ASSERT_TRUE(first.outcome.ok()) << first.outcome.status().ToString();
  ASSERT_FALSE(first.outcome->context.report.newly_pruned_seqs.empty());
  EXPECT_TRUE(first.outcome->wrote);
  // At least its own commit happened before the answer, and no second one of its own.
  EXPECT_GE(first.commits_at_done - first.commits_before, 1);
  EXPECT_LE(first.commits_at_done - first.commits_before - first.unrelated_commits, 1);
  // Everything it wrote is durable when it answers: flags, job, anchor, events.
  Result<std::vector<StoredMessage>> pruned =
      stores_->messages.Load("s", first.outcome->context.report.newly_pruned_seqs);
  ASSERT_TRUE(pruned.ok());
  for (const StoredMessage& m : *pruned) EXPECT_NE(m.flags & kFlagPruned, 0u) << m.seq;
  EXPECT_EQ(stores_->sessions.Get("s")->anchor_seq, first.outcome->context.report.first_kept_seq);
  // The summarization job is queued by the trigger off the request path: soon, once.
  for (int i = 0; i < 500 && stores_->jobs.List(ListOptions{})->empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(stores_->jobs.List(ListOptions{})->size(), 1u);
  Result<std::vector<AuditEvent>> built = stores_->audit.Since(0, 0, "context.built");
  ASSERT_EQ(built->size(), 1u);
  EXPECT_EQ(stores_->audit.Since(0, 0, "context.pruned")->size(), 1u);
}

TEST_F(FsyncTest, RequestThatChangesNothingDurableAnswersBeforeAnyCommit) {
  Measured first = Measure();  // prunes, enqueues the job, sets the anchor
  ASSERT_TRUE(first.outcome.ok()) << first.outcome.status().ToString();
  ASSERT_TRUE(first.outcome->wrote);
  ASSERT_TRUE(Flush().ok());

  Measured second = Measure();
  ASSERT_TRUE(second.outcome.ok()) << second.outcome.status().ToString();
  EXPECT_TRUE(second.outcome->context.report.newly_pruned_seqs.empty());
  EXPECT_FALSE(second.outcome->wrote);
  // (Its context.built event may commit before this callback runs on a busy machine.)
  EXPECT_EQ(second.commits_at_done - second.unrelated_commits, second.commits_before)
      << "the answer waited for a commit";
  // The context.built event commits afterwards, by group commit.
  ASSERT_TRUE(Flush().ok());
  EXPECT_GT(Commits(), second.commits_before);
  Result<std::vector<AuditEvent>> built = stores_->audit.Since(0, 0, "context.built");
  ASSERT_TRUE(built.ok());
  ASSERT_EQ(built->size(), 2u);
  EXPECT_EQ(json::parse(built->back().detail_json).at("context_id").as_string(),
            second.outcome->context_id);
}

TEST_F(FsyncTest, RequestThatChangesNothingDurableAnswersWhileTheWriterIsHeld) {
  Measured first = Measure();
  ASSERT_TRUE(first.outcome.ok()) << first.outcome.status().ToString();
  ASSERT_TRUE(Flush().ok());
  const size_t built_before = stores_->audit.Since(0, 0, "context.built")->size();

  // With the writer held nothing can commit: an answer now proves it waited for none.
  WriterBlock block(*db_);
  ASSERT_TRUE(block.holding());
  Measured second = Measure();
  ASSERT_TRUE(second.outcome.ok()) << second.outcome.status().ToString();
  EXPECT_FALSE(second.outcome->wrote);
  EXPECT_EQ(second.commits_at_done, second.commits_before);
  EXPECT_EQ(second.outcome->context.messages, first.outcome->context.messages);
  EXPECT_EQ(stores_->audit.Since(0, 0, "context.built")->size(), built_before);

  ASSERT_TRUE(block.Release().ok());
  ASSERT_TRUE(Flush().ok());
  EXPECT_EQ(stores_->audit.Since(0, 0, "context.built")->size(), built_before + 1);
}

TEST_F(FsyncTest, AnchorMovedWithoutPruningIsHeldInMemoryUntilItCommits) {
  // A small session whose second context moves the anchor without pruning: the
  // answer does not wait, and a third request (while the anchor's write is still held
  // back) already builds from the new anchor. (What the move evicts is not summarized in
  // the request here: that would be a write to wait for, as pruning is.)
  SetConfig([](DaemonConfig& c) { c.context.summarize_evicted = false; });
  ASSERT_TRUE(Create("chat").ok());
  std::vector<Message> chat;
  for (int i = 0; i < 60; ++i) {
    chat.push_back(i % 2 == 0 ? Message::User(Words(40, "q" + std::to_string(i) + "_"))
                              : Message::Assistant(Words(40, "a" + std::to_string(i) + "_")));
  }
  ASSERT_TRUE(Append("chat", chat).status.ok());
  auto context = [&] {
    ContextRequest r;
    r.session_id = "chat";
    r.context_window = 9000;
    r.max_output_tokens = 1000;
    return Context(std::move(r));
  };
  Result<ContextOutcome> first = context();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->context.report.newly_pruned_seqs.empty());
  ASSERT_GT(first->context.report.first_kept_seq, 1);
  ASSERT_TRUE(Flush().ok());
  const int64_t anchor = first->context.report.first_kept_seq;
  EXPECT_EQ(stores_->sessions.Get("chat")->anchor_seq, anchor);

  WriterBlock block(*db_);
  std::vector<Message> more;
  for (int i = 60; i < 70; ++i) {
    more.push_back(i % 2 == 0 ? Message::User(Words(40, "q" + std::to_string(i) + "_"))
                              : Message::Assistant(Words(40, "a" + std::to_string(i) + "_")));
  }
  // The append needs a commit: it completes after the release below. Queue it, then
  // release, wait for it, and hold the writer again for the contexts.
  Awaiter<AppendOutcome> appended;
  AppendRequest request;
  request.session_id = "chat";
  request.messages = std::move(more);
  services_->sessions.Append(std::move(request), appended.Callback());
  ASSERT_TRUE(block.Release().ok());
  std::optional<AppendOutcome> a = appended.Wait();
  ASSERT_TRUE(a && a->status.ok());

  WriterBlock hold(*db_);
  Result<ContextOutcome> moved = context();
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  ASSERT_EQ(moved->context.report.eviction, "anchor_moved");
  ASSERT_TRUE(moved->context.report.newly_pruned_seqs.empty());
  EXPECT_FALSE(moved->wrote);
  const int64_t new_anchor = moved->context.report.first_kept_seq;
  EXPECT_GT(new_anchor, anchor);
  EXPECT_EQ(stores_->sessions.Get("chat")->anchor_seq, anchor);  // not committed yet

  Result<ContextOutcome> next = context();
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->context.report.eviction, "anchored");
  EXPECT_EQ(next->context.report.first_kept_seq, new_anchor);
  EXPECT_EQ(next->context.messages, moved->context.messages);

  ASSERT_TRUE(hold.Release().ok());
  ASSERT_TRUE(Flush().ok());
  EXPECT_EQ(stores_->sessions.Get("chat")->anchor_seq, new_anchor);
}

}  // namespace
}  // namespace missy::testing

// Background summarization over a real store: leaves on group boundaries covering the
// history outside the fresh tail exactly once, condensation at the fanout, no-op runs
// without new history, the worker running queued jobs (also after a restart), and
// contexts that include the summaries and keep the files and errors in view.
#include "daemon/service/summarization_service.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <set>
#include <thread>

#include "core/message_extract.h"
#include "service_fixture.h"

namespace missy::testing {
namespace {

class SummarizationTest : public ServiceFixture {
 protected:
  void SetUp() override {
    ServiceFixture::SetUp();
    SetConfig([](DaemonConfig& c) {
      c.summarizer.leaf_chunk_tokens = 3000;
      c.summarizer.condensed_fanout = 4;
    });
  }

  Result<SummarizeOutcome> Run(const std::string& id, bool force = false) {
    SummarizeRequest r;
    r.session_id = id;
    r.force = force;
    r.reason = "test";
    return services_->summarization.Summarize(r);
  }

  std::vector<SummaryRecord> All(const std::string& id) {
    Result<std::vector<SummaryRecord>> all = stores_->summaries.List(id, false);
    EXPECT_TRUE(all.ok());
    return all.ok() ? *all : std::vector<SummaryRecord>{};
  }
};

TEST_F(SummarizationTest, LeavesCoverTheHistoryOutsideTheTailOnceOnGroupBoundaries) {
  ASSERT_TRUE(Create("s").ok());
  ASSERT_TRUE(Append("s", ErrorRounds(1, 40)).status.ok());  // 160 messages
  Result<SummarizeOutcome> out = Run("s");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_GE(out->leaves, 4);
  EXPECT_LT(out->tokens_after, out->tokens_before / 4);

  const std::vector<StoredMessage> stored = Stored("s");
  std::vector<SummaryRecord> leaves;
  for (const SummaryRecord& s : All("s")) {
    if (s.depth == 0) leaves.push_back(s);
  }
  ASSERT_EQ(static_cast<int64_t>(leaves.size()), out->leaves);
  int64_t next = 1;
  for (const SummaryRecord& leaf : leaves) {
    EXPECT_EQ(leaf.first_seq, next) << "a gap or an overlap before " << leaf.id;
    EXPECT_EQ(leaf.descendant_count, leaf.last_seq - leaf.first_seq + 1);
    // Cut on group boundaries: never right before a tool result.
    EXPECT_NE(stored[static_cast<size_t>(leaf.first_seq - 1)].message.role, Role::kTool);
    EXPECT_NE(stored[static_cast<size_t>(leaf.last_seq)].message.role, Role::kTool);
    EXPECT_LE(leaf.tokens, config_->summarizer.leaf_target_tokens);
    EXPECT_NE(leaf.content.find("src/module_"), std::string::npos) << leaf.content;
    EXPECT_NE(leaf.artifacts_json.find("error: test_"), std::string::npos);
    next = leaf.last_seq + 1;
  }
  // The fresh tail (16 messages) is left alone.
  EXPECT_LE(leaves.back().last_seq, 160 - 16);
  // Nothing new: no summary, no event, no write.
  const size_t events = Events("summarization.started").size();
  Result<SummarizeOutcome> again = Run("s");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->leaves, 0);
  EXPECT_EQ(again->condensed, 0);
  EXPECT_FALSE(again->stopped.empty());
  EXPECT_EQ(Events("summarization.started").size(), events);
  EXPECT_EQ(again->backend, "extractive");
  // The outcome names the backend the run would have used, even with nothing to do.
  SummarizeRequest idle;
  idle.session_id = "s";
  idle.backend = "llm";
  Result<SummarizeOutcome> idle_llm = services_->summarization.Summarize(idle);
  ASSERT_TRUE(idle_llm.ok());
  EXPECT_EQ(idle_llm->leaves, 0);
  EXPECT_EQ(idle_llm->backend, "llm");
  // New history continues right after the covered range.
  ASSERT_TRUE(Append("s", ErrorRounds(41, 20)).status.ok());
  ASSERT_TRUE(Run("s").ok());
  int64_t covered = 0;
  std::set<int64_t> seen;
  for (const SummaryRecord& s : All("s")) {
    if (s.depth != 0) continue;
    for (int64_t q = s.first_seq; q <= s.last_seq; ++q) {
      EXPECT_TRUE(seen.insert(q).second) << "seq " << q << " covered twice";
    }
    covered = std::max(covered, s.last_seq);
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), covered);  // 1..covered, no hole
  EXPECT_GT(covered, leaves.back().last_seq);
}

TEST_F(SummarizationTest, LeavesThatFitHalfTheBudgetAreNotCondensed) {
  ASSERT_TRUE(Create("f").ok());
  ASSERT_TRUE(Append("f", ErrorRounds(1, 60)).status.ok());
  SetConfig([](DaemonConfig& c) { c.budget.total = 200000; });  // room for every leaf
  Result<SummarizeOutcome> out = Run("f");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_GE(out->leaves, 4);
  EXPECT_EQ(out->condensed, 0);
}

TEST_F(SummarizationTest, FourLeavesAreCondensedIntoOneAtTheNextDepth) {
  // A small budget: the leaves no longer fit half of it, so they are condensed.
  SetConfig([](DaemonConfig& c) { c.budget.total = 12000; });
  ASSERT_TRUE(Create("c").ok());
  ASSERT_TRUE(Append("c", ErrorRounds(1, 60)).status.ok());
  Result<SummarizeOutcome> out = Run("c");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_GE(out->leaves, 4);
  EXPECT_GE(out->condensed, 1);
  int condensed = 0, with_parent = 0;
  for (const SummaryRecord& s : All("c")) {
    if (s.depth >= 1) {
      ++condensed;
      EXPECT_EQ(s.child_ids.size(), 4u);
      EXPECT_LE(s.tokens, config_->summarizer.condensed_target_tokens);
      // Trails are merged: the first condensed summary names the first file too.
      if (s.first_seq == 1) {
        EXPECT_NE(s.artifacts_json.find("src/module_1.cc"), std::string::npos);
      }
    }
    with_parent += !s.parent_id.empty();
  }
  EXPECT_EQ(condensed, out->condensed);
  EXPECT_EQ(with_parent, 4 * condensed);
  // What a context shows: the top of the tree, fewer than four at any depth.
  Result<std::vector<SummaryRecord>> top = stores_->summaries.List("c", true);
  ASSERT_TRUE(top.ok());
  std::map<int, int> per_depth;
  for (const SummaryRecord& s : *top) ++per_depth[s.depth];
  for (const auto& [depth, n] : per_depth) EXPECT_LT(n, 4) << "depth " << depth;
}

TEST_F(SummarizationTest, ARunCountsTheSummariesTheNextContextShowsAndOnlyThose) {
  SetConfig([](DaemonConfig& c) { c.budget.total = 12000; });  // leaves are condensed
  ASSERT_TRUE(Create("w").ok());
  ASSERT_TRUE(Append("w", ErrorRounds(1, 60)).status.ok());
  EXPECT_EQ(services_->summary_tokens.size(), 0u);
  Result<SummarizeOutcome> out = Run("w");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_GE(out->condensed, 1);
  Result<std::vector<SummaryRecord>> top = stores_->summaries.List("w", true);
  ASSERT_TRUE(top.ok());
  // The top of the tree is counted; the leaves condensed in the same run are not.
  EXPECT_EQ(services_->summary_tokens.size(), top->size());
  EXPECT_LT(top->size(), static_cast<size_t>(out->leaves + out->condensed));
  // The context counts with the same keys: it finds every count and adds none.
  Result<ContextOutcome> ctx = Context("w");
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->context.report.summaries_included, static_cast<int64_t>(top->size()));
  EXPECT_EQ(services_->summary_tokens.size(), top->size());
}

TEST_F(SummarizationTest, TheWorkerRunsTheJobAContextQueuesAndTheNextContextUsesIt) {
  ASSERT_TRUE(Create("w").ok());
  ASSERT_TRUE(Append("w", ErrorRounds(1, 50, 400)).status.ok());
  services_->summarizer.Start();
  // The measurement budget: 28,000 tokens (window 32,000, output 4,000).
  Result<ContextOutcome> first = Context("w", 32000, 4000);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->context.report.should_summarize);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (services_->summarizer.finished() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(services_->summarizer.finished(), 1);
  ASSERT_FALSE(All("w").empty());
  EXPECT_EQ(Events("summarization.queued").size(), 1u);
  EXPECT_EQ(Events("summarization.completed").size(), All("w").size());
  Result<ContextOutcome> next = Context("w", 32000, 4000);
  ASSERT_TRUE(next.ok());
  const ContextReport& r = next->context.report;
  EXPECT_GT(r.summaries_included, 0);
  EXPECT_EQ(r.summaries_skipped, 0);
  EXPECT_LE(r.used_tokens, 28000);
  // The files of the summarized part are still in view, through the summaries.
  std::string text;
  for (const Message& m : next->context.messages) text += m.PlainText() + "\n";
  int files_seen = 0;
  for (int i = 1; i <= 50; ++i) {
    files_seen += text.find("src/module_" + std::to_string(i) + ".cc") != std::string::npos;
  }
  EXPECT_GE(files_seen, 45) << text;
}

TEST_F(SummarizationTest, AJobQueuedBeforeARestartRunsAfterIt) {
  ASSERT_TRUE(Create("r").ok());
  ASSERT_TRUE(Append("r", ErrorRounds(1, 40)).status.ok());
  ASSERT_TRUE(stores_->jobs.Enqueue("summarize", "r", "{}", clock_.NowMs()).ok());
  Reopen();  // the queue is in SQLite
  services_->summarizer.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (services_->summarizer.finished() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(services_->summarizer.finished(), 1);
  EXPECT_FALSE(All("r").empty());
  Result<std::vector<Job>> jobs = stores_->jobs.List({}, "done");
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 1u);
}

// A run renews its job's lease with each batch of summaries it stores: a long run that
// makes progress is not taken for a dead one and claimed again.
TEST_F(SummarizationTest, EachCommitOfSummariesRenewsTheJobsLease) {
  ASSERT_TRUE(Create("l").ok());
  ASSERT_TRUE(Append("l", ErrorRounds(1, 40)).status.ok());
  ASSERT_TRUE(stores_->jobs.Enqueue("summarize", "l", "{}", clock_.NowMs()).ok());
  Result<std::optional<Job>> job = stores_->jobs.Claim(clock_.NowMs(), 1000);
  ASSERT_TRUE(job.ok() && job->has_value());
  const int64_t claimed_at = clock_.NowMs();
  clock_.Advance(5000);  // past the claim's lease: the run is slow
  SummarizeRequest r;
  r.session_id = "l";
  r.job_id = (*job)->id;
  r.lease_ms = 60000;
  Result<SummarizeOutcome> out = services_->summarization.Summarize(r);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_GE(out->leaves, 1);
  EXPECT_EQ(stores_->jobs.Get((*job)->id)->lease_until_ms, claimed_at + 5000 + 60000);
  Result<std::optional<Job>> again = stores_->jobs.Claim(clock_.NowMs() + 1, 1000);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());  // still leased to the run
}

// Leaves are committed together (up to 16 per transaction), not one fsync each; every
// leaf still has its own summarization.completed event.
TEST_F(SummarizationTest, LeavesAreCommittedInBatches) {
  // No job is queued by the appends (its write would run beside the run measured).
  SetConfig([](DaemonConfig& c) {
    c.budget.total = 10'000'000;
    c.context.message_threshold = 1'000'000;
  });
  ASSERT_TRUE(Create("b").ok());
  ASSERT_TRUE(Append("b", ErrorRounds(1, 40)).status.ok());  // 160 messages
  const WriterStats before = db_->GetWriterStats();
  Result<SummarizeOutcome> out = Run("b");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const WriterStats after = db_->GetWriterStats();
  ASSERT_GE(out->leaves, 4);
  ASSERT_LE(out->leaves, 16);
  // One transaction for the leaves, one per condensed summary, and the started event.
  EXPECT_LE(after.writes - before.writes, 2 + out->condensed)
      << out->leaves << " leaves, " << after.transactions - before.transactions << " transactions";
  Result<std::vector<AuditEvent>> completed = stores_->audit.Since(0, 0, "summarization.completed");
  ASSERT_TRUE(completed.ok());
  EXPECT_EQ(static_cast<int64_t>(completed->size()), out->leaves + out->condensed);
  EXPECT_EQ(static_cast<int64_t>(out->summary_ids.size()), out->leaves + out->condensed);
}

// A forced compaction's caller waits for the whole run: its leaves commit together (a
// background run's in batches of 16, see above).
TEST_F(SummarizationTest, AForcedRunCommitsItsLeavesInOneTransaction) {
  SetConfig([](DaemonConfig& c) {
    c.budget.total = 10'000'000;
    c.context.message_threshold = 1'000'000;
    c.summarizer.leaf_chunk_tokens = 500;
  });
  ASSERT_TRUE(Create("f").ok());
  ASSERT_TRUE(Append("f", ErrorRounds(1, 60)).status.ok());  // 240 messages
  const WriterStats before = db_->GetWriterStats();
  Result<SummarizeOutcome> out = Run("f", /*force=*/true);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const WriterStats after = db_->GetWriterStats();
  ASSERT_GT(out->leaves, 16);                  // more than a background batch
  EXPECT_EQ(out->messages_covered, 240 - 16);  // all but the fresh tail
  // The started event, the leaves, and one per condensed summary.
  EXPECT_LE(after.writes - before.writes, 2 + out->condensed) << out->leaves << " leaves";
  EXPECT_EQ(static_cast<int64_t>(All("f").size()), out->leaves + out->condensed);
}

// Appends store each message's extract; rows without one (written before extracts
// existed) are extracted when summarized, into the same summaries.
TEST_F(SummarizationTest, RowsWithoutExtractsSummarizeLikeRowsWithThem) {
  for (const char* id : {"with", "without"}) {
    ASSERT_TRUE(Create(id).ok());
    ASSERT_TRUE(Append(id, ErrorRounds(1, 40)).status.ok());
  }
  Result<std::vector<StoredMessage>> loaded = stores_->messages.LoadWithExtracts("with");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 160u);
  for (const StoredMessage& m : *loaded) EXPECT_EQ(m.extract, ExtractMessage(m.message));
  Close();
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &raw), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(raw,
                           "UPDATE message_digests SET extract = NULL WHERE id IN "
                           "(SELECT id FROM messages WHERE session_id = 'without')",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    EXPECT_EQ(sqlite3_changes(raw), 160);
    sqlite3_close(raw);
  }
  Open();
  ASSERT_TRUE(Run("with").ok());
  ASSERT_TRUE(Run("without").ok());
  const std::vector<SummaryRecord> a = All("with"), b = All("without");
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GE(a.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].content, b[i].content) << "summary " << i;
    EXPECT_EQ(a[i].artifacts_json, b[i].artifacts_json) << "summary " << i;
    EXPECT_EQ(a[i].first_seq, b[i].first_seq);
  }
}

// The run reads the stored extracts (it does not extract the texts again): an extract
// planted in the row shows in the summary's trail.
TEST_F(SummarizationTest, ARunReadsTheStoredExtracts) {
  ASSERT_TRUE(Create("s").ok());
  ASSERT_TRUE(Append("s", ErrorRounds(1, 40)).status.ok());
  Close();
  {
    const std::string planted = ExtractMessage(Message::User("see src/planted_marker.py"));
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw,
                                 "UPDATE message_digests SET extract = ?1 WHERE id = "
                                 "(SELECT id FROM messages WHERE seq = 2)",
                                 -1, &st, nullptr),
              SQLITE_OK);
    sqlite3_bind_blob(st, 1, planted.data(), static_cast<int>(planted.size()), SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(raw);
  }
  Open();
  ASSERT_TRUE(Run("s").ok());
  const std::vector<SummaryRecord> all = All("s");
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().first_seq, 1);
  EXPECT_NE(all.front().artifacts_json.find("src/planted_marker.py"), std::string::npos)
      << all.front().artifacts_json;
  for (const StoredMessage& m : Stored("s")) {
    EXPECT_EQ(m.message.PlainText().find("planted"), std::string::npos);  // only the extract
  }
}

// The extractive run loads the content only of messages whose extract it cannot use: a
// damaged extract costs nothing of the summary.
TEST_F(SummarizationTest, AMessageWhoseExtractIsDamagedIsSummarizedFromItsContent) {
  ASSERT_TRUE(Create("damaged").ok());
  ASSERT_TRUE(Create("intact").ok());
  ASSERT_TRUE(Append("damaged", ErrorRounds(1, 40)).status.ok());
  ASSERT_TRUE(Append("intact", ErrorRounds(1, 40)).status.ok());
  Close();
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &raw), SQLITE_OK);
    // seq 1 names src/module_1.cc; seq 3 holds the error line of test_1.
    ASSERT_EQ(
        sqlite3_exec(raw,
                     "UPDATE message_digests SET extract = x'7f00ff' WHERE id IN (SELECT id FROM "
                     "messages WHERE session_id = 'damaged' "
                     "AND seq IN (1, 3))",
                     nullptr, nullptr, nullptr),
        SQLITE_OK);
    EXPECT_EQ(sqlite3_changes(raw), 2);
    sqlite3_close(raw);
  }
  Open();
  ASSERT_TRUE(Run("damaged").ok());
  ASSERT_TRUE(Run("intact").ok());
  const std::vector<SummaryRecord> a = All("damaged"), b = All("intact");
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.front().first_seq, 1);
  EXPECT_NE(a.front().artifacts_json.find("src/module_1.cc"), std::string::npos)
      << a.front().artifacts_json;
  EXPECT_NE(a.front().artifacts_json.find("error: test_1 failed"), std::string::npos)
      << a.front().artifacts_json;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].content, b[i].content) << "summary " << i;
    EXPECT_EQ(a[i].artifacts_json, b[i].artifacts_json) << "summary " << i;
  }
}

TEST_F(SummarizationTest, AnUnknownSessionIsNotFound) {
  Result<SummarizeOutcome> out = Run("ghost");
  EXPECT_EQ(out.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace missy::testing

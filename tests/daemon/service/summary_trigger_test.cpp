// The append trigger (daemon/service/summary_trigger.h): a session over its thresholds
// gets one summarization job from its appends alone, with no context request; a session
// under them costs no check; a job is queued only when it would have work; and the
// worker summarizes in the background.
#include "daemon/service/summary_trigger.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "daemon/service/counting.h"
#include "daemon/service/summarization_service.h"
#include "service_fixture.h"

namespace missy::testing {
namespace {

std::vector<Message> Rounds(int first, int count, int words = 200) {
  std::vector<Message> out;
  for (int i = first; i < first + count; ++i) {
    const std::string n = std::to_string(i);
    out.push_back(Message::User("step " + n + ": fix src/module_" + n + ".cc"));
    out.push_back(CallMessage("call_" + n, "bash", R"({"command":"make test_)" + n + R"("})"));
    out.push_back(Message::ToolResult("call_" + n, Words(words, "log" + n + "_"), "bash"));
    out.push_back(Message::Assistant("fixed module " + n));
  }
  return out;
}

class SummaryTriggerTest : public ServiceFixture {
 protected:
  // A session with an 8,000-token window: history budget a few thousand tokens.
  void CreateSmallWindow(const std::string& id) {
    Session s;
    s.id = id;
    s.context_window = 8000;
    ASSERT_TRUE(Create(std::move(s)).ok());
  }
  // The trigger's checks run on the workers: wait for them, then for their writes.
  void Settle() {
    services_->workers.Drain();
    ASSERT_TRUE(Flush().ok());
  }
  size_t Jobs() { return stores_->jobs.List(ListOptions{})->size(); }
};

TEST_F(SummaryTriggerTest, ASessionUnderItsThresholdsCostsNoCheck) {
  CreateSmallWindow("s");
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(Append("s", Rounds(i, 1, 20)).status.ok());
  Settle();
  EXPECT_EQ(services_->trigger.checks(), 0);
  EXPECT_EQ(Jobs(), 0u);
}

TEST_F(SummaryTriggerTest, CrossingTheThresholdQueuesOneJobFromAppendsAlone) {
  CreateSmallWindow("s");
  // ~260 tokens per round: the threshold (0.75 of the history budget) is crossed after
  // a few rounds; each append is one round.
  for (int i = 1; i <= 40; ++i) {
    ASSERT_TRUE(Append("s", Rounds(i, 1)).status.ok());
    Settle();
  }
  EXPECT_EQ(Jobs(), 1u);  // one job, however many appends crossed the threshold since
  EXPECT_EQ(services_->trigger.queued(), 1);
  std::vector<AuditEvent> queued = Events("summarization.queued");
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_NE(queued[0].detail_json.find(R"("reason":"threshold")"), std::string::npos)
      << queued[0].detail_json;
  // Checks are rare: the first over the threshold queues the job, and the next one is
  // due only after a leaf chunk's worth more (not one per append).
  Result<Session> s = stores_->sessions.Get("s");
  ASSERT_TRUE(s.ok());
  const int64_t chunk = SessionSummarizerOptions(*config_, *s).leaf_chunk_tokens;
  const int64_t threshold = static_cast<int64_t>(0.75 * SessionHistoryBudget(*config_, *s));
  EXPECT_GE(services_->trigger.checks(), 1);
  EXPECT_LE(services_->trigger.checks(), 1 + (s->total_tokens - threshold) / chunk + 1)
      << "chunk " << chunk << " total " << s->total_tokens;
}

TEST_F(SummaryTriggerTest, NoJobWhenThereIsNothingWorthASummary) {
  SetConfig([](DaemonConfig& c) { c.context.message_threshold = 30; });
  CreateSmallWindow("s");
  // 40 tiny messages: over the message threshold, but together far less than a leaf
  // chunk's worth outside the fresh tail: a job would do nothing.
  std::vector<Message> tiny;
  for (int i = 0; i < 40; ++i) tiny.push_back(Message::User("ok " + std::to_string(i)));
  ASSERT_TRUE(Append("s", tiny).status.ok());
  Settle();
  EXPECT_EQ(services_->trigger.checks(), 1);
  EXPECT_EQ(Jobs(), 0u);
}

TEST_F(SummaryTriggerTest, TheWorkerSummarizesInTheBackgroundWithoutAContextRequest) {
  services_->summarizer.Start();
  CreateSmallWindow("s");
  for (int i = 1; i <= 40; ++i) ASSERT_TRUE(Append("s", Rounds(i, 1)).status.ok());
  std::vector<SummaryRecord> summaries;
  for (int waited = 0; waited < 200 && summaries.empty(); ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    summaries = *stores_->summaries.List("s", false);
  }
  ASSERT_FALSE(summaries.empty());
  EXPECT_EQ(summaries.front().first_seq, 1);
  EXPECT_GE(Events("summarization.completed").size(), 1u);
}

}  // namespace
}  // namespace missy::testing

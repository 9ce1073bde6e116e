// A context built with the turn's new message not stored yet (ContextRequest::new_message:
// how the proxy builds one while that message's commit is in flight) is the context built
// once it is stored: the same messages, turn after turn, through summaries, anchor moves
// and pruning. Replays the recorded sessions and the synthetic ones at 28,000 tokens
// (window 32,000, output 4,000), running the summarization job as soon as one is queued:
// before each user or tool message, a context with it as the new message, then the
// message is appended and the context asked again.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "context_stability_sessions.h"
#include "daemon/service/summarization_service.h"
#include "service_fixture.h"
#include "storage/text_indexer.h"
#include "test_util.h"

namespace missy::testing {
namespace {

class ContextNewMessageTest : public ServiceFixture {
 protected:
  Result<ContextOutcome> Ask(const std::string& id, std::optional<Message> new_message) {
    EXPECT_TRUE(TextIndexer::CatchUp(*db_).ok());
    ContextRequest request;
    request.session_id = id;
    request.context_window = 32000;
    request.max_output_tokens = 4000;
    request.new_message = std::move(new_message);
    return Context(std::move(request));
  }

  void Replay(const std::string& id, const std::vector<Message>& conv) {
    const size_t begin = CreateForReplay(id, conv);
    ASSERT_NE(begin, std::string::npos);
    for (size_t i = begin; i < conv.size(); ++i) {
      const Message& m = conv[i];
      if (m.role == Role::kAssistant || i == begin) {
        ASSERT_TRUE(Append(id, {m}).status.ok());
        ASSERT_NO_FATAL_FAILURE(RunQueuedJob(id));
        continue;
      }
      SCOPED_TRACE(id + " message " + std::to_string(i));
      Result<ContextOutcome> before = Ask(id, m);
      ASSERT_TRUE(before.ok()) << before.status().ToString();
      ASSERT_TRUE(Append(id, {m}).status.ok());
      Result<ContextOutcome> stored = Ask(id, std::nullopt);
      ASSERT_TRUE(stored.ok()) << stored.status().ToString();
      ++compared_;
      EXPECT_EQ(FirstDifference(before->context.messages, stored->context.messages), "");
      EXPECT_EQ(before->context.report.used_tokens, stored->context.report.used_tokens);
      moved_ += before->context.report.eviction == "anchor_moved";
      summarized_ += before->context.report.summaries_included > 0;
      ASSERT_NO_FATAL_FAILURE(RunQueuedJob(id));
    }
  }

  int compared_ = 0, moved_ = 0, summarized_ = 0;
};

TEST_F(ContextNewMessageTest, TheNewMessageGivesTheContextItGivesOnceStored) {
  for (const std::string& file : TrajectoryFiles()) {
    ASSERT_NO_FATAL_FAILURE(
        Replay(std::filesystem::path(file).stem().string(), LoadTrajectory(file)));
  }
  for (const StabilitySession& s : StabilitySessions()) {
    ASSERT_NO_FATAL_FAILURE(Replay(s.name, s.messages));
  }
  std::printf("[ new msg  ] %d contexts compared, %d moved the anchor, %d with summaries\n",
              compared_, moved_, summarized_);
  EXPECT_GT(compared_, 500);  // the synthetic sessions alone give more
  EXPECT_GT(moved_, 10);      // the comparisons reach the anchor's moves
  EXPECT_GT(summarized_, 200);
}

}  // namespace
}  // namespace missy::testing

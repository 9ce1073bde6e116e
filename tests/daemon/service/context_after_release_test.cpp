// The same context after a cache drop (issue 29): when nothing changed, the context a
// session gets after the daemon released its history from memory (idle, memory bound) or
// restarted is the one it got before, byte for byte, so the agent's prompt cache keeps
// hitting after an idle minute.
//
// The recorded sessions are replayed interleaved in one daemon (each session's memory
// hits are the others' messages, which change as they go on) at 28,000 tokens (window
// 32,000, output 4,000), asking for a context before each assistant message and running
// the summarization job as soon as one is queued, with a history cache of 1 MB (so the
// sessions' windows are released and loaded again as they take turns). Every few contexts
// of a session, with nothing appended in between, its context is asked again: once more
// as it is, after its history was released from the cache (and the memory-hit cache
// dropped), and after a restart over the same database. All four must be the same
// messages. The synthetic sessions of context_stability_sessions.h do the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "context_stability_sessions.h"
#include "core/message_json.h"
#include "daemon/service/summarization_service.h"
#include "service_fixture.h"
#include "storage/text_indexer.h"
#include "test_util.h"

namespace missy::testing {
namespace {

class ContextAfterReleaseTest : public ServiceFixture {
 protected:
  Result<ContextOutcome> Ask(const std::string& id) {
    // The indexer has caught up, as between an agent's turns.
    EXPECT_TRUE(TextIndexer::CatchUp(*db_).ok());
    return Context(id, 32000, 4000);
  }

  // The context of `id` as it is, asked again, after a release of its cached state, and
  // after a restart: all the same messages.
  void CheckStable(const std::string& id, const std::string& where) {
    SCOPED_TRACE(id + " " + where);
    ASSERT_NO_FATAL_FAILURE(RunQueuedJob(id));
    Result<ContextOutcome> first = Ask(id);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    // A context that summarized what it evicted, or pruned, changed stored state: the
    // next one is the reference.
    Result<ContextOutcome> again = Ask(id);
    ASSERT_TRUE(again.ok());
    const std::vector<Message>& want = again->context.messages;
    EXPECT_EQ(FirstDifference(first->context.messages, want), "") << "asked twice";
    ASSERT_TRUE(Flush().ok());

    services_->history.Clear();
    services_->memory_hits.ContentChanged("");
    Result<ContextOutcome> released = Ask(id);
    ASSERT_TRUE(released.ok());
    EXPECT_EQ(FirstDifference(want, released->context.messages), "") << "after a release";
    ++checks_;
    mismatches_ += want != released->context.messages;

    ASSERT_TRUE(Flush().ok());
    Reopen();
    services_->history.SetMaxBytes(kCacheBytes);
    Result<ContextOutcome> restarted = Ask(id);
    ASSERT_TRUE(restarted.ok());
    EXPECT_EQ(FirstDifference(want, restarted->context.messages), "") << "after a restart";
    ++checks_;
    mismatches_ += want != restarted->context.messages;
  }

  // Replays the sessions interleaved (one message of each in turn), asking a context
  // before each assistant message, and checks every `every`-th context of a session and
  // each session's last.
  void ReplayInterleaved(const std::map<std::string, std::vector<Message>>& sessions, int every) {
    struct Cursor {
      const std::vector<Message>* conv;
      size_t next = 0;
      int contexts = 0;
    };
    // A cache smaller than the sessions' windows together: the least recently used are
    // released as the others go on (the memory bound), and load again on their next turn.
    services_->history.SetMaxBytes(kCacheBytes);
    std::map<std::string, Cursor> cursors;
    for (const auto& [id, conv] : sessions) {
      Session s;
      s.id = id;
      Cursor c{&conv};
      if (!conv.empty() && conv[0].role == Role::kSystem) {
        s.system_prompt = conv[0].PlainText();
        c.next = 1;
      }
      ASSERT_TRUE(Create(std::move(s)).ok());
      cursors.emplace(id, c);
    }
    for (bool more = true; more;) {
      more = false;
      for (auto& [id, c] : cursors) {
        if (c.next >= c.conv->size()) continue;
        more = true;
        const Message& m = (*c.conv)[c.next++];
        if (m.role == Role::kAssistant) {
          ++c.contexts;
          if (c.contexts % every == 0) {
            ASSERT_NO_FATAL_FAILURE(CheckStable(id, "context " + std::to_string(c.contexts)));
          } else {
            Result<ContextOutcome> ctx = Ask(id);
            ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
          }
        }
        ASSERT_TRUE(Append(id, {m}).status.ok());
        ASSERT_NO_FATAL_FAILURE(RunQueuedJob(id));
      }
    }
    for (const auto& [id, c] : cursors) ASSERT_NO_FATAL_FAILURE(CheckStable(id, "at the end"));
  }

  static constexpr size_t kCacheBytes = size_t{1} << 20;
  int checks_ = 0;
  int mismatches_ = 0;
};

TEST_F(ContextAfterReleaseTest, RecordedSessionsGetTheSameContextAfterAReleaseAndARestart) {
  std::map<std::string, std::vector<Message>> sessions;
  for (const std::string& file : TrajectoryFiles()) {
    sessions[std::filesystem::path(file).stem().string()] = LoadTrajectory(file);
  }
  if (sessions.empty()) GTEST_SKIP() << "shared/data/trajectories is not beside the repository";
  ASSERT_NO_FATAL_FAILURE(ReplayInterleaved(sessions, 12));
  std::printf("[ release  ] recorded sessions: %d checks, %d different\n", checks_, mismatches_);
  EXPECT_GT(checks_, 80);
}

TEST_F(ContextAfterReleaseTest, SyntheticSessionsGetTheSameContextAfterAReleaseAndARestart) {
  std::map<std::string, std::vector<Message>> sessions;
  for (StabilitySession& s : StabilitySessions()) sessions[s.name] = std::move(s.messages);
  ASSERT_NO_FATAL_FAILURE(ReplayInterleaved(sessions, 15));
  std::printf("[ release  ] synthetic sessions: %d checks, %d different\n", checks_, mismatches_);
  EXPECT_GT(checks_, 40);
}

}  // namespace
}  // namespace missy::testing

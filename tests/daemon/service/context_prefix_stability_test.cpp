// The prefix kept from one context to the next (issue 29): over a replay, the share of
// consecutive contexts where the previous context's messages are the start of the next's
// (a full prompt-cache hit), at 28,000 tokens (window 32,000, output 4,000), with the
// summarization job run as soon as one is queued, every context within budget. The
// issue's target is 97%, on the recorded sessions and on synthetic ones unlike them
// (context_stability_sessions.h). The recorded and the synthetic ones reach it (97.4% and
// 97.9%); the six recorded ones as one session and the retention test's sessions do not
// yet (96.3%, 94.0%: after a move the fresh tail and the summaries alone leave a few
// thousand tokens free), so their floors are what is reached today, to keep what was won.
// MISSY_STABILITY_DEBUG=1 prints each break, MISSY_STABILITY_TRACE=1 every context;
// MISSY_STABILITY_SLACK=x runs with context.eviction_slack_fraction x.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "context_stability_sessions.h"
#include "synthetic_sessions.h"
#include "core/context_checks.h"
#include "daemon/service/summarization_service.h"
#include "service_fixture.h"
#include "storage/text_indexer.h"
#include "test_util.h"

namespace missy::testing {
namespace {

class ContextPrefixStabilityTest : public ServiceFixture {
 protected:
  struct Figures {
    int pairs = 0, stable = 0;
  };

  // Replays `conv` as session `id`, a context before each assistant message.
  void Replay(const std::string& id, const std::vector<Message>& conv, Figures& total) {
    const size_t begin = CreateForReplay(id, conv);
    ASSERT_NE(begin, std::string::npos);
    if (const char* slack = getenv("MISSY_STABILITY_SLACK")) {
      SetConfig([&](DaemonConfig& c) { c.context.eviction_slack_fraction = atof(slack); });
    }
    Figures f;
    std::vector<Message> previous;
    bool first = true;
    for (size_t i = begin; i < conv.size(); ++i) {
      if (conv[i].role == Role::kAssistant) {
        ASSERT_TRUE(TextIndexer::CatchUp(*db_).ok());
        Result<ContextOutcome> ctx = Context(id, 32000, 4000);
        ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
        const std::vector<Message>& now = ctx->context.messages;
        const ContextReport& r = ctx->context.report;
        ASSERT_LE(r.used_tokens, 28000);
        ASSERT_EQ(FindToolPairProblem(now), "");
        if (getenv("MISSY_STABILITY_TRACE")) {
          std::printf(
              "    %s ctx at %zu: %s first kept %lld fresh %lld history %lld/%lld summaries %lld "
              "(%lld, stubbed %lld) memory %lld used %lld\n",
              id.c_str(), i, r.eviction.c_str(), (long long)r.first_kept_seq,
              (long long)r.first_fresh_seq, (long long)r.history_tokens,
              (long long)r.history_budget, (long long)r.summary_tokens,
              (long long)r.summaries_included, (long long)r.summaries_stubbed,
              (long long)r.memory_tokens, (long long)r.used_tokens);
        }
        if (!first) {
          ++f.pairs;
          const bool kept = previous.size() <= now.size() &&
                            std::equal(previous.begin(), previous.end(), now.begin());
          f.stable += kept;
          if (!kept && getenv("MISSY_STABILITY_DEBUG")) {
            size_t same = 0;
            while (same < previous.size() && same < now.size() && previous[same] == now[same]) {
              ++same;
            }
            std::printf(
                "  %s break at %zu: eviction %s, first kept %lld, summaries %lld (stubbed "
                "%lld, skipped %lld), memory %lld, used %lld, same %zu of %zu (now %zu)\n",
                id.c_str(), i, r.eviction.c_str(), (long long)r.first_kept_seq,
                (long long)r.summaries_included, (long long)r.summaries_stubbed,
                (long long)r.summaries_skipped, (long long)r.memory_tokens,
                (long long)r.used_tokens, same, previous.size(), now.size());
          }
        }
        first = false;
        previous = now;
        ASSERT_NO_FATAL_FAILURE(RunQueuedJob(id));
      }
      ASSERT_TRUE(Append(id, {conv[i]}).status.ok());
      ASSERT_NO_FATAL_FAILURE(RunQueuedJob(id));
    }
    std::printf("[ prefix   ] %-36s %4zu msgs: prefix kept %d/%d\n", id.c_str(), conv.size(),
                f.stable, f.pairs);
    total.pairs += f.pairs;
    total.stable += f.stable;
  }

  static void ExpectAtLeast(const Figures& f, const std::string& what, int percent) {
    std::printf("[ prefix   ] %s: prefix kept %d/%d (%.1f%%)\n", what.c_str(), f.stable, f.pairs,
                f.pairs ? 100.0 * f.stable / f.pairs : 100.0);
    EXPECT_GE(f.stable * 100, f.pairs * percent) << what;
  }
};

TEST_F(ContextPrefixStabilityTest, RecordedSessionsKeepThePrefixIn97PercentOfContexts) {
  const std::vector<std::string> files = TrajectoryFiles();
  if (files.empty()) GTEST_SKIP() << "shared/data/trajectories is not beside the repository";
  Figures all;
  for (const std::string& file : files) {
    ASSERT_NO_FATAL_FAILURE(
        Replay(std::filesystem::path(file).stem().string(), LoadTrajectory(file), all));
  }
  ExpectAtLeast(all, "recorded sessions", 97);  // 525/539 (97.4%); 515 before issue 29
}

// The six recorded sessions one after the other in one session, in name order.
TEST_F(ContextPrefixStabilityTest, ALongSessionOfSixTasksKeepsThePrefixIn96PercentOfContexts) {
  const std::vector<std::string> files = TrajectoryFiles();
  if (files.empty()) GTEST_SKIP() << "shared/data/trajectories is not beside the repository";
  Figures f;
  ASSERT_NO_FATAL_FAILURE(Replay("six-tasks", OneSession(files), f));
  ExpectAtLeast(f, "six tasks in one session", 96);  // 524/544 (96.3%); 510 before
}

TEST_F(ContextPrefixStabilityTest, SyntheticSessionsKeepThePrefixIn97PercentOfContexts) {
  Figures all;
  for (const StabilitySession& s : StabilitySessions()) {
    ASSERT_NO_FATAL_FAILURE(Replay(s.name, s.messages, all));
  }
  ExpectAtLeast(all, "synthetic sessions", 97);  // 514/525 (97.9%); 511 before
}

// The sessions of the retention test (synthetic_sessions.h: Python/pytest, Rust/cargo, Go,
// TypeScript/npm, Elixir/mix, 1,000+ messages with 40,000-character outputs, Java, C++, an
// operator's session, Ruby, Node.js with outputs as user messages, TypeScript on pnpm from
// Gemini CLI's tools, C# on dotnet from Claude Code's, Python from Cline's, Go from
// OpenCode's), each in a
// fresh daemon as there. Below the target: long-mixed's outputs of 40,000 characters
// (2,500 tokens each as sent) grow the context by ~1,200 tokens a request, and the anchor
// moves every nine or so (476/526; every four to six, 420/526, before a move squeezed
// the older outputs).
TEST_F(ContextPrefixStabilityTest, TheRetentionTestsSessionsKeepThePrefixIn93PercentOfContexts) {
  Figures all;
  for (const SyntheticSession& s : SyntheticSessions()) {
    ASSERT_NO_FATAL_FAILURE(FreshDaemon());
    ASSERT_NO_FATAL_FAILURE(Replay(s.name, s.messages, all));
  }
  // 1505/1593 (94.5%) with the four sessions of other agents (264/273), 1241/1320
  // (94.0%) before them; the first six 869/931 (809 before issue 29's move rules)
  ExpectAtLeast(all, "the retention test's sessions", 93);
}

}  // namespace
}  // namespace missy::testing

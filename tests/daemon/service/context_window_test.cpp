// The context path over folded histories (core/history_window.h): a context built from the
// cache's window, from a window reloaded after eviction, and from the whole stored
// history are the same, byte for byte; the cache holds only the window's content.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/assembler.h"
#include "core/context_report_json.h"
#include "daemon/service/context_service.h"
#include "daemon/service/counting.h"
#include "service_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

constexpr int64_t kWindow = 8000;
constexpr int64_t kMaxOutput = 1000;

// `count` rounds from `first`: a request, a call, a long output, an acknowledgement; every
// seventh round is a plain assistant remark instead of a new user turn (agents work on).
std::vector<Message> Rounds(int first, int count, int words) {
  std::vector<Message> out;
  for (int i = first; i < first + count; ++i) {
    const std::string n = std::to_string(i);
    if (i % 7 == 0) {
      out.push_back(Message::Assistant("continuing with file " + n));
    } else {
      out.push_back(Message::User("step " + n + ": read file " + n));
    }
    out.push_back(CallMessage("call_" + n, "cat", R"({"file":"src/f)" + n + R"(.cc"})"));
    out.push_back(Message::ToolResult("call_" + n, Words(words, "f" + n + "_"), "cat"));
    out.push_back(Message::Assistant("read file " + n));
  }
  return out;
}

std::string ReportText(const ContextReport& r) { return json::serialize(ContextReportToJson(r)); }

class ContextWindowTest : public ServiceFixture {
 protected:
  void SetUp() override {
    ServiceFixture::SetUp();
    // The comparisons assume no summaries: a moved anchor does not summarize here.
    SetConfig([](DaemonConfig& c) { c.context.summarize_evicted = false; });
  }

  // What the context service should answer, assembled from the whole stored history with
  // the inputs the service uses (no summaries, memory or learnings exist here).
  AssembledContext WholeHistoryContext(const std::string& id, int64_t anchor,
                                       const std::optional<Message>& new_message) {
    Result<Session> session = stores_->sessions.Get(id);
    EXPECT_TRUE(session.ok());
    ContextInput in;
    in.budget = config_->budget;
    in.budget.total = kWindow - kMaxOutput;
    in.context_window = kWindow;
    in.max_output_tokens = kMaxOutput;
    in.threshold_pct = config_->context.threshold_pct;
    in.message_threshold = config_->context.message_threshold;
    in.tool_output_max_tokens = config_->context.tool_output_max_tokens;
    in.min_tool_output_tokens = config_->context.min_tool_output_tokens;
    in.max_learnings = config_->context.max_learnings;
    in.eviction.slack_fraction = config_->context.eviction_slack_fraction;
    in.eviction.anchor_seq = anchor;
    in.pruning = config_->pruning;
    in.history = Stored(id);
    in.task_max_tokens = config_->context.task_max_tokens;
    for (const StoredMessage& m : in.history) {  // the task: the first user message
      if (m.message.role != Role::kUser) continue;
      in.task = m;
      break;
    }
    in.new_message = new_message;
    Result<AssembledContext> ctx = AssembleContext(in, CounterFor(*config_, nullptr, *session));
    EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
    return ctx.ok() ? std::move(*ctx) : AssembledContext{};
  }

  Result<ContextOutcome> SmallContext(const std::string& id, std::optional<Message> m) {
    ContextRequest request;
    request.session_id = id;
    request.context_window = kWindow;
    request.max_output_tokens = kMaxOutput;
    request.new_message = std::move(m);
    return Context(std::move(request));
  }

  // Appends `rounds` rounds in batches and, after each batch, asks for a context and
  // checks it against the whole history's. Returns how many contexts pruned something.
  int ReplayAndCompare(const std::string& id, int rounds, int words) {
    int64_t anchor = 0;
    int pruned = 0;
    for (int first = 1; first <= rounds; first += 10) {
      AppendOutcome out = Append(id, Rounds(first, 10, words));
      EXPECT_TRUE(out.status.ok()) << out.status.ToString();
      const std::optional<Message> next = Message::User("what next after " + std::to_string(first));
      const AssembledContext expected = WholeHistoryContext(id, anchor, next);
      Result<ContextOutcome> got = SmallContext(id, next);
      EXPECT_TRUE(got.ok()) << got.status().ToString();
      if (!got.ok()) return pruned;
      EXPECT_EQ(got->context.messages, expected.messages) << "after round " << first;
      EXPECT_EQ(ReportText(got->context.report), ReportText(expected.report))
          << "after round " << first;
      EXPECT_LE(got->context.report.used_tokens, kWindow - kMaxOutput);
      anchor = got->context.report.first_kept_seq;
      pruned += !got->context.report.newly_pruned_seqs.empty();
    }
    return pruned;
  }
};

TEST_F(ContextWindowTest, LongSessionContextsEqualTheWholeHistorysAndTheCacheHoldsTheWindow) {
  ASSERT_TRUE(Create("long").ok());
  const int pruned = ReplayAndCompare("long", 150, 300);  // 600 messages, ~60k tokens stored
  EXPECT_GT(pruned, 0);  // the decision that spans folded messages was taken and compared
  // Content is held for the window only.
  EXPECT_EQ(services_->history.known_messages(), 600u);
  EXPECT_LT(services_->history.cached_messages(), 200u);
  EXPECT_GE(services_->history.cached_messages(), 64u);
}

TEST_F(ContextWindowTest, SaturatedPruningOverFoldedMessagesMatchesTooWithFewUserTurns) {
  SetConfig([](DaemonConfig& c) {
    c.pruning.protect_tool_tokens = 1500;  // the walk is saturated inside the window
    c.pruning.minimum_freed_tokens = 2000;
    c.budget.fresh_tail_count = 6;
  });
  ASSERT_TRUE(Create("s").ok());
  const int pruned = ReplayAndCompare("s", 120, 250);
  EXPECT_GT(pruned, 0);
  EXPECT_LT(services_->history.cached_messages(), services_->history.known_messages());
}

TEST_F(ContextWindowTest, ContextAfterEvictionIsByteIdenticalToTheCachedOne) {
  ASSERT_TRUE(Create("e").ok());
  ReplayAndCompare("e", 100, 300);
  const std::optional<Message> next = Message::User("and now?");
  Result<ContextOutcome> warm = SmallContext("e", next);  // anchors settle
  ASSERT_TRUE(warm.ok());
  Result<ContextOutcome> cached = SmallContext("e", next);
  ASSERT_TRUE(cached.ok());
  ASSERT_EQ(cached->context.report.eviction, "anchored");
  ASSERT_GT(services_->history.cached_sessions(), 0u);
  services_->history.Clear();  // evicted: the next context reloads from SQLite
  Result<ContextOutcome> reloaded = SmallContext("e", next);
  ASSERT_TRUE(reloaded.ok());
  EXPECT_EQ(reloaded->context.messages, cached->context.messages);
  EXPECT_EQ(reloaded->context.system, cached->context.system);
  EXPECT_EQ(ReportText(reloaded->context.report), ReportText(cached->context.report));
  EXPECT_LT(services_->history.cached_messages(), 400u);
}

TEST_F(ContextWindowTest, AppendsAfterALoadContinueTheFoldedWindow) {
  ASSERT_TRUE(Create("a").ok());
  ASSERT_TRUE(Append("a", Rounds(1, 100, 300)).status.ok());
  services_->history.Clear();
  ASSERT_TRUE(SmallContext("a", std::nullopt).ok());  // loads and folds
  const size_t window = services_->history.cached_messages();
  EXPECT_LT(window, 400u);
  // An open call in the window is still seen by validation: its result is not an orphan.
  ASSERT_TRUE(Append("a", {CallMessage("late_1", "cat", "{}")}).status.ok());
  AppendOutcome result = Append("a", {Message::ToolResult("late_1", "ok", "cat")});
  ASSERT_TRUE(result.status.ok());
  EXPECT_TRUE(result.warnings.empty());
  EXPECT_EQ(services_->history.known_messages(), 402u);
}

}  // namespace
}  // namespace missy::testing

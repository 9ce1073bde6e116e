#include "daemon/service/context_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <set>
#include <thread>

#include "core/context_report_json.h"
#include "service_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

// `count` tool rounds from `first`: the user asks, the assistant calls cat, the tool
// answers with a long output (`words` words), the assistant acknowledges.
std::vector<Message> ToolTurns(int first, int count, int words) {
  std::vector<Message> out;
  for (int i = first; i < first + count; ++i) {
    const std::string n = std::to_string(i);
    out.push_back(Message::User("step " + n + ": read file " + n));
    out.push_back(CallMessage("call_" + n, "cat", R"({"file":"f)" + n + R"(.txt"})"));
    out.push_back(Message::ToolResult("call_" + n, Words(words, "f" + n + "_"), "cat"));
    out.push_back(Message::Assistant("read file " + n));
  }
  return out;
}

std::string ReportText(const ContextOutcome& out) {
  return json::serialize(ContextReportToJson(out.context.report));
}

class ServiceContextTest : public ServiceFixture {
 protected:
  static constexpr int64_t kWindow = 8000;
  static constexpr int64_t kMaxOutput = 1000;

  // A session with a system prompt and one measured tool definition.
  void CreateAgentSession(const std::string& id) {
    Session s;
    s.id = id;
    s.system_prompt = "You are terse.";
    s.tools_json = R"([{"type":"function","function":{"name":"cat"}}])";
    ASSERT_TRUE(Create(std::move(s)).ok());
  }
  // 30 tool rounds whose outputs (~5900 tokens each) dwarf an 8000-token window.
  void CreateLongToolSession(const std::string& id) {
    CreateAgentSession(id);
    AppendOutcome out = Append(id, ToolTurns(1, 30, 1500));
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
    ASSERT_EQ(out.session.last_seq, 120);
  }
  Result<ContextOutcome> SmallWindowContext(const std::string& id) {
    return Context(id, kWindow, kMaxOutput);
  }
};

TEST_F(ServiceContextTest, SmallSessionComesBackInOrderWithTheSystemPromptFirst) {
  CreateAgentSession("small");
  const std::vector<Message> history = {Message::User("what is 2+2?"), Message::Assistant("4"),
                                        Message::User("and 3+3?")};
  ASSERT_TRUE(Append("small", history).status.ok());

  Result<ContextOutcome> out = Context("small");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<Message>& messages = out->context.messages;
  ASSERT_EQ(messages.size(), 4u) << ReportText(*out);
  EXPECT_EQ(messages[0].role, Role::kSystem);
  EXPECT_EQ(messages[0].text, "You are terse.");
  EXPECT_EQ(out->context.system, "You are terse.");
  EXPECT_EQ(messages[1], history[0]);
  EXPECT_EQ(messages[2], history[1]);
  EXPECT_EQ(messages[3], history[2]);
  EXPECT_EQ(out->context.kept_seqs, (std::vector<int64_t>{1, 2, 3}));

  const ContextReport& report = out->context.report;
  EXPECT_EQ(report.first_kept_seq, 1);
  EXPECT_EQ(report.dropped_messages, 0);
  EXPECT_EQ(report.zone, "safe");
  EXPECT_TRUE(report.newly_pruned_seqs.empty());
  EXPECT_LE(report.used_tokens, report.total);
  EXPECT_EQ(out->encoding, "heuristic");
  EXPECT_FALSE(out->wrote);  // nothing durable changed
  // The context id comes from the id source and is remembered for usage reports.
  EXPECT_EQ(out->context_id.rfind("ctx_id", 0), 0u) << out->context_id;
  std::optional<IssuedContext> issued = services_->issued.Find(out->context_id);
  ASSERT_TRUE(issued.has_value());
  EXPECT_EQ(issued->session_id, "small");
  EXPECT_EQ(issued->estimated_tokens, out->estimated_tokens);
  EXPECT_GT(out->estimated_tokens, 0);

  std::vector<AuditEvent> built = Events("context.built");
  ASSERT_EQ(built.size(), 1u);
  EXPECT_EQ(json::parse(built[0].detail_json).at("context_id").as_string(), out->context_id);

  // A new message is appended last and not stored.
  ContextRequest with_new;
  with_new.session_id = "small";
  with_new.new_message = Message::User("and 4+4?");
  Result<ContextOutcome> next = Context(std::move(with_new));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  ASSERT_EQ(next->context.messages.size(), 5u);
  EXPECT_EQ(next->context.messages.back().text, "and 4+4?");
  EXPECT_EQ(Stored("small").size(), 3u);
}

TEST_F(ServiceContextTest, LongToolSessionFitsASmallWindowAndPrunesStickily) {
  CreateLongToolSession("long");
  Result<ContextOutcome> first = SmallWindowContext("long");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const ContextReport& r1 = first->context.report;
  EXPECT_EQ(r1.total, kWindow - kMaxOutput);
  EXPECT_EQ(r1.context_window, kWindow);
  EXPECT_LE(r1.used_tokens, r1.total) << ReportText(*first);
  EXPECT_GT(r1.dropped_messages, 0);
  ASSERT_FALSE(r1.newly_pruned_seqs.empty()) << ReportText(*first);
  EXPECT_TRUE(first->wrote);

  // The pruned messages are tool results, and exactly they carry the flag in storage.
  const std::set<int64_t> pruned(r1.newly_pruned_seqs.begin(), r1.newly_pruned_seqs.end());
  std::vector<StoredMessage> stored = Stored("long");
  ASSERT_EQ(stored.size(), 120u);
  for (const StoredMessage& m : stored) {
    const bool want = pruned.count(m.seq) > 0;
    EXPECT_EQ((m.flags & kFlagPruned) != 0, want) << "seq " << m.seq;
    if (want) {
      EXPECT_EQ(m.message.role, Role::kTool) << "seq " << m.seq;
      EXPECT_EQ(m.message.text.rfind("f", 0), 0u) << "the original content stays stored";
    }
  }
  std::vector<AuditEvent> pruned_events = Events("context.pruned");
  ASSERT_EQ(pruned_events.size(), 1u);
  EXPECT_EQ(json::parse(pruned_events[0].detail_json).at("messages").to_number<int64_t>(),
            static_cast<int64_t>(pruned.size()));

  // Sticky: the same request prunes nothing new and renders the same messages.
  Result<ContextOutcome> second = SmallWindowContext("long");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->context.report.newly_pruned_seqs.empty()) << ReportText(*second);
  EXPECT_EQ(second->context.messages, first->context.messages);
  EXPECT_EQ(second->context.kept_seqs, first->context.kept_seqs);
  EXPECT_LE(second->context.report.used_tokens, second->context.report.total);
  EXPECT_FALSE(second->wrote);
  EXPECT_EQ(Events("context.pruned").size(), 1u);
}

TEST_F(ServiceContextTest, PrunedToolOutputThatIsKeptRendersAsThePlaceholder) {
  // A large window keeps everything, and the history exceeds the warning threshold,
  // so old tool outputs are pruned but stay in the context as placeholders.
  CreateLongToolSession("keep");
  Result<ContextOutcome> out = Context("keep", 60000, 1000);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const ContextReport& r = out->context.report;
  ASSERT_FALSE(r.newly_pruned_seqs.empty()) << ReportText(*out);
  int placeholders = 0;
  for (size_t i = 0; i < out->context.kept_seqs.size(); ++i) {
    const int64_t seq = out->context.kept_seqs[i];
    if (std::find(r.newly_pruned_seqs.begin(), r.newly_pruned_seqs.end(), seq) ==
        r.newly_pruned_seqs.end()) {
      continue;
    }
    // messages[0] is the system message.
    const Message& m = out->context.messages[i + 1];
    EXPECT_EQ(m.role, Role::kTool);
    EXPECT_EQ(m.text, kPrunedPlaceholder) << "seq " << seq;
    ++placeholders;
  }
  EXPECT_GT(placeholders, 0) << ReportText(*out);
  EXPECT_EQ(r.pruned_messages, placeholders);

  Result<ContextOutcome> again = Context("keep", 60000, 1000);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->context.messages, out->context.messages);
  EXPECT_EQ(again->context.report.pruned_messages, placeholders);
  EXPECT_TRUE(again->context.report.newly_pruned_seqs.empty());
}

TEST_F(ServiceContextTest, AnchorIsPersistedAndUsedAfterARestart) {
  CreateLongToolSession("a");
  Result<ContextOutcome> first = SmallWindowContext("a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const int64_t anchor = first->context.report.first_kept_seq;
  ASSERT_GT(anchor, 1) << "the window must evict the start: " << ReportText(*first);
  EXPECT_EQ(first->context.report.eviction, "fill");

  Reopen();  // a daemon restart: a fresh history cache, no in-memory anchors
  Result<Session> session = stores_->sessions.Get("a");
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(session->anchor_seq, anchor);

  Result<ContextOutcome> after = SmallWindowContext("a");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->context.report.eviction, "anchored") << ReportText(*after);
  EXPECT_EQ(after->context.report.first_kept_seq, anchor);
  ASSERT_FALSE(after->context.kept_seqs.empty());
  EXPECT_EQ(after->context.kept_seqs.front(), anchor);
  EXPECT_EQ(after->context.messages, first->context.messages);  // the same prefix, byte for byte

  // More history pushes the anchor forward; the moved anchor survives a restart too.
  ASSERT_TRUE(Append("a", ToolTurns(31, 3, 1500)).status.ok());
  Result<ContextOutcome> moved = SmallWindowContext("a");
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(moved->context.report.eviction, "anchor_moved") << ReportText(*moved);
  const int64_t moved_anchor = moved->context.report.first_kept_seq;
  EXPECT_GT(moved_anchor, anchor);
  // The move squeezed older tool outputs (core/assembly_tail.cpp): held after a restart too.
  EXPECT_GT(moved->context.report.squeezed_through_seq, moved_anchor);
  Reopen();
  EXPECT_EQ(stores_->sessions.Get("a")->anchor_seq, moved_anchor);
  EXPECT_EQ(stores_->sessions.Get("a")->anchor_squeezed_through,
            moved->context.report.squeezed_through_seq);
  Result<ContextOutcome> again = SmallWindowContext("a");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->context.report.eviction, "anchored") << ReportText(*again);
  EXPECT_EQ(again->context.report.first_kept_seq, moved_anchor);
  EXPECT_EQ(again->context.messages, moved->context.messages);
}

TEST_F(ServiceContextTest, AContextOverTheThresholdsQueuesOneJobOffItsPath) {
  // Small leaf chunks: the ~5,000 tokens outside the fresh tail are worth a job.
  SetConfig([](DaemonConfig& c) { c.summarizer.leaf_chunk_tokens = 2000; });
  CreateAgentSession("w");
  std::vector<Message> chat;
  for (int i = 0; i < 40; ++i) {
    chat.push_back(i % 2 == 0 ? Message::User(Words(60, "q" + std::to_string(i) + "_"))
                              : Message::Assistant(Words(60, "a" + std::to_string(i) + "_")));
  }
  ASSERT_TRUE(Append("w", chat).status.ok());
  services_->workers.Drain();
  // Under the session's own budget: the append queued nothing.
  ASSERT_TRUE(Events("summarization.queued").empty());

  // A smaller window than the session's: over the thresholds on this request's budget.
  Result<ContextOutcome> first = Context("w", 15000, 1000);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->context.report.zone, "warning") << ReportText(*first);
  EXPECT_TRUE(first->context.report.should_summarize);
  EXPECT_TRUE(first->context.report.newly_pruned_seqs.empty());
  EXPECT_FALSE(first->wrote);  // the answer waits for no write: the check runs after it
  services_->workers.Drain();

  Result<ContextOutcome> second = Context("w", 15000, 1000);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_EQ(second->context.report.zone, "warning");
  EXPECT_TRUE(second->context.report.should_summarize);
  EXPECT_FALSE(second->wrote);
  services_->workers.Drain();
  EXPECT_EQ(services_->trigger.queued(), 1);

  Result<std::vector<Job>> jobs = stores_->jobs.List(ListOptions{});
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].kind, "summarize");
  EXPECT_EQ((*jobs)[0].session_id, "w");
  EXPECT_EQ((*jobs)[0].state, "queued");
  EXPECT_EQ((*jobs)[0].created_at_ms, kStartMs);
  EXPECT_EQ(json::parse((*jobs)[0].payload_json).at("reason").as_string(), "context");
  std::vector<AuditEvent> queued = Events("summarization.queued");
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].session_id, "w");
  EXPECT_EQ(Events("context.built").size(), 2u);
}

TEST_F(ServiceContextTest, OutputBudgetMustBeSmallerThanTheWindow) {
  CreateAgentSession("s");
  ASSERT_TRUE(Append("s", {Message::User("hi")}).status.ok());
  struct Case {
    int64_t window, max_output;
  };
  for (const Case& c : {Case{8000, 8000}, Case{8000, 9000}, Case{1, 1}}) {
    Result<ContextOutcome> out = Context("s", c.window, c.max_output);
    ASSERT_FALSE(out.ok()) << c.window << "/" << c.max_output;
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(out.status().field(), "max_output_tokens");
    EXPECT_NE(out.status().message().find(std::to_string(c.max_output)), std::string::npos)
        << out.status().message();
  }
  EXPECT_TRUE(Events("context.built").empty());
  Result<ContextOutcome> fine = Context("s", 8000, 1000);
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_EQ(fine->context.report.total, 7000);
}

// The history cache's counters describe what it holds, also when contexts of several
// sessions run at once in a cache too small for all of them (an entry may be evicted
// while a context has its history borrowed).
TEST_F(ServiceContextTest, HistoryCacheCountsStayExactUnderConcurrentContexts) {
  constexpr int kSessions = 6;
  for (int s = 0; s < kSessions; ++s) {
    const std::string id = "c" + std::to_string(s);
    ASSERT_TRUE(Create(id).ok());
    std::vector<Message> batch;
    for (int i = 0; i < 400; ++i) {
      batch.push_back(i % 2 == 0 ? Message::User(Words(30, "u")) : Message::Assistant(Words(30)));
    }
    ASSERT_TRUE(Append(id, std::move(batch)).status.ok());
  }
  // Room for two and a half histories.
  services_->history.Clear();
  ASSERT_TRUE(services_->history
                  .GetOrLoad("c0",
                             [&]() -> Result<HistoryWindow> {
                               HistoryWindow w;
                               if (!w.Append(*stores_->messages.Load("c0")))
                                 return Status::Internal("gap");
                               return w;
                             })
                  .ok());
  const size_t one = services_->history.cached_bytes();
  ASSERT_EQ(services_->history.cached_messages(), 400u);
  services_->history.SetMaxBytes(one * 2 + one / 2);

  std::vector<std::thread> threads;
  for (int t = 0; t < kSessions; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 30; ++k) {
        Result<ContextOutcome> out = Context("c" + std::to_string((t + k) % kSessions));
        EXPECT_TRUE(out.ok()) << out.status().ToString();
      }
    });
  }
  for (std::thread& th : threads) th.join();

  size_t held = 0, sessions = 0;
  for (int s = 0; s < kSessions; ++s) {
    if (auto h = services_->history.Find("c" + std::to_string(s))) {
      held += h->window().size();
      ++sessions;
      EXPECT_EQ(h->window().size(), 400u) << "c" << s;
    }
  }
  EXPECT_EQ(services_->history.cached_sessions(), sessions);
  EXPECT_EQ(services_->history.cached_messages(), held);
  EXPECT_LE(services_->history.cached_bytes(), services_->history.max_bytes());
}

// Storage that cannot write (read-only file, full disk): a context that changes nothing
// durable is still answered; one that must persist pruning first fails with
// kUnavailable, leaves nothing behind, and the same request succeeds once writes work.
TEST_F(ServiceContextTest, WithoutWritesOnlyContextsThatPersistNothingAreAnswered) {
  CreateAgentSession("small");
  ASSERT_TRUE(Append("small", {Message::User("hello"), Message::Assistant("hi")}).status.ok());
  CreateLongToolSession("long");
  services_->workers.Drain();  // the append's summarization trigger
  ASSERT_TRUE(Flush().ok());
  const size_t jobs_before = stores_->jobs.List(ListOptions{})->size();  // the append's trigger

  db_options_.read_only = true;
  Reopen();
  Result<ContextOutcome> small = Context("small");
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->context.messages.size(), 3u);
  EXPECT_FALSE(small->wrote);

  Result<ContextOutcome> pruning = SmallWindowContext("long");
  ASSERT_FALSE(pruning.ok());
  EXPECT_EQ(pruning.status().code(), StatusCode::kUnavailable) << pruning.status().ToString();
  for (const StoredMessage& m : Stored("long")) EXPECT_EQ(m.flags & kFlagPruned, 0u) << m.seq;
  EXPECT_EQ(stores_->jobs.List(ListOptions{})->size(), jobs_before);

  db_options_.read_only = false;
  Reopen();
  Result<ContextOutcome> retry = SmallWindowContext("long");
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->wrote);
  EXPECT_FALSE(retry->context.report.newly_pruned_seqs.empty());
  EXPECT_EQ(stores_->jobs.List(ListOptions{})->size(), 1u);
}

TEST_F(ServiceContextTest, UnknownSessionIsNotFound) {
  Result<ContextOutcome> out = Context("ghost");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(out.status().message(), "session 'ghost' not found");
}

}  // namespace
}  // namespace missy::testing

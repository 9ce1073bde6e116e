#include "core/assembler.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "context_test_helpers.h"
#include "core/context_report_json.h"
#include "core/message_json.h"
#include "core/sanitizer.h"

namespace missy {
namespace {

using testing::BaseInput;
using testing::BytesCounter;
using testing::Conv;
using testing::Shape;
using testing::Store;

TEST(AssemblerTest, EverythingFitsInMissyOrder) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(100000);
  in.budget.memory_fraction = 0.15;
  in.budget.learnings_fraction = 0.05;
  in.system_prompt = "You are Missy.";
  in.history = Store(Conv("u aTC(A) t(A) a u a"), counter);
  in.summaries.push_back(
      {"sum_1", 0, 1, 0, 12, 1'700'000'000'000, 1'700'000'060'000, "earlier work", 0});
  in.memory.push_back({"memory", "m1", "the repo uses CMake", 1.0});
  in.learnings.push_back({"l1", "build", "success", "run ninja with -j2", 0});
  in.new_message = Message::User("next");
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->system,
            "You are Missy.\n\n## Relevant Memory\n- the repo uses CMake\n\n"
            "## Past Learnings\n- [build, success] run ninja with -j2");
  ASSERT_EQ(ctx->messages.size(), 9u);
  EXPECT_EQ(ctx->messages[0].role, Role::kSystem);
  EXPECT_EQ(ctx->messages[1].text,
            "[Conversation Summary — depth 0, 12 messages, covers 2023-11-14T22:13:20Z to "
            "2023-11-14T22:14:20Z; id sum_1, originals via missy_recall]\nearlier work");
  EXPECT_EQ(Shape(std::vector<Message>(ctx->messages.begin() + 2, ctx->messages.end())),
            "u aTC(A) t(A) a u a u");
  EXPECT_EQ(ctx->messages.back().text, "next");
  EXPECT_EQ(ctx->kept_seqs, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  const ContextReport& r = ctx->report;
  EXPECT_EQ(r.memory_items, 1);
  EXPECT_EQ(r.learnings_items, 1);
  EXPECT_EQ(r.summaries_included, 1);
  EXPECT_EQ(r.kept_messages, 6);
  EXPECT_EQ(r.dropped_messages, 0);
  EXPECT_EQ(r.zone, "safe");
  EXPECT_FALSE(r.should_summarize);
  // used = system message + summary + history + new message, all counted one by one.
  int64_t sum = 0;
  for (const Message& m : ctx->messages) sum += counter.CountMessage(m);
  EXPECT_EQ(r.used_tokens, sum);
}

TEST(AssemblerTest, EvictableFillIsNewestFirstAndContiguous) {
  const MessageTokenCounter counter = BytesCounter();
  // Each "u"/"a" message costs 4 + 3 or 4 bytes; a tool group costs more.
  std::vector<Message> conv = Conv("u a u aTC(A) t(A) a u a u a");
  std::vector<StoredMessage> history = Store(conv, counter);
  int64_t tail = 0;
  for (size_t i = 6; i < history.size(); ++i) tail += history[i].tokens;  // last 4
  // Room for the tail, then exactly "a" (seq 6) but not the group before it.
  ContextInput in = BaseInput(tail + history[5].tokens + 5);
  in.history = history;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->kept_seqs, (std::vector<int64_t>{6, 7, 8, 9, 10}));
  EXPECT_EQ(ctx->report.dropped_messages, 5);
  EXPECT_EQ(ctx->report.fresh_tail_messages, 4);
  EXPECT_LE(ctx->report.used_tokens, in.budget.total);
}

TEST(AssemblerTest, FreshTailBoundaryMovesBackToGroupStart) {
  const MessageTokenCounter counter = BytesCounter();
  // The last 3 messages would start at t(B): the tail must start at aTC(A,B).
  std::vector<StoredMessage> history = Store(Conv("u a u aTC(A,B) t(A) t(B) a"), counter);
  ContextInput in = BaseInput(100000, /*tail_count=*/3);
  in.budget.total = 0;
  for (size_t i = 3; i < history.size(); ++i) in.budget.total += history[i].tokens;
  in.history = history;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->kept_seqs, (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(ctx->report.first_fresh_seq, 4);
  EXPECT_EQ(ctx->report.fresh_tail_messages, 4);
  EXPECT_EQ(ctx->report.used_tokens, in.budget.total);
}

TEST(AssemblerTest, SummariesSkipNotStop) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(0, 2);
  in.history = Store(Conv("u a u a u a"), counter);
  in.summaries = {{"s1", 0, 1, 1, 1, 0, 0, "short one", 0},
                  {"s2", 0, 2, 2, 1, 0, 0, std::string(500, 'x'), 0},
                  {"s3", 0, 3, 3, 1, 0, 0, "another short one", 0}};
  const int64_t tail = in.history[4].tokens + in.history[5].tokens;
  const int64_t s1 = counter.CountMessage(
      Message::User(SummaryHeader(in.summaries[0]) + "\n" + in.summaries[0].text));
  const int64_t s3 = counter.CountMessage(
      Message::User(SummaryHeader(in.summaries[2]) + "\n" + in.summaries[2].text));
  in.budget.total = tail + s1 + s3;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->report.included_summary_ids, (std::vector<std::string>{"s1", "s3"}));
  EXPECT_EQ(ctx->report.skipped_summary_ids, (std::vector<std::string>{"s2"}));
  EXPECT_EQ(ctx->report.used_tokens, in.budget.total);
  EXPECT_EQ(ctx->kept_seqs, (std::vector<int64_t>{5, 6}));
}

// A summary's message_tokens, when the caller knows it (the daemon caches them), is what
// the summary costs: it is not counted again.
TEST(AssemblerTest, AKnownSummaryMessageCountIsTrusted) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(0, 2);
  in.history = Store(Conv("u a u a u a"), counter);
  in.summaries = {{"s1", 0, 1, 1, 1, 0, 0, "short one", 0},
                  {"s2", 0, 2, 2, 1, 0, 0, "another short one", 0}};
  const int64_t tail = in.history[4].tokens + in.history[5].tokens;
  const int64_t s1 = counter.CountMessage(
      Message::User(SummaryHeader(in.summaries[0]) + "\n" + in.summaries[0].text));
  in.budget.total = tail + 2 * s1 + 200;  // room for both as counted
  Result<AssembledContext> both = AssembleContext(in, counter);
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(both->report.summaries_included, 2);

  in.summaries[0].message_tokens = s1;               // right: the same context
  in.summaries[1].message_tokens = in.budget.total;  // too big to fit whole or short:
  in.summaries[1].stub_tokens = in.budget.total;     // skipped
  Result<AssembledContext> known = AssembleContext(in, counter);
  ASSERT_TRUE(known.ok()) << known.status().ToString();
  EXPECT_EQ(known->report.included_summary_ids, (std::vector<std::string>{"s1"}));
  EXPECT_EQ(known->report.skipped_summary_ids, (std::vector<std::string>{"s2"}));
  EXPECT_EQ(known->report.summary_tokens, s1);
}

TEST(AssemblerTest, CoveredMessagesAreNotRepeated) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(100000, 2);
  in.history = Store(Conv("u aTC(A) t(A) a u a u a"), counter);
  in.summaries = {{"s1", 0, 1, 4, 4, 0, 0, "did A", 0}};
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->kept_seqs, (std::vector<int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(ctx->report.covered_messages, 4);
  EXPECT_EQ(ctx->report.dropped_messages, 0);
}

TEST(AssemblerTest, ALastTurnLargerThanTheRoomIsCutMiddleOutNotRefused) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(500, 4);
  in.history = Store(Conv("u a"), counter);
  // A pasted `find .`: four times the room.
  std::string paste;
  for (int i = 0; paste.size() < 2000; ++i) paste += "./src/file" + std::to_string(i) + ".c\n";
  in.new_message = Message::User(paste);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_TRUE(ctx->report.last_turn_truncated);
  EXPECT_LE(ctx->report.used_tokens, 500);
  const std::string sent = ctx->messages.back().PlainText();
  EXPECT_NE(sent.find("[...truncated "), std::string::npos) << sent;
  EXPECT_EQ(sent.rfind("./src/file0.c", 0), 0u) << "the start is kept";
  EXPECT_NE(sent.find(paste.substr(paste.size() - 40)), std::string::npos) << "and the end";
  ASSERT_EQ(ctx->report.truncated.size(), 1u);
  EXPECT_EQ(ctx->report.truncated[0].seq, 0);  // the new message
  EXPECT_GT(ctx->report.truncated[0].original_tokens, 2000);
}

TEST(AssemblerTest, TheLastTurnsLargestToolOutputIsCutFirstBelowTheSqueezeFloor) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(1200, 4);
  in.min_tool_output_tokens = 1000;  // squeezing alone cannot make room
  std::vector<Message> conv = Conv("u aTC(A,B) t(A) t(B)");
  conv[2] = Message::ToolResult("A", std::string(3000, 'x'));
  conv[3] = Message::ToolResult("B", std::string(300, 'y'));
  in.history = Store(conv, counter);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_TRUE(ctx->report.last_turn_truncated);
  EXPECT_LE(ctx->report.used_tokens, 1200);
  EXPECT_EQ(Shape(ctx->messages), "u aTC(A,B) t(A) t(B)");  // the pair stays whole
  EXPECT_NE(ctx->messages[2].PlainText().find("[...truncated "), std::string::npos);
  EXPECT_EQ(ctx->messages[3].PlainText(), std::string(300, 'y'));  // the small one untouched
}

TEST(AssemblerTest, OverflowOnlyWhenEvenTheCutLastTurnCannotFit) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(30, 4);
  in.history = Store(Conv("u a"), counter);
  in.new_message = Message::User(std::string(100, 'q'));
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), StatusCode::kContextOverflow);
  EXPECT_NE(ctx.status().message().find("tokens but only 30"), std::string::npos)
      << ctx.status().message();
}

TEST(AssemblerTest, OverflowWhenSystemAndToolsExceedTotal) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(20, 4);
  in.system_prompt = "a fairly long system prompt";
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), StatusCode::kContextOverflow);
  EXPECT_NE(ctx.status().message().find("system prompt (31 tokens)"), std::string::npos)
      << ctx.status().message();
}

TEST(AssemblerTest, InvalidBudgetIsRejected) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(100);
  in.budget.memory_fraction = 1.5;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), StatusCode::kInvalidArgument);
}

TEST(AssemblerTest, SanitizedMessagesAreReported) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(100000);
  in.history = Store(Conv("t(X) u aTC(A,B) t(A) u a"), counter);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(Shape(ctx->messages), "u u a");
  ASSERT_EQ(ctx->report.sanitized.size(), 3u);
  EXPECT_EQ(ctx->report.sanitized[0].seq, 1);
  EXPECT_EQ(ctx->report.sanitized[0].reason, "orphan_result");
  EXPECT_EQ(ctx->report.sanitized[1].seq, 3);
  EXPECT_EQ(ctx->report.sanitized[1].tool_call_id, "B");
  EXPECT_EQ(ctx->report.sanitized[1].reason, "unanswered_call");
  EXPECT_EQ(ctx->report.sanitized[2].reason, "call_dropped");
  boost::json::object j = ContextReportToJson(ctx->report);
  EXPECT_EQ(j["sanitized"].as_array().size(), 3u);
}

TEST(AssemblerTest, MemoryIsTruncatedToItsBudget) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(1005);
  in.system_prompt = "S";  // 5 tokens measured: available 1000, memory budget 100
  in.budget.memory_fraction = 0.1;
  in.memory = {{"memory", "m1", std::string(40, 'a'), 2.0},
               {"summary", "m2", std::string(200, 'b'), 1.0},
               {"message", "m3", "never reached", 0.5}};
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  const ContextReport& r = ctx->report;
  EXPECT_EQ(r.memory_budget, 100);
  // "\n\n## Relevant Memory\n" (21) + "- a*40\n" (43) + "- b*k…" (2 + k + 3) <= 100.
  EXPECT_EQ(r.memory_items, 2);
  EXPECT_EQ(r.memory_tokens, 100);
  EXPECT_EQ(ctx->system, "S\n\n## Relevant Memory\n- " + std::string(40, 'a') + "\n- " +
                             std::string(31, 'b') + "…");
  EXPECT_EQ(r.system_message_tokens, 5 + 100);
  EXPECT_EQ(r.used_tokens, 105);
}

TEST(AssemblerTest, LearningsFillPartiallyNotAllOrNothing) {
  const MessageTokenCounter counter = BytesCounter();
  struct Case {
    const char* name;
    std::vector<int> lesson_sizes;
    int64_t budget;
    int64_t items;
    std::string expected_lessons;  // first letters of included lessons
  };
  // Marginal cost: "\n\n## Past Learnings" (19) + per lesson "\n- " + lesson (3 + n).
  const std::vector<Case> cases = {
      {"all fit", {10, 10}, 19 + 13 + 13, 2, "ab"},
      {"a long one is skipped, later ones still fit", {10, 500, 10}, 19 + 13 + 13, 2, "ac"},
      {"at most five", {1, 1, 1, 1, 1, 1, 1}, 1000, 5, "abcde"},
      {"none fits", {50}, 40, 0, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ContextInput in = BaseInput(0);
    in.system_prompt = "S";
    in.budget.learnings_fraction = 0.5;
    in.budget.total = 5 + 2 * c.budget;  // available = 2 * budget
    for (size_t i = 0; i < c.lesson_sizes.size(); ++i) {
      in.learnings.push_back({"l" + std::to_string(i), "", "",
                              std::string(c.lesson_sizes[i], static_cast<char>('a' + i)), 0});
    }
    Result<AssembledContext> ctx = AssembleContext(in, counter);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    EXPECT_EQ(ctx->report.learnings_budget, c.budget);
    EXPECT_EQ(ctx->report.learnings_items, c.items);
    EXPECT_LE(ctx->report.learnings_tokens, c.budget);
    std::string firsts;
    size_t pos = 0;
    while ((pos = ctx->system.find("\n- ", pos)) != std::string::npos) {
      firsts.push_back(ctx->system[pos + 3]);
      pos += 3;
    }
    EXPECT_EQ(firsts, c.expected_lessons) << ctx->system;
  }
}

TEST(AssemblerTest, UnusedMemoryShareFlowsToHistory) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(0, 1);
  in.budget.memory_fraction = 0.5;
  in.history = Store(Conv("u a u a"), counter);
  int64_t all = 0;
  for (const StoredMessage& m : in.history) all += m.tokens;
  in.budget.total = all;  // memory may take half, but there is none: history gets all
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->kept_seqs.size(), 4u);
  EXPECT_EQ(ctx->report.history_budget, all);
}

TEST(AssemblerTest, ReservesApplyWhenSystemAndToolsAreUnknown) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in;  // Missy's defaults: total 30,000, reserves 2,000 + 2,000
  in.history = Store(Conv("u a"), counter);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_FALSE(ctx->report.system_measured);
  EXPECT_FALSE(ctx->report.tools_measured);
  EXPECT_EQ(ctx->report.system_tokens, 2000);
  EXPECT_EQ(ctx->report.tool_tokens, 2000);
  EXPECT_EQ(ctx->report.available, 26000);
  EXPECT_EQ(ctx->report.threshold_tokens, 15600);  // 0.75 x 20,800
  EXPECT_EQ(ctx->report.used_tokens, 4000 + in.history[0].tokens + in.history[1].tokens);
  EXPECT_TRUE(ctx->system.empty());
  EXPECT_EQ(Shape(ctx->messages), "u a");
}

TEST(AssemblerTest, ZonesAndSummarizeTrigger) {
  const MessageTokenCounter counter = BytesCounter();
  struct Case {
    int64_t total;
    int64_t message_threshold;
    const char* zone;
    bool summarize;
  };
  // History "u a u a" = 4 x 7 tokens ("u#0": 4 + 3); threshold floor(0.75 x total).
  const std::vector<Case> cases = {
      {100, 200, "safe", false},                            // 28 < 75
      {37, 200, "warning", true},                           // 28 >= 27.75 -> 27, <= 37
      {28, 200, "warning", true},                           // exactly the budget
      {27, 200, "overflow", true}, {100, 3, "safe", true},  // 4 messages > 3
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("total=" + std::to_string(c.total) +
                 " message_threshold=" + std::to_string(c.message_threshold));
    ContextInput in = BaseInput(c.total, 1);
    in.history = Store(Conv("u a u a"), counter);
    in.message_threshold = c.message_threshold;
    Result<AssembledContext> ctx = AssembleContext(in, counter);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    EXPECT_EQ(ctx->report.history_demand_tokens, 28);
    EXPECT_EQ(ctx->report.zone, c.zone);
    EXPECT_EQ(ctx->report.should_summarize, c.summarize);
  }
}

TEST(AssemblerTest, LongToolOutputIsTruncatedInContextOnly) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(100000, 16);
  std::string out;
  for (int i = 0; i < 1000; ++i) out += "output line " + std::to_string(i) + "\n";
  std::vector<Message> conv = {Message::User("go"),
                               Message::AssistantCalls({{"c1", "function", "bash", "{}"}}),
                               Message::ToolResult("c1", out), Message::Assistant("done")};
  in.history = Store(conv, counter);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  ASSERT_EQ(ctx->messages.size(), 4u);
  const Message& t = ctx->messages[2];
  EXPECT_LE(counter.CountText(t.text), 2500);
  EXPECT_NE(t.text.find("[...truncated "), std::string::npos);
  EXPECT_EQ(t.text.substr(0, 14), "output line 0\n");
  EXPECT_NE(t.text.find("output line 999\n"), std::string::npos);
  EXPECT_EQ(in.history[2].message.text, out) << "storage input must not change";
  ASSERT_EQ(ctx->report.truncated.size(), 1u);
  EXPECT_EQ(ctx->report.truncated[0].seq, 3);
  EXPECT_EQ(ctx->report.truncated[0].original_tokens, in.history[2].tokens);
  EXPECT_EQ(ctx->report.truncated[0].tokens, counter.CountMessage(t));
}

// u aTC(A) t(A: big) u aTC(B) t(B: 40,000 tokens) u a u a
ContextInput PruningInput(int64_t old_output_bytes) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(1'000'000, 2);
  in.threshold_pct = 0;  // always over the threshold
  in.pruning.enabled = true;
  in.tool_output_max_tokens = 1'000'000;
  std::vector<Message> conv = {
      Message::User("u1"),
      Message::AssistantCalls({{"A", "function", "f", ""}}),
      Message::ToolResult("A", std::string(old_output_bytes, 'x')),
      Message::User("u2"),
      Message::AssistantCalls({{"B", "function", "f", ""}}),
      Message::ToolResult("B", std::string(40000 - 5, 'y')),  // 4 + 1 + 39,995 = 40,000
      Message::User("u3"),
      Message::Assistant("a3"),
      Message::User("u4"),
      Message::Assistant("a4")};
  in.history = Store(conv, counter);
  return in;
}

TEST(AssemblerTest, PruningThresholdExactlyAtMinimum) {
  const MessageTokenCounter counter = BytesCounter();
  // Pruned t(A) costs 4 + 33 + 1 = 38; t(A) costs 4 + 1 + n: frees n - 33.
  struct Case {
    int64_t bytes;
    bool pruned;
  };
  for (const Case& c : {Case{20033, true}, Case{20032, false}}) {
    SCOPED_TRACE("old output bytes=" + std::to_string(c.bytes));
    ContextInput in = PruningInput(c.bytes);
    Result<AssembledContext> ctx = AssembleContext(in, counter);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    if (c.pruned) {
      EXPECT_EQ(ctx->report.newly_pruned_seqs, (std::vector<int64_t>{3}));
      EXPECT_EQ(ctx->report.pruned_freed_tokens, 20000);
      EXPECT_EQ(ctx->messages[2].text, "[Old tool result content cleared]");
      EXPECT_EQ(ctx->messages[2].tool_call_id, "A");
      EXPECT_EQ(ctx->report.pruned_messages, 1);
    } else {
      EXPECT_TRUE(ctx->report.newly_pruned_seqs.empty());
      EXPECT_EQ(ctx->messages[2].text.size(), static_cast<size_t>(c.bytes));
      EXPECT_EQ(ctx->report.pruned_messages, 0);
    }
  }
}

TEST(AssemblerTest, PrunedFlagIsStickyAndKeepsThePrefixBytes) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = PruningInput(30000);
  Result<AssembledContext> first = AssembleContext(in, counter);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->report.newly_pruned_seqs, (std::vector<int64_t>{3}));
  // The daemon persists the flag; the agent goes on; pruning is now off (e.g. thresholds
  // changed) but the flag still renders: same bytes for the common prefix.
  in.history[2].flags |= kFlagPruned;
  for (const Message& m : Conv("u a")) {
    in.history.push_back(
        {static_cast<int64_t>(in.history.size() + 1), 0, counter.CountMessage(m), 0, m});
  }
  in.pruning.enabled = false;
  Result<AssembledContext> second = AssembleContext(in, counter);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->report.newly_pruned_seqs.empty());
  ASSERT_GT(second->messages.size(), first->messages.size());
  for (size_t i = 0; i < first->messages.size(); ++i) {
    EXPECT_EQ(MessageToJson(second->messages[i]), MessageToJson(first->messages[i])) << "i=" << i;
  }
}

TEST(AssemblerTest, FreshTailSqueezeTruncatesOldToolOutputsFirst) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(0, 16);
  std::vector<Message> conv = {
      Message::User("go"), Message::AssistantCalls({{"c1", "function", "f", ""}}),
      Message::ToolResult("c1", std::string(2000, 'x')), Message::Assistant("done")};
  in.history = Store(conv, counter);
  in.budget.total = 1200;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_TRUE(ctx->report.tail_squeezed);
  EXPECT_EQ(ctx->report.tail_dropped_messages, 0);
  EXPECT_EQ(ctx->kept_seqs, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_LE(ctx->report.used_tokens, 1200);
  EXPECT_LE(counter.CountText(ctx->messages[2].text), 1250);
  ASSERT_EQ(ctx->report.truncated.size(), 1u);
  EXPECT_EQ(ctx->report.truncated[0].seq, 3);
}

TEST(AssemblerTest, FreshTailSqueezeShortensToTheLastTurn) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(0, 16);
  std::vector<Message> conv = {Message::User("first"), Message::Assistant(std::string(500, 'a')),
                               Message::User("second"), Message::Assistant("ok")};
  in.history = Store(conv, counter);
  in.budget.total = in.history[2].tokens + in.history[3].tokens + 10;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_TRUE(ctx->report.tail_squeezed);
  EXPECT_EQ(ctx->report.tail_dropped_messages, 2);
  EXPECT_EQ(ctx->kept_seqs, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ctx->report.dropped_messages, 2);
}

TEST(AssemblerTest, NewMessageAnswersTheLastCall) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(100000);
  in.history = Store(Conv("u aTC(A)"), counter);
  in.new_message = Message::ToolResult("A", "result");
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(Shape(ctx->messages), "u aTC(A) t(A)");
  EXPECT_TRUE(ctx->report.sanitized.empty());
  // An orphan new message is dropped and reported.
  in.new_message = Message::ToolResult("Z", "result");
  ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(Shape(ctx->messages), "u");
  EXPECT_TRUE(ctx->report.new_message_dropped);
}

TEST(AssemblerTest, ReportJsonHasEverySection) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = PruningInput(30000);
  in.context_window = 128000;
  in.max_output_tokens = 16000;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  boost::json::object j = ContextReportToJson(ctx->report);
  for (const char* key :
       {"context_window", "max_output_tokens", "total", "used_tokens", "available", "zone",
        "should_summarize", "system", "tools", "memory", "learnings", "summaries", "history",
        "new_message", "sanitized", "truncated", "pruned", "fresh_tail"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["context_window"].as_int64(), 128000);
  EXPECT_EQ(boost::json::serialize(j["pruned"]),
            R"({"messages":1,"newly_pruned_seqs":[3],"freed_tokens":29967})");
}

TEST(AssemblerTest, AnchoredEvictionKeepsThePrefixUntilItMustMove) {
  const MessageTokenCounter counter = BytesCounter();
  // 20 plain messages of 7 tokens ("u#0" .. "a#9"? all 3-4 bytes + 4); tail of 2.
  std::vector<Message> conv = Conv("u a u a u a u a u a u a u a u a u a u a");
  ContextInput in = BaseInput(0, 2);
  in.history = Store(conv, counter);
  auto tokens_from = [&](size_t i) {
    int64_t t = 0;
    for (; i < in.history.size(); ++i) t += in.history[i].tokens;
    return t;
  };
  in.budget.total = tokens_from(10);  // plain fill: seqs 11..20
  Result<AssembledContext> plain = AssembleContext(in, counter);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->report.first_kept_seq, 11);
  EXPECT_EQ(plain->report.eviction, "fill");

  struct Case {
    const char* name;
    int64_t anchor;
    int64_t expected_first;
    const char* eviction;
  };
  const std::vector<Case> cases = {
      // Everything from seq 13 fits: keep from 13, not from 11 though 11 and 12 would fit.
      {"anchor fits", 13, 13, "anchored"},
      // From seq 5 does not fit: the move keeps older history in a quarter of the room
      // the tail (19, 20) leaves (2 of its 8 messages), so the start lands past the plain
      // fill's.
      {"anchor moves", 5, 17, "anchor_moved"},
      {"anchor in the fresh tail", 20, 19, "anchored"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    in.eviction.anchor_seq = c.anchor;
    in.eviction.slack_fraction = 0.5;
    Result<AssembledContext> ctx = AssembleContext(in, counter);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    EXPECT_EQ(ctx->report.first_kept_seq, c.expected_first);
    EXPECT_EQ(ctx->report.eviction, c.eviction);
    EXPECT_LE(ctx->report.used_tokens, in.budget.total);
    EXPECT_EQ(ctx->kept_seqs.back(), 20);
  }
}

}  // namespace
}  // namespace missy

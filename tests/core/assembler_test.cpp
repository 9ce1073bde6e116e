#include "core/assembler.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "context_test_helpers.h"
#include "core/sanitizer.h"

namespace missy {
namespace {

using testing::BytesCounter;
using testing::Conv;
using testing::Shape;
using testing::Store;

// A budget where nothing but history matters: measured empty tools, no reserve games.
ContextInput BaseInput(int64_t total, int64_t tail_count = 4) {
  ContextInput in;
  in.budget.total = total;
  in.budget.system_reserve = 0;
  in.budget.tool_definitions_reserve = 0;
  in.budget.memory_fraction = 0;
  in.budget.learnings_fraction = 0;
  in.budget.fresh_tail_count = tail_count;
  in.tool_tokens = 0;
  in.pruning.enabled = false;
  return in;
}

TEST(AssemblerTest, EverythingFitsInMissyOrder) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(100000);
  in.budget.memory_fraction = 0.15;
  in.budget.learnings_fraction = 0.05;
  in.system_prompt = "You are Missy.";
  in.history = Store(Conv("u aTC(A) t(A) a u a"), counter);
  in.summaries.push_back({"sum_1", 0, 1, 0, 12, 1'700'000'000'000, 1'700'000'060'000,
                          "earlier work", 0});
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
            "2023-11-14T22:14:20Z]\nearlier work");
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
  const int64_t s1 = counter.CountMessage(Message::User(SummaryHeader(in.summaries[0]) + "\n" +
                                                        in.summaries[0].text));
  const int64_t s3 = counter.CountMessage(Message::User(SummaryHeader(in.summaries[2]) + "\n" +
                                                        in.summaries[2].text));
  in.budget.total = tail + s1 + s3;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->report.included_summary_ids, (std::vector<std::string>{"s1", "s3"}));
  EXPECT_EQ(ctx->report.skipped_summary_ids, (std::vector<std::string>{"s2"}));
  EXPECT_EQ(ctx->report.used_tokens, in.budget.total);
  EXPECT_EQ(ctx->kept_seqs, (std::vector<int64_t>{5, 6}));
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

TEST(AssemblerTest, OverflowWhenTheLastTurnCannotFit) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(50, 4);
  in.history = Store(Conv("u a"), counter);
  in.new_message = Message::User(std::string(100, 'q'));
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), StatusCode::kContextOverflow);
  EXPECT_NE(ctx.status().message().find("needs 104 tokens but only 50"), std::string::npos)
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

}  // namespace
}  // namespace missy

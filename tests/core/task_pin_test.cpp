// The session's task is always in the context (ContextInput::task): sent on its own when
// the kept history does not hold it, never twice, cut middle-out beyond its share.
#include <gtest/gtest.h>

#include "context_test_helpers.h"
#include "core/assembler.h"

namespace missy {
namespace {

using testing::BaseInput;
using testing::BytesCounter;
using testing::Conv;
using testing::Store;

ContextInput Input(int64_t total, const std::vector<Message>& conv,
                   const MessageTokenCounter& counter) {
  ContextInput in = BaseInput(total);
  in.history = Store(conv, counter);
  in.task = in.history.front();
  return in;
}

std::vector<Message> LongSession(int rounds) {
  std::vector<Message> conv = {Message::User("TASK: port the parser to C++20")};
  for (int i = 0; i < rounds; ++i) {
    conv.push_back(
        Message::Assistant("working on step " + std::to_string(i) + std::string(80, '.')));
    conv.push_back(Message::User("continue " + std::to_string(i)));
  }
  return conv;
}

TEST(TaskPinTest, AnEvictedTaskIsSentRightAfterTheSystemMessage) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = Input(1500, LongSession(40), counter);
  in.system_prompt = "sys";
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  const ContextReport& r = ctx->report;
  ASSERT_TRUE(r.task_pinned);
  EXPECT_EQ(r.task_seq, 1);
  EXPECT_FALSE(r.task_truncated);
  ASSERT_GE(ctx->messages.size(), 3u);
  EXPECT_EQ(ctx->messages[0].role, Role::kSystem);
  EXPECT_EQ(ctx->messages[1].role, Role::kUser);
  EXPECT_EQ(ctx->messages[1].text, TaskHeader(1) + "\nTASK: port the parser to C++20");
  EXPECT_EQ(r.task_tokens, counter.CountMessage(ctx->messages[1]));
  EXPECT_GT(r.dropped_messages, 0);
  EXPECT_NE(ctx->kept_seqs.front(), 1);  // the history itself no longer holds it
  int64_t sum = 0;
  for (const Message& m : ctx->messages) sum += counter.CountMessage(m);
  EXPECT_EQ(sum, r.used_tokens);
  EXPECT_LE(r.used_tokens, 1500);
}

TEST(TaskPinTest, AKeptTaskIsNotRepeated) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = Input(100000, LongSession(5), counter);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok());
  EXPECT_FALSE(ctx->report.task_pinned);
  EXPECT_EQ(ctx->report.task_tokens, 0);
  EXPECT_EQ(ctx->kept_seqs.front(), 1);
  EXPECT_EQ(ctx->messages.front().text, "TASK: port the parser to C++20");
  // In the fresh tail too.
  ContextInput tail = Input(100000, Conv("u a u"), counter);
  Result<AssembledContext> small = AssembleContext(tail, counter);
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(small->report.task_pinned);
  EXPECT_EQ(small->messages.size(), 3u);
}

TEST(TaskPinTest, ALongTaskIsCutMiddleOutToItsShare) {
  const MessageTokenCounter counter = BytesCounter();
  std::vector<Message> conv = LongSession(40);
  conv[0] = Message::User("BEGIN " + std::string(3000, 'x') + " END");
  ContextInput in = Input(2500, conv, counter);
  in.task = Store(conv, counter).front();
  in.task_max_tokens = 300;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok());
  const ContextReport& r = ctx->report;
  ASSERT_TRUE(r.task_pinned);
  EXPECT_TRUE(r.task_truncated);
  const std::string& text = ctx->messages[0].text;
  EXPECT_EQ(text.rfind(TaskHeader(1) + "\nBEGIN ", 0), 0u);
  EXPECT_NE(text.find(" END"), std::string::npos);
  EXPECT_NE(text.find("truncated"), std::string::npos);
  EXPECT_LE(r.task_tokens, 300 + counter.CountMessage(Message::User(TaskHeader(1) + "\n")));
}

}  // namespace
}  // namespace missy

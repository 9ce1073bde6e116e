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

// What the conversation's messages after the task cost as they are (the byte counter adds
// up: a context costs the sum of its messages).
int64_t CostAfterTheTask(const std::vector<Message>& conv, const MessageTokenCounter& counter) {
  int64_t sum = 0;
  for (size_t i = 1; i < conv.size(); ++i) sum += counter.CountMessage(conv[i]);
  return sum;
}

// The last turn's older tool output is squeezed to make room for the task; before, a fresh
// tail that took the whole room left the task out.
TEST(TaskPinTest, AFreshTailThatFillsTheRoomIsSqueezedForTheTask) {
  const MessageTokenCounter counter = BytesCounter();
  const std::vector<Message> conv = {Message::User("TASK: port the parser to C++20"),
                                     Message::User("go on"),
                                     Message::AssistantCalls({{"c1", "function", "bash", "{}"}}),
                                     Message::ToolResult("c1", "LOG " + std::string(900, 'a')),
                                     Message::AssistantCalls({{"c2", "function", "bash", "{}"}}),
                                     Message::ToolResult("c2", "OUT " + std::string(300, 'b'))};
  // Room for the last turn (the fresh tail) and not for the task beside it.
  const ContextInput in = Input(CostAfterTheTask(conv, counter) + 10, conv, counter);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  const ContextReport& r = ctx->report;
  // The room made is enough for the task as it is stored: the history holds it again.
  ASSERT_EQ(ctx->messages.size(), 6u);
  EXPECT_EQ(ctx->messages[0].text, "TASK: port the parser to C++20");
  EXPECT_FALSE(r.task_truncated);
  EXPECT_TRUE(r.tail_squeezed);
  EXPECT_LE(r.used_tokens, in.budget.total);
  EXPECT_LT(ctx->messages[3].PlainText().size(), 904u);  // the older output gave the room
  EXPECT_EQ(ctx->messages[5].PlainText(), conv[5].PlainText());
}

// A last turn with nothing to squeeze leaves the task what is left: it is cut middle-out
// to that, not left out.
TEST(TaskPinTest, WhenTheLastTurnLeavesLessThanTheTaskItIsCutToWhatIsLeft) {
  const MessageTokenCounter counter = BytesCounter();
  const std::vector<Message> conv = {Message::User("BEGIN " + std::string(400, 'x') + " END"),
                                     Message::User("now: " + std::string(700, 'q'))};
  const ContextInput in = Input(CostAfterTheTask(conv, counter) + 120, conv, counter);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  const ContextReport& r = ctx->report;
  ASSERT_TRUE(r.task_pinned);
  EXPECT_TRUE(r.task_truncated);
  const std::string& text = ctx->messages[0].text;
  EXPECT_EQ(text.rfind(TaskHeader(1) + "\nBEGIN ", 0), 0u) << text;
  EXPECT_NE(text.find(" END"), std::string::npos) << text;
  EXPECT_LE(r.used_tokens, in.budget.total);
  EXPECT_GT(r.task_tokens, 60);
}

}  // namespace
}  // namespace missy

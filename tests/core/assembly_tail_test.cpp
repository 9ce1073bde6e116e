// A last turn larger than the room (core/assembly_tail.cpp, CutLastTurn) is cut, not
// refused, whatever its largest messages are: a user's paste, a tool's output, or the
// agent's own messages (a file written whole in a tool call's arguments, a long answer);
// and each cut takes off what the turn is over by, no more.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "context_test_helpers.h"
#include "core/assembler.h"
#include "core/context_checks.h"

namespace missy {
namespace {

namespace json = boost::json;
using testing::BaseInput;
using testing::BytesCounter;
using testing::Shape;
using testing::Store;

std::string Module(int n, size_t bytes) {
  std::string out = "# module " + std::to_string(n) + "\n";
  for (int i = 0; out.size() < bytes; ++i) {
    out += "def step_" + std::to_string(n) + "_" + std::to_string(i) + "():\n    pass\n";
  }
  return out;
}

// An agent working on its one task (the whole session is the last turn) that wrote three
// modules whole, each call's arguments 2,000 bytes, for 5,000 tokens of room: 6,200 before.
TEST(AssemblyTailTest, TheAgentsOwnFileWritesInTheLastTurnAreCutNotRefused) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(5000, /*tail_count=*/16);
  std::vector<Message> conv{Message::User("write the three modules")};
  for (int k = 0; k < 3; ++k) {
    const std::string id = "write_" + std::to_string(k);
    const std::string path = "pkg/mod_" + std::to_string(k) + ".py";
    conv.push_back(Message::AssistantCalls(
        {{id, "function", "write_file",
          json::serialize(json::object{{"path", path}, {"content", Module(k, 2000)}})}}));
    conv.push_back(Message::ToolResult(id, "wrote " + path));
  }
  in.history = Store(conv, counter);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  const ContextReport& r = ctx->report;
  EXPECT_TRUE(r.last_turn_truncated);
  EXPECT_LE(r.used_tokens, 5000);
  EXPECT_GT(r.used_tokens, 4700) << "cut by what the turn was over, no more";
  EXPECT_EQ(Shape(ctx->messages),
            "u aTC(write_0) t(write_0) aTC(write_1) t(write_1) "
            "aTC(write_2) t(write_2)");
  EXPECT_EQ(FindToolPairProblem(ctx->messages), "");
  // The largest came first: the oldest of three equal writes, cut in its content only.
  ASSERT_EQ(r.truncated.size(), 1u);
  EXPECT_EQ(r.truncated[0].seq, 2);
  const json::value args = json::parse(ctx->messages[1].tool_calls[0].arguments);
  EXPECT_EQ(args.at("path"), "pkg/mod_0.py");
  const std::string content(args.at("content").as_string());
  EXPECT_EQ(content.rfind("# module 0\n", 0), 0u);
  EXPECT_NE(content.find("[...truncated "), std::string::npos);
  EXPECT_EQ(ctx->messages[3].tool_calls[0], conv[3].tool_calls[0]);  // the others whole
  EXPECT_EQ(ctx->messages[5].tool_calls[0], conv[5].tool_calls[0]);
}

// The agent's long answer with a call, in the last turn: its text and the call's
// arguments share the cut, the longest first.
TEST(AssemblyTailTest, AnAnswersLongTextIsCutBesideItsCallsArguments) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(3000, /*tail_count=*/16);
  const std::string plan = "Plan:\n" + Module(9, 4000);
  std::vector<Message> conv{
      Message::User("refactor the handlers"),
      Message::AssistantCalls({{"c1", "function", "bash", R"({"command":"pytest -q"})"}}, plan),
      Message::ToolResult("c1", "2 passed")};
  in.history = Store(conv, counter);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_TRUE(ctx->report.last_turn_truncated);
  EXPECT_LE(ctx->report.used_tokens, 3000);
  const Message& answer = ctx->messages[1];
  EXPECT_EQ(answer.PlainText().rfind("Plan:\n# module 9\n", 0), 0u);
  EXPECT_NE(answer.PlainText().find("[...truncated "), std::string::npos);
  ASSERT_EQ(answer.tool_calls.size(), 1u);
  EXPECT_EQ(answer.tool_calls[0].arguments, R"({"command":"pytest -q"})");  // short: whole
}

// The largest message may be one no cut makes smaller (a call of many short fields): the
// cut goes on to the next largest instead of giving up on the turn.
TEST(AssemblyTailTest, AMessageNoCutShrinksIsPassedOverForTheNextLargest) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(4000, /*tail_count=*/16);
  in.min_tool_output_tokens = 1400;  // squeezing alone cannot make room
  json::object fields;
  for (int i = 0; i < 150; ++i) fields["f" + std::to_string(i)] = "v" + std::to_string(i);
  const std::string args = json::serialize(fields);  // ~1,700 bytes, none of it cuttable
  std::vector<Message> conv{Message::User("configure it"),
                            Message::AssistantCalls({{"c1", "function", "configure", args}}),
                            Message::ToolResult("c1", Module(1, 1500)),
                            Message::AssistantCalls({{"c2", "function", "configure", args}}),
                            Message::ToolResult("c2", "ok")};
  in.history = Store(conv, counter);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_LE(ctx->report.used_tokens, 4000);
  EXPECT_EQ(ctx->messages[1].tool_calls[0].arguments, args);
  EXPECT_EQ(ctx->messages[3].tool_calls[0].arguments, args);
  EXPECT_NE(ctx->messages[2].PlainText().find("[...truncated "), std::string::npos);
  // Only what was cut is reported so.
  ASSERT_EQ(ctx->report.truncated.size(), 1u);
  EXPECT_EQ(ctx->report.truncated[0].seq, 3);
}

// A paste a little over the room keeps nearly all of the room, not one tool output's cap.
TEST(AssemblyTailTest, APasteALittleOverTheRoomKeepsMostOfItself) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(5000, /*tail_count=*/16);
  in.tool_output_max_tokens = 2500;
  in.history = Store({Message::User("task"), Message::Assistant("show me")}, counter);
  std::string paste;
  for (int i = 0; paste.size() < 6000; ++i) paste += "./src/file" + std::to_string(i) + ".c\n";
  in.new_message = Message::User(paste);
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_TRUE(ctx->report.last_turn_truncated);
  EXPECT_LE(ctx->report.used_tokens, 5000);
  EXPECT_GT(ctx->messages.back().PlainText().size(), 4800u);  // 2,482 bytes before
}

// A paste with a screenshot in the last turn (text and an image of 765 tokens): the text
// is cut by what the turn is over, the image stays. The cut's cap is of the text alone, so
// the image is part of the message's frame (it was counted against the cap before, and
// the rounds closed in on the room a little at a time).
TEST(AssemblyTailTest, AMessagesImageStaysWhileItsTextIsCutByTheExcess) {
  const MessageTokenCounter counter = BytesCounter();
  ContextInput in = BaseInput(3000, /*tail_count=*/16);
  in.history = Store({Message::User("task"), Message::Assistant("send the log and a screenshot")},
                     counter);
  std::string log;
  for (int i = 0; log.size() < 4000; ++i) log += "GET /page/" + std::to_string(i) + " 200\n";
  Message paste;
  paste.role = Role::kUser;
  paste.content_form = ContentForm::kParts;
  ContentPart image;
  image.kind = ContentPart::Kind::kImage;
  image.image_url = "anthropic:image";
  paste.parts = {{ContentPart::Kind::kText, log, {}, {}}, image};
  in.new_message = paste;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_TRUE(ctx->report.last_turn_truncated);
  EXPECT_LE(ctx->report.used_tokens, 3000);
  const Message& sent = ctx->messages.back();
  EXPECT_EQ(sent.ImageCount(), 1u);
  EXPECT_LT(sent.PlainText().size(), log.size());
  EXPECT_GT(sent.PlainText().size(), 1900u) << "cut by what the turn was over, no more";
}

}  // namespace
}  // namespace missy

#include "core/message.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/message_json.h"

namespace missy {
namespace {

namespace json = boost::json;

Result<Message> Parse(std::string_view text) {
  return ParseMessage(json::parse(text), "messages[3]");
}

struct BadCase {
  const char* input;
  const char* field;
  const char* message_part;
};

TEST(MessageTest, RejectsInvalidMessagesNamingTheField) {
  const BadCase cases[] = {
      {R"("hi")", "messages[3]", "expected a message object"},
      {R"({"content":"x"})", "messages[3].role", "role is required"},
      {R"({"role":"bot","content":"x"})", "messages[3].role", "unknown role 'bot'"},
      {R"({"role":7,"content":"x"})", "messages[3].role", "expected a string, got a number"},
      {R"({"role":"tool","content":"x","tool_call_id":7})", "messages[3].tool_call_id",
       "expected a string, got a number"},
      {R"({"role":"tool","content":"x","tool_call_id":["a"]})", "messages[3].tool_call_id",
       "expected a string, got an array"},
      {R"({"role":"user","content":"x","tool_call_id":"a"})", "messages[3].tool_call_id",
       "only allowed on tool messages"},
      {R"({"role":"user","content":"x","tool_calls":[]})", "messages[3].tool_calls",
       "only allowed on assistant"},
      {R"({"role":"user","content":5})", "messages[3].content",
       "expected a string, an array of parts or null, got a number"},
      {R"({"role":"user"})", "messages[3].content", "content is required on user"},
      {R"({"role":"user","content":[{"type":"audio"}]})", "messages[3].content[0].type",
       "unknown content part type 'audio'"},
      {R"({"role":"user","content":[{"type":"text","text":1}]})", "messages[3].content[0].text",
       "needs a string 'text'"},
      {R"({"role":"assistant","tool_calls":{}})", "messages[3].tool_calls", "expected an array"},
      {R"({"role":"assistant","tool_calls":[{"id":12,"function":{"name":"f"}}]})",
       "messages[3].tool_calls[0].id", "expected a string, got a number"},
      {R"({"role":"assistant","tool_calls":[{"id":"a","function":{"name":""}}]})",
       "messages[3].tool_calls[0].function.name", "non-empty string function name"},
      {R"({"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":3}}]})",
       "messages[3].tool_calls[0].function.arguments", "expected a string (JSON text)"},
      {R"({"role":"user","content":"x","name":4})", "messages[3].name", "expected a string"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.input);
    Result<Message> r = Parse(c.input);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().field(), c.field);
    EXPECT_NE(r.status().message().find(c.message_part), std::string::npos) << r.status().message();
  }
}

TEST(MessageTest, RoundTripsEveryShape) {
  const char* inputs[] = {
      R"({"role":"user","content":"hello"})",
      R"({"role":"system","content":"be brief"})",
      R"({"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:x","detail":"low"}}]})",
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]})",
      R"({"role":"tool","content":"a.txt","tool_call_id":"call_1","name":"bash"})",
  };
  for (const char* input : inputs) {
    SCOPED_TRACE(input);
    Result<Message> r = Parse(input);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(json::serialize(MessageToJson(*r)), input);
  }
}

// Local models (llama.cpp, some Ollama versions) send "" or no id at all: parsing keeps
// the id empty and leaves the repair to the append (core/sanitizer.h).
TEST(MessageTest, AcceptsEmptyOrMissingToolCallIds) {
  struct Case {
    const char* input;
    size_t calls;
  };
  const Case cases[] = {
      {R"({"role":"tool","content":"x"})", 0},
      {R"({"role":"tool","content":"x","tool_call_id":""})", 0},
      {R"({"role":"tool","content":"x","tool_call_id":null})", 0},
      {R"({"role":"assistant","tool_calls":[{"function":{"name":"f"}}]})", 1},
      {R"({"role":"assistant","tool_calls":[{"id":"","function":{"name":"f"}},)"
       R"({"id":null,"function":{"name":"g"}}]})",
       2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    Result<Message> r = Parse(c.input);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->tool_call_id.empty());
    ASSERT_EQ(r->tool_calls.size(), c.calls);
    for (const ToolCall& call : r->tool_calls) EXPECT_EQ(call.id, "");
  }
  // Serialised back: the empty call id stays "" and an empty tool_call_id is left out.
  EXPECT_EQ(json::serialize(MessageToJson(*Parse(R"({"role":"tool","content":"x"})"))),
            R"({"role":"tool","content":"x"})");
  EXPECT_EQ(json::serialize(MessageToJson(
                *Parse(R"({"role":"assistant","tool_calls":[{"function":{"name":"f"}}]})"))),
            R"({"role":"assistant","content":null,"tool_calls":[{"id":"","type":"function",)"
            R"("function":{"name":"f","arguments":""}}]})");
}

// OpenAI's newer models take their instructions as "developer": a system message here.
TEST(MessageTest, ADeveloperMessageIsASystemMessage) {
  Result<Message> m = Parse(R"({"role":"developer","content":"Be brief."})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->role, Role::kSystem);
  EXPECT_EQ(m->PlainText(), "Be brief.");
}

TEST(MessageTest, ObjectArgumentsAreSerialisedAsText) {
  Result<Message> r = Parse(
      R"({"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":1}}}]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tool_calls[0].arguments, R"({"a":1})");
  EXPECT_EQ(r->content_form, ContentForm::kNull);
}

TEST(MessageTest, StorageJsonHelpersRoundTrip) {
  Message m = Message::User("x");
  m.content_form = ContentForm::kParts;
  m.parts = {{ContentPart::Kind::kText, "a", "", ""}, {ContentPart::Kind::kImage, "", "u", "high"}};
  Message back;
  ASSERT_TRUE(ContentFromJsonText(ContentToJsonText(m), back).ok());
  EXPECT_EQ(back.parts, m.parts);
  EXPECT_EQ(back.PlainText(), "a");
  EXPECT_EQ(back.ImageCount(), 1u);

  std::vector<ToolCall> calls = {{"id1", "function", "read", "{}"}, {"id2", "function", "ls", ""}};
  Result<std::vector<ToolCall>> parsed = ToolCallsFromJsonText(ToolCallsToJsonText(calls));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, calls);
  EXPECT_FALSE(ToolCallsFromJsonText("{").ok());
  EXPECT_EQ(ContentFromJsonText("[{\"type\":1}]", back).code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace missy

// The OpenAI Chat Completions codec (daemon/proxy/chat_wire.cpp).
#include "daemon/proxy/chat_wire.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace missy::proxy {
namespace {

namespace json = boost::json;

constexpr std::string_view kChat = R"({
  "model": "gpt-4o", "max_completion_tokens": 500, "stream": true,
  "stream_options": {"include_usage": true},
  "tools": [{"type": "function", "function": {"name": "sh", "parameters": {}}}],
  "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
    {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}}]},
    {"role": "assistant", "content": null, "refusal": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "sh", "arguments": "{\"c\":\"ls\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"}
  ]})";

TEST(ChatWire, LeadingSystemAndDeveloperMessagesAreTheSystemPromptTheRestIsHistory) {
  Result<ParsedRequest> r = ParseChatRequest(kChat);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->leading, 2u);
  EXPECT_EQ(r->system_text, "Be brief.\nUse tools.");
  EXPECT_EQ(r->max_tokens, 500);
  ASSERT_EQ(r->messages.size(), 3u);
  EXPECT_EQ(r->messages[0].engine[0].role, Role::kUser);
  EXPECT_EQ(r->messages[1].engine[0].tool_calls.at(0).id, "call_1");
  EXPECT_EQ(r->messages[2].engine[0].tool_call_id, "call_1");
}

TEST(ChatWire, UntouchedMessagesGoOutAsSentAndRewrittenOnesInTheApisShape) {
  Result<ParsedRequest> r = ParseChatRequest(kChat);
  ASSERT_TRUE(r.ok());
  Outgoing same;
  for (size_t i = 0; i < 3; ++i) same.items.push_back(OutItem{OutItem::Kind::kNative, i, {}});
  EXPECT_EQ(json::parse(BuildChatRequest(*r, same)), json::parse(kChat));

  Outgoing out;
  out.items.push_back(OutItem{OutItem::Kind::kInjected, 0, {Message::User("[summary]")}});
  out.items.push_back(OutItem{OutItem::Kind::kNative, 1, {}});
  out.items.push_back(
      OutItem{OutItem::Kind::kRewritten, 2, {Message::ToolResult("call_1", "[pruned]")}});
  json::value sent = json::parse(BuildChatRequest(*r, out));
  const json::array& m = sent.at("messages").get_array();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].at("content"), "Be brief.");  // the leading system messages as sent
  EXPECT_EQ(m[1].at("role"), "developer");
  EXPECT_EQ(m[2].at("content"), "[summary]");
  EXPECT_EQ(m[3], r->messages[1].native);
  EXPECT_EQ(m[4].at("tool_call_id"), "call_1");
  EXPECT_EQ(m[4].at("content"), "[pruned]");
  EXPECT_EQ(sent.at("stream_options").at("include_usage"), true);
}

// An assistant message the engine cut keeps every field the agent sent with it (Gemini's
// thought signature on a call, reasoning_content), with the cut arguments.
TEST(ChatWire, ACutAssistantMessageKeepsItsOwnFieldsWithTheArgumentsAsCut) {
  constexpr std::string_view kSigned = R"({"model": "gemini-3-pro", "messages": [
    {"role": "user", "content": "write it"},
    {"role": "assistant", "content": null, "reasoning_content": "plan",
     "tool_calls": [{"id": "c9", "type": "function",
       "function": {"name": "write", "arguments": "{\"path\":\"a.py\",\"content\":\"long\"}"},
       "extra_content": {"google": {"thought_signature": "sig=="}}}]}]})";
  Result<ParsedRequest> r = ParseChatRequest(kSigned);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Message cut = r->messages[1].engine.at(0);
  cut.tool_calls.at(0).arguments = R"({"path":"a.py","content":"l[...truncated 1 tokens...]"})";
  Outgoing out;
  out.items.push_back(OutItem{OutItem::Kind::kNative, 0, {}});
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 1, {cut}});
  json::value sent = json::parse(BuildChatRequest(*r, out));
  EXPECT_EQ(sent.at("messages").at(1), json::parse(R"({"role": "assistant", "content": null,
      "reasoning_content": "plan", "tool_calls": [{"id": "c9", "type": "function",
      "function": {"name": "write",
        "arguments": "{\"path\":\"a.py\",\"content\":\"l[...truncated 1 tokens...]\"}"},
      "extra_content": {"google": {"thought_signature": "sig=="}}}]})"));
}

TEST(ChatWire, AStreamWithToolCallDeltasAndAUsageChunkIsRebuilt) {
  const std::string stream =
      "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
      "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me \"}}]}\n\n"
      "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"check.\"}}]}\n\n"
      "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_7\",\"type\":\"function\",\"function\":{\"name\":\"sh\",\"arguments\":\"\"}}]}}]}\n\n"
      "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"c\\\":\"}}]}}]}\n\n"
      "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"pwd\\\"}\"}}]}}]}\n\n"
      "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":321,\"completion_tokens\":12}}\n\n"
      "data: [DONE]\n\n";
  std::unique_ptr<AnswerReader> reader = MakeChatReader(true);
  for (size_t at = 0; at < stream.size(); at += 5) reader->Feed(std::string_view(stream).substr(at, 5));
  Result<Rebuilt> r = reader->Finish();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->stop_reason, "tool_calls");
  EXPECT_EQ(r->input_tokens, 321);
  EXPECT_EQ(r->native.at("content"), "Let me check.");
  EXPECT_EQ(r->native.at("tool_calls").at(0).at("function").at("arguments"), "{\"c\":\"pwd\"}");
  EXPECT_EQ(r->engine.at(0).tool_calls.at(0).id, "call_7");
}

TEST(ChatWire, ANonStreamedAnswerIsRebuiltFromItsFirstChoice) {
  std::unique_ptr<AnswerReader> reader = MakeChatReader(false);
  reader->Feed(R"({"id":"x","choices":[{"index":0,"finish_reason":"stop","message":)");
  reader->Feed(R"({"role":"assistant","content":"Done."}}],"usage":{"prompt_tokens":7,"completion_tokens":2}})");
  Result<Rebuilt> r = reader->Finish();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->engine.at(0).text, "Done.");
  EXPECT_EQ(r->output_tokens, 2);
}

TEST(ChatWire, ContextLengthRefusalsAreRecognised) {
  EXPECT_TRUE(IsOpenAiContextLengthError(
      400, OpenAiError("invalid_request_error", "too long", "context_length_exceeded")));
  EXPECT_FALSE(IsOpenAiContextLengthError(400, OpenAiError("invalid_request_error", "bad", "x")));
}

}  // namespace
}  // namespace missy::proxy

namespace missy::proxy {
namespace {

TEST(ChatWire, AMessageSentAsAStringOrAsOneTextPartIsTheSameMessage) {
  Result<std::vector<Message>> a = ChatToEngine(
      boost::json::parse(R"({"role":"user","content":"hi there"})"), "m");
  Result<std::vector<Message>> b = ChatToEngine(
      boost::json::parse(R"({"role":"user","content":[{"type":"text","text":"hi there"}]})"), "m");
  Result<std::vector<Message>> c = ChatToEngine(
      boost::json::parse(R"({"role":"user","content":"hi there!"})"), "m");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(CanonicalHash(*a), CanonicalHash(*b));
  EXPECT_NE(CanonicalHash(*a), CanonicalHash(*c));
  EXPECT_EQ(CanonicalHash(*a).size(), 32u);
}

// A file (a base64 PDF) or an audio clip is media to the engine, not the text of its
// encoding; a cut message keeps it, its images and its fields after its kept text.
TEST(ChatWire, FilesAndAudioAreMediaAndACutMessageKeepsThem) {
  constexpr std::string_view kFile = R"({"model": "gpt-4o", "messages": [
    {"role": "user", "name": "ana", "content": [
      {"type": "text", "text": "summarize this report"},
      {"type": "file", "file": {"filename": "r.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQKJ"}},
      {"type": "image_url", "image_url": {"url": "https://example.com/chart.png"}}]}]})";
  Result<ParsedRequest> r = ParseChatRequest(kFile);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Message& user = r->messages[0].engine.at(0);
  EXPECT_EQ(user.PlainText(), "summarize this report");
  EXPECT_EQ(user.ImageCount(), 2u);

  Message cut = user;
  cut.parts[0].text = "summarize [...]";
  Outgoing out;
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 0, {cut}});
  json::value sent = json::parse(BuildChatRequest(*r, out));
  json::value want = json::parse(kFile).at("messages").at(0);
  want.at("content").as_array().at(0).as_object()["text"] = "summarize [...]";
  EXPECT_EQ(sent.at("messages").at(0), want);
}

}  // namespace
}  // namespace missy::proxy

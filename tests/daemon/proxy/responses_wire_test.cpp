// The Responses codec (daemon/proxy/responses_wire.cpp): items grouped into turns.
#include "daemon/proxy/responses_wire.h"

#include "core/image_tokens.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace missy::proxy {
namespace {

namespace json = boost::json;

constexpr std::string_view kCodex = R"({
  "model": "gpt-5-codex", "instructions": "You are Codex.", "store": false, "stream": true,
  "include": ["reasoning.encrypted_content"], "prompt_cache_key": "abc",
  "input": [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "make hello.txt"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-opaque"},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": "{\"command\":[\"touch\",\"hello.txt\"]}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "{\"output\":\"\",\"metadata\":{\"exit_code\":0}}"},
    {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin Patch"},
    {"type": "custom_tool_call_output", "id": "ctco_2", "call_id": "call_2", "output": "Done!"}
  ]})";

TEST(ResponsesWire, ItemsAreGroupedIntoTurnsWithReasoningKeptNativeOnly) {
  Result<ParsedRequest> r = ParseResponsesRequest(kCodex);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->system_text, "You are Codex.");
  ASSERT_EQ(r->messages.size(), 6u);
  EXPECT_EQ(r->messages[1].engine.at(0).PlainText(), "make hello.txt");
  // reasoning + function_call: one native of two items, one assistant message.
  EXPECT_EQ(r->messages[2].native.as_array().size(), 2u);
  const Message& turn = r->messages[2].engine.at(0);
  EXPECT_EQ(turn.role, Role::kAssistant);
  ASSERT_EQ(turn.tool_calls.size(), 1u);
  EXPECT_EQ(turn.tool_calls[0].id, "call_1");
  EXPECT_EQ(r->messages[3].engine.at(0).tool_call_id, "call_1");
  EXPECT_EQ(r->messages[4].engine.at(0).tool_calls.at(0).name, "apply_patch");
  EXPECT_EQ(r->messages[5].engine.at(0).PlainText(), "Done!");
}

TEST(ResponsesWire, UntouchedTurnsGoOutItemForItemAndRewrittenOutputsKeepTheirType) {
  Result<ParsedRequest> r = ParseResponsesRequest(kCodex);
  ASSERT_TRUE(r.ok());
  Outgoing same;
  for (size_t i = 0; i < r->messages.size(); ++i) {
    same.items.push_back(OutItem{OutItem::Kind::kNative, i, {}});
  }
  EXPECT_EQ(json::parse(BuildResponsesRequest(*r, same)), json::parse(kCodex));

  Outgoing out;
  out.items.push_back(OutItem{OutItem::Kind::kInjected, 0, {Message::User("[summary]")}});
  out.items.push_back(OutItem{OutItem::Kind::kNative, 4, {}});
  out.items.push_back(
      OutItem{OutItem::Kind::kRewritten, 5, {Message::ToolResult("call_2", "[pruned]")}});
  json::value sent = json::parse(BuildResponsesRequest(*r, out));
  const json::array& input = sent.at("input").as_array();
  ASSERT_EQ(input.size(), 3u);
  EXPECT_EQ(input[0].at("content").at(0).at("text"), "[summary]");
  // The agent's own item (its id) with the kept output.
  EXPECT_EQ(input[2], json::parse(R"({"type": "custom_tool_call_output", "id": "ctco_2",
      "call_id": "call_2", "output": "[pruned]"})"));
  EXPECT_EQ(sent.at("instructions"), "You are Codex.");
  EXPECT_EQ(sent.at("include").at(0), "reasoning.encrypted_content");
}

// A model turn the engine cut (an oversized last turn) goes out item for item: a
// custom_tool_call stays one with its input as cut, a function_call keeps its id.
TEST(ResponsesWire, CutCallsKeepTheirItemsTypeAndIdWithTheArgumentsAsCut) {
  Result<ParsedRequest> r = ParseResponsesRequest(kCodex);
  ASSERT_TRUE(r.ok());
  Message shell = r->messages[2].engine.at(0);
  shell.tool_calls.at(0).arguments = R"({"command":["touch","[...truncated 2 tokens...]"]})";
  Message patch = r->messages[4].engine.at(0);
  patch.tool_calls.at(0).arguments = "*** Begin [...truncated 9 tokens...]";
  Outgoing out;
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 2, {shell}});
  out.items.push_back(OutItem{OutItem::Kind::kNative, 3, {}});
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 4, {patch}});
  json::value sent = json::parse(BuildResponsesRequest(*r, out));
  const json::array& input = sent.at("input").as_array();
  ASSERT_EQ(input.size(), 4u);
  EXPECT_EQ(input[0].at("encrypted_content"), "gAAAA-opaque");
  EXPECT_EQ(input[1], json::parse(R"({"type": "function_call", "id": "fc_1", "call_id": "call_1",
      "name": "shell", "arguments": "{\"command\":[\"touch\",\"[...truncated 2 tokens...]\"]}"})"));
  EXPECT_EQ(input[3], json::parse(R"({"type": "custom_tool_call", "call_id": "call_2",
      "name": "apply_patch", "input": "*** Begin [...truncated 9 tokens...]"})"));
}

TEST(ResponsesWire, AStreamedResponseIsRebuiltAndHashesAsTheAgentResendsIt) {
  const std::string completed =
      R"({"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[)"
      R"({"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gBBB"},)"
      R"({"type":"function_call","id":"fc_2","call_id":"call_3","name":"shell","arguments":"{\"command\":[\"ls\"]}"}],)"
      R"("usage":{"input_tokens":1200,"output_tokens":30}}})";
  const std::string stream =
      "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}\n\n"
      "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"delta\":\"{\\\"command\"}\n\n"
      "event: response.completed\ndata: " + completed + "\n\n";
  std::unique_ptr<AnswerReader> reader = MakeResponsesReader(true);
  reader->Feed(stream);
  Result<Rebuilt> r = reader->Finish();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->input_tokens, 1200);
  EXPECT_EQ(r->native.as_array().size(), 2u);
  // Next turn the agent sends these two items back: one native turn with the same hash.
  Result<std::vector<NativeMessage>> again =
      ResponsesItemsToNatives(r->native.as_array(), "input");
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(again->front().hash, CanonicalHash(r->engine));
}

// Images and files (Codex's -i and view_image) are media to the engine, counted at the
// counter's cost per image (they were the two tokens of "[input_image]"); a cut output
// keeps its image after the kept text.
TEST(ResponsesWire, ImagesAreMediaPartsAndACutOutputKeepsThem) {
  constexpr std::string_view kImages = R"({"model": "gpt-5-codex", "store": false, "input": [
    {"type": "message", "role": "user", "content": [
      {"type": "input_text", "text": "what is on this page?"},
      {"type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "low"}]},
    {"type": "function_call", "call_id": "call_v", "name": "view_image", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_v", "output": [
      {"type": "input_text", "text": "rendered 1280x720"},
      {"type": "input_image",
       "image_url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAA+gAAAPoCAYAAAA="}]}]})";
  Result<ParsedRequest> r = ParseResponsesRequest(kImages);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->messages.size(), 3u);
  const Message& user = r->messages[0].engine.at(0);
  EXPECT_EQ(user.PlainText(), "what is on this page?");
  EXPECT_EQ(user.ImageCount(), 1u);
  const Message& output = r->messages[2].engine.at(0);
  EXPECT_EQ(output.role, Role::kTool);
  EXPECT_EQ(output.PlainText(), "rendered 1280x720");
  EXPECT_EQ(output.ImageCount(), 1u);
  // Their sizes read where the encoding gives one (1000 x 1000), their detail kept.
  EXPECT_EQ(output.parts.at(1).image_url, "openai:input_image;1000x1000");
  EXPECT_EQ(user.parts.at(1).detail, "low");

  Message cut = output;
  cut.parts[0].text = "rendered [...truncated 2 tokens...]";
  Outgoing out;
  for (size_t i = 0; i < 2; ++i) out.items.push_back(OutItem{OutItem::Kind::kNative, i, {}});
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 2, {cut}});
  json::value sent = json::parse(BuildResponsesRequest(*r, out));
  EXPECT_EQ(sent.at("input").at(2).at("output"), json::parse(R"([
      {"type": "input_text", "text": "rendered [...truncated 2 tokens...]"},
      {"type": "input_image",
       "image_url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAA+gAAAPoCAYAAAA="}])"));
}

// A computer call's output is its screenshot: a media part, not its base64 as text; a
// pruned one goes out as a blank pixel (the API takes no text there). A cut developer
// message stays a developer message.
TEST(ResponsesWire, AScreenshotOutputIsMediaAndACutMessageKeepsItsRole) {
  constexpr std::string_view kComputer = R"({"model": "computer-use", "input": [
    {"type": "message", "role": "developer", "content": "a long policy"},
    {"type": "computer_call", "call_id": "call_c", "action": {"type": "screenshot"}},
    {"type": "computer_call_output", "call_id": "call_c",
     "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBO"}}]})";
  Result<ParsedRequest> r = ParseResponsesRequest(kComputer);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Message& shot = r->messages[2].engine.at(0);
  EXPECT_EQ(shot.PlainText(), "");
  EXPECT_EQ(shot.ImageCount(), 1u);

  Outgoing out;
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 0, {Message::User("a long [...]")}});
  out.items.push_back(OutItem{OutItem::Kind::kNative, 1, {}});
  out.items.push_back(
      OutItem{OutItem::Kind::kRewritten, 2, {Message::ToolResult("call_c", "[pruned]")}});
  json::value sent = json::parse(BuildResponsesRequest(*r, out));
  EXPECT_EQ(sent.at("input").at(0).at("role"), "developer");
  // Pruned: a screenshot of one blank pixel, the item otherwise as it came.
  const json::object& pruned = sent.at("input").at(2).at("output").as_object();
  EXPECT_EQ(pruned.at("type"), "computer_screenshot");
  const std::optional<ImageSize> size =
      DataUrlImageSize(std::string(pruned.at("image_url").as_string()));
  ASSERT_TRUE(size);
  EXPECT_EQ(size->width, 1);
  EXPECT_EQ(size->height, 1);

  // Kept, it goes as it came.
  out.items.back() = OutItem{OutItem::Kind::kRewritten, 2, {shot}};
  sent = json::parse(BuildResponsesRequest(*r, out));
  EXPECT_EQ(sent.at("input").at(2), json::parse(kComputer).at("input").at(2));
}

}  // namespace
}  // namespace missy::proxy

// The Anthropic codec (daemon/proxy/anthropic_wire.cpp): requests as engine messages and
// native JSON, what goes upstream, and answers rebuilt from JSON and from SSE.
#include "daemon/proxy/anthropic_wire.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/token_counter.h"
#include "daemon/proxy/sse.h"

namespace missy::proxy {
namespace {

namespace json = boost::json;

constexpr std::string_view kToolLoop = R"({
  "model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
  "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
  "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
  "thinking": {"type": "enabled", "budget_tokens": 4000},
  "metadata": {"user_id": "u1"},
  "x_unknown": [1, 2],
  "messages": [
    {"role": "user", "content": [{"type": "text", "text": "<env>cwd</env>"}, {"type": "text", "text": "Fix the bug"}]},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "look first", "signature": "sig-1"},
      {"type": "text", "text": "Listing."},
      {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a.py\nb.py"}]},
      {"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}]}
  ]})";

TEST(AnthropicWire, ParsesEveryMessageIntoEngineMessagesBesideItsNativeJson) {
  Result<ParsedRequest> r = ParseAnthropicRequest(kToolLoop);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model, "claude-sonnet-4-5");
  EXPECT_EQ(r->max_tokens, 32000);
  EXPECT_TRUE(r->stream);
  EXPECT_EQ(r->system_text, "You are Claude Code.");
  ASSERT_EQ(r->messages.size(), 3u);
  // The first user message: one engine user message of two text parts.
  ASSERT_EQ(r->messages[0].engine.size(), 1u);
  EXPECT_EQ(r->messages[0].engine[0].PlainText(), "<env>cwd</env>\nFix the bug");
  // The assistant: text and the call; thinking stays native only.
  ASSERT_EQ(r->messages[1].engine.size(), 1u);
  const Message& a = r->messages[1].engine[0];
  EXPECT_EQ(a.role, Role::kAssistant);
  EXPECT_EQ(a.text, "Listing.");
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].id, "toolu_1");
  EXPECT_EQ(a.tool_calls[0].arguments, R"({"command":"ls"})");
  // Tool results first, then the user's text: two engine messages for one native one.
  ASSERT_EQ(r->messages[2].engine.size(), 2u);
  EXPECT_EQ(r->messages[2].engine[0].role, Role::kTool);
  EXPECT_EQ(r->messages[2].engine[0].tool_call_id, "toolu_1");
  EXPECT_EQ(r->messages[2].engine[0].PlainText(), "a.py\nb.py");
  EXPECT_EQ(r->messages[2].engine[1].PlainText(), "go on");
}

TEST(AnthropicWire, TheHashIgnoresCacheMarkersAndThinkingButNotText) {
  Result<ParsedRequest> r = ParseAnthropicRequest(kToolLoop);
  ASSERT_TRUE(r.ok());
  json::value moved = r->messages[2].native;
  moved.get_object()["content"].get_array()[1].get_object().erase("cache_control");
  Result<std::vector<Message>> engine = AnthropicToEngine(moved, "m");
  ASSERT_TRUE(engine.ok());
  EXPECT_EQ(CanonicalHash(*engine), r->messages[2].hash);
  json::value edited = r->messages[2].native;
  edited.get_object()["content"].get_array()[1].get_object()["text"] = "go back";
  engine = AnthropicToEngine(edited, "m");
  ASSERT_TRUE(engine.ok());
  EXPECT_NE(CanonicalHash(*engine), r->messages[2].hash);
}

TEST(AnthropicWire, RefusesWhatIsNotAMessagesRequestNamingTheField) {
  EXPECT_EQ(ParseAnthropicRequest("[1]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAnthropicRequest(R"({"messages":[]})").status().field(), "model");
  Result<ParsedRequest> r = ParseAnthropicRequest(
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"tool_result"}]}]})");
  EXPECT_EQ(r.status().field(), "messages[0].content[0].tool_use_id");
  r = ParseAnthropicRequest(R"({"model":"m","messages":[{"role":"robot","content":"x"}]})");
  EXPECT_EQ(r.status().field(), "messages[0].role");
}

// A max_tokens that is not an integer names no output reserve (the model's own is used);
// the upstream answers for the field. It used to throw out of the parse: a 500.
TEST(AnthropicWire, AMaxTokensThatIsNotAnIntegerNamesNone) {
  struct Case {
    const char* value;
    int64_t max_tokens;
  };
  for (const Case& c : {Case{"1.5", 0}, Case{"1e30", 0}, Case{"\"4000\"", 0}, Case{"-2", -2},
                        Case{"32000", 32000}}) {
    Result<ParsedRequest> r = ParseAnthropicRequest(
        std::string(R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":)") +
        c.value + "}");
    ASSERT_TRUE(r.ok()) << c.value << ": " << r.status().ToString();
    EXPECT_EQ(r->max_tokens, c.max_tokens) << c.value;
  }
}

TEST(AnthropicWire, UntouchedMessagesGoOutJsonEqualAndEverythingElseIsKept) {
  Result<ParsedRequest> r = ParseAnthropicRequest(kToolLoop);
  ASSERT_TRUE(r.ok());
  Outgoing out;
  for (size_t i = 0; i < 3; ++i) out.items.push_back(OutItem{OutItem::Kind::kNative, i, {}});
  json::value sent = json::parse(BuildAnthropicRequest(*r, out));
  json::value original = json::parse(kToolLoop);
  EXPECT_EQ(sent, original);  // nothing to change: the same document
}

// With the places of the list's elements in the agent's body, an unchanged message goes
// out as the agent's own bytes (its spacing and key order too), and so does everything
// outside the list; the others are written.
TEST(AnthropicWire, UntouchedMessagesGoOutAsTheAgentsOwnBytesWhenTheirPlacesAreKnown) {
  const std::string body =
      "{\"model\":\"m\", \"system\" : [{\"type\":\"text\",\"text\":\"Be brief.\"}],"
      "\"max_tokens\":10,\"messages\":[ {\"content\" : \"fix it\",  \"role\":\"user\"},"
      "{\"role\":\"assistant\",\"content\":\"ok\"}, {\"role\":\"user\",\"content\":\"now\"} ],"
      " \"tools\":[ ] }";
  Result<ParsedRequest> r = ParseAnthropicRequest(body);
  ASSERT_TRUE(r.ok());
  const std::vector<std::pair<size_t, size_t>> spans = {
      {body.find("{\"content\" :"), body.find(",{\"role\":\"assistant")},
      {body.find("{\"role\":\"assistant"), body.find(", {\"role\":\"user\",\"content\":\"now")},
      {body.find("{\"role\":\"user\",\"content\":\"now"), body.find(" ],")}};
  Outgoing out;
  out.raw = RawList{body, &spans};
  out.items.push_back(OutItem{OutItem::Kind::kNative, 0, {}});
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 1, {Message::Assistant("OK.")}});
  out.items.push_back(OutItem{OutItem::Kind::kNative, 2, {}});
  const std::string sent = BuildAnthropicRequest(*r, out);
  EXPECT_NE(sent.find("[{\"content\" : \"fix it\",  \"role\":\"user\"},"), std::string::npos) << sent;
  EXPECT_NE(sent.find(",{\"role\":\"user\",\"content\":\"now\"}]"), std::string::npos) << sent;
  json::value parsed = json::parse(sent);
  EXPECT_EQ(parsed.at("messages").at(1).at("content").at(0).at("text"), "OK.");
  // The same document as without the places.
  Outgoing written = out;
  written.raw = RawList{};
  EXPECT_EQ(parsed, json::parse(BuildAnthropicRequest(*r, written)));

  // The list's brackets known too: the other members are the agent's bytes.
  out.raw.open = body.find('[', body.find("\"messages\""));
  out.raw.close = body.find(" ],") + 1;
  const std::string whole = BuildAnthropicRequest(*r, out);
  EXPECT_EQ(whole.substr(0, out.raw.open), body.substr(0, out.raw.open));
  EXPECT_TRUE(whole.ends_with("], \"tools\":[ ] }")) << whole;
  EXPECT_EQ(json::parse(whole), parsed);
}

TEST(AnthropicWire, InjectedSummariesComeFirstWithOneCacheBreakpointAndTheSystemIsUntouched) {
  Result<ParsedRequest> r = ParseAnthropicRequest(kToolLoop);
  ASSERT_TRUE(r.ok());
  Outgoing out;
  out.items.push_back(OutItem{OutItem::Kind::kInjected, 0, {Message::User("[Summary] earlier")}});
  out.items.push_back(OutItem{OutItem::Kind::kNative, 1, {}});
  Message pruned = Message::ToolResult("toolu_1", "[pruned]");
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 2, {pruned, r->messages[2].engine[1]}});
  json::value sent = json::parse(BuildAnthropicRequest(*r, out));
  const json::array& messages = sent.at("messages").get_array();
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].at("role"), "user");
  EXPECT_EQ(messages[0].at("content").at(0).at("text"), "[Summary] earlier");
  EXPECT_EQ(messages[0].at("content").at(0).at("cache_control").at("type"), "ephemeral");
  EXPECT_EQ(messages[1], r->messages[1].native);  // signature and all
  const json::array& rewritten = messages[2].at("content").get_array();
  ASSERT_EQ(rewritten.size(), 2u);
  EXPECT_EQ(rewritten[0].at("type"), "tool_result");
  EXPECT_EQ(rewritten[0].at("tool_use_id"), "toolu_1");
  EXPECT_EQ(rewritten[0].at("content"), "[pruned]");
  EXPECT_EQ(sent.at("system"), json::parse(kToolLoop).at("system"));
  EXPECT_EQ(sent.at("x_unknown"), json::parse("[1,2]"));
  EXPECT_LE(CountCacheMarkers(sent), 4);
}

// An assistant message the engine cut (a file written whole, in an oversized last turn)
// goes out with its thinking and signature, and each tool_use the agent's own block (its
// cache marker, a field of its own) with the input as cut.
TEST(AnthropicWire, ACutToolUseKeepsItsOwnBlockWithTheInputAsCut) {
  constexpr std::string_view kWrite = R"({"model": "m", "max_tokens": 10, "messages": [
    {"role": "user", "content": "write it"},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "write", "signature": "sig-9"},
      {"type": "tool_use", "id": "toolu_w", "name": "Write", "caller": {"type": "direct"},
       "input": {"file_path": "/r/a.py", "content": "a very long file"},
       "cache_control": {"type": "ephemeral"}}]}]})";
  Result<ParsedRequest> r = ParseAnthropicRequest(kWrite);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Message cut = r->messages[1].engine.at(0);
  cut.tool_calls.at(0).arguments = R"({"file_path":"/r/a.py","content":"a [...truncated 3 tokens...]"})";
  Outgoing out;
  out.items.push_back(OutItem{OutItem::Kind::kNative, 0, {}});
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 1, {cut}});
  json::value sent = json::parse(BuildAnthropicRequest(*r, out));
  const json::array& blocks = sent.at("messages").at(1).at("content").as_array();
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].at("signature"), "sig-9");
  EXPECT_EQ(blocks[1], json::parse(R"({"type": "tool_use", "id": "toolu_w", "name": "Write",
      "caller": {"type": "direct"},
      "input": {"file_path": "/r/a.py", "content": "a [...truncated 3 tokens...]"},
      "cache_control": {"type": "ephemeral"}})"));
}

// A tool result the engine pruned or cut goes out as the agent's own block: a failed
// command's `is_error` and its cache marker stay, the content is the engine's (the model
// read a cut failure as a success before); the blocks beside it go out as they came
// (an image and a reminder with the marker became one text block before).
TEST(AnthropicWire, ACutToolResultKeepsItsErrorFlagAndMarkerAndTheBlocksBesideIt) {
  constexpr std::string_view kFailed = R"({"model": "m", "max_tokens": 10, "messages": [
    {"role": "user", "content": "run the tests"},
    {"role": "assistant", "content": [
      {"type": "tool_use", "id": "toolu_t", "name": "Bash", "input": {"command": "pytest"}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_t", "is_error": true,
       "content": [{"type": "text", "text": "FAILED tests/test_a.py::test_x - long log"}],
       "cache_control": {"type": "ephemeral"}},
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
      {"type": "text", "text": "keep going", "cache_control": {"type": "ephemeral"}}]}]})";
  Result<ParsedRequest> r = ParseAnthropicRequest(kFailed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<Message> kept = r->messages[2].engine;
  ASSERT_EQ(kept.size(), 2u);
  ASSERT_EQ(kept[0].role, Role::kTool);
  kept[0].text = "FAILED tests/test_a.py::test_x [...truncated 2 tokens...]";
  kept[0].content_form = ContentForm::kString;
  kept[0].parts.clear();
  Outgoing out;
  for (size_t i = 0; i < 2; ++i) out.items.push_back(OutItem{OutItem::Kind::kNative, i, {}});
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 2, kept});
  json::value sent = json::parse(BuildAnthropicRequest(*r, out));
  const json::array& blocks = sent.at("messages").at(2).at("content").as_array();
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0], json::parse(R"({"type": "tool_result", "tool_use_id": "toolu_t",
      "is_error": true, "content": "FAILED tests/test_a.py::test_x [...truncated 2 tokens...]",
      "cache_control": {"type": "ephemeral"}})"));
  // The blocks beside it, unchanged, go out as they came: the image, the marker.
  EXPECT_EQ(blocks[1], json::parse(kFailed).at("messages").at(2).at("content").at(1));
  EXPECT_EQ(blocks[2], json::parse(R"({"type": "text", "text": "keep going",
      "cache_control": {"type": "ephemeral"}})"));

  // A user part the engine cut (its text; a cut keeps the image: WithText) is its kept
  // text, then the agent's image.
  ASSERT_EQ(kept[1].ImageCount(), 1u);
  kept[1].parts = {{ContentPart::Kind::kText, "keep [...truncated 1 tokens...]", {}, {}},
                   kept[1].parts.at(0)};
  out.items.back() = OutItem{OutItem::Kind::kRewritten, 2, kept};
  sent = json::parse(BuildAnthropicRequest(*r, out));
  const json::array& cut = sent.at("messages").at(2).at("content").as_array();
  ASSERT_EQ(cut.size(), 3u);
  EXPECT_EQ(cut[1], json::parse(R"({"type": "text",
      "text": "keep [...truncated 1 tokens...]"})"));
  EXPECT_EQ(cut[2], json::parse(kFailed).at("messages").at(2).at("content").at(1));
}

// Images and documents that are not text are media to the engine, counted at the
// counter's cost per image, in a tool result (a screenshot: it counted two tokens as
// "[image]" before) as beside it (a base64 PDF: its JSON was counted as text before);
// a document of text stays text. A cut screenshot result keeps its image.
TEST(AnthropicWire, ImagesAndDocumentsAreMediaPartsNotTheirJson) {
  const std::string pdf(40000, 'J');
  const std::string body = R"({"model": "m", "max_tokens": 10, "messages": [
    {"role": "user", "content": [
      {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
       "data": ")" + pdf + R"("}},
      {"type": "document", "source": {"type": "text", "media_type": "text/plain",
       "data": "plain notes"}},
      {"type": "text", "text": "read these"}]},
    {"role": "assistant", "content": [
      {"type": "tool_use", "id": "toolu_s", "name": "screenshot", "input": {}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_s", "content": [
        {"type": "text", "text": "page loaded: 200 OK"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
         "data": "iVBORw0KGgoAAAANSUhEUgAAA+gAAAPoCAYAAAA="}}]}]}]})";
  Result<ParsedRequest> r = ParseAnthropicRequest(body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Message& user = r->messages[0].engine.at(0);
  ASSERT_EQ(user.parts.size(), 3u);
  EXPECT_EQ(user.parts[0].kind, ContentPart::Kind::kImage);
  EXPECT_EQ(user.parts[0].image_url, "anthropic:document");
  EXPECT_EQ(user.parts[1].kind, ContentPart::Kind::kText);
  EXPECT_NE(user.parts[1].text.find("plain notes"), std::string::npos);
  EXPECT_EQ(user.PlainText().find(pdf.substr(0, 100)), std::string::npos);

  const Message& shot = r->messages[2].engine.at(0);
  ASSERT_EQ(shot.role, Role::kTool);
  EXPECT_EQ(shot.PlainText(), "page loaded: 200 OK");
  ASSERT_EQ(shot.ImageCount(), 1u);
  // Its size read from the PNG's header (1000 x 1000): 1,334 tokens by Anthropic's rule.
  EXPECT_EQ(shot.parts.at(1).image_url, "anthropic:image;1000x1000");
  const MessageTokenCounter counter(std::make_shared<HeuristicTokenCounter>());
  Message text_only = shot;
  text_only.parts.pop_back();
  EXPECT_EQ(counter.CountMessage(shot) - counter.CountMessage(text_only), 1334);

  // Cut, the result keeps its image after the kept text; pruned, it is the stub alone.
  Message cut = shot;
  cut.parts[0].text = "page [...truncated 3 tokens...]";
  Outgoing out;
  for (size_t i = 0; i < 2; ++i) out.items.push_back(OutItem{OutItem::Kind::kNative, i, {}});
  out.items.push_back(OutItem{OutItem::Kind::kRewritten, 2, {cut}});
  json::value sent = json::parse(BuildAnthropicRequest(*r, out));
  EXPECT_EQ(sent.at("messages").at(2).at("content").at(0).at("content"), json::parse(R"([
      {"type": "text", "text": "page [...truncated 3 tokens...]"},
      {"type": "image", "source": {"type": "base64", "media_type": "image/png",
       "data": "iVBORw0KGgoAAAANSUhEUgAAA+gAAAPoCAYAAAA="}}])"));
  out.items.back() =
      OutItem{OutItem::Kind::kRewritten, 2, {Message::ToolResult("toolu_s", "[pruned]")}};
  sent = json::parse(BuildAnthropicRequest(*r, out));
  EXPECT_EQ(sent.at("messages").at(2).at("content").at(0).at("content"), "[pruned]");
}

TEST(AnthropicWire, NoBreakpointIsAddedWhenTheRequestHoldsFourAlready) {
  std::string body = std::string(kToolLoop);
  json::value v = json::parse(body);
  json::array& system = v.at("system").as_array();
  for (int i = 0; i < 2; ++i) {
    system.push_back(json::object{{"type", "text"}, {"text", "more"},
                                  {"cache_control", {{"type", "ephemeral"}}}});
  }
  Result<ParsedRequest> r = ParseAnthropicRequest(json::serialize(v));
  ASSERT_TRUE(r.ok());
  Outgoing out;
  out.items.push_back(OutItem{OutItem::Kind::kInjected, 0, {Message::User("summary")}});
  for (size_t i = 0; i < 3; ++i) out.items.push_back(OutItem{OutItem::Kind::kNative, i, {}});
  json::value sent = json::parse(BuildAnthropicRequest(*r, out));
  EXPECT_EQ(CountCacheMarkers(sent), 4);
  EXPECT_FALSE(sent.at("messages").at(0).at("content").at(0).as_object().contains("cache_control"));
}

// The markers counted against the API's four are those of what is sent: the system's, the
// tools' and those of the messages kept, not of a message left out.
TEST(AnthropicWire, TheMarkersOfMessagesLeftOutDoNotCountAgainstTheFour) {
  json::value v = json::parse(kToolLoop);
  v.at("tools").as_array().push_back(json::object{{"name", "extra"},
                                                  {"input_schema", json::object{}},
                                                  {"cache_control", {{"type", "ephemeral"}}}});
  json::array& first = v.at("messages").at(0).at("content").as_array();
  first.at(0).as_object()["cache_control"] = {{"type", "ephemeral"}};
  Result<ParsedRequest> r = ParseAnthropicRequest(json::serialize(v));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->field_cache_markers, 2);  // one in the system, one in the tools
  ASSERT_EQ(CountCacheMarkers(v), 4);
  EXPECT_EQ(r->messages[0].cache_markers, 1);
  const auto injected_marker = [&](std::vector<size_t> kept) {
    Outgoing out;
    out.mark_injected_for_cache = true;
    out.items.push_back(OutItem{OutItem::Kind::kInjected, 0, {Message::User("summary")}});
    for (size_t i : kept) out.items.push_back(OutItem{OutItem::Kind::kNative, i, {}});
    json::value sent = json::parse(BuildAnthropicRequest(*r, out));
    EXPECT_LE(CountCacheMarkers(sent), 4);
    return sent.at("messages").at(0).at("content").at(0).as_object().contains("cache_control");
  };
  EXPECT_FALSE(injected_marker({0, 1, 2}));  // four already
  EXPECT_TRUE(injected_marker({1, 2}));      // the first message's marker is not sent
}

TEST(AnthropicWire, AHistoryThatStartsWithAnAnswerGetsAUserMessageFirst) {
  Result<ParsedRequest> r = ParseAnthropicRequest(kToolLoop);
  ASSERT_TRUE(r.ok());
  Outgoing out;
  out.items.push_back(OutItem{OutItem::Kind::kNative, 1, {}});
  out.items.push_back(OutItem{OutItem::Kind::kNative, 2, {}});
  json::value sent = json::parse(BuildAnthropicRequest(*r, out));
  EXPECT_EQ(sent.at("messages").at(0).at("role"), "user");
  EXPECT_EQ(sent.at("messages").as_array().size(), 3u);
}

// An SSE stream as the API sends it, cut into pieces at awkward places.
constexpr std::string_view kStream =
    "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
    "\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":"
    "{\"input_tokens\":10,\"cache_read_input_tokens\":90,\"output_tokens\":1}}}\r\n\r\n"
    "event: ping\ndata: {\"type\":\"ping\"}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
    "{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
    "{\"type\":\"signature_delta\",\"signature\":\"SIG\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
    "{\"type\":\"text_delta\",\"text\":\"Run\"}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
    "{\"type\":\"text_delta\",\"text\":\"ning.\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,"
    "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"Bash\",\"input\":{}}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":"
    "{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"comm\"}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":"
    "{\"type\":\"input_json_delta\",\"partial_json\":\"and\\\": \\\"ls -la\\\"}\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
    "\"tool_use\"},\"usage\":{\"output_tokens\":42}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

TEST(AnthropicWire, AStreamIsRebuiltIntoTheMessageTheAgentWillSendBack) {
  for (size_t cut : {size_t{1}, size_t{7}, size_t{64}, kStream.size()}) {
    std::unique_ptr<AnswerReader> reader = MakeAnthropicReader(true);
    for (size_t at = 0; at < kStream.size(); at += cut) reader->Feed(kStream.substr(at, cut));
    Result<Rebuilt> r = reader->Finish();
    ASSERT_TRUE(r.ok()) << "pieces of " << cut << ": " << r.status().ToString();
    EXPECT_EQ(r->id, "msg_1");
    EXPECT_EQ(r->stop_reason, "tool_use");
    EXPECT_EQ(r->input_tokens, 100);
    EXPECT_EQ(r->output_tokens, 42);
    const json::array& content = r->native.at("content").get_array();
    ASSERT_EQ(content.size(), 3u);
    EXPECT_EQ(content[0].at("thinking"), "hmm");
    EXPECT_EQ(content[0].at("signature"), "SIG");
    EXPECT_EQ(content[1].at("text"), "Running.");
    EXPECT_EQ(content[2].at("input"), json::parse(R"({"command":"ls -la"})"));
    ASSERT_EQ(r->engine.size(), 1u);
    EXPECT_EQ(r->engine[0].text, "Running.");
    EXPECT_EQ(r->engine[0].tool_calls.at(0).arguments, R"({"command":"ls -la"})");
  }
}

TEST(AnthropicWire, TextDeltasWithEscapesOrAnotherLayoutAreReadAsJson) {
  const std::string head =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","
      "\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
  const auto delta = [](std::string_view text_json) {
    return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
           "\"delta\":{\"type\":\"text_delta\",\"text\":" +
           std::string(text_json) + "}}\n\n";
  };
  const std::string stream =
      head + delta(R"("say \"hi\"\n")") + delta(R"("\u00e9t\u00e9 \ud83d\ude00 \\ ")") +
      // Another layout (spaces): read by the general path.
      "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, "
      "\"delta\": {\"type\": \"text_delta\", \"text\": \"end\"}}\n\n" +
      delta(R"("a\"}}")") +
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  std::unique_ptr<AnswerReader> reader = MakeAnthropicReader(true);
  reader->Feed(stream);
  Result<Rebuilt> r = reader->Finish();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->native.at("content").at(0).at("text"),
            "say \"hi\"\n\xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80 \\ enda\"}}");
}

TEST(AnthropicWire, AStreamCutBeforeMessageStopIsNotAMessage) {
  std::unique_ptr<AnswerReader> reader = MakeAnthropicReader(true);
  reader->Feed(kStream.substr(0, kStream.size() / 2));
  EXPECT_FALSE(reader->Finish().ok());
  EXPECT_GT(reader->partial_chars(), 0u);
}

TEST(AnthropicWire, ContextLengthRefusalsAreRecognised) {
  EXPECT_TRUE(IsAnthropicContextLengthError(
      400, AnthropicError("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")));
  EXPECT_FALSE(IsAnthropicContextLengthError(400, AnthropicError("invalid_request_error", "bad")));
  EXPECT_FALSE(IsAnthropicContextLengthError(429, "prompt is too long"));
}

TEST(SseParser, JoinsDataLinesSkipsCommentsAndDispatchesTheLastEventAtTheEnd) {
  std::vector<SseEvent> events;
  SseParser p([&](const SseEvent& e) { events.push_back(e); });
  p.Feed(": keep-alive\n\nevent: a\ndata: 1\ndata:2\n\nretry: 5\ndata: [DONE]");
  p.Finish();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].name, "a");
  EXPECT_EQ(events[0].data, "1\n2");
  EXPECT_EQ(events[1].data, "[DONE]");
}

TEST(SseParser, AnySplitOfTheBodyAndAnyLineEndGiveTheSameEvents) {
  const std::string body =
      "event: message_start\r\ndata: {\"a\":1}\r\n\r\n: ping\revent: x\rdata: 2\r\rdata: "
      "three\ndata: 3b\n\nevent: message_stop\r\ndata: {}\r\n\r\n";
  const auto events_of = [&](const std::vector<std::string_view>& pieces) {
    std::vector<std::pair<std::string, std::string>> out;
    SseParser p([&](const SseEvent& e) { out.emplace_back(e.name, e.data); });
    for (std::string_view piece : pieces) p.Feed(piece);
    p.Finish();
    return out;
  };
  const std::vector<std::pair<std::string, std::string>> want = {
      {"message_start", "{\"a\":1}"}, {"x", "2"}, {"", "three\n3b"}, {"message_stop", "{}"}};
  EXPECT_EQ(events_of({body}), want);
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < body.size(); ++i) bytes.push_back(std::string_view(body).substr(i, 1));
  EXPECT_EQ(events_of(bytes), want);
  for (size_t cut = 0; cut <= body.size(); ++cut) {
    const std::string_view b(body);
    EXPECT_EQ(events_of({b.substr(0, cut), b.substr(cut)}), want) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace missy::proxy

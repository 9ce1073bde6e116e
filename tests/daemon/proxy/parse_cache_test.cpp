// ParseCache (daemon/proxy/parse_cache.cpp): a turn that resends the conversation with
// more at its end is parsed from the first message that changed, and the result equals
// the whole parse of the body.
#include "daemon/proxy/parse_cache.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "daemon/proxy/anthropic_wire.h"
#include "daemon/proxy/chat_wire.h"
#include "daemon/proxy/responses_wire.h"

namespace missy::proxy {
namespace {

namespace json = boost::json;

json::object ToolLoop(int i) {
  return json::object{
      {"role", "assistant"},
      {"content", json::array{json::object{{"type", "text"}, {"text", "step " + std::to_string(i)}},
                              json::object{{"type", "tool_use"},
                                           {"id", "toolu_" + std::to_string(i)},
                                           {"name", "bash"},
                                           {"input", {{"cmd", "ls \"dir " + std::to_string(i) + "\""}}}}}}};
}

json::object ToolResult(int i) {
  return json::object{
      {"role", "user"},
      {"content", json::array{json::object{{"type", "tool_result"},
                                           {"tool_use_id", "toolu_" + std::to_string(i)},
                                           {"content", "out [" + std::to_string(i) + "] {\\}"}}}}};
}

// An Anthropic body of `loops` tool loops, with the cache marker on the last block and
// `messages` before the other fields (as Claude Code sends it).
std::string AnthropicBody(int loops, bool marker = true) {
  json::array messages{json::object{{"role", "user"}, {"content", "fix the build"}}};
  for (int i = 0; i < loops; ++i) {
    messages.push_back(ToolLoop(i));
    messages.push_back(ToolResult(i));
  }
  if (marker) {
    json::array& blocks = messages.back().get_object()["content"].get_array();
    blocks.back().get_object()["cache_control"] = {{"type", "ephemeral"}};
  }
  json::object body;
  body["model"] = "claude-sonnet-4-5";
  body["messages"] = std::move(messages);
  body["system"] = "You are an agent.";
  body["tools"] = json::array{json::object{{"name", "bash"}, {"input_schema", json::object{}}}};
  body["max_tokens"] = 32000;
  body["stream"] = true;
  return json::serialize(body);
}

// The cached parse equals the whole one: fields, the body with its list's placeholders,
// every message's native JSON, engine form and hash.
void ExpectSameAsWhole(const ParsedBody& got, const Result<ParsedRequest>& whole) {
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(got.request.model, whole->model);
  EXPECT_EQ(got.request.max_tokens, whole->max_tokens);
  EXPECT_EQ(got.request.stream, whole->stream);
  EXPECT_EQ(got.request.system_text, whole->system_text);
  EXPECT_EQ(got.request.tools_json, whole->tools_json);
  EXPECT_EQ(got.request.leading, whole->leading);
  EXPECT_EQ(got.request.field_cache_markers, whole->field_cache_markers);
  EXPECT_EQ(json::serialize(got.request.body), json::serialize(whole->body));
  ASSERT_EQ(got.request.messages.size(), whole->messages.size());
  for (size_t i = 0; i < whole->messages.size(); ++i) {
    EXPECT_EQ(got.request.messages[i].native, whole->messages[i].native) << "message " << i;
    EXPECT_EQ(got.request.messages[i].hash, whole->messages[i].hash) << "message " << i;
    EXPECT_EQ(got.request.messages[i].cache_markers, whole->messages[i].cache_markers)
        << "message " << i;
    ASSERT_EQ(got.request.messages[i].engine.size(), whole->messages[i].engine.size());
  }
}

TEST(ScanList, FindsEachElementOfTheMemberArrayThroughStringsAndNesting) {
  const std::string text =
      R"( {"a": "x]\"[,", "messages" : [ {"b":[1,{"c":"}"}]} , "s\\" ,3, null ], "z": 1})";
  size_t open = 0;
  std::vector<std::pair<size_t, size_t>> spans;
  ASSERT_TRUE(ScanList(text, "messages", open, spans));
  EXPECT_EQ(text[open], '[');
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(text.substr(spans[0].first, spans[0].second - spans[0].first), R"({"b":[1,{"c":"}"}]})");
  EXPECT_EQ(text.substr(spans[1].first, spans[1].second - spans[1].first), R"("s\\")");
  EXPECT_EQ(text.substr(spans[2].first, spans[2].second - spans[2].first), "3");
  EXPECT_EQ(text.substr(spans[3].first, spans[3].second - spans[3].first), "null");
  EXPECT_FALSE(ScanList(R"({"messages": [1, 2)", "messages", open, spans));
  EXPECT_FALSE(ScanList(R"({"messages": {}})", "messages", open, spans));
  EXPECT_FALSE(ScanList(R"([1])", "messages", open, spans));
  EXPECT_TRUE(ScanList(R"({"messages": []})", "messages", open, spans));
  EXPECT_TRUE(spans.empty());
}

TEST(ParseCache, ANextTurnParsesOnlyFromTheMessageWhoseCacheMarkerMoved) {
  ParseCache cache;
  const std::string first = AnthropicBody(50);
  Result<ParsedBody> a = cache.Parse(Api::kAnthropic, first, ParseAnthropicRequest);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->reused, 0u);
  ExpectSameAsWhole(*a, ParseAnthropicRequest(first));
  cache.Keep(first, std::move(*a));
  EXPECT_EQ(cache.entries(), 1u);

  // Two more messages; the marker moved from message 100 to message 102.
  const std::string next = AnthropicBody(51);
  Result<ParsedBody> b = cache.Parse(Api::kAnthropic, next, ParseAnthropicRequest);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->reused, 100u);  // messages 0..99; 100 lost its marker, 101 and 102 are new
  ExpectSameAsWhole(*b, ParseAnthropicRequest(next));
  EXPECT_EQ(cache.entries(), 0u);  // taken out while in use
  cache.Keep(next, std::move(*b));

  // The same request again: everything but nothing is new.
  Result<ParsedBody> c = cache.Parse(Api::kAnthropic, next, ParseAnthropicRequest);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->reused, 103u);
  ExpectSameAsWhole(*c, ParseAnthropicRequest(next));
}

TEST(ParseCache, AnEditedEarlyMessageOrFieldsBeforeTheListFallBackToWhatChanged) {
  ParseCache cache;
  const std::string first = AnthropicBody(20);
  cache.Keep(first, *cache.Parse(Api::kAnthropic, first, ParseAnthropicRequest));
  // An edit inside message 5: messages 0..4 are reused.
  std::string edited = AnthropicBody(21);
  const size_t at = edited.find("step 2");
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, 6, "STEP 2");
  Result<ParsedBody> b = cache.Parse(Api::kAnthropic, edited, ParseAnthropicRequest);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->reused, 5u);
  ExpectSameAsWhole(*b, ParseAnthropicRequest(edited));
  cache.Keep(edited, std::move(*b));

  // Another model: the change is before the list, so the body is parsed whole.
  std::string other = AnthropicBody(21);
  other.replace(other.find("claude-sonnet-4-5"), 17, "claude-opus-4-1xx");
  Result<ParsedBody> c = cache.Parse(Api::kAnthropic, other, ParseAnthropicRequest);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->reused, 0u);
  ExpectSameAsWhole(*c, ParseAnthropicRequest(other));
}

// The bytes the counting parse was given.
size_t g_parsed_bytes = 0;
Result<ParsedRequest> CountingParse(std::string_view body) {
  g_parsed_bytes += body.size();
  return ParseAnthropicRequest(body);
}

// The system prompt and tools, resent every turn before or after the list (Claude Code
// sends them after it), are not parsed again while their bytes stay the same; once they
// change, they are, and either way the result is the whole parse's.
TEST(ParseCache, FieldsAroundTheListAreParsedAgainOnlyWhenTheirBytesChanged) {
  const std::string tools(20000, 't');
  for (bool fields_first : {false, true}) {
    SCOPED_TRACE(fields_first ? "system and tools before the list" : "after the list");
    auto body_with = [&](int loops, const std::string& system) {
      json::object parsed = json::parse(AnthropicBody(loops)).as_object();
      json::object v;
      v["model"] = parsed["model"];
      if (!fields_first) v["messages"] = parsed["messages"];
      v["system"] = system;
      v["tools"] = json::array{json::object{{"name", "bash"},
                                            {"description", tools},
                                            {"cache_control", {{"type", "ephemeral"}}}}};
      if (fields_first) v["messages"] = parsed["messages"];
      v["max_tokens"] = 32000;
      return json::serialize(v);
    };
    ParseCache cache;
    const std::string first = body_with(30, "You are an agent.");
    cache.Keep(first, *cache.Parse(Api::kAnthropic, first, CountingParse));
    const std::string next = body_with(31, "You are an agent.");
    g_parsed_bytes = 0;
    Result<ParsedBody> same_fields = cache.Parse(Api::kAnthropic, next, CountingParse);
    ASSERT_TRUE(same_fields.ok());
    EXPECT_EQ(same_fields->reused, 60u);
    EXPECT_LT(g_parsed_bytes, 2000u);  // the three changed messages, not the 20 KB of tools
    ExpectSameAsWhole(*same_fields, ParseAnthropicRequest(next));
    EXPECT_EQ(same_fields->request.field_cache_markers, 1);  // the tools' marker, kept
    // Where the list closes: what follows it is the rest of the body, as sent.
    const size_t close = ListCloseOf(next, *same_fields);
    ASSERT_LT(close, next.size());
    EXPECT_EQ(next.substr(close, 2), "],");  // the list is never the last member here
    EXPECT_EQ(next[same_fields->list_open], '[');
    cache.Keep(next, std::move(*same_fields));

    // Another system prompt after the list: parsed again. (Before the list, a change there
    // is a change before the first message: the body is parsed whole, as tested above.)
    if (fields_first) continue;
    const std::string other_system = body_with(32, "You are a careful agent.");
    g_parsed_bytes = 0;
    Result<ParsedBody> changed = cache.Parse(Api::kAnthropic, other_system, CountingParse);
    ASSERT_TRUE(changed.ok());
    EXPECT_EQ(changed->reused, 62u);
    EXPECT_GT(g_parsed_bytes, tools.size());
    ExpectSameAsWhole(*changed, ParseAnthropicRequest(other_system));
    EXPECT_EQ(json::serialize(changed->request.body.at("system")), "\"You are a careful agent.\"");
  }
}

// Shows `watch` all of `body` in pieces of `piece` bytes, as net does while it arrives.
void ArriveInPieces(BodyWatch& watch, std::string_view body, size_t piece) {
  for (size_t at = 0; at < body.size(); at += piece) watch.Arrived(at, body.substr(at, piece));
}

// A body compared while it arrives parses as one compared after: the same reuse, the same
// result, for an appended turn, an edit in the middle and an edit in the first bytes.
TEST(ParseCache, ABodyComparedAsItArrivesParsesAsOneComparedAfter) {
  const std::string first = AnthropicBody(40);
  std::string edited = AnthropicBody(41);
  edited.replace(edited.find("step 7"), 6, "STEP 7");
  std::string other_model = AnthropicBody(41);
  other_model.replace(other_model.find("claude-sonnet-4-5"), 17, "claude-opus-4-1xx");
  struct Case {
    std::string body;
    size_t reused;
  };
  for (const Case& c : {Case{AnthropicBody(41), 80u}, Case{edited, 15u}, Case{other_model, 0u}}) {
    for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, c.body.size()}) {
      ParseCache cache;
      EXPECT_EQ(cache.Watch(Api::kAnthropic), nullptr);  // nothing kept: nothing to compare
      cache.Keep(first, *cache.Parse(Api::kAnthropic, first, ParseAnthropicRequest));
      EXPECT_EQ(cache.Watch(Api::kChat), nullptr);  // another API's bodies are not compared
      std::shared_ptr<PrefixWatch> watch = cache.Watch(Api::kAnthropic);
      ASSERT_NE(watch, nullptr);
      ArriveInPieces(*watch, c.body, piece);
      Result<ParsedBody> got = cache.Parse(Api::kAnthropic, c.body, ParseAnthropicRequest, watch);
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(got->reused, c.reused) << "pieces of " << piece;
      ExpectSameAsWhole(*got, ParseAnthropicRequest(c.body));
    }
  }
}

// A watch that saw an edit arrive reuses the messages before it, and knows nothing of a
// body it did not compare with.
TEST(ParseCache, AWatchThatSawAnEditReusesOnlyTheMessagesBeforeIt) {
  ParseCache cache;
  const std::string first = AnthropicBody(10);
  cache.Keep(first, *cache.Parse(Api::kAnthropic, first, ParseAnthropicRequest));
  std::shared_ptr<PrefixWatch> watch = cache.Watch(Api::kAnthropic);
  ASSERT_NE(watch, nullptr);
  std::string changed = first;
  const size_t at = changed.find("step 3");
  changed[at] = 'S';
  ArriveInPieces(*watch, changed, 100);
  EXPECT_EQ(watch->Common(&first), std::nullopt);  // not a body it watched
  Result<ParsedBody> got = cache.Parse(Api::kAnthropic, changed, ParseAnthropicRequest, watch);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->reused, 7u);  // the user's task and messages 1..6; "step 3" is in message 7
  ExpectSameAsWhole(*got, ParseAnthropicRequest(changed));
}

TEST(ParseCache, AnErrorInANewMessageNamesItsPlaceInTheWholeList) {
  ParseCache cache;
  const std::string first = AnthropicBody(10, false);
  cache.Keep(first, *cache.Parse(Api::kAnthropic, first, ParseAnthropicRequest));
  json::value v = json::parse(first);
  v.get_object()["messages"].get_array().push_back(json::object{{"role", "robot"}, {"content", "x"}});
  const std::string bad = json::serialize(v);
  Result<ParsedBody> b = cache.Parse(Api::kAnthropic, bad, ParseAnthropicRequest);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().ToString(), ParseAnthropicRequest(bad).status().ToString());
  EXPECT_NE(b.status().ToString().find("messages[21]"), std::string::npos)
      << b.status().ToString();
}

TEST(ParseCache, ChatKeepsItsLeadingSystemMessagesOutOfTheHistory) {
  json::array messages{json::object{{"role", "system"}, {"content", "Be brief."}},
                       json::object{{"role", "user"}, {"content", "list files"}}};
  for (int i = 0; i < 5; ++i) {
    messages.push_back(json::object{
        {"role", "assistant"},
        {"content", nullptr},
        {"tool_calls", json::array{json::object{
                           {"id", "call_" + std::to_string(i)},
                           {"type", "function"},
                           {"function", {{"name", "sh"}, {"arguments", "{\"c\":\"ls\"}"}}}}}}});
    messages.push_back(json::object{
        {"role", "tool"}, {"tool_call_id", "call_" + std::to_string(i)}, {"content", "a.txt"}});
  }
  const auto body = [&](size_t n) {
    json::array list(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(n));
    return json::serialize(json::object{{"messages", list}, {"model", "gpt-4o"}, {"stream", false}});
  };
  ParseCache cache;
  const std::string first = body(8);
  cache.Keep(first, *cache.Parse(Api::kChat, first, ParseChatRequest));
  for (size_t n : {size_t{10}, size_t{12}}) {
    const std::string next = body(n);
    Result<ParsedBody> b = cache.Parse(Api::kChat, next, ParseChatRequest);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->reused, n - 3);  // every history message of the previous turn
    ExpectSameAsWhole(*b, ParseChatRequest(next));
    cache.Keep(next, std::move(*b));
  }
}

TEST(ParseCache, ResponsesBodiesAreAlwaysParsedWholeAndNeverKept) {
  const std::string body =
      R"({"model":"gpt-5","store":false,"input":[{"role":"user","content":"hi"}]})";
  ParseCache cache;
  Result<ParsedBody> a = cache.Parse(Api::kResponses, body, ParseResponsesRequest);
  ASSERT_TRUE(a.ok());
  cache.Keep(body, std::move(*a));
  EXPECT_EQ(cache.entries(), 0u);
}

TEST(ParseCache, KeepsAtMostItsBoundLeastRecentlyKeptOut) {
  ParseCache cache;
  for (size_t i = 0; i < ParseCache::kMaxEntries + 3; ++i) {
    std::string body = AnthropicBody(1);
    body.replace(body.find("fix the build"), 13, "task " + std::to_string(1000 + i) + "...");
    cache.Keep(body, *cache.Parse(Api::kAnthropic, body, ParseAnthropicRequest));
  }
  EXPECT_EQ(cache.entries(), ParseCache::kMaxEntries);
}

TEST(ParseCache, ItsMemoryIsBoundedByTheSizeOfTheBodiesItKeeps) {
  // Bodies whose parsed form would take a third of the bound each: two fit, not three.
  const size_t size = ParseCache::kMaxBytes / ParseCache::kMemoryPerByte / 3 + 1024;
  ParseCache cache;
  for (int i = 0; i < 3; ++i) {
    const std::string body = json::serialize(json::object{
        {"model", "claude-sonnet-4-5"},
        {"messages", json::array{json::object{
                         {"role", "user"},
                         {"content", std::to_string(i) + std::string(size, 'x')}}}}});
    cache.Keep(body, *cache.Parse(Api::kAnthropic, body, ParseAnthropicRequest));
  }
  EXPECT_EQ(cache.entries(), 2u);
  // One alone over the bound is never kept.
  const std::string huge = json::serialize(json::object{
      {"model", "m"},
      {"messages", json::array{json::object{
                       {"role", "user"},
                       {"content", std::string(ParseCache::kMaxBytes / ParseCache::kMemoryPerByte, 'y')}}}}});
  ParseCache alone;
  alone.Keep(huge, *alone.Parse(Api::kAnthropic, huge, ParseAnthropicRequest));
  EXPECT_EQ(alone.entries(), 0u);
}

}  // namespace
}  // namespace missy::proxy

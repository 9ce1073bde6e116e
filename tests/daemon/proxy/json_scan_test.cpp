// The JSON scan (daemon/proxy/json_scan.h): values skipped through strings and nesting,
// and a request body's member named twice found, so that the proxy refuses a body whose
// meaning depends on which of the two a parser keeps.
#include "daemon/proxy/json_scan.h"

#include <gtest/gtest.h>

#include <string>

#include "daemon/proxy/anthropic_wire.h"
#include "daemon/proxy/chat_wire.h"
#include "daemon/proxy/parse_cache.h"
#include "daemon/proxy/responses_wire.h"

namespace missy::proxy {
namespace {

TEST(JsonScan, SkipsAValueThroughStringsEscapesAndNesting) {
  const std::string text = R"({"a":"x\"}]","b":[1,{"c":"\\"}]} tail)";
  EXPECT_EQ(SkipValue(text, 0), text.find(" tail"));
  EXPECT_EQ(SkipValue(R"("a\\" x)", 0), 5u);
  EXPECT_EQ(SkipValue("123,", 0), 3u);
  EXPECT_EQ(SkipValue(R"({"open": [1, 2)", 0), std::string::npos);
  EXPECT_EQ(SkipValue(R"("never closed)", 0), std::string::npos);
  EXPECT_EQ(SkipSpace(" \t\r\n x", 0), 5u);
}

// A body of 200,000 members is checked in one pass (a list of the names seen, searched
// for each, took 2 * 10^10 compares: a request held a worker for minutes).
TEST(JsonScan, ABodyOfManyMembersIsCheckedInOnePass) {
  std::string body = "{";
  for (int i = 0; i < 200000; ++i) body += "\"k" + std::to_string(i) + "\":0,";
  EXPECT_EQ(DuplicateMember(body + "\"k7\":1}"), "k7");
  body.back() = '}';
  EXPECT_EQ(DuplicateMember(body), "");
}

TEST(JsonScan, FindsAMemberOfTheTopLevelObjectNamedTwice) {
  EXPECT_EQ(DuplicateMember(R"({"model":"m","messages":[],"max_tokens":1,"messages":[]})"),
            "messages");
  // The same name written with an escape is the same member.
  EXPECT_EQ(DuplicateMember(R"({"messages":[], "messa\u0067es":[{"role":"user"}]})"), "messages");
  // Nested objects may repeat their parents' names, and strings may hold anything.
  EXPECT_EQ(DuplicateMember(R"({"messages":[{"messages":1,"x":"\"messages\":"}],"model":"m"})"),
            "");
  EXPECT_EQ(DuplicateMember(R"({})"), "");
  EXPECT_EQ(DuplicateMember(R"([{"a":1},{"a":1}])"), "");  // not an object: not read here
  EXPECT_EQ(DuplicateMember(R"({"a":1 "a":2})"), "");      // malformed: the parser says so
}

// A body with two message lists: the parser keeps the last, the parse cache's scan finds
// the first, and an upstream may read either. Every API refuses it, naming the member,
// whether it is parsed whole or after a turn it shares bytes with.
TEST(JsonScan, EveryApiRefusesABodyThatNamesAMemberTwice) {
  const std::string anthropic =
      R"({"model":"m","max_tokens":9,"messages":[{"role":"user","content":"a"}],)"
      R"("messages":[{"role":"user","content":"b"}]})";
  const std::string chat =
      R"({"model":"m","messages":[{"role":"user","content":"a"}],"stream":false,"stream":true})";
  const std::string responses = R"({"model":"m","input":"a","input":[],"store":false})";
  struct Case {
    ParseCache::FullParse parse;
    std::string body;
    std::string member;
  };
  for (const Case& c :
       {Case{ParseAnthropicRequest, anthropic, "messages"}, Case{ParseChatRequest, chat, "stream"},
        Case{ParseResponsesRequest, responses, "input"}}) {
    Result<ParsedRequest> r = c.parse(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().field(), c.member);
    EXPECT_NE(r.status().message().find("twice"), std::string::npos) << r.status().message();
  }

  // A turn that adds a second list after a kept turn's list grew: parsed from the kept
  // turn it would have read the first list (the scan's), whole the last (the parser's).
  ParseCache cache;
  const std::string kept =
      R"({"model":"m","messages":[{"role":"user","content":"a"},)"
      R"({"role":"assistant","content":"b"}]})";
  cache.Keep(kept, *cache.Parse(Api::kAnthropic, kept, ParseAnthropicRequest));
  const std::string twice =
      R"({"model":"m","messages":[{"role":"user","content":"a"},)"
      R"({"role":"assistant","content":"b"},{"role":"user","content":"c"}],)"
      R"("messages":[{"role":"user","content":"z"}]})";
  Result<ParsedBody> cached = cache.Parse(Api::kAnthropic, twice, ParseAnthropicRequest);
  ASSERT_FALSE(cached.ok());
  EXPECT_EQ(cached.status().field(), "messages");
}

}  // namespace
}  // namespace missy::proxy

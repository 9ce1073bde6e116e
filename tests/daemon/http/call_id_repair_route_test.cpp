// Empty or missing tool-call ids (issue 10: llama.cpp and some Ollama versions send ""),
// through POST /v1/sessions/{id}/messages and the context built afterwards: repaired
// when one call meets one result, stored unpaired (and never sent) when ambiguous,
// refused in strict mode.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "api_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

constexpr char kCallNoId[] =
    R"({"role":"assistant","content":null,"tool_calls":[{"id":"","type":"function",)"
    R"("function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]})";
constexpr char kTwoCallsNoIds[] =
    R"({"role":"assistant","content":null,"tool_calls":[)"
    R"({"type":"function","function":{"name":"ls","arguments":"{}"}},)"
    R"({"id":"","type":"function","function":{"name":"pwd","arguments":"{}"}}]})";
constexpr char kResultNoId[] = R"({"role":"tool","tool_call_id":"","content":"README.md"})";
constexpr char kResultMissingId[] = R"({"role":"tool","content":"/home/me"})";

std::string Batch(const std::vector<std::string>& messages, const std::string& extra = {}) {
  std::string out = R"({"messages":[)";
  for (size_t i = 0; i < messages.size(); ++i) out += (i ? "," : "") + messages[i];
  return out + "]" + extra + "}";
}

std::vector<std::string> Flags(const json::value& row) {
  std::vector<std::string> out;
  if (const json::value* f = row.as_object().if_contains("flags")) {
    for (const json::value& v : f->as_array()) out.emplace_back(v.as_string());
  }
  return out;
}

// "index:tool_call_id:problem" of each warning.
std::vector<std::string> Warnings(const ApiReply& r) {
  std::vector<std::string> out;
  for (const json::value& w : r.body.at("warnings").as_array()) {
    out.push_back(std::to_string(Int(w, "index")) + ":" +
                  std::string(w.at("tool_call_id").as_string()) + ":" +
                  std::string(w.at("problem").as_string()));
  }
  return out;
}

// "role" or "role(id)" per message of a context, the system message left out.
std::string ContextShape(const ApiReply& ctx) {
  std::string out;
  for (const json::value& m : ctx.body.at("messages").as_array()) {
    const std::string role(m.at("role").as_string());
    if (role == "system") continue;
    std::string item = role;
    if (const json::value* calls = m.as_object().if_contains("tool_calls")) {
      item += "(";
      for (size_t i = 0; i < calls->as_array().size(); ++i) {
        item += (i ? "," : "") + std::string(calls->as_array()[i].at("id").as_string());
      }
      item += ")";
    }
    if (const json::value* id = m.as_object().if_contains("tool_call_id")) {
      item += "(" + std::string(id->as_string()) + ")";
    }
    out += (out.empty() ? "" : " ") + item;
  }
  return out;
}

// "seq:tool_call_id:reason" of the context report's sanitized list.
std::vector<std::string> Sanitized(const ApiReply& ctx) {
  std::vector<std::string> out;
  for (const json::value& s : ctx.body.at("budget").at("sanitized").as_array()) {
    out.push_back(std::to_string(Int(s, "seq")) + ":" +
                  std::string(s.at("tool_call_id").as_string()) + ":" +
                  std::string(s.at("reason").as_string()));
  }
  return out;
}

class CallIdRepairRouteTest : public ApiFixture {
 protected:
  void SetUp() override {
    ApiFixture::SetUp();
    ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"s"})").status, 201);
  }

  ApiReply Context() {
    return Call("POST", "/v1/sessions/s/context",
                R"({"message":{"role":"user","content":"next?"}})");
  }
};

TEST_F(CallIdRepairRouteTest, OneCallAndOneResultInOneBatchArePaired) {
  ApiReply r = Call("POST", "/v1/sessions/s/messages",
                    Batch({R"({"role":"user","content":"list"})", kCallNoId, kResultNoId}));
  ASSERT_EQ(r.status, 200) << r.raw;
  const json::array& rows = r.body.at("messages").as_array();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(Flags(rows[0]), std::vector<std::string>{});
  EXPECT_EQ(Flags(rows[1]), std::vector<std::string>{"repaired_id"});
  EXPECT_EQ(Flags(rows[2]), std::vector<std::string>{"repaired_id"});
  EXPECT_EQ(Warnings(r), (std::vector<std::string>{"1:call_missy_2_0:repaired_call_id",
                                                   "2:call_missy_2_0:repaired_call_id"}));
  EXPECT_EQ(r.body.at("warnings").at(1).at("message").as_string(),
            "tool result had no tool_call_id: paired with the only open call call_missy_2_0 "
            "(seq 3)");

  ApiReply stored = Call("GET", "/v1/sessions/s/messages");
  ASSERT_EQ(stored.status, 200) << stored.raw;
  const json::array& all = stored.body.at("messages").as_array();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].at("tool_calls").at(0).at("id").as_string(), "call_missy_2_0");
  EXPECT_EQ(all[1].at("tool_calls").at(0).at("function").at("name").as_string(), "bash");
  EXPECT_EQ(all[2].at("tool_call_id").as_string(), "call_missy_2_0");
  EXPECT_EQ(Flags(all[2]), std::vector<std::string>{"repaired_id"});

  ApiReply ctx = Context();
  ASSERT_EQ(ctx.status, 200) << ctx.raw;
  EXPECT_EQ(ContextShape(ctx), "user assistant(call_missy_2_0) tool(call_missy_2_0) user");
  EXPECT_TRUE(Sanitized(ctx).empty()) << ctx.raw;
}

TEST_F(CallIdRepairRouteTest, ResultInTheNextAppendIsPairedWithTheStoredCall) {
  ApiReply first = Call("POST", "/v1/sessions/s/messages",
                        Batch({R"({"role":"user","content":"list"})", kCallNoId}));
  ASSERT_EQ(first.status, 200) << first.raw;
  EXPECT_EQ(Warnings(first), std::vector<std::string>{"1:call_missy_2_0:repaired_call_id"});

  ApiReply second = Call("POST", "/v1/sessions/s/messages", Batch({kResultMissingId}));
  ASSERT_EQ(second.status, 200) << second.raw;
  EXPECT_EQ(Int(second.body.at("messages").at(0), "seq"), 3);
  EXPECT_EQ(Flags(second.body.at("messages").at(0)), std::vector<std::string>{"repaired_id"});
  EXPECT_EQ(Warnings(second), std::vector<std::string>{"0:call_missy_2_0:repaired_call_id"});

  ApiReply stored = Call("GET", "/v1/sessions/s/messages?after=2");
  ASSERT_EQ(stored.status, 200) << stored.raw;
  EXPECT_EQ(stored.body.at("messages").at(0).at("tool_call_id").as_string(), "call_missy_2_0");

  ApiReply ctx = Context();
  ASSERT_EQ(ctx.status, 200) << ctx.raw;
  EXPECT_EQ(ContextShape(ctx), "user assistant(call_missy_2_0) tool(call_missy_2_0) user");
  EXPECT_TRUE(Sanitized(ctx).empty()) << ctx.raw;
}

TEST_F(CallIdRepairRouteTest, AmbiguousResultsAreStoredFlaggedAndNeverSent) {
  ApiReply r = Call("POST", "/v1/sessions/s/messages",
                    Batch({R"({"role":"user","content":"where?"})", kTwoCallsNoIds, kResultNoId,
                           kResultMissingId, R"({"role":"user","content":"well?"})"}));
  ASSERT_EQ(r.status, 200) << r.raw;
  const json::array& rows = r.body.at("messages").as_array();
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(Flags(rows[1]), std::vector<std::string>{"repaired_id"});
  EXPECT_EQ(Flags(rows[2]), (std::vector<std::string>{"orphan_result", "repaired_id"}));
  EXPECT_EQ(Flags(rows[3]), (std::vector<std::string>{"orphan_result", "repaired_id"}));
  EXPECT_EQ(Flags(rows[4]), std::vector<std::string>{"unanswered_call"});
  EXPECT_EQ(Warnings(r),
            (std::vector<std::string>{"1:call_missy_2_0:repaired_call_id",
                                      "1:call_missy_2_1:repaired_call_id", "2::unpaired_result",
                                      "3::unpaired_result", "4:call_missy_2_0:unanswered_call",
                                      "4:call_missy_2_1:unanswered_call"}));

  ApiReply stored = Call("GET", "/v1/sessions/s/messages");
  const json::array& all = stored.body.at("messages").as_array();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_FALSE(all[2].as_object().contains("tool_call_id")) << stored.raw;
  EXPECT_EQ(all[2].at("content").as_string(), "README.md");

  // The context is valid: no tool message, no call without its result.
  ApiReply ctx = Context();
  ASSERT_EQ(ctx.status, 200) << ctx.raw;
  EXPECT_EQ(ContextShape(ctx), "user user user");
  EXPECT_EQ(Sanitized(ctx), (std::vector<std::string>{"2:call_missy_2_0:unanswered_call",
                                                      "3::orphan_result", "4::orphan_result"}));
}

TEST_F(CallIdRepairRouteTest, StrictModeRefusesEmptyIdsNamingTheFieldAndStoresNothing) {
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"strict","strict":true})").status, 201);
  ApiReply r = Call("POST", "/v1/sessions/strict/messages",
                    Batch({R"({"role":"user","content":"list"})", kCallNoId, kResultNoId}));
  EXPECT_TRUE(IsError(r, 422, "unprocessable", "messages[1].tool_calls[0].id", 1));
  EXPECT_EQ(Warnings(r), (std::vector<std::string>{"1::empty_call_id", "2::empty_call_id"}));
  EXPECT_EQ(Int(Call("GET", "/v1/sessions/strict").body, "message_count"), 0);

  // "strict": true in the body: the call has its id, the result has none.
  ApiReply lax = Call(
      "POST", "/v1/sessions/s/messages",
      Batch(
          {R"({"role":"user","content":"list"})",
           R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]})",
           kResultMissingId},
          R"(,"strict":true)"));
  EXPECT_TRUE(IsError(lax, 422, "unprocessable", "messages[2].tool_call_id", 1));
  EXPECT_TRUE(Call("GET", "/v1/sessions/s/messages").body.at("messages").as_array().empty());
}

TEST_F(CallIdRepairRouteTest, IdsOfTheWrongTypeAre400) {
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions/s/messages",
                           Batch({R"({"role":"user","content":"x"})",
                                  R"({"role":"tool","tool_call_id":7,"content":"x"})"})),
                      400, "invalid_argument", "messages[1].tool_call_id"));
  ApiReply call = Call("POST", "/v1/sessions/s/messages",
                       Batch({R"({"role":"assistant","content":null,"tool_calls":[{"id":1,)"
                              R"("type":"function","function":{"name":"ls"}}]})"}));
  EXPECT_TRUE(IsError(call, 400, "invalid_argument", "messages[0].tool_calls[0].id"));
  EXPECT_EQ(ErrorMessage(call), "expected a string, got a number");
  EXPECT_EQ(Int(Call("GET", "/v1/sessions/s").body, "message_count"), 0);
}

}  // namespace
}  // namespace missy::testing

// POST /v1/sessions/{id}/compact: forced compaction summarizes now and answers with the
// context the next request gets, which then fits.
#include <gtest/gtest.h>

#include "api_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

class CompactRouteTest : public ApiFixture {};

std::vector<Message> Rounds(int count) {
  std::vector<Message> out;
  for (int i = 1; i <= count; ++i) {
    const std::string n = std::to_string(i);
    out.push_back(Message::User("step " + n + ": check lib/part_" + n + ".py"));
    out.push_back(CallMessage("c" + n, "bash", R"({"command":"pytest lib/part_)" + n + R"(.py"})"));
    out.push_back(Message::ToolResult("c" + n, Words(300, "out" + n + "_"), "bash"));
    out.push_back(Message::Assistant("part " + n + " checked"));
  }
  return out;
}

TEST_F(CompactRouteTest, SummarizesAndAnswersWithTheNextContext) {
  ASSERT_TRUE(Create("s").ok());
  ASSERT_TRUE(Append("s", Rounds(40)).status.ok());
  ApiReply r = Call("POST", "/v1/sessions/s/compact",
                    R"({"reason":"context_length_exceeded","context_window":16000,)"
                    R"("max_output_tokens":2000})");
  ASSERT_EQ(r.status, 200) << r.raw;
  const json::object& c = r.body.at("compaction").as_object();
  EXPECT_GE(c.at("leaves").as_int64(), 1);
  EXPECT_GT(c.at("tokens_before").as_int64(), 4 * c.at("tokens_after").as_int64());
  const json::object& budget = r.body.at("budget").as_object();
  EXPECT_LE(budget.at("used_tokens").as_int64(), 14000);
  EXPECT_GE(budget.at("summaries").at("included").as_int64(), 1);
  EXPECT_TRUE(budget.at("task").at("pinned").as_bool());
  std::vector<AuditEvent> forced = Events("compaction.forced");
  ASSERT_EQ(forced.size(), 1u);
  EXPECT_NE(forced[0].detail_json.find("context_length_exceeded"), std::string::npos);
  // Forced again right away: nothing left outside the fresh tail worth a summary.
  ApiReply again = Call("POST", "/v1/sessions/s/compact", "{}");
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.body.at("compaction").at("leaves").as_int64(), 0);
}

// An agent that already had contexts (an anchor, no summary yet) and whose provider
// refused the last one: the compacted answer shows the new summaries in place of what
// they cover, so it is smaller than the refused context, and the next context too.
TEST_F(CompactRouteTest, AfterEarlierContextsTheAnswerIsSmallerThanTheRefusedContext) {
  ASSERT_TRUE(Create("a").ok());
  ASSERT_TRUE(Append("a", Rounds(12)).status.ok());
  const std::string window = R"({"context_window":32000,"max_output_tokens":2000})";
  ApiReply refused = Call("POST", "/v1/sessions/a/context", window);
  ASSERT_EQ(refused.status, 200) << refused.raw;
  const int64_t refused_tokens = refused.body.at("budget").at("used_tokens").as_int64();
  ASSERT_EQ(refused.body.at("budget").at("summaries").at("included").as_int64(), 0);

  ApiReply r = Call("POST", "/v1/sessions/a/compact", window);
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_GE(r.body.at("compaction").at("leaves").as_int64(), 1);
  const json::object& budget = r.body.at("budget").as_object();
  EXPECT_GE(budget.at("summaries").at("included").as_int64(), 1);
  // The covered messages are replaced by their summaries (headers included): the
  // context shrinks by most of what the compaction saved.
  const json::object& c = r.body.at("compaction").as_object();
  const int64_t saved = c.at("tokens_before").as_int64() - c.at("tokens_after").as_int64();
  EXPECT_GT(saved, refused_tokens / 4);
  EXPECT_LT(budget.at("used_tokens").as_int64(), refused_tokens - saved * 3 / 4)
      << "refused " << refused_tokens << ", saved " << saved;
  ApiReply next = Call("POST", "/v1/sessions/a/context", window);
  ASSERT_EQ(next.status, 200) << next.raw;
  EXPECT_EQ(next.body.at("messages"), r.body.at("messages"));
}

TEST_F(CompactRouteTest, BadInputIsNamedAndAnUnknownSessionIs404) {
  ASSERT_TRUE(Create("s").ok());
  ApiReply unknown_key = Call("POST", "/v1/sessions/s/compact", R"({"force":true})");
  EXPECT_EQ(unknown_key.status, 400);
  EXPECT_EQ(unknown_key.body.at("error").at("field").as_string(), "force");
  ApiReply bad_window = Call("POST", "/v1/sessions/s/compact", R"({"context_window":0})");
  EXPECT_EQ(bad_window.status, 400);
  EXPECT_EQ(Call("POST", "/v1/sessions/ghost/compact", "{}").status, 404);
}

}  // namespace
}  // namespace missy::testing

// POST /v1/sessions/{id}/recall: the originals behind a summary (by id, paged) or the
// session's own messages and summaries matching a query; and the summary ids the
// context's headers name.
#include <gtest/gtest.h>

#include "api_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

// Rounds of: a user step naming a file, a bash call, its output, an answer.
std::vector<Message> Rounds(int first, int count) {
  std::vector<Message> out;
  for (int i = first; i < first + count; ++i) {
    const std::string n = std::to_string(i);
    out.push_back(Message::User("step " + n + ": check lib/part_" + n + ".py"));
    out.push_back(CallMessage("c" + n, "bash", R"({"command":"pytest lib/part_)" + n + R"(.py"})"));
    out.push_back(Message::ToolResult("c" + n, Words(300, "out" + n + "_"), "bash"));
    out.push_back(Message::Assistant("part " + n + " checked"));
  }
  return out;
}

class RecallRouteTest : public ApiFixture {
 protected:
  // A compacted session: returns the id of its first leaf summary.
  std::string Compacted() {
    EXPECT_TRUE(Create("s").ok());
    EXPECT_TRUE(Append("s", Rounds(1, 40)).status.ok());
    ApiReply r = Call("POST", "/v1/sessions/s/compact",
                      R"({"context_window":16000,"max_output_tokens":2000})");
    EXPECT_EQ(r.status, 200) << r.raw;
    ApiReply list = Call("GET", "/v1/sessions/s/summaries");
    EXPECT_EQ(list.status, 200);
    for (const json::value& s : list.body.at("summaries").as_array()) {
      if (s.at("depth").as_int64() == 0) return std::string(s.at("id").as_string());
    }
    ADD_FAILURE() << "no leaf summary: " << list.raw;
    return {};
  }
};

TEST_F(RecallRouteTest, TheContextNamesEachSummaryAndRecallPagesItsOriginals) {
  const std::string id = Compacted();
  ASSERT_FALSE(id.empty());
  ApiReply ctx = Call("POST", "/v1/sessions/s/context",
                      R"({"context_window":16000,"max_output_tokens":2000})");
  ASSERT_EQ(ctx.status, 200) << ctx.raw;
  bool named = false;
  for (const json::value& m : ctx.body.at("messages").as_array()) {
    const json::value* content = m.as_object().if_contains("content");
    if (content && content->is_string() &&
        content->as_string().find("; id " + id + ", originals via missy_recall]") !=
            json::string::npos) {
      named = true;
    }
  }
  EXPECT_TRUE(named) << ctx.raw;

  // Page 1: as many whole messages of the summary's range as 1,000 tokens hold.
  ApiReply page =
      Call("POST", "/v1/sessions/s/recall", R"({"summary_id":")" + id + R"(","max_tokens":1000})");
  ASSERT_EQ(page.status, 200) << page.raw;
  const json::array& msgs = page.body.at("messages").as_array();
  ASSERT_GE(msgs.size(), 2u);
  EXPECT_EQ(Int(msgs[0], "seq"), 1);
  EXPECT_EQ(msgs[0].at("content").as_string(), "step 1: check lib/part_1.py");
  EXPECT_LE(Int(page.body, "tokens"), 1000);
  EXPECT_TRUE(page.body.at("truncated").as_bool());
  const int64_t next = Int(page.body, "next_after_seq");
  EXPECT_EQ(next, Int(msgs.back(), "seq"));
  EXPECT_NE(page.body.at("text").as_string().find("[seq 1 · user]\nstep 1: check lib/part_1.py"),
            json::string::npos);
  EXPECT_NE(page.body.at("text").as_string().find("after_seq " + std::to_string(next)),
            json::string::npos);

  // Page 2 continues right after; the pages together are the summary's range in order.
  ApiReply page2 = Call("POST", "/v1/sessions/s/recall",
                        R"({"summary_id":")" + id + R"(","max_tokens":1000,"after_seq":)" +
                            std::to_string(next) + "}");
  ASSERT_EQ(page2.status, 200) << page2.raw;
  EXPECT_EQ(Int(page2.body.at("messages").as_array().front(), "seq"), next + 1);

  // A limit smaller than one message: that message, cut middle-out, and flagged.
  ApiReply tiny = Call("POST", "/v1/sessions/s/recall",
                       R"({"summary_id":")" + id + R"(","max_tokens":40,"after_seq":2})");
  ASSERT_EQ(tiny.status, 200) << tiny.raw;
  ASSERT_EQ(tiny.body.at("messages").as_array().size(), 1u);
  const json::value& cut = tiny.body.at("messages").as_array()[0];
  EXPECT_EQ(Int(cut, "seq"), 3);
  EXPECT_TRUE(cut.at("truncated").as_bool());
  EXPECT_LE(Int(tiny.body, "tokens"), 60);
  EXPECT_EQ(Int(tiny.body, "next_after_seq"), 3);
}

TEST_F(RecallRouteTest, AQueryFindsThisSessionsOriginalsOnly) {
  Compacted();
  ASSERT_TRUE(Create("other").ok());
  ASSERT_TRUE(Append("other", {Message::User("lib/part_7.py in another session")}).status.ok());
  ApiReply r = Call("POST", "/v1/sessions/s/recall", R"({"query":"part_7"})");
  ASSERT_EQ(r.status, 200) << r.raw;
  bool user_step = false;
  for (const json::value& m : r.body.at("messages").as_array()) {
    EXPECT_NE(m.at("content").as_string(), "lib/part_7.py in another session");
    if (m.at("content").as_string() == "step 7: check lib/part_7.py") user_step = true;
  }
  EXPECT_TRUE(user_step) << r.raw;
  EXPECT_NE(r.body.at("text").as_string().find("step 7: check lib/part_7.py"), json::string::npos);
  // Messages in seq order.
  int64_t last = 0;
  for (const json::value& m : r.body.at("messages").as_array()) {
    EXPECT_GT(Int(m, "seq"), last);
    last = Int(m, "seq");
  }
  ApiReply none = Call("POST", "/v1/sessions/s/recall", R"({"query":"zebrafish"})");
  ASSERT_EQ(none.status, 200) << none.raw;
  EXPECT_TRUE(none.body.at("messages").as_array().empty());
  EXPECT_NE(none.body.at("text").as_string().find("Nothing in this session's history matches"),
            json::string::npos);
}

TEST_F(RecallRouteTest, BadRequestsAreNamed) {
  const std::string id = Compacted();
  ASSERT_TRUE(Create("other").ok());
  EXPECT_TRUE(
      IsError(Call("POST", "/v1/sessions/s/recall", "{}"), 400, "invalid_argument", "query"));
  EXPECT_TRUE(IsError(
      Call("POST", "/v1/sessions/s/recall", R"({"query":"x","summary_id":")" + id + R"("})"), 400,
      "invalid_argument", "summary_id"));
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions/s/recall", R"({"query":"x","max_tokens":0})"), 400,
                      "invalid_argument", "max_tokens"));
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions/s/recall", R"({"query":"x","limit":3})"), 400,
                      "invalid_argument", "limit"));
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions/s/recall", R"({"query":7})"), 400,
                      "invalid_argument", "query"));
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions/s/recall", ""), 400, "invalid_argument", ""));
  // Another session's summary is not this session's to recall.
  EXPECT_TRUE(
      IsError(Call("POST", "/v1/sessions/other/recall", R"({"summary_id":")" + id + R"("})"), 404,
              "not_found", "summary_id"));
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions/s/recall", R"({"summary_id":"sum_nope"})"), 404,
                      "not_found", "summary_id"));
  EXPECT_EQ(Call("POST", "/v1/sessions/ghost/recall", R"({"query":"x"})").status, 404);
}

}  // namespace
}  // namespace missy::testing

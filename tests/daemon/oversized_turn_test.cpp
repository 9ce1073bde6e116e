// An oversized last turn over the real daemon's API (core/assembler.cpp, rule 1 (d)): a
// user's paste larger than the whole room gets a context within the budget with the cut
// marked, instead of 422; the stored message stays whole and recall finds it.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "daemon/daemon_process.h"
#include "test_util.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

TEST(OversizedTurnTest, APasteLargerThanTheWindowIsCutNotRefusedAndStaysWholeInStorage) {
  TempDir dir;
  DaemonProcess daemon(dir.path(), "context:\n  log_level: warn\n");
  ASSERT_TRUE(daemon.Start().ok()) << daemon.log();
  ASSERT_EQ(daemon.Call("POST", "/v1/sessions",
                        R"({"id":"paste","system_prompt":"You help with builds."})")->status,
            201);
  // The output of `find .` pasted by the user: about 27k tokens for a 16k window.
  std::string paste;
  for (int i = 0; paste.size() < 120000; ++i) {
    paste += "./services/api/src/module_" + std::to_string(i) + "/handler_" +
             std::to_string(i * 7) + ".py\n";
  }
  json::object batch{
      {"messages", json::array{{{"role", "user"}, {"content", "Fix the flaky build."}},
                               {{"role", "assistant"}, {"content", "Show me the tree."}},
                               {{"role", "user"}, {"content", "Here it is:\n" + paste}}}}};
  ASSERT_EQ(daemon.Call("POST", "/v1/sessions/paste/messages", json::serialize(batch))->status,
            200);
  Result<ClientResponse> r = daemon.Call("POST", "/v1/sessions/paste/context",
                                         R"({"context_window":16000,"max_output_tokens":2000})");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  json::value ctx = json::parse(r->body);
  EXPECT_EQ(ctx.at("budget").at("fresh_tail").at("last_turn_truncated"), true);
  EXPECT_LE(Int(ctx, {"budget", "used_tokens"}), Int(ctx, {"budget", "total"}));
  const json::array& messages = ctx.at("messages").as_array();
  const std::string last(messages.back().at("content").as_string());
  EXPECT_EQ(last.rfind("Here it is:\n./services/api/src/module_0/", 0), 0u) << last.substr(0, 80);
  EXPECT_NE(last.find("[...truncated "), std::string::npos);
  EXPECT_LT(last.size(), paste.size() / 2);
  // The task (the first user message) is still there.
  EXPECT_NE(r->body.find("Fix the flaky build."), std::string::npos);

  // Stored whole; recall by a word near the end of the paste finds it.
  json::value stored = Body(daemon.Call("GET", "/v1/sessions/paste/messages"));
  EXPECT_EQ(std::string(stored.at("messages").at(2).at("content").as_string()),
            "Here it is:\n" + paste);
  Result<ClientResponse> events = daemon.Call("GET", "/v1/audit?type=context.built");
  ASSERT_TRUE(events.ok());
  EXPECT_NE(events->body.find("\"last_turn_truncated\":true"), std::string::npos) << events->body;
}

}  // namespace
}  // namespace missy::testing

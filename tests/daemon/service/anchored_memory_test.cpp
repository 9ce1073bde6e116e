// The memory section of the enriched system message is held with the eviction anchor:
// while the anchor holds, a context shows the hits the anchor was set with, so a new
// user message does not change the first message of the request (which would cost the
// provider's prompt cache for the whole request). The agent's own query, or a moved
// anchor, brings it up to date.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/service/context_service.h"
#include "service_fixture.h"
#include "storage/text_indexer.h"

namespace missy::testing {
namespace {

class AnchoredMemoryTest : public ServiceFixture {
 protected:
  void SetUp() override {
    ServiceFixture::SetUp();
    // Another session whose messages are the memory the agent's session can find.
    ASSERT_TRUE(Create("notes").ok());
    ASSERT_TRUE(Append("notes", {Message::User("postgres autovacuum thresholds tuned to 0.05"),
                                 Message::User("kubernetes ingress annotations for websockets")})
                    .status.ok());
    Session s;
    s.id = "agent";
    s.system_prompt = "You are terse.";
    ASSERT_TRUE(Create(std::move(s)).ok());
  }

  Result<ContextOutcome> Build(const std::string& query = "") {
    EXPECT_TRUE(TextIndexer::CatchUp(*db_).ok());  // every note is searchable
    ContextRequest request;
    request.session_id = "agent";
    request.context_window = 8000;
    request.max_output_tokens = 1000;
    request.query = query;
    return Context(std::move(request));
  }

  static std::string SystemText(const ContextOutcome& out) {
    return out.context.messages.empty() ? "" : out.context.messages.front().PlainText();
  }
};

TEST_F(AnchoredMemoryTest, ANewUserMessageKeepsTheMemoryWhileTheAnchorHolds) {
  ASSERT_TRUE(Append("agent", {Message::User("how is postgres autovacuum tuned?")}).status.ok());
  Result<ContextOutcome> first = Build();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_NE(SystemText(*first).find("postgres autovacuum thresholds"), std::string::npos)
      << SystemText(*first);

  ASSERT_TRUE(Append("agent", {Message::Assistant("0.05"),
                               Message::User("and the kubernetes ingress annotations?")})
                  .status.ok());
  Result<ContextOutcome> second = Build();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->context.report.eviction, "anchored");
  // The request grows at its end only: the previous one is its prefix, byte for byte.
  ASSERT_GT(second->context.messages.size(), first->context.messages.size());
  EXPECT_TRUE(std::equal(first->context.messages.begin(), first->context.messages.end(),
                         second->context.messages.begin()));
  EXPECT_EQ(SystemText(*second).find("kubernetes"), std::string::npos) << SystemText(*second);

  // The agent asks for it: its query is searched now.
  Result<ContextOutcome> asked = Build("kubernetes ingress");
  ASSERT_TRUE(asked.ok()) << asked.status().ToString();
  EXPECT_NE(SystemText(*asked).find("kubernetes ingress annotations"), std::string::npos)
      << SystemText(*asked);
  EXPECT_EQ(asked->context.report.eviction, "anchored");
}

TEST_F(AnchoredMemoryTest, AMovedAnchorBringsTheMemoryUpToDate) {
  ASSERT_TRUE(Append("agent", {Message::User("how is postgres autovacuum tuned?")}).status.ok());
  Result<ContextOutcome> first = Build();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_NE(SystemText(*first).find("postgres"), std::string::npos) << SystemText(*first);

  // Long answers overflow the 7000-token budget (nothing to prune): the anchor must move.
  std::vector<Message> rounds;
  for (int i = 0; i < 20; ++i) {
    rounds.push_back(Message::User("go on with part " + std::to_string(i)));
    rounds.push_back(Message::Assistant(Words(400, "p" + std::to_string(i) + "_")));
  }
  rounds.push_back(Message::User("now the kubernetes ingress annotations"));
  ASSERT_TRUE(Append("agent", std::move(rounds)).status.ok());
  Result<ContextOutcome> moved = Build();
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(moved->context.report.eviction, "anchor_moved");
  EXPECT_NE(SystemText(*moved).find("kubernetes ingress annotations"), std::string::npos)
      << SystemText(*moved);
  EXPECT_LE(moved->context.report.used_tokens, 7000);
}

}  // namespace
}  // namespace missy::testing

// Conversations (daemon/proxy/conversations.cpp): identity, prefix matching, the bound.
#include "daemon/proxy/conversations.h"

#include <gtest/gtest.h>

namespace missy::proxy {
namespace {

ParsedRequest Request(std::vector<std::string> texts, std::string system = "sys") {
  ParsedRequest r;
  r.system_text = std::move(system);
  for (std::string& t : texts) {
    NativeMessage n;
    n.engine = {Message::User(std::move(t))};
    n.hash = CanonicalHash(n.engine);
    r.messages.push_back(std::move(n));
  }
  return r;
}

TEST(Conversations, IdentityComesFromThePathTheHeaderTheAgentsHeaderOrAHash) {
  ParsedRequest r = Request({"task"});
  Identity path = IdentifyConversation("fix-ci", {{"x-missy-session", "other"}}, r);
  EXPECT_EQ(path.session_id, "fix-ci");
  EXPECT_EQ(path.source, "path");
  Identity header = IdentifyConversation("", {{"x-missy-session", "bad name/1"}}, r);
  EXPECT_EQ(header.session_id, "bad_name_1");
  Identity agent = IdentifyConversation("", {{"x-claude-code-session-id", "u-1"}}, r);
  EXPECT_EQ(agent.session_id, "px-u-1." + r.messages[0].hash.substr(0, 8));
  EXPECT_EQ(agent.source, "agent_header");
  // Codex's header names it the same way; another first message is another conversation.
  EXPECT_NE(IdentifyConversation("", {{"session-id", "u-1"}}, Request({"title?"})).session_id,
            IdentifyConversation("", {{"session-id", "u-1"}}, r).session_id);
  Identity hashed = IdentifyConversation("", {}, r);
  EXPECT_EQ(hashed.source, "hash");
  EXPECT_EQ(hashed.session_id.size(), 3u + 16u);
  EXPECT_EQ(hashed.session_id, IdentifyConversation("", {}, Request({"task", "more"})).session_id);
  EXPECT_NE(hashed.session_id, IdentifyConversation("", {}, Request({"task"}, "other")).session_id);
}

TEST(Conversations, TheCommonPrefixStopsAtTheFirstDifferentMessage) {
  ParsedRequest stored = Request({"a", "b", "c"});
  std::vector<ProxyNativeRow> rows;
  for (size_t i = 0; i < stored.messages.size(); ++i) {
    rows.push_back({static_cast<int64_t>(i), stored.messages[i].hash, static_cast<int64_t>(i + 1), 1, ""});
  }
  EXPECT_EQ(CommonPrefix(rows, Request({"a", "b", "c", "d"}).messages), 3u);
  EXPECT_EQ(CommonPrefix(rows, Request({"a", "x", "c", "d"}).messages), 1u);
  EXPECT_EQ(CommonPrefix(rows, Request({"a", "b"}).messages), 2u);
  EXPECT_EQ(CommonPrefix({}, Request({"a"}).messages), 0u);
}

TEST(Conversations, IdleConversationsBeyondTheBoundAreForgottenButHeldOnesStay) {
  Conversations c;
  Identity kept{"key:held", "held", "path"};
  Conversations::Held held = c.Hold(kept);
  held->loaded = true;
  held->rows.push_back({0, "h", 1, 1, ""});
  for (size_t i = 0; i < Conversations::kMaxLoaded + 10; ++i) {
    Identity other{"key:" + std::to_string(i), "s" + std::to_string(i), "path"};
    Conversations::Held h = c.Hold(other);
    h->loaded = true;
  }
  // The one held all along kept its state.
  EXPECT_TRUE(held->loaded);
  EXPECT_EQ(held->rows.size(), 1u);
  // The first idle ones were forgotten: held again, they start unloaded.
  Conversations::Held first = c.Hold(Identity{"key:0", "s0", "path"});
  EXPECT_FALSE(first->loaded);
}

}  // namespace
}  // namespace missy::proxy

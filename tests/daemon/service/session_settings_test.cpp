// SessionSettings: the settings an append needs, kept without the session's large texts;
// a read that began before a Forget is not kept (it may predate a delete); bounded.
#include "daemon/service/session_settings.h"

#include <gtest/gtest.h>

#include <string>

namespace missy::testing {
namespace {

Session Full(const std::string& id) {
  Session s;
  s.id = id;
  s.model = "gpt-4o";
  s.system_prompt = std::string(10000, 'p');
  s.tools_json = R"([{"name":"ls"}])";
  s.metadata_json = R"({"team":"ops"})";
  s.context_window = 32000;
  s.strict = true;
  s.created_at_ms = 1000;
  s.message_count = 7;
  s.total_tokens = 700;
  s.last_seq = 7;
  s.anchor_seq = 3;
  s.summarizer_backend = "llm";
  s.summarizer_provider = "local";
  return s;
}

TEST(SessionSettingsTest, KeepsTheSettingsWithoutTheLargeTextsOrTheCounters) {
  SessionSettings settings;
  EXPECT_FALSE(settings.Find("a").has_value());
  settings.Put(Full("a"), settings.Stamp());
  std::optional<Session> a = settings.Find("a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->id, "a");
  EXPECT_EQ(a->model, "gpt-4o");
  EXPECT_EQ(a->context_window, 32000);
  EXPECT_TRUE(a->strict);
  EXPECT_EQ(a->created_at_ms, 1000);
  EXPECT_EQ(a->summarizer_backend, "llm");
  EXPECT_EQ(a->summarizer_provider, "local");
  EXPECT_EQ(a->system_prompt, "");
  EXPECT_EQ(a->tools_json, "");
  EXPECT_EQ(a->metadata_json, "");
  EXPECT_EQ(a->message_count, 0);
  EXPECT_EQ(a->last_seq, 0);
  EXPECT_EQ(a->anchor_seq, 0);
}

TEST(SessionSettingsTest, AReadThatBeganBeforeAForgetIsNotKept) {
  SessionSettings settings;
  const uint64_t stamp = settings.Stamp();  // the read of "a" begins
  settings.Forget("a");                     // "a" is deleted meanwhile
  settings.Put(Full("a"), stamp);
  EXPECT_FALSE(settings.Find("a").has_value());
  settings.Put(Full("a"), settings.Stamp());  // a read after it is kept
  EXPECT_TRUE(settings.Find("a").has_value());
  settings.Forget("a");
  EXPECT_FALSE(settings.Find("a").has_value());
}

TEST(SessionSettingsTest, StaysWithinItsBound) {
  SessionSettings settings(3);
  for (int i = 0; i < 10; ++i) {
    settings.Put(Full("s" + std::to_string(i)), settings.Stamp());
    EXPECT_LE(settings.size(), 3u);
  }
  EXPECT_TRUE(settings.Find("s9").has_value());  // the newest is always kept
  settings.Put(Full("s9"), settings.Stamp());    // known already: nothing is dropped
  EXPECT_TRUE(settings.Find("s9").has_value());
}

}  // namespace
}  // namespace missy::testing

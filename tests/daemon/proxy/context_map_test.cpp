// MapContext (daemon/proxy/context_map.cpp): assembled contexts traced back to the
// agent's messages.
#include "daemon/proxy/context_map.h"

#include <gtest/gtest.h>

namespace missy::proxy {
namespace {

// Three natives: user (seq 1), assistant with a call (seq 2), results + text (seqs 3-4).
struct Fixture {
  std::vector<NativeMessage> natives;
  std::vector<ProxyNativeRow> rows;
  Fixture() {
    natives.push_back({{}, {Message::User("task")}, ""});
    natives.push_back({{}, {Message::AssistantCalls({ToolCall{"c1", "function", "sh", "{}"}})}, ""});
    natives.push_back({{}, {Message::ToolResult("c1", "out"), Message::User("more")}, ""});
    rows = {{0, "", 1, 1, ""}, {1, "", 2, 1, ""}, {2, "", 3, 2, ""}};
  }
};

TEST(ContextMap, KeptUnchangedMessagesAreNativeAndWhatMemoryAddedComesFirst) {
  Fixture f;
  AssembledContext ctx;
  ctx.messages = {Message::System("agent prompt\n\n## Relevant Memory\n- m"), Message::User("task"),
                  f.natives[1].engine[0], f.natives[2].engine[0], f.natives[2].engine[1]};
  ctx.kept_seqs = {1, 2, 3, 4};
  Outgoing out = MapContext(ctx, f.natives, f.rows, "agent prompt");
  ASSERT_EQ(out.items.size(), 4u);
  EXPECT_EQ(out.items[0].kind, OutItem::Kind::kInjected);
  EXPECT_EQ(out.items[0].engine.at(0).PlainText(), "## Relevant Memory\n- m");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out.items[i + 1].kind, OutItem::Kind::kNative);
    EXPECT_EQ(out.items[i + 1].index, i);
  }
}

TEST(ContextMap, SummariesAreInjectedAndAPrunedResultRewritesItsMessage) {
  Fixture f;
  AssembledContext ctx;
  Message pruned = Message::ToolResult("c1", "[pruned]");
  ctx.messages = {Message::User("[Conversation Summary] ..."), f.natives[1].engine[0], pruned,
                  f.natives[2].engine[1]};
  ctx.kept_seqs = {2, 3, 4};
  Outgoing out = MapContext(ctx, f.natives, f.rows, "");
  ASSERT_EQ(out.items.size(), 3u);
  EXPECT_EQ(out.items[0].kind, OutItem::Kind::kInjected);
  EXPECT_EQ(out.items[1].kind, OutItem::Kind::kNative);
  EXPECT_EQ(out.items[2].kind, OutItem::Kind::kRewritten);
  EXPECT_EQ(out.items[2].index, 2u);
  ASSERT_EQ(out.items[2].engine.size(), 2u);
  EXPECT_EQ(out.items[2].engine[0].PlainText(), "[pruned]");
}

TEST(ContextMap, AMessageKeptOnlyInPartIsRewrittenWithThatPart) {
  Fixture f;
  AssembledContext ctx;
  ctx.messages = {f.natives[2].engine[1]};
  ctx.kept_seqs = {4};
  Outgoing out = MapContext(ctx, f.natives, f.rows, "");
  ASSERT_EQ(out.items.size(), 1u);
  EXPECT_EQ(out.items[0].kind, OutItem::Kind::kRewritten);
  ASSERT_EQ(out.items[0].engine.size(), 1u);
  EXPECT_EQ(out.items[0].engine[0].PlainText(), "more");
}

}  // namespace
}  // namespace missy::proxy

// core/context_rebuild.h: cuts as head/marker/tail byte ranges, a composition's JSON
// round trip, and a context assembled over a small history rebuilt exactly from its
// composition, cuts of tool-call arguments too (the daemon's replay test covers real
// sessions end to end).
#include "core/context_rebuild.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "context_test_helpers.h"
#include "core/pruning.h"
#include "core/utf8.h"

namespace missy {
namespace {

TEST(ContextRebuildTest, ACutRebuildsTheSentTextFromTheOriginal) {
  struct Case {
    std::string original, sent;
  } cases[] = {
      {"same", "same"},
      {"0123456789abcdef", "0123[...truncated 3 tokens...]cdef"},
      {"ééééé-ééééé", "éé…éé"},  // shared bytes inside a multibyte character
      {"abc", ""},
      {"", "marker only"},
      {"aaaa", "aaaaaaaa"},
      {"aé-zé", "aê-zê"},  // the common bytes end inside a character at both ends
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.original + " -> " + c.sent);
    const TextCut cut = DiffCut(c.original, c.sent);
    EXPECT_EQ(cut.whole(), c.original == c.sent);
    std::optional<std::string> rebuilt = ApplyCut(c.original, cut);
    ASSERT_TRUE(rebuilt.has_value());
    EXPECT_EQ(*rebuilt, c.sent);
    EXPECT_EQ(InvalidUtf8At(cut.middle), std::string::npos) << "the marker is valid UTF-8";
  }
  EXPECT_FALSE(ApplyCut("ab", TextCut{2, "x", 1}).has_value());  // the original changed
}

TEST(ContextRebuildTest, ACompositionSurvivesItsJson) {
  ContextComposition c;
  c.system = SystemComposition{
      "0123456789abcdef",
      {{"memory", "mem_1", -1, "", "aabbccdd"}, {"message", "s:4", 7, "snippet…", ""}},
      {{"learning", "lrn_1", -1, "", "00112233"}}};
  c.parts = {{PartKind::kTask, 1, 0, "", false, TextCut{3, "[cut]", 4}, 0, ""},
             {PartKind::kSummary, 0, 0, "sum_1", true, {}, 0, ""},
             {PartKind::kKept, 5, 9, "", false, {}, 0, ""},
             {PartKind::kPruned, 10, 0, "", false, {}, 0, ""},
             {PartKind::kTruncated, 11, 0, "", false, TextCut{10, "\n…\n", 20}, 4000, ""},
             {PartKind::kNew, 12, 0, "", false, {}, 0, "feedfacefeedface"},
             {PartKind::kTruncated, 13, 0, "", false, {}, 900, "", {{1, TextCut{7, "[…]", 3}}}}};
  c.complete = false;
  const std::string text = CompositionToJson(c);
  Result<ContextComposition> back = CompositionFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(CompositionToJson(*back), text);
  EXPECT_FALSE(back->complete);
  EXPECT_EQ(back->parts[4].cut.middle, "\n…\n");
  ASSERT_EQ(back->parts[6].call_cuts.size(), 1u);
  EXPECT_EQ(back->parts[6].call_cuts[0].first, 1u);
  EXPECT_EQ(back->parts[6].call_cuts[0].second.middle, "[…]");
  EXPECT_TRUE(back->parts[6].cut.whole());
  EXPECT_EQ(back->system->memory[1].snippet, "snippet…");
  EXPECT_FALSE(CompositionFromJson(R"({"parts":[["k",3]]})").ok());
  EXPECT_EQ(CompositionFromDetail(R"({"context_id":"ctx_1"})").status().code(),
            StatusCode::kNotFound);
}

TEST(ContextRebuildTest, AnAssembledContextIsRebuiltExactlyFromItsComposition) {
  const MessageTokenCounter counter = testing::BytesCounter();
  ContextInput in;
  in.budget.total = 3000;
  in.budget.system_reserve = 100;
  in.budget.tool_definitions_reserve = 100;
  in.budget.fresh_tail_count = 4;
  in.tool_output_max_tokens = 200;
  in.system_prompt = "You are terse.";
  in.memory = {{"memory", "mem_1", "The port is 6543.", 1.0}};
  in.learnings = {{"lrn_1", "ops", "success", "Check the port first.", 0}};
  std::string big;
  for (int i = 0; i < 400; ++i) big += "line " + std::to_string(i) + " of a long output\n";
  std::vector<StoredMessage> history;
  auto add = [&](Message m, uint32_t flags = 0) {
    StoredMessage s;
    s.seq = static_cast<int64_t>(history.size()) + 1;
    s.message = std::move(m);
    s.flags = flags;
    s.tokens = counter.CountMessage(s.message);
    history.push_back(std::move(s));
  };
  add(Message::User("fix the build"));
  add(Message::AssistantCalls({ToolCall{"c1", "function", "bash", "{}"}}));
  add(Message::ToolResult("c1", "old output"), kFlagPruned);
  add(Message::AssistantCalls({ToolCall{"c2", "function", "bash", "{}"}}));
  add(Message::ToolResult("c2", big));
  add(Message::Assistant("done"));
  in.history = history;
  in.task = history[0];
  in.new_message = Message::User("and now?");
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  const ContextComposition c = Compose(in, history, *ctx, 7);
  EXPECT_TRUE(c.complete) << CompositionToJson(c);

  RebuildSources src;
  src.message = [&](int64_t seq) -> std::optional<Message> {
    if (seq == 7) return *in.new_message;
    if (seq < 1 || seq > static_cast<int64_t>(history.size())) return std::nullopt;
    return history[static_cast<size_t>(seq - 1)].message;
  };
  src.memory_text = [](const std::string&) {
    return std::optional<std::string>("The port is 6543.");
  };
  src.learning = [&](const std::string&) { return std::optional<Learning>(in.learnings[0]); };
  src.base_prompt = in.system_prompt;
  const std::vector<RebuiltMessage> rebuilt =
      Rebuild(*CompositionFromJson(CompositionToJson(c)), src);
  ASSERT_EQ(rebuilt.size(), ctx->messages.size());
  std::vector<std::string> entries;
  for (size_t i = 0; i < rebuilt.size(); ++i) {
    ASSERT_TRUE(rebuilt[i].message.has_value()) << i;
    EXPECT_EQ(*rebuilt[i].message, ctx->messages[i]) << i << " " << rebuilt[i].entry;
    entries.push_back(rebuilt[i].entry);
  }
  EXPECT_EQ(entries, (std::vector<std::string>{"system", "kept", "kept", "pruned", "kept",
                                               "truncated", "kept", "new"}));
}

// A last turn cut in the agent's own tool-call arguments (a file written whole) is
// recorded and rebuilt exactly too.
TEST(ContextRebuildTest, ACutOfToolCallArgumentsIsRebuiltExactly) {
  const MessageTokenCounter counter = testing::BytesCounter();
  ContextInput in;
  in.budget.total = 3000;
  in.budget.system_reserve = 0;
  in.budget.tool_definitions_reserve = 0;
  in.budget.fresh_tail_count = 16;
  std::string module;
  for (int i = 0; module.size() < 2500; ++i)
    module += "def f" + std::to_string(i) + "():\n  pass\n";
  std::vector<StoredMessage> history;
  auto add = [&](Message m) {
    StoredMessage s;
    s.seq = static_cast<int64_t>(history.size()) + 1;
    s.message = std::move(m);
    s.tokens = counter.CountMessage(s.message);
    history.push_back(std::move(s));
  };
  add(Message::User("write the modules"));
  for (int k = 0; k < 2; ++k) {
    const std::string id = "w" + std::to_string(k);
    const std::string arguments = boost::json::serialize(
        boost::json::object{{"path", "m" + std::to_string(k) + ".py"}, {"content", module}});
    add(Message::AssistantCalls({ToolCall{id, "function", "write", arguments}}));
    add(Message::ToolResult(id, "ok"));
  }
  in.history = history;
  Result<AssembledContext> ctx = AssembleContext(in, counter);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  ASSERT_TRUE(ctx->report.last_turn_truncated);
  const ContextComposition c = Compose(in, history, *ctx, 6);
  EXPECT_TRUE(c.complete) << CompositionToJson(c);
  RebuildSources src;
  src.message = [&](int64_t seq) -> std::optional<Message> {
    if (seq < 1 || seq > static_cast<int64_t>(history.size())) return std::nullopt;
    return history[static_cast<size_t>(seq - 1)].message;
  };
  const std::vector<RebuiltMessage> rebuilt =
      Rebuild(*CompositionFromJson(CompositionToJson(c)), src);
  ASSERT_EQ(rebuilt.size(), ctx->messages.size());
  int truncated = 0;
  for (size_t i = 0; i < rebuilt.size(); ++i) {
    ASSERT_TRUE(rebuilt[i].message.has_value()) << i;
    EXPECT_EQ(*rebuilt[i].message, ctx->messages[i]) << i << " " << rebuilt[i].entry;
    truncated += rebuilt[i].entry == "truncated";
  }
  EXPECT_EQ(truncated, 1);
}

}  // namespace
}  // namespace missy

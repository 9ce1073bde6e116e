#include "core/history_window.h"

#include <gtest/gtest.h>

#include "context_test_helpers.h"

namespace missy {
namespace {

using testing::BytesCounter;
using testing::Conv;
using testing::Store;

// `turns` rounds of: user, assistant call, its 2,000-byte result, assistant reply.
std::vector<StoredMessage> Session(int turns, const MessageTokenCounter& counter) {
  std::vector<Message> conv;
  for (int t = 0; t < turns; ++t) {
    const std::string id = "call_" + std::to_string(t);
    conv.push_back(Message::User("step " + std::to_string(t)));
    conv.push_back(Message::AssistantCalls({{id, "function", "bash", "{\"command\":\"ls\"}"}}));
    conv.push_back(Message::ToolResult(id, std::string(2000, 'a' + t % 26), "bash"));
    conv.push_back(Message::Assistant("done " + std::to_string(t)));
  }
  return Store(conv, counter);
}

WindowKeep SmallKeep() {
  WindowKeep keep;
  keep.tokens = 3000;
  keep.messages = 8;
  keep.tool_cap = 500;
  return keep;
}

TEST(HistoryWindowTest, AppendsOnlyContinuations) {
  const MessageTokenCounter counter = BytesCounter();
  HistoryWindow w;
  std::vector<StoredMessage> rows = Session(2, counter);
  EXPECT_FALSE(w.Append({rows.begin() + 1, rows.end()}));  // does not start at seq 1
  EXPECT_TRUE(w.Append({rows.begin(), rows.begin() + 3}));
  std::vector<StoredMessage> gap{rows[4]};
  EXPECT_FALSE(w.Append(gap));
  EXPECT_EQ(w.last_seq(), 3);
  EXPECT_TRUE(w.Append({rows.begin() + 3, rows.end()}));
  EXPECT_EQ(w.message_count(), 8u);
  EXPECT_EQ(w.last_user_text(), "step 1");
}

TEST(HistoryWindowTest, FoldsAtSafeCutsKeepingTheNewestPart) {
  const MessageTokenCounter counter = BytesCounter();
  HistoryWindow w;
  w.set_keep(SmallKeep());
  const std::vector<StoredMessage> all = Session(40, counter);
  ASSERT_TRUE(w.Append({all.begin(), all.begin() + 20}));  // 5 turns: about 2,800 in a context
  EXPECT_FALSE(w.Fold(counter));                           // not yet twice what it keeps
  ASSERT_TRUE(w.Append({all.begin() + 20, all.end()}));
  const size_t before = w.ApproxBytes();
  ASSERT_TRUE(w.Fold(counter));
  EXPECT_EQ(w.message_count(), 160u);
  EXPECT_EQ(w.folded().size() + w.window().size(), 160u);
  EXPECT_TRUE(IsSafeFoldCut(w.window().front().message));
  EXPECT_GE(w.window().size(), 8u);
  int64_t cost = 0;
  for (const StoredMessage& m : w.window()) {
    cost += m.message.role == Role::kTool ? std::min<int64_t>(m.tokens, 500) : m.tokens;
  }
  EXPECT_GE(cost, 3000);
  EXPECT_LT(cost, 2 * 3000);  // folded down to about what it keeps, not more
  EXPECT_LT(w.ApproxBytes(), before / 3);
  EXPECT_EQ(w.last_user_text(), "step 39");
  EXPECT_EQ(w.folded().messages().back().seq + 1, w.window().front().seq);
}

// An autonomous agent's loop: one user message, then only calls and their results, small
// enough that the window's cost never asks for a fold.
TEST(HistoryWindowTest, FoldsWhatNoContextShowsBeforeTheAnchor) {
  const MessageTokenCounter counter = BytesCounter();
  std::vector<Message> conv{Message::User("fix the build")};
  for (int t = 0; t < 200; ++t) {
    const std::string id = "call_" + std::to_string(t);
    conv.push_back(Message::AssistantCalls({{id, "function", "bash", "{}"}}));
    conv.push_back(Message::ToolResult(id, "ok", "bash"));
  }
  const std::vector<StoredMessage> all = Store(conv, counter);
  WindowKeep keep = SmallKeep();
  keep.tokens = 100000;
  HistoryWindow w;
  w.set_keep(keep);
  ASSERT_TRUE(w.Append(all));
  EXPECT_FALSE(w.Fold(counter));  // 401 messages cost far less than twice keep.tokens
  // The anchor in the first half: what comes before it is fewer than what follows.
  EXPECT_FALSE(w.Fold(counter, 150));
  EXPECT_EQ(w.window().size(), 401u);
  // The anchor at a tool result (seq 301): folded up to the call before it, a group start.
  ASSERT_TRUE(w.Fold(counter, 301));
  EXPECT_EQ(w.window().front().seq, 300);
  EXPECT_TRUE(w.window().front().message.HasToolCalls());
  EXPECT_EQ(w.folded().messages().back().seq, 299);
  EXPECT_EQ(w.folded().end_state().last_kept_role, Role::kTool);
  EXPECT_EQ(w.task()->message.text, "fix the build");  // the task stays known
  // Never below keep.messages, however far the anchor is.
  HistoryWindow near_end;
  near_end.set_keep(keep);
  ASSERT_TRUE(near_end.Append(all));
  ASSERT_TRUE(near_end.Fold(counter, 401));
  EXPECT_GE(near_end.window().size(), 8u);
  EXPECT_LE(near_end.window().size(), 9u);
}

TEST(HistoryWindowTest, UnfoldGivesTheSameMessagesBack) {
  const MessageTokenCounter counter = BytesCounter();
  const std::vector<StoredMessage> all = Session(40, counter);
  HistoryWindow w;
  w.set_keep(SmallKeep());
  ASSERT_TRUE(w.Append(all));
  ASSERT_TRUE(w.Fold(counter));
  const size_t window_before = w.window().size();
  const int64_t from = w.WidenFrom();
  ASSERT_GT(from, 0);
  const int64_t to = w.window().front().seq - 1;
  // Not a safe cut, not ending right before the window: refused, nothing changed.
  size_t result = static_cast<size_t>(from);
  while (all[result].message.role != Role::kTool) ++result;
  EXPECT_FALSE(w.Unfold({all.begin() + static_cast<long>(result), all.begin() + to}).ok());
  EXPECT_FALSE(w.Unfold({all.begin() + from - 1, all.begin() + to - 1}).ok());
  EXPECT_EQ(w.window().size(), window_before);
  ASSERT_TRUE(w.Unfold({all.begin() + from - 1, all.begin() + to}).ok());
  EXPECT_GE(w.window().size(), window_before + 64);
  for (size_t i = 0; i < w.window().size(); ++i) {
    const StoredMessage& m = w.window()[i];
    EXPECT_EQ(m.message, all[static_cast<size_t>(m.seq - 1)].message);
  }
  EXPECT_EQ(w.folded().messages().back().seq + 1, w.window().front().seq);
  // Widening until nothing is folded gives the whole history.
  while (w.WidenFrom() > 0) {
    const int64_t f = w.WidenFrom();
    const int64_t t = w.window().front().seq - 1;
    ASSERT_TRUE(w.Unfold({all.begin() + f - 1, all.begin() + t}).ok());
  }
  EXPECT_TRUE(w.folded().empty());
  EXPECT_EQ(w.window().size(), all.size());
}

TEST(HistoryWindowTest, FlagsReachFoldedAndWindowMessages) {
  const MessageTokenCounter counter = BytesCounter();
  HistoryWindow w;
  w.set_keep(SmallKeep());
  ASSERT_TRUE(w.Append(Session(40, counter)));
  ASSERT_TRUE(w.Fold(counter));
  const int64_t last_tool = w.last_seq() - 1;
  w.AddFlags({3, last_tool}, kFlagPruned);
  EXPECT_EQ(w.folded().messages()[2].flags, kFlagPruned);
  EXPECT_EQ(w.window()[w.window().size() - 2].flags, kFlagPruned);
  EXPECT_EQ(w.folded().messages()[6].flags, kFlagNone);
}

}  // namespace
}  // namespace missy

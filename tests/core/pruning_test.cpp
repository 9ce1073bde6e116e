#include "core/pruning.h"

#include <gtest/gtest.h>

namespace missy {
namespace {

// u (t...)* blocks: each tool result of `tokens`, placeholder of 10.
std::vector<PruneEntry> Entries(const std::vector<std::pair<Role, int64_t>>& spec) {
  std::vector<PruneEntry> out;
  for (const auto& [role, tokens] : spec) {
    out.push_back({static_cast<int64_t>(out.size() + 1), role, tokens,
                   role == Role::kTool ? 10 : tokens, false});
  }
  return out;
}

TEST(PruningTest, ThresholdExactlyAtMinimumVersusJustUnder) {
  struct Case {
    const char* name;
    int64_t old_tool_tokens;  // one old result beyond the protected 40,000
    bool pruned;
  };
  // Old result frees (tokens - 10): 20,010 frees exactly 20,000; 20,009 frees 19,999.
  const std::vector<Case> cases = {
      {"exactly 20,000 freed", 20010, true},
      {"19,999 freed", 20009, false},
      {"far more", 50000, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // u t(old) u t(40,000 protected) u a u a: last 2 user turns protected outright.
    std::vector<PruneEntry> e = Entries({{Role::kUser, 5},
                                         {Role::kTool, c.old_tool_tokens},
                                         {Role::kUser, 5},
                                         {Role::kTool, 40000},
                                         {Role::kUser, 5},
                                         {Role::kTool, 90000},
                                         {Role::kUser, 5},
                                         {Role::kTool, 90000}});
    PruneDecision d = DecidePruning(e, PruningOptions{});
    EXPECT_EQ(d.candidate_freed_tokens, c.old_tool_tokens - 10);
    if (c.pruned) {
      EXPECT_EQ(d.seqs, (std::vector<int64_t>{2}));
      EXPECT_EQ(d.freed_tokens, c.old_tool_tokens - 10);
    } else {
      EXPECT_TRUE(d.seqs.empty());
      EXPECT_EQ(d.freed_tokens, 0);
    }
  }
}

TEST(PruningTest, ProtectsLastTwoTurnsAndNewestToolTokens) {
  // Turn structure: u1 t2 t3 | u4 t5 | u6 t7 | u8 t9. Last two turns (u6..) protected.
  std::vector<PruneEntry> e = Entries({{Role::kUser, 1},
                                       {Role::kTool, 30000},
                                       {Role::kTool, 30000},
                                       {Role::kUser, 1},
                                       {Role::kTool, 30000},
                                       {Role::kUser, 1},
                                       {Role::kTool, 99999},
                                       {Role::kUser, 1},
                                       {Role::kTool, 99999}});
  PruneDecision d = DecidePruning(e, PruningOptions{});
  // Walking back from u6: t5 (30k, total 30k <= 40k, protected), t3 (60k > 40k: pruned), t2.
  EXPECT_EQ(d.seqs, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(d.freed_tokens, 2 * (30000 - 10));
}

TEST(PruningTest, AlreadyPrunedAreSkippedAndDisabledDoesNothing) {
  std::vector<PruneEntry> e = Entries({{Role::kUser, 1},
                                       {Role::kTool, 30000},
                                       {Role::kTool, 45000},
                                       {Role::kUser, 1},
                                       {Role::kUser, 1}});
  e[1].already_pruned = true;
  // t3 crosses the 40,000 window alone; the already pruned t2 is neither listed again
  // nor counted as freed.
  PruneDecision d = DecidePruning(e, PruningOptions{});
  EXPECT_EQ(d.seqs, (std::vector<int64_t>{3}));
  EXPECT_EQ(d.candidate_freed_tokens, 45000 - 10);
  PruningOptions high;
  high.minimum_freed_tokens = 45000 - 9;
  EXPECT_TRUE(DecidePruning(e, high).seqs.empty());
  PruningOptions off;
  off.enabled = false;
  EXPECT_TRUE(DecidePruning(e, off).seqs.empty());
}

TEST(PruningTest, PrunedMessageKeepsIdAndName) {
  Message m = Message::ToolResult("call_7", "a very long output", "bash");
  Message p = PrunedMessage(m);
  EXPECT_EQ(p.role, Role::kTool);
  EXPECT_EQ(p.tool_call_id, "call_7");
  EXPECT_EQ(p.name, "bash");
  EXPECT_EQ(p.text, "[Old tool result content cleared]");
}

}  // namespace
}  // namespace missy

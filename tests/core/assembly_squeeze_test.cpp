// An anchor's move squeezes the older tool outputs (core/assembly_tail.cpp,
// SqueezeOlderToolOutputs): every kept one but the newest two goes at a quarter of
// tool_output_max_tokens, held while the anchor holds, and the context that moved the
// anchor is the one the next request at that anchor gets, byte for byte.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "context_test_helpers.h"
#include "core/assembler.h"
#include "core/context_checks.h"

namespace missy {
namespace {

using testing::BaseInput;
using testing::BytesCounter;
using testing::Store;

constexpr int64_t kCap = 1000;      // tool_output_max_tokens
constexpr int64_t kSqueezed = 250;  // a quarter of it

// A user message, then `calls` tool-call groups, each output `output_bytes` long and
// distinct.
std::vector<Message> ToolSession(int calls, size_t output_bytes) {
  std::vector<Message> out{Message::User("fix the failing build")};
  for (int k = 0; k < calls; ++k) {
    const std::string id = "call_" + std::to_string(k);
    out.push_back(Message::AssistantCalls({{id, "function", "bash", "{\"cmd\":\"make\"}"}}));
    std::string text = "output " + std::to_string(k) + "\n";
    while (text.size() < output_bytes) text += "line " + std::to_string(text.size()) + " of make\n";
    out.push_back(Message::ToolResult(id, text));
  }
  return out;
}

ContextInput SqueezeInput(int64_t total, const std::vector<Message>& conv,
                          const MessageTokenCounter& counter) {
  ContextInput in = BaseInput(total, /*tail_count=*/6);
  in.tool_output_max_tokens = kCap;
  in.history = Store(conv, counter);
  return in;
}

// What each kept history message costs as sent, by seq.
std::vector<std::pair<int64_t, int64_t>> SentBySeq(const AssembledContext& ctx,
                                                   const MessageTokenCounter& counter) {
  std::vector<std::pair<int64_t, int64_t>> out;
  const size_t lead = LeadingNonHistoryMessages(ctx) + (ctx.report.task_pinned ? 1 : 0);
  for (size_t k = 0; k < ctx.kept_seqs.size(); ++k) {
    out.emplace_back(ctx.kept_seqs[k], counter.CountMessage(ctx.messages[lead + k]));
  }
  return out;
}

TEST(AssemblySqueezeTest, AMoveSqueezesAllButTheNewestTwoToolOutputsAndTheAnchorHoldsThem) {
  const MessageTokenCounter counter = BytesCounter();
  const std::vector<Message> conv = ToolSession(10, 3000);  // seqs 1..21, outputs at odd seqs
  ContextInput in = SqueezeInput(6000, conv, counter);
  in.eviction.anchor_seq = 2;  // everything from seq 2 no longer fits: the anchor moves
  Result<AssembledContext> moved = AssembleContext(in, counter);
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  const ContextReport& r = moved->report;
  EXPECT_EQ(r.eviction, "anchor_moved");
  EXPECT_EQ(r.squeezed_through_seq, 17);  // the newest outputs are seqs 21 and 19
  EXPECT_LE(r.used_tokens, 6000);
  EXPECT_EQ(FindToolPairProblem(moved->messages), "");
  int squeezed = 0;
  for (const auto& [seq, tokens] : SentBySeq(*moved, counter)) {
    SCOPED_TRACE("seq " + std::to_string(seq));
    if (seq % 2 == 0 || seq == 1) continue;  // calls and the user message: untouched
    if (seq <= 17) {
      EXPECT_LT(tokens, kSqueezed + 100);  // the cap, its marker and the framing
      ++squeezed;
    } else {
      EXPECT_GT(tokens, kCap - 100);
      EXPECT_LT(tokens, kCap + 100);
    }
  }
  EXPECT_GE(squeezed, 2) << "the tail's older outputs are squeezed, not only evicted ones";
  // Each squeezed output is listed among the truncated, with its stored size.
  int listed = 0;
  for (const TruncatedItem& t : r.truncated) listed += t.seq <= 17 && t.tokens < kSqueezed + 100;
  EXPECT_EQ(listed, squeezed);

  // The next request, two messages later, at the anchor the move set: the same prefix,
  // byte for byte (seq 19 is now the third newest output and stays whole until the next
  // move), and the new ones whole.
  std::vector<Message> longer = ToolSession(11, 3000);
  ContextInput next = SqueezeInput(8000, longer, counter);
  next.eviction.anchor_seq = r.first_kept_seq;
  next.anchored_squeezed_through = r.squeezed_through_seq;
  Result<AssembledContext> held = AssembleContext(next, counter);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->report.eviction, "anchored");
  EXPECT_EQ(held->report.squeezed_through_seq, 17);
  ASSERT_GE(held->messages.size(), moved->messages.size());
  EXPECT_TRUE(std::equal(moved->messages.begin(), moved->messages.end(), held->messages.begin()));
  for (const auto& [seq, tokens] : SentBySeq(*held, counter)) {
    if (seq == 19 || seq == 23) {
      EXPECT_GT(tokens, kCap - 100) << seq;
    }
  }
}

// An output cut to its cap, or squeezed at a move, keeps in view the errors its cut part
// reported: the marker lists them as printed.
TEST(AssemblySqueezeTest, ACutOutputListsTheErrorsItsCutPartReported) {
  const MessageTokenCounter counter = BytesCounter();
  std::vector<Message> conv = ToolSession(10, 3000);
  const std::string error = "src/io.cpp:12:5: error: no parse_header";
  std::string& text = conv[16].text;  // seq 17: an older output, squeezed at the move
  text.insert(text.find('\n', text.size() / 2) + 1, error + "\n");
  ContextInput in = SqueezeInput(6000, conv, counter);
  in.eviction.anchor_seq = 2;
  Result<AssembledContext> moved = AssembleContext(in, counter);
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  ASSERT_EQ(moved->report.eviction, "anchor_moved");
  bool shown = false;
  for (size_t k = 0; k < moved->kept_seqs.size(); ++k) {
    if (moved->kept_seqs[k] != 17) continue;
    const std::string sent =
        moved->messages[LeadingNonHistoryMessages(*moved) + (moved->report.task_pinned ? 1 : 0) + k]
            .PlainText();
    EXPECT_LT(static_cast<int64_t>(sent.size()), kSqueezed + 100);
    EXPECT_NE(sent.find("the cut part reported:\n" + error + "\n...]"), std::string::npos) << sent;
    shown = true;
  }
  EXPECT_TRUE(shown) << "seq 17 is kept, squeezed";
}

// Over a range of windows (the fresh tail squeezed to fit in the smaller ones, so the
// move's squeeze changes what the tail and the rest get): the context that moved the
// anchor equals the one the same request gets at the new anchor with what it set.
TEST(AssemblySqueezeTest, TheContextThatMovedTheAnchorIsTheOneTheAnchorGivesNext) {
  const MessageTokenCounter counter = BytesCounter();
  const std::vector<Message> conv = ToolSession(12, 4000);
  int moves = 0, tail_squeezed = 0;
  for (int64_t total = 1500; total <= 12000; total += 250) {
    SCOPED_TRACE("total " + std::to_string(total));
    ContextInput in = SqueezeInput(total, conv, counter);
    in.eviction.anchor_seq = 2;
    Result<AssembledContext> moved = AssembleContext(in, counter);
    ASSERT_TRUE(moved.ok()) << moved.status().ToString();
    if (moved->report.eviction != "anchor_moved" || moved->report.squeezed_through_seq == 0) {
      continue;
    }
    ++moves;
    ContextInput again = SqueezeInput(total, conv, counter);
    again.eviction.anchor_seq = moved->report.first_kept_seq;
    again.anchored_squeezed_through = moved->report.squeezed_through_seq;
    again.anchored_stub_through = moved->report.stub_through_seq;
    Result<AssembledContext> held = AssembleContext(again, counter);
    ASSERT_TRUE(held.ok()) << held.status().ToString();
    EXPECT_EQ(held->report.eviction, "anchored");
    EXPECT_EQ(held->messages, moved->messages);
    EXPECT_EQ(held->report.used_tokens, moved->report.used_tokens);
    tail_squeezed += moved->report.tail_squeezed;
  }
  EXPECT_GE(moves, 10);
  EXPECT_GE(tail_squeezed, 2) << "some windows where the tail itself had to be squeezed";
}

// A full cap below the tail's floor: squeezed outputs are not made larger than it.
TEST(AssemblySqueezeTest, ASqueezedOutputIsNeverLongerThanTheFullCap) {
  const MessageTokenCounter counter = BytesCounter();
  const std::vector<Message> conv = ToolSession(10, 3000);
  ContextInput in = SqueezeInput(900, conv, counter);
  in.tool_output_max_tokens = 100;  // under min_tool_output_tokens (128)
  in.eviction.anchor_seq = 2;
  Result<AssembledContext> moved = AssembleContext(in, counter);
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(moved->report.eviction, "anchor_moved");
  EXPECT_EQ(moved->report.squeezed_through_seq, 17);
  // The newest output (seq 21) goes at the full cap; no squeezed one is longer.
  const auto sent = SentBySeq(*moved, counter);
  ASSERT_EQ(sent.back().first, 21);
  int squeezed = 0;
  for (const auto& [seq, tokens] : sent) {
    if (seq % 2 == 0 || seq == 1 || seq > 17) continue;
    EXPECT_LE(tokens, sent.back().second) << seq;
    ++squeezed;
  }
  EXPECT_GE(squeezed, 1);
}

TEST(AssemblySqueezeTest, OffItSqueezesNothingAndIgnoresTheAnchorsSqueeze) {
  const MessageTokenCounter counter = BytesCounter();
  const std::vector<Message> conv = ToolSession(10, 3000);
  ContextInput in = SqueezeInput(6000, conv, counter);
  in.eviction.anchor_seq = 2;
  in.eviction.squeeze_older_outputs = false;  // context.squeeze_at_move: false
  Result<AssembledContext> moved = AssembleContext(in, counter);
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(moved->report.eviction, "anchor_moved");
  EXPECT_EQ(moved->report.squeezed_through_seq, 0);
  for (const auto& [seq, tokens] : SentBySeq(*moved, counter)) {
    if (seq % 2 == 1 && seq > 1) {
      EXPECT_GT(tokens, kCap - 100) << seq;
    }
  }
  // An anchor set while it was on: held without its squeeze.
  in.eviction.anchor_seq = moved->report.first_kept_seq;
  in.anchored_squeezed_through = 17;
  Result<AssembledContext> held = AssembleContext(in, counter);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->report.eviction, "anchored");
  EXPECT_EQ(held->report.squeezed_through_seq, 0);
  EXPECT_EQ(held->messages, moved->messages);
}

}  // namespace
}  // namespace missy

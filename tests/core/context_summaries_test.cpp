#include "core/context_summaries.h"

#include <gtest/gtest.h>

#include "context_test_helpers.h"
#include "core/assembler.h"
#include "core/context_report_json.h"

namespace missy {
namespace {

using testing::BaseInput;
using testing::BytesCounter;
using testing::Conv;
using testing::Store;

SummaryView View(std::string id, int64_t first, int64_t last, std::string text) {
  SummaryView s;
  s.id = std::move(id);
  s.first_seq = first;
  s.last_seq = last;
  s.message_count = last - first + 1;
  s.text = std::move(text);
  return s;
}

// An extractive summary's text: requests, facts, files, commands, errors, decisions.
std::string ExtractiveText(const std::string& files) {
  return "Task/requests:\n- fix the failing build of the parser, then run the whole suite\n"
         "Facts:\n- result: the tokenizer was rewritten last week and its tests pass\n"
         "Files: " +
         files +
         "\nCommands:\n- make -j2 test\nErrors:\n- error: undefined reference to `parse'\n"
         "- FAILED tests/parser_test.cc\n  (2 of 31 failed)\nDecisions:\n- decided: keep the old "
         "grammar\n";
}

TEST(ContextSummariesTest, TheShortFormIsTheHeaderTheNoteTheFilesAndTheErrors) {
  const SummaryView s = View("sum_1", 1, 40, ExtractiveText("src/parser.cc, src/lexer.h"));
  EXPECT_EQ(SummaryStubText(s), SummaryHeader(s) + "\n" + kSummaryStubNote +
                                    "\nFiles: src/parser.cc, src/lexer.h\nErrors:\n"
                                    "- error: undefined reference to `parse'\n"
                                    "- FAILED tests/parser_test.cc\n  (2 of 31 failed)");
  EXPECT_EQ(SummaryMessage(s, /*stub=*/true).text, SummaryStubText(s));
  EXPECT_EQ(SummaryMessage(s, /*stub=*/false).text, SummaryHeader(s) + "\n" + s.text);
}

TEST(ContextSummariesTest, AnLlmSummaryKeepsTheFilesAndErrorsOfItsArtifacts) {
  const SummaryView s = View("sum_2", 41, 90,
                             "The user wants the parser fixed. It now builds.\nNext: run the "
                             "suite.\nArtifacts:\nfiles: src/parser.cc, src/lexer.h\ncommands: "
                             "make -j2 | ctest\nerrors: error: undefined reference | FAILED x");
  EXPECT_EQ(SummaryStubText(s), SummaryHeader(s) + "\n" + kSummaryStubNote +
                                    "\nfiles: src/parser.cc, src/lexer.h\n"
                                    "errors: error: undefined reference | FAILED x");
  // No trail at all: the header (with the id to recall) and the note.
  EXPECT_EQ(SummaryStubText(View("sum_3", 1, 2, "Just prose.\nMore prose.")),
            SummaryHeader(View("sum_3", 1, 2, "")) + "\n" + kSummaryStubNote);
}

TEST(ContextSummariesTest, TheOldestGoShortAsFewAsItTakes) {
  const MessageTokenCounter counter = BytesCounter();
  const std::vector<SummaryView> all = {
      View("s1", 1, 10, ExtractiveText("a.py") + std::string(400, 'x')),
      View("s2", 11, 20, ExtractiveText("b.py") + std::string(400, 'y')),
      View("s3", 21, 30, ExtractiveText("c.py") + std::string(400, 'z'))};
  auto whole = [&](size_t i) { return SummaryMessageTokens(all[i], false, counter); };
  auto stub = [&](size_t i) { return SummaryMessageTokens(all[i], true, counter); };
  ASSERT_LT(stub(0) * 2, whole(0));
  const int64_t all_whole = whole(0) + whole(1) + whole(2);
  EXPECT_EQ(StubThroughFor(all, all_whole, counter), 0);
  EXPECT_EQ(StubThroughFor(all, all_whole - 1, counter), 10);
  EXPECT_EQ(StubThroughFor(all, stub(0) + whole(1) + whole(2), counter), 10);
  EXPECT_EQ(StubThroughFor(all, stub(0) + stub(1) + whole(2), counter), 20);
  // Even all short do not fit: all short (the choice then skips what still does not).
  EXPECT_EQ(StubThroughFor(all, stub(0) + stub(1) + stub(2) - 1, counter), 30);

  const SummaryChoice c =
      ChooseSummaries(all, INT64_MAX, 20, stub(0) + stub(1) + whole(2), counter);
  EXPECT_EQ(c.included_ids, (std::vector<std::string>{"s1", "s2", "s3"}));
  EXPECT_EQ(c.stubbed, 2);
  EXPECT_EQ(c.stub_through, 20);
  EXPECT_EQ(c.tokens, stub(0) + stub(1) + whole(2));
  ASSERT_EQ(c.messages.size(), 3u);
  EXPECT_EQ(c.messages[0].text, SummaryStubText(all[0]));
  EXPECT_EQ(c.messages[2].text, SummaryHeader(all[2]) + "\n" + all[2].text);
  EXPECT_EQ(c.included, (SeqRanges{{1, 30}}));
}

TEST(ContextSummariesTest, ASummaryShorterThanItsShortFormGoesWhole) {
  const MessageTokenCounter counter = BytesCounter();
  const std::vector<SummaryView> all = {View("s1", 1, 4, "did A"),
                                        View("s2", 5, 9, ExtractiveText("b.py"))};
  const SummaryChoice c = ChooseSummaries(all, INT64_MAX, 9, INT64_MAX, counter);
  EXPECT_EQ(c.stubbed, 1);
  EXPECT_EQ(c.messages[0].text, SummaryHeader(all[0]) + "\ndid A");
  EXPECT_EQ(c.messages[1].text, SummaryStubText(all[1]));
  // Known counts are used as they are, for either form.
  std::vector<SummaryView> known = all;
  known[1].stub_tokens = 7;
  EXPECT_EQ(ChooseSummaries(known, INT64_MAX, 9, INT64_MAX, counter).tokens,
            SummaryMessageTokens(all[0], false, counter) + 7);
}

// A session whose two summaries (seqs 1-8) and raw history (9-20) no longer fit from the
// anchor at 9: the anchor moves, and with the summaries whole the slack could not be
// left free, so the oldest go short. The next request holds the anchor with the same
// forms, even with room for them whole; one that no longer fits moves it again.
class SummaryFormsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    in_ = BaseInput(0, 2);
    in_.history = Store(Conv("u a u a u a u a u a u a u a u a u a u a"), counter_);
    in_.summaries = {View("s1", 1, 4, ExtractiveText("a.py") + std::string(300, 'x')),
                     View("s2", 5, 8, ExtractiveText("b.py") + std::string(300, 'y'))};
    in_.eviction.slack_fraction = 0.3;
    in_.eviction.anchor_seq = 9;
    in_.anchored_summaries = in_.summaries;
    for (size_t i = 8; i < in_.history.size(); ++i) raw_from_9_ += in_.history[i].tokens;
    whole_ = SummaryMessageTokens(in_.summaries[0], false, counter_) +
             SummaryMessageTokens(in_.summaries[1], false, counter_);
  }

  Result<AssembledContext> Assemble() { return AssembleContext(in_, counter_); }

  const MessageTokenCounter counter_ = BytesCounter();
  ContextInput in_;
  int64_t raw_from_9_ = 0;
  int64_t whole_ = 0;
};

TEST_F(SummaryFormsTest, AMovedAnchorSendsTheOldestShortToLeaveItsSlackFree) {
  in_.budget.total = whole_ + raw_from_9_ - 1;  // from the anchor, one token too many
  Result<AssembledContext> moved = Assemble();
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  const ContextReport& r = moved->report;
  EXPECT_EQ(r.eviction, "anchor_moved");
  EXPECT_EQ(r.summaries_included, 2);
  EXPECT_GE(r.summaries_stubbed, 1);
  EXPECT_EQ(r.stub_through_seq, r.summaries_stubbed == 2 ? 8 : 4);
  EXPECT_EQ(moved->messages[0].text, SummaryStubText(in_.summaries[0]));
  // The slack is free: 30% of the history budget (here the whole budget).
  EXPECT_LE(r.used_tokens, in_.budget.total - static_cast<int64_t>(0.3 * in_.budget.total));
  EXPECT_EQ(moved->kept_seqs.back(), 20);

  // The next request: the anchor and the forms as this one set them, with room to spare.
  in_.eviction.anchor_seq = r.first_kept_seq;
  in_.anchored_stub_through = r.stub_through_seq;
  in_.budget.total += whole_;
  Result<AssembledContext> held = Assemble();
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->report.eviction, "anchored");
  EXPECT_EQ(held->report.first_kept_seq, r.first_kept_seq);
  EXPECT_EQ(held->report.stub_through_seq, r.stub_through_seq);
  EXPECT_EQ(held->messages, moved->messages);  // the same prefix, byte for byte

  // Asked to move (the caller changes the prefix anyway): it moves, and chooses afresh
  // (whole, with the room for them, and in the summaries' share at a move: 15% of the
  // history budget).
  in_.eviction.move = true;
  in_.budget.total += 5 * whole_;
  Result<AssembledContext> asked = Assemble();
  ASSERT_TRUE(asked.ok()) << asked.status().ToString();
  EXPECT_EQ(asked->report.eviction, "anchor_moved");
  EXPECT_EQ(asked->report.summaries_stubbed, 0);  // the room is there now
}

TEST_F(SummaryFormsTest, AnAnchoredSummaryThatNoLongerFitsMovesTheAnchor) {
  // From the anchor, the raw part fits, but the summaries only if one is left out:
  // leaving it out would change the prefix, so the anchor moves instead.
  in_.eviction.anchor_seq = 19;  // only the tail from the anchor
  in_.budget.total = SummaryMessageTokens(in_.summaries[0], false, counter_) +
                     in_.history[18].tokens + in_.history[19].tokens + 10;
  Result<AssembledContext> ctx = Assemble();
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->report.eviction, "anchor_moved");
  EXPECT_EQ(ctx->report.summaries_included, 2);  // both, short
  EXPECT_EQ(ctx->report.summaries_stubbed, 2);
  EXPECT_EQ(ctx->report.stub_through_seq, 8);
  const boost::json::object j = ContextReportToJson(ctx->report);
  EXPECT_EQ(j.at("summaries").at("short").as_int64(), 2);
  EXPECT_EQ(j.at("summaries").at("short_through_seq").as_int64(), 8);
}

TEST_F(SummaryFormsTest, AnchoredSummariesOfWhichNoneFitsMoveTheAnchorRatherThanVanish) {
  // From the anchor, neither summary fits whole: holding the anchor would send none (the
  // context would show nothing of seqs 1-8, evicted and summarized the request before).
  // The anchor moves, and both go short.
  in_.eviction.anchor_seq = 19;
  in_.budget.total = SummaryMessageTokens(in_.summaries[0], true, counter_) +
                     SummaryMessageTokens(in_.summaries[1], true, counter_) +
                     in_.history[18].tokens + in_.history[19].tokens + 10;
  ASSERT_LT(in_.budget.total, SummaryMessageTokens(in_.summaries[0], false, counter_) +
                                  in_.history[18].tokens + in_.history[19].tokens);
  Result<AssembledContext> ctx = Assemble();
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->report.eviction, "anchor_moved");
  EXPECT_EQ(ctx->report.summaries_included, 2);
  EXPECT_EQ(ctx->report.summaries_stubbed, 2);
  EXPECT_EQ(ctx->report.summaries_skipped, 0);

  // Both already short when the anchor was set, and one left out even so: nothing
  // shorter is left to send, and the anchor holds.
  in_.anchored_stub_through = 8;
  in_.budget.total -= SummaryMessageTokens(in_.summaries[1], true, counter_);
  Result<AssembledContext> held = Assemble();
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->report.eviction, "anchored");
  EXPECT_EQ(held->report.summaries_skipped, 1);
}

}  // namespace
}  // namespace missy

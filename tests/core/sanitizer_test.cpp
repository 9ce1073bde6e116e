#include "core/sanitizer.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "context_test_helpers.h"
#include "core/message_json.h"

namespace missy {
namespace {

using testing::Conv;
using testing::Shape;

struct SanitizeCase {
  const char* name;
  const char* input;
  const char* expected;
  std::vector<std::string> reasons;  // dropped reasons, in index order
};

TEST(SanitizerTest, PicoClawReferenceCasesAndRelatives) {
  const std::vector<SanitizeCase> cases = {
      // DESIGN.md §9, in order.
      {"complete group kept", "u aTC(A) t(A) a", "u aTC(A) t(A) a", {}},
      {"call after plain assistant",
       "u a aTC(A) t(A)",
       "u a",
       {"invalid_predecessor", "call_dropped"}},
      {"leading orphan", "t(A) u", "u", {"orphan_result"}},
      {"orphan after user", "u t(A)", "u", {"orphan_result"}},
      {"orphan after assistant", "u a t(A)", "u a", {"orphan_result"}},
      {"leading call group", "aTC(A) t(A) u", "u", {"invalid_predecessor", "call_dropped"}},
      {"duplicate results",
       "u aTC(A,B) t(A) t(B) t(A) t(B) a",
       "u aTC(A,B) t(A) t(B) a",
       {"duplicate_result", "duplicate_result"}},
      {"id reused in two rounds",
       "u aTC(call_0) t(call_0) u aTC(call_0) t(call_0) a",
       "u aTC(call_0) t(call_0) u aTC(call_0) t(call_0) a",
       {}},
      {"empty call id", "u aTC() t() a", "u a", {"empty_call_id", "call_dropped"}},
      {"partial answers", "u aTC(A,B) t(A) u a", "u u a", {"unanswered_call", "call_dropped"}},
      // Relatives.
      {"chained calls", "u aTC(A) t(A) aTC(B) t(B) a", "u aTC(A) t(A) aTC(B) t(B) a", {}},
      {"parallel calls answered out of order",
       "u aTC(A,B,C) t(C) t(A) t(B) a",
       "u aTC(A,B,C) t(C) t(A) t(B) a",
       {}},
      {"trailing unanswered call", "u aTC(A)", "u", {"unanswered_call"}},
      {"result from a previous round",
       "u aTC(A) t(A) aTC(B) t(A) t(B)",
       "u aTC(A) t(A) aTC(B) t(B)",
       {"orphan_result"}},
      {"foreign result inside group",
       "u aTC(A,B) t(A) t(X) t(B)",
       "u aTC(A,B) t(A) t(B)",
       {"orphan_result"}},
      {"repeated id in one call",
       "u aTC(A,A) t(A) t(A)",
       "u",
       {"duplicate_call_id", "call_dropped", "call_dropped"}},
      {"result after interruption", "u aTC(A) u t(A)", "u u", {"unanswered_call", "orphan_result"}},
      {"system message is a valid predecessor", "s aTC(A) t(A) u", "s aTC(A) t(A) u", {}},
      {"dropped group poisons the next call",
       "u a aTC(A) t(A) aTC(B) t(B) u",
       "u a u",
       {"invalid_predecessor", "call_dropped", "invalid_predecessor", "call_dropped"}},
      {"empty history", "", "", {}},
  };
  for (const SanitizeCase& c : cases) {
    SCOPED_TRACE(std::string(c.name) + ": " + c.input);
    std::vector<DroppedMessage> dropped;
    std::vector<Message> out = SanitizeMessages(Conv(c.input), &dropped);
    EXPECT_EQ(Shape(out), c.expected);
    std::vector<std::string> reasons;
    for (const DroppedMessage& d : dropped) reasons.emplace_back(DropReasonName(d.reason));
    EXPECT_EQ(reasons, c.reasons);
  }
}

// A history read in two parts, split at any group start, the second part starting from
// the state the first left (what a folded history does), keeps and drops what one pass
// over the whole keeps and drops.
TEST(SanitizerTest, TwoPartsFromTheFirstPartsStateEqualOnePass) {
  const char* const inputs[] = {
      "u aTC(A) t(A) a",          "u a aTC(A) t(A)",          "aTC(A) t(A) u",
      "u aTC(A,B) t(A) u a",      "u aTC(A) t(A) aTC(B) t(B) aTC(C) t(C)",
      "u aTC(A) aTC(B) t(B) a",   "s aTC(A) t(A) a aTC(B) t(B)",
      "u aTC(A) t(A) t(A) aTC(A) t(A)"};
  int splits = 0;
  for (const char* input : inputs) {
    SCOPED_TRACE(input);
    const std::vector<Message> conv = Conv(input);
    const SanitizeResult whole = SanitizeForProvider(conv);
    for (size_t cut = 1; cut < conv.size(); ++cut) {
      if (conv[cut].role == Role::kTool) continue;  // not a group start
      SCOPED_TRACE("cut " + std::to_string(cut));
      const SanitizeResult first = SanitizeForProvider(std::span(conv).first(cut));
      SanitizeStart start;
      if (!first.kept.empty()) start = {true, conv[first.kept.back()].role};
      const SanitizeResult second = SanitizeForProvider(
          conv.size() - cut, [&](size_t i) -> const Message& { return conv[cut + i]; }, start);
      std::vector<size_t> kept = first.kept;
      for (size_t i : second.kept) kept.push_back(cut + i);
      EXPECT_EQ(kept, whole.kept);
      std::vector<std::string> reasons;
      for (const auto* part : {&first, &second}) {
        for (const DroppedMessage& d : part->dropped) {
          reasons.push_back(std::string(DropReasonName(d.reason)));
        }
      }
      std::vector<std::string> whole_reasons;
      for (const DroppedMessage& d : whole.dropped) {
        whole_reasons.push_back(std::string(DropReasonName(d.reason)));
      }
      EXPECT_EQ(reasons, whole_reasons);
      ++splits;
    }
  }
  EXPECT_EQ(splits, 19);  // every group start of the inputs above
}

TEST(SanitizerTest, DropDetailsNameTheIdAndIndex) {
  std::vector<DroppedMessage> dropped;
  (void)SanitizeMessages(Conv("u aTC(call_1,call_2) t(call_1) u"), &dropped);
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0].index, 1u);
  EXPECT_EQ(dropped[0].tool_call_id, "call_2");
  EXPECT_NE(dropped[0].detail.find("call_2"), std::string::npos) << dropped[0].detail;
  EXPECT_EQ(dropped[1].index, 2u);
  EXPECT_EQ(dropped[1].tool_call_id, "call_1");
}

struct AppendCase {
  const char* name;
  const char* stored;  // history before the batch
  const char* batch;
  std::vector<uint32_t> flags;
  std::vector<std::string> problems;  // "index:id:problem"
  OpenCallState after;
};

TEST(SanitizerTest, ValidateAppendFlagsAndWarnings) {
  const std::vector<AppendCase> cases = {
      {"clean round", "u", "aTC(A,B) t(B) t(A) a", {0, 0, 0, 0}, {}, {}},
      {"orphan after user", "u", "t(call_9)", {kFlagOrphanResult}, {"0:call_9:orphan_result"}, {}},
      {"duplicate",
       "u aTC(A)",
       "t(A) t(A)",
       {0, kFlagDuplicateResult},
       {"1:A:duplicate_result"},
       {true, {}, {"A"}}},
      {"unanswered before user",
       "u aTC(A,B) t(A)",
       "u",
       {kFlagUnansweredCall},
       {"0:B:unanswered_call"},
       {}},
      {"unanswered before new call",
       "u aTC(A)",
       "aTC(B) t(B)",
       {kFlagUnansweredCall, 0},
       {"0:A:unanswered_call"},
       {true, {}, {"B"}}},
      {"id reused in a new round",
       "u aTC(call_0) t(call_0)",
       "aTC(call_0) t(call_0)",
       {0, 0},
       {},
       {true, {}, {"call_0"}}},
      {"result for an older round",
       "u aTC(A) t(A) aTC(B)",
       "t(A) t(B)",
       {kFlagOrphanResult, 0},
       {"0:A:orphan_result"},
       {true, {}, {"B"}}},
      {"open state carried", "u aTC(A,B) t(A)", "t(B)", {0}, {}, {true, {}, {"A", "B"}}},
      {"empty call id", "u", "aTC()", {0}, {"0::empty_call_id"}, {true, {}, {}}},
      {"pending after batch", "u", "aTC(A,B) t(B)", {0, 0}, {}, {true, {"A"}, {"B"}}},
  };
  for (const AppendCase& c : cases) {
    SCOPED_TRACE(std::string(c.name) + ": [" + c.stored + "] + [" + c.batch + "]");
    std::vector<Message> stored = Conv(c.stored);
    OpenCallState st = DeriveOpenCallState(stored);
    std::vector<Message> batch = Conv(c.batch);
    AppendValidation v = ValidateAppend(st, batch);
    EXPECT_EQ(v.flags, c.flags);
    std::vector<std::string> problems;
    for (const AppendWarning& w : v.warnings) {
      problems.push_back(std::to_string(w.index) + ":" + w.tool_call_id + ":" + w.problem);
    }
    EXPECT_EQ(problems, c.problems);
    EXPECT_EQ(v.ok(), c.problems.empty());
    EXPECT_EQ(v.state_after, c.after) << "open=" << v.state_after.open_ids.size()
                                      << " answered=" << v.state_after.answered_ids.size();
  }
}

TEST(SanitizerTest, WarningJsonShape) {
  AppendValidation v = ValidateAppend(OpenCallState{}, Conv("u u u t(call_9)"));
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_EQ(boost::json::serialize(AppendWarningToJson(v.warnings[0])),
            R"({"index":3,"tool_call_id":"call_9","problem":"orphan_result",)"
            R"("message":"tool result for call_9 answers no open call"})");
}

TEST(SanitizerTest, DeriveOpenStateFromSuffixEqualsWholeHistory) {
  std::vector<Message> all = Conv("u aTC(A) t(A) u aTC(B,C) t(C)");
  OpenCallState whole = DeriveOpenCallState(all);
  std::vector<Message> suffix(all.begin() + 4, all.end());  // from the last non-tool message
  EXPECT_EQ(DeriveOpenCallState(suffix), whole);
  EXPECT_EQ(whole, (OpenCallState{true, {"B"}, {"C"}}));
}

}  // namespace
}  // namespace missy

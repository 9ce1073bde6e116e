// RepairAndValidateAppend (core/sanitizer.h): the empty call ids local models send
// (issue 10) repaired on append, and what the read-time sanitizer makes of the result.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "context_test_helpers.h"
#include "core/sanitizer.h"

namespace missy {
namespace {

using testing::Conv;
using testing::Shape;

constexpr uint32_t kRepaired = kFlagRepairedId;
constexpr uint32_t kUnpaired = kFlagRepairedId | kFlagOrphanResult;

std::vector<std::string> Problems(const std::vector<AppendWarning>& warnings) {
  std::vector<std::string> out;
  for (const AppendWarning& w : warnings) {
    out.push_back(std::to_string(w.index) + ":" + w.tool_call_id + ":" + w.problem + ":" + w.field);
  }
  return out;
}

struct RepairCase {
  const char* name;
  const char* stored;    // history before the batch (seqs 1..n)
  const char* batch;     // its first message gets seq n + 1
  const char* repaired;  // the batch after repair (Shape)
  std::vector<uint32_t> flags;
  std::vector<std::string> problems;  // "index:id:problem:field"
  const char* context;                // what the read-time sanitizer keeps of stored + batch
};

// Appends c.batch after c.stored with repair: the batch as repaired, its flags and
// warnings, and what the sanitizer then sends.
void ExpectRepair(const RepairCase& c) {
  SCOPED_TRACE(std::string(c.name) + ": [" + c.stored + "] + [" + c.batch + "]");
  std::vector<Message> stored = Conv(c.stored);
  std::vector<Message> batch = Conv(c.batch);
  const std::vector<Message> given = batch;
  AppendValidation v = RepairAndValidateAppend(DeriveOpenCallState(stored), batch,
                                               static_cast<int64_t>(stored.size()) + 1);
  EXPECT_EQ(Shape(batch), c.repaired);
  EXPECT_EQ(v.flags, c.flags);
  // NeedsIdRepair says beforehand which messages the repair takes in hand; the others are
  // stored as they were given.
  for (size_t i = 0; i < given.size() && i < v.flags.size(); ++i) {
    EXPECT_EQ(NeedsIdRepair(given[i]), (v.flags[i] & kFlagRepairedId) != 0) << "message " << i;
    if (!NeedsIdRepair(given[i])) EXPECT_EQ(given[i], batch[i]) << "message " << i;
  }
  EXPECT_EQ(Problems(v.warnings), c.problems);
  std::vector<Message> all = stored;
  all.insert(all.end(), batch.begin(), batch.end());
  EXPECT_EQ(Shape(SanitizeMessages(all)), c.context);
}

TEST(SanitizerRepairTest, EmptyIdsAreRepairedWhenUnambiguous) {
  const std::vector<RepairCase> cases = {
      {"one call, one result",
       "u",
       "aTC() t()",
       "aTC(call_missy_2_0) t(call_missy_2_0)",
       {kRepaired, kRepaired},
       {"0:call_missy_2_0:repaired_call_id:tool_calls[0].id",
        "1:call_missy_2_0:repaired_call_id:tool_call_id"},
       "u aTC(call_missy_2_0) t(call_missy_2_0)"},
      {"result in the next batch",
       "u aTC(call_missy_2_0)",
       "t() a",
       "t(call_missy_2_0) a",
       {kRepaired, 0},
       {"0:call_missy_2_0:repaired_call_id:tool_call_id"},
       "u aTC(call_missy_2_0) t(call_missy_2_0) a"},
      {"the agent's call id, an empty result id",
       "u aTC(call_7)",
       "t()",
       "t(call_7)",
       {kRepaired},
       {"0:call_7:repaired_call_id:tool_call_id"},
       "u aTC(call_7) t(call_7)"},
      {"the last open call of several",
       "u aTC(A,B) t(A)",
       "t()",
       "t(B)",
       {kRepaired},
       {"0:B:repaired_call_id:tool_call_id"},
       "u aTC(A,B) t(A) t(B)"},
      {"one empty id among the agent's",
       "u",
       "aTC(A,) t(A) t()",
       "aTC(A,call_missy_2_1) t(A) t(call_missy_2_1)",
       {kRepaired, 0, kRepaired},
       {"0:call_missy_2_1:repaired_call_id:tool_calls[1].id",
        "2:call_missy_2_1:repaired_call_id:tool_call_id"},
       "u aTC(A,call_missy_2_1) t(A) t(call_missy_2_1)"},
      {"generated id taken by the agent",
       "u",
       "aTC(call_missy_2_1,) t(call_missy_2_1) t()",
       "aTC(call_missy_2_1,call_missy_2_1_r) t(call_missy_2_1) t(call_missy_2_1_r)",
       {kRepaired, 0, kRepaired},
       {"0:call_missy_2_1_r:repaired_call_id:tool_calls[1].id",
        "2:call_missy_2_1_r:repaired_call_id:tool_call_id"},
       "u aTC(call_missy_2_1,call_missy_2_1_r) t(call_missy_2_1) t(call_missy_2_1_r)"},
      {"seq of a later message in the batch",
       "u a",
       "u aTC(,) t() u",
       "u aTC(call_missy_4_0,call_missy_4_1) t() u",
       {0, kRepaired, kUnpaired, kFlagUnansweredCall},
       {"1:call_missy_4_0:repaired_call_id:tool_calls[0].id",
        "1:call_missy_4_1:repaired_call_id:tool_calls[1].id", "2::unpaired_result:tool_call_id",
        "3:call_missy_4_0:unanswered_call:", "3:call_missy_4_1:unanswered_call:"},
       "u a u u"},
      {"ids that were sent are left alone",
       "u",
       "aTC(A) t(A)",
       "aTC(A) t(A)",
       {0, 0},
       {},
       "u aTC(A) t(A)"},
  };
  for (const RepairCase& c : cases) ExpectRepair(c);
}

TEST(SanitizerRepairTest, AmbiguousResultsAreStoredUnpairedAndDroppedAtReadTime) {
  const std::vector<RepairCase> cases = {
      {"two calls, two results",
       "u",
       "aTC(,) t() t()",
       "aTC(call_missy_2_0,call_missy_2_1) t() t()",
       {kRepaired, kUnpaired, kUnpaired},
       {"0:call_missy_2_0:repaired_call_id:tool_calls[0].id",
        "0:call_missy_2_1:repaired_call_id:tool_calls[1].id", "1::unpaired_result:tool_call_id",
        "2::unpaired_result:tool_call_id"},
       "u"},
      {"no call open",
       "u",
       "t() a",
       "t() a",
       {kUnpaired, 0},
       {"0::unpaired_result:tool_call_id"},
       "u a"},
      {"the only call already answered",
       "u aTC(A) t(A)",
       "t()",
       "t()",
       {kUnpaired},
       {"0::unpaired_result:tool_call_id"},
       "u aTC(A) t(A)"},
      {"a user message closed the round",
       "u aTC(A)",
       "u t()",
       "u t()",
       {kFlagUnansweredCall, kUnpaired},
       {"0:A:unanswered_call:", "1::unpaired_result:tool_call_id"},
       "u u"},
      {"an unpaired result leaves the state as it was",
       "u aTC(A,B)",
       "t() t(B) t(A)",
       "t() t(B) t(A)",
       {kUnpaired, 0, 0},
       {"0::unpaired_result:tool_call_id"},
       "u aTC(A,B) t(B) t(A)"},
  };
  for (const RepairCase& c : cases) ExpectRepair(c);
}

TEST(SanitizerRepairTest, WarningsNameTheSeqAndTheOpenCalls) {
  std::vector<Message> batch = Conv("u aTC() t() aTC(,) t()");
  AppendValidation v = RepairAndValidateAppend(OpenCallState{}, batch, 11);
  ASSERT_EQ(v.warnings.size(), 5u);
  EXPECT_EQ(v.warnings[0].message,
            "tool call 'bash' had no id: stored as call_missy_12_0 (seq 12)");
  EXPECT_EQ(v.warnings[1].message,
            "tool result had no tool_call_id: paired with the only open call call_missy_12_0 "
            "(seq 13)");
  EXPECT_EQ(v.warnings[4].message,
            "tool result had no tool_call_id and 2 calls are open (call_missy_14_0, "
            "call_missy_14_1): stored unpaired (seq 15), never sent to a provider");
  EXPECT_EQ(v.state_after, (OpenCallState{true, {"call_missy_14_0", "call_missy_14_1"}, {}}));
  EXPECT_EQ(RepairedCallId(14, 1), "call_missy_14_1");
}

TEST(SanitizerRepairTest, UnpairedResultIsReportedAsAnOrphanAtReadTime) {
  std::vector<DroppedMessage> dropped;
  std::vector<Message> kept =
      SanitizeMessages(Conv("u aTC(call_missy_2_0,call_missy_2_1) t() t() u"), &dropped);
  EXPECT_EQ(Shape(kept), "u u");
  ASSERT_EQ(dropped.size(), 3u);
  EXPECT_EQ(dropped[0].reason, DropReason::kUnansweredCall);
  EXPECT_EQ(dropped[0].tool_call_id, "call_missy_2_0");
  EXPECT_EQ(dropped[1].index, 2u);
  EXPECT_EQ(dropped[1].reason, DropReason::kOrphanResult);
  EXPECT_EQ(dropped[1].tool_call_id, "");
  EXPECT_EQ(dropped[1].detail,
            "tool result without a tool_call_id could not be paired with a call");
  EXPECT_EQ(dropped[2].index, 3u);
  EXPECT_EQ(dropped[2].reason, DropReason::kOrphanResult);
}

// Strict appends repair nothing: each empty id is a warning naming its field.
TEST(SanitizerRepairTest, StrictValidationNamesTheEmptyIdFields) {
  std::vector<Message> batch = Conv("aTC(A,) t(A) t()");
  AppendValidation v = ValidateAppend(DeriveOpenCallState(Conv("u")), batch);
  EXPECT_EQ(Shape(batch), "aTC(A,) t(A) t()");
  EXPECT_EQ(v.flags, (std::vector<uint32_t>{0, 0, kFlagOrphanResult}));
  EXPECT_EQ(Problems(v.warnings), (std::vector<std::string>{"0::empty_call_id:tool_calls[1].id",
                                                            "2::empty_call_id:tool_call_id"}));
  EXPECT_FALSE(v.ok());
}

}  // namespace
}  // namespace missy

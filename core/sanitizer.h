// Tool-pair validity, at both ends of storage (DESIGN.md §2, §9).
//
// On append, ValidateAppend() flags (never drops) what would be invalid for a provider
// and explains it in warnings; the daemon stores the batch with those flags, or rejects
// it with 422 in strict mode. On read, SanitizeForProvider() keeps only what is valid,
// with PicoClaw's semantics, and says what it dropped and why. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/groups.h"
#include "core/message.h"

namespace missy {

// ---------------------------------------------------------------------------------------
// Read time.
//
// Rules, applied in one pass (a, aTC = assistant without/with tool_calls, t = tool):
//  - a tool result is kept only inside the group of the assistant message right before
//    it (only tool results in between) and only if it answers one of that message's
//    calls for the first time; otherwise it is an orphan or a duplicate;
//  - an aTC is kept only if all its calls are answered in its group (else the whole
//    group goes: "unanswered_call"), no call id is empty ("empty_call_id") or repeated
//    within the message ("duplicate_call_id"), and the message kept right before it is a
//    user, tool or system message ("invalid_predecessor"; PicoClaw: u,a,aTC,t -> u,a);
//  - results of a dropped aTC go with it ("call_dropped");
//  - a result with an empty tool_call_id (one an append could not pair) answers no call:
//    an orphan.
// The same id reused in a later round is legal: each aTC opens a fresh set of ids.
// Output invariants: no orphan result, no call without its result, no duplicate result,
// no empty call id; every kept aTC is immediately followed by exactly its results.
enum class DropReason {
  kOrphanResult,
  kDuplicateResult,
  kUnansweredCall,
  kEmptyCallId,
  kDuplicateCallId,
  kInvalidPredecessor,
  kCallDropped,
};
std::string_view DropReasonName(DropReason reason);  // "orphan_result", ...

struct DroppedMessage {
  size_t index = 0;          // position in the sanitized input
  std::string tool_call_id;  // the id concerned (first missing id for unanswered_call)
  DropReason reason = DropReason::kOrphanResult;
  std::string detail;  // human sentence naming the id and the problem
};

struct SanitizeResult {
  std::vector<size_t> kept;             // indices of kept messages, increasing
  std::vector<DroppedMessage> dropped;  // in index order
};

// What the sanitizer knew of the messages before the ones it reads: whether one was kept,
// and the role of the last kept one (the only state a pass carries across a group start).
// Reading a history in parts, each part starting at a group start, with the state the
// parts before it left gives the decisions one pass over the whole history gives.
struct SanitizeStart {
  bool have_last = false;
  Role last_kept_role = Role::kUser;
};

SanitizeResult SanitizeForProvider(size_t n, const MessageAt& at, SanitizeStart start = {});
SanitizeResult SanitizeForProvider(std::span<const Message> messages);
// Convenience: the kept messages themselves.
std::vector<Message> SanitizeMessages(std::span<const Message> messages,
                                      std::vector<DroppedMessage>* dropped = nullptr);

// ---------------------------------------------------------------------------------------
// Append time.
//
// The open state of a session: the tool calls of its last assistant message, when only
// tool results came after it. Ids reused in a later round are legal because every
// assistant message starts a new round.
struct OpenCallState {
  bool round_open = false;            // the last non-tool message is an assistant with tool_calls
  std::vector<std::string> open_ids;  // its calls not answered yet, in call order
  std::vector<std::string> answered_ids;  // its calls already answered
  bool operator==(const OpenCallState&) const = default;
};

// Derives the state from the end of a history. Pass at least the suffix that starts at
// the last non-tool message (e.g. the stored messages with seq >= that message's seq);
// passing the whole history is also correct.
OpenCallState DeriveOpenCallState(std::span<const Message> recent);
OpenCallState DeriveOpenCallState(std::span<const StoredMessage> recent);

struct AppendWarning {
  size_t index = 0;          // position in the batch
  std::string tool_call_id;  // the id concerned (may be empty for empty_call_id)
  std::string problem;       // orphan_result | duplicate_result | unanswered_call |
                             // empty_call_id | duplicate_call_id | repaired_call_id |
                             // unpaired_result
  std::string message;       // "tool result for call_9 answers no open call"
  // The field of the message concerned ("tool_call_id", "tool_calls[1].id"), or empty for
  // the message as a whole. Names a strict refusal's field; not part of the JSON form.
  std::string field;
};
// AppendWarningToJson: core/message_json.h.

struct AppendValidation {
  std::vector<uint32_t> flags;  // one per batch message: kFlagOrphanResult,
                                // kFlagDuplicateResult, kFlagUnansweredCall,
                                // kFlagRepairedId (or 0)
  std::vector<AppendWarning> warnings;
  OpenCallState state_after;  // the session's state once the batch is stored
  bool ok() const { return warnings.empty(); }
};

// Flags set:
//  - kFlagOrphanResult on a tool result answering no open call of the current round
//    (including a result arriving after a user or plain assistant message);
//  - kFlagDuplicateResult on a second result for the same call of the current round;
//  - kFlagUnansweredCall on the user/assistant/system message that arrives while calls of the
//    previous assistant message are still unanswered: the interrupting message carries
//    the flag (stored rows are never rewritten), the warning names each missing id;
//  - an assistant message with an empty or repeated call id gets a warning
//    (empty_call_id / duplicate_call_id) and no flag: the read-time sanitizer drops
//    its group anyway;
//  - a tool result with an empty tool_call_id gets an empty_call_id warning and
//    kFlagOrphanResult.
// Any non-tool message closes the round, as it ends the group at read time. Strict
// appends use this form: any warning refuses the batch.
AppendValidation ValidateAppend(const OpenCallState& state, std::span<const Message> batch);

// Non-strict appends: as ValidateAppend, after repairing in `batch` the empty ids local
// models send (llama.cpp, some Ollama versions send "" or nothing; issue 10):
//  - an assistant tool call with an empty id gets "call_missy_<seq>_<k>" (seq = the
//    message's, first_seq + its index; k = the call's index), made unique within its
//    message;
//  - a tool result with an empty tool_call_id takes the id of the open call when exactly
//    one call of the current round is still unanswered (stored or earlier in the batch);
// each such message gets kFlagRepairedId and a repaired_call_id warning naming the id
// and the seq. A result that cannot be paired (several open calls, or none) is stored as
// it is, flagged kFlagRepairedId | kFlagOrphanResult, with an unpaired_result warning: the
// read-time sanitizer drops it as an orphan (and the group whose call it left unanswered).
AppendValidation RepairAndValidateAppend(const OpenCallState& state, std::span<Message> batch,
                                         int64_t first_seq);

// Whether RepairAndValidateAppend takes `m` in hand (kFlagRepairedId): a tool result or an
// assistant's call without an id gets one, or is stored flagged unpaired. Any other message
// is stored as it is given.
bool NeedsIdRepair(const Message& m);

// The id RepairAndValidateAppend gives call `call_index` of the message stored at `seq`
// (before any uniqueness suffix).
std::string RepairedCallId(int64_t seq, size_t call_index);

}  // namespace missy

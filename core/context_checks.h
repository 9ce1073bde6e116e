// Checks of an assembled context that tests, benchmarks and the daemon's debug paths
// share: provider validity of a message list, and how a context's prefix compares with
// the previous one of the same session (prompt-cache friendliness). Pure.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/assembler.h"
#include "core/message.h"

namespace missy {

// "" when every assistant tool_calls message is immediately followed by exactly one
// result per call (any order), ids are non-empty and unique within the message, and no
// other tool message exists; otherwise the first problem, naming index and id.
std::string FindToolPairProblem(std::span<const Message> messages);

struct PrefixComparison {
  // `cur.messages` starts with every message of `prev.messages` (a full cache hit).
  bool identical = false;
  // Not identical, but only history messages were evicted from the front: system and
  // summaries are unchanged and prev's history minus a leading run is a prefix of cur's.
  bool front_evicted_only = false;
  size_t common_messages = 0;  // length of the common leading run of messages
};

// Messages before the history part: the system message (when sent) and the summaries.
size_t LeadingNonHistoryMessages(const AssembledContext& ctx);

PrefixComparison ComparePrefix(const AssembledContext& prev, const AssembledContext& cur);

}  // namespace missy

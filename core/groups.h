// Tool-call groups and turns (DESIGN.md §2). A group is the unit no cut may split: an
// assistant message with tool_calls plus the tool results that follow it; any other
// message is a group of its own. A turn starts at a user message. Structurally, a cut
// before index i is safe iff message i is not a tool result, so every function here
// works on unsanitized input too (a stray leading tool result simply joins no call and
// forms its own group). Pure functions; no allocation beyond the returned vectors.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "core/message.h"

namespace missy {

// Messages [begin, end) of one group.
struct GroupSpan {
  size_t begin = 0;
  size_t end = 0;
  bool has_tool_calls = false;  // begins with an assistant message carrying tool_calls
  size_t size() const { return end - begin; }
  bool operator==(const GroupSpan&) const = default;
};

// Random access to the i-th message of some sequence (a history, a list of pointers...).
using MessageAt = std::function<const Message&(size_t)>;

// True when a cut right before `m` splits no group.
inline bool IsGroupStart(const Message& m) { return m.role != Role::kTool; }

// Groups of a sequence of `n` messages, in order; they tile [0, n).
std::vector<GroupSpan> ComputeGroups(size_t n, const MessageAt& at);
std::vector<GroupSpan> ComputeGroups(std::span<const Message> messages);
std::vector<GroupSpan> ComputeGroups(std::span<const StoredMessage> history);

// The largest group start <= index (0 if none); index == n is returned unchanged.
size_t GroupStartAtOrBefore(size_t n, const MessageAt& at, size_t index);

// Start index of the fresh tail: the last `count` messages, the boundary moved back to
// the start of the group it would otherwise split. count <= 0 gives n (empty tail).
size_t FreshTailStart(size_t n, const MessageAt& at, int64_t count);
size_t FreshTailStart(std::span<const StoredMessage> history, int64_t count);

// Cuts [begin, end) into consecutive chunks of whole groups, each of at most `max_tokens`
// (tokens_of(i) = cost of message i) — the leaf-summary chunks of DESIGN.md §5. A single
// group larger than max_tokens forms a chunk of its own (never split).
std::vector<GroupSpan> ChunkOnGroups(size_t begin, size_t end, const MessageAt& at,
                                     const std::function<int64_t(size_t)>& tokens_of,
                                     int64_t max_tokens);

// Indices of user messages (turn starts), in order.
std::vector<size_t> TurnStarts(size_t n, const MessageAt& at);
// Index of the last user message, or n when there is none.
size_t LastTurnStart(size_t n, const MessageAt& at);

}  // namespace missy

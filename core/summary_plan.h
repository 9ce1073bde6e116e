// Planning hierarchical summarization (DESIGN.md §5, Missy's compact_session): which
// messages the next leaf summaries cover, and which summaries to condense. Pure.
//
// Leaves cover the uncovered history outside the fresh tail, in chunks of whole groups
// (an assistant message with tool calls and its results is never split) of at most
// leaf_chunk_tokens each. A trailing chunk smaller than half a chunk waits for more
// history (unless forced), so a session is not summarized again for a few new messages:
// no compaction loops. When condensed_fanout summaries without a parent exist at one
// depth, the oldest of them are condensed into one at the next depth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/message.h"

namespace missy {

struct SummarizerOptions {
  int64_t leaf_chunk_tokens = 20000;  // a leaf summary covers at most this much history
  int64_t condensed_fanout = 4;       // summaries condensed into one at the next depth
  int64_t leaf_target_tokens = 1200;  // size a leaf summary is cut to
  int64_t condensed_target_tokens = 2000;
};

// What planning needs of a message (no content).
struct PlanMessage {
  int64_t seq = 0;
  Role role = Role::kUser;
  int64_t tokens = 0;
};

struct LeafChunk {
  size_t begin = 0;  // indices into the planned messages, [begin, end)
  size_t end = 0;
  int64_t tokens = 0;
};

// Leaf chunks over `uncovered` (the messages after the last summarized one, seq order),
// leaving the last `fresh_tail_count` messages (moved back to a group start) alone.
// `force`: also the trailing chunk however small (forced compaction).
std::vector<LeafChunk> PlanLeafChunks(std::span<const PlanMessage> uncovered,
                                      int64_t fresh_tail_count, const SummarizerOptions& options,
                                      bool force = false);

// A summary as planning sees it.
struct PlanSummary {
  std::string id;
  int depth = 0;
  int64_t first_seq = 0;
  int64_t tokens = 0;
};

// The summaries to condense next (ids, oldest first): the oldest condensed_fanout of the
// lowest depth that has at least that many without a parent; empty when none has.
// `uncondensed` holds the summaries without a parent, in any order. With room_tokens > 0,
// nothing is condensed while they all fit in it together: a context can show them all,
// and condensing would only lose detail (files, errors) for nothing.
std::vector<std::string> PlanCondensation(std::span<const PlanSummary> uncondensed,
                                          const SummarizerOptions& options,
                                          int64_t room_tokens = 0);

}  // namespace missy

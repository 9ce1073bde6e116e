// Old tool output pruning (DESIGN.md §4 rule 5, OpenCode's compaction.prune): tool
// results older than the last `protect_user_turns` user turns and beyond the newest
// `protect_tool_tokens` tokens of tool output are replaced by a placeholder, but only
// when that frees at least `minimum_freed_tokens`. The decision is returned, not
// applied: the daemon persists it as kFlagPruned (sticky), so later contexts render the
// same bytes and the original stays in storage. Pure.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/message.h"
#include "core/token_counter.h"

namespace missy {

inline constexpr const char kPrunedPlaceholder[] = "[Old tool result content cleared]";

struct PruningOptions {
  bool enabled = true;                   // false: never prune (sticky flags still render)
  int64_t protect_user_turns = 2;        // the last N user turns are never pruned
  int64_t protect_tool_tokens = 40000;   // newest tool output kept beyond those turns
  int64_t minimum_freed_tokens = 20000;  // prune only if at least this much is freed
};

// One message of the (sanitized, summary-uncovered) history, oldest first.
struct PruneEntry {
  int64_t seq = 0;
  Role role = Role::kUser;
  int64_t tokens = 0;           // as stored
  int64_t pruned_tokens = 0;    // the same message with the placeholder as content
  bool already_pruned = false;  // kFlagPruned set
};

struct PruneDecision {
  std::vector<int64_t> seqs;           // newly pruned, increasing; empty when nothing is pruned
  int64_t freed_tokens = 0;            // sum of tokens - pruned_tokens over `seqs`
  int64_t candidate_freed_tokens = 0;  // what pruning would have freed (even if < minimum)
};

// Walks from the newest message back: skips everything from the protect_user_turns-th
// last user message on; then counts tool output (not already pruned) and marks as
// candidates the results once the running total exceeds protect_tool_tokens (a result
// no larger than its placeholder is never a candidate). Already
// pruned results are skipped (they count neither toward the protected total nor freed).
PruneDecision DecidePruning(std::span<const PruneEntry> entries, const PruningOptions& options);

// DecidePruning as a walk fed one entry at a time, newest first, so that a caller can feed
// part of the history in bulk (the assembler's folded part: core/folded_history.h).
class PruneWalk {
 public:
  explicit PruneWalk(const PruningOptions& options) : options_(options) {}
  void Step(const PruneEntry& e);
  const PruningOptions& options() const { return options_; }
  int64_t user_turns() const { return user_turns_; }  // user messages stepped
  int64_t tool_total() const { return tool_total_; }  // tool output counted so far
  int64_t freed() const { return freed_; }            // what the candidates so far free
  // Candidates older than every entry stepped so far, found in bulk by the caller.
  void AddOlder(std::span<const int64_t> ascending_seqs, int64_t freed_tokens);
  PruneDecision Finish();

 private:
  PruningOptions options_;
  int64_t user_turns_ = 0;
  int64_t tool_total_ = 0;
  std::vector<int64_t> newest_first_;    // candidates stepped, newest first
  std::vector<int64_t> bulk_ascending_;  // candidates added in bulk (older than all stepped)
  int64_t freed_ = 0;
};

// The message as rendered once pruned: same role, id and name, placeholder content.
Message PrunedMessage(const Message& m);

}  // namespace missy

// The older part of a session's history without its content: what the context assembler
// still needs of messages that no context can keep any more (their seq, role, tokens,
// flags and whether the read-time sanitizer keeps them), so that a context costs what
// its kept window costs, not what the whole stored history costs.
//
// A folded part always ends right before a safe cut (IsSafeFoldCut: a group start, any
// message but a tool result) or at the end of the history: the read-time sanitizer
// closes the group before such a message whatever it holds, so sanitizing the folded
// part alone gives exactly the decisions a pass over the whole history gives there, and
// the part after it, sanitized from the folded part's end_state() (the last kept
// message's role, which decides whether an assistant tool call there has a valid
// predecessor), gives the rest. Not thread-safe (Stats memoizes): its owner serialises
// use, as a session's queue does for the cached history.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/message.h"
#include "core/pruning.h"
#include "core/sanitizer.h"
#include "core/token_counter.h"

namespace missy {

// A message left out by the read-time sanitizer (core/sanitizer.h).
struct SanitizedItem {
  int64_t seq = 0;  // 0: the new message
  std::string tool_call_id;
  std::string reason;  // orphan_result | duplicate_result | unanswered_call | empty_call_id |
                       // duplicate_call_id | invalid_predecessor | call_dropped
  std::string detail;
};

struct FoldedMessage {
  int64_t seq = 0;
  int64_t tokens = 0;          // as stored (counted at fold time when the stored count is 0)
  int64_t id_name_tokens = 0;  // CountText(tool_call_id) + CountText(name): the pruned form's text
  uint32_t flags = kFlagNone;
  Role role = Role::kUser;
  bool kept = false;      // kept by the read-time sanitizer
  bool safe_cut = false;  // IsSafeFoldCut(message)
  int64_t kept_rank = 0;  // kept messages before this one
};

// Whether a history may be folded right before `m`: at a group start (not a tool result).
// The read-time sanitizer closes the group before it there, and carries only the role of
// the last kept message across (SanitizeStart: the folded part's end_state()).
inline bool IsSafeFoldCut(const Message& m) { return m.role != Role::kTool; }

// Merged, sorted, inclusive seq ranges (of summaries).
using SeqRanges = std::vector<std::pair<int64_t, int64_t>>;
SeqRanges MergeRanges(SeqRanges ranges);

// What Stats depends on besides the folded messages themselves.
struct FoldedStatsKey {
  int64_t tool_cap = 0;     // a tool output's cost is at most this (rule 6 cap + slack)
  int64_t pruned_base = 0;  // per-message overhead + the placeholder's tokens
  SeqRanges summaries;      // coverage of every given summary (merged)
  bool operator==(const FoldedStatsKey&) const = default;
};

// One folded message as the pruning walk sees it (kept and summary-uncovered only).
struct FoldedCost {
  int64_t seq = 0;
  int64_t sent = 0;    // its cost in a context (capped, or the placeholder when pruned)
  int64_t pruned = 0;  // its cost once pruned (= sent unless an unpruned tool result)
  Role role = Role::kUser;
  bool unpruned_tool = false;  // a tool result not pruned yet: counts toward the protection
};

struct FoldedStats {
  int64_t kept = 0;       // messages the sanitizer keeps
  int64_t uncovered = 0;  // kept messages of groups that no summary covers
  int64_t demand = 0;     // their cost in a context
  // The uncovered messages, oldest first, with running sums for the pruning walk
  // (ContinuePruneWalk): [i] sums over costs[0, i).
  std::vector<FoldedCost> costs;
  std::vector<int64_t> tool_before;   // cost of the unpruned tool results
  std::vector<int64_t> freed_before;  // what pruning frees (results larger than the placeholder)
  std::vector<uint32_t> users;        // indices into costs of user messages
};

// Where DecidePruning's walk (newest first) ends up once it has also gone through the
// folded part: the candidates are costs[0, end) that pruning would shrink.
struct FoldedPrune {
  size_t end = 0;
  int64_t freed = 0;
};

class FoldedHistory {
 public:
  // Folds the next messages (with content, in seq order). `messages` continues the folded
  // part, and what follows it in the history is a safe cut or nothing yet.
  void Fold(std::span<const StoredMessage> messages, const MessageTokenCounter& counter);
  // Forgets the folded messages with seq >= first_seq (their content is back in a window).
  void Unfold(int64_t first_seq);
  // Applies committed flag changes (kFlagPruned) to folded messages.
  void AddFlags(const std::vector<int64_t>& seqs, uint32_t flags);

  bool empty() const { return messages_.empty(); }
  size_t size() const { return messages_.size(); }
  int64_t kept_count() const;
  bool has_kept_user() const { return kept_users_ > 0; }
  const std::vector<FoldedMessage>& messages() const { return messages_; }
  const std::vector<SanitizedItem>& sanitized() const { return sanitized_; }
  // The sanitizer's state after the folded messages (what the window's pass starts from).
  SanitizeStart end_state() const;
  size_t ApproxBytes() const;

  // Computed in one pass, memoized for the last key (recomputed after Fold/Unfold/AddFlags).
  const FoldedStats& Stats(const FoldedStatsKey& key) const;
  // Continues a pruning walk that went through the newer messages with `users_seen` user
  // turns and `tool_total` tool tokens counted: O(log n) over the memoized sums.
  FoldedPrune ContinuePruneWalk(const FoldedStatsKey& key, const PruningOptions& options,
                                int64_t users_seen, int64_t tool_total) const;
  // The candidates of a FoldedPrune, ascending.
  std::vector<int64_t> PruneSeqs(const FoldedStatsKey& key, const FoldedPrune& prune) const;
  // Kept messages inside `ranges` (merged, sorted).
  int64_t CountKeptIn(const SeqRanges& ranges) const;
  // The newest group of kept messages: its first seq and whether `ranges` cover any of
  // its members. nullopt when nothing is kept.
  struct LastGroup {
    int64_t first_seq = 0;
    bool covered = false;
  };
  std::optional<LastGroup> LastKeptGroup(const SeqRanges& ranges) const;

 private:
  template <typename F>
  void ForEachUncovered(const FoldedStatsKey& key, F&& f) const;

  std::vector<FoldedMessage> messages_;
  std::vector<SanitizedItem> sanitized_;
  int64_t kept_users_ = 0;
  mutable std::optional<FoldedStatsKey> memo_key_;
  mutable FoldedStats memo_;
};

// Whether `seq` lies in one of the merged, sorted `ranges`.
bool RangesCover(const SeqRanges& ranges, int64_t seq);

}  // namespace missy

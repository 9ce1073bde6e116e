// The context assembler's passes and the state they share (internal to core/: only
// assembler.cpp and the assembly_*.cpp files include it). AssembleContext
// (core/assembler.cpp) runs the passes in the order they are declared here, each over one
// AssemblyState; a pass reads what the passes before it left and says what it leaves.
// Pure, like the assembler: no I/O, no clock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/assembler.h"
#include "core/context_entry.h"
#include "core/folded_history.h"
#include "core/groups.h"
#include "core/pruning.h"
#include "core/status.h"
#include "core/token_counter.h"

namespace missy::assembly {

// What the passes share. Each field is set by the pass named above it and only read by
// the passes after it; `ctx` (the result) is filled as they go.
struct AssemblyState {
  AssemblyState(const ContextInput& input, const MessageTokenCounter& token_counter)
      : in(input), counter(token_counter), renderer(token_counter) {}
  AssemblyState(const AssemblyState&) = delete;
  AssemblyState& operator=(const AssemblyState&) = delete;

  const ContextInput& in;
  const MessageTokenCounter& counter;
  const Renderer renderer;
  AssembledContext ctx;  // the result: messages, system, report, kept seqs

  // MeasureFixedParts
  int64_t base_system_cost = 0;  // the base system prompt as a message (0: none)
  // SanitizeHistory
  const FoldedHistory* folded = nullptr;  // null when there is no folded part
  std::vector<Entry> entries;             // the sanitized history, then the new message
  size_t n_hist_entries = 0;              // entries of the history (the new one excluded)
  std::vector<GroupSpan> groups;          // over `entries`
  // MeasureDemand
  SeqRanges any_summary;           // what any given summary covers (merged)
  std::vector<char> covered_any;   // per entry: its group is covered by a given summary
  int64_t placeholder_tokens = 0;  // kPrunedPlaceholder's text
  int64_t full_history_budget = 0;
  int64_t demand = 0;  // uncovered history + new message as sent (estimate)
  FoldedStatsKey folded_key;
  const FoldedStats* folded_stats = nullptr;  // null when there is no folded part
  bool folded_kept = false;                   // the folded part keeps messages
  // The pinned task as sent on its own (PinnedTaskCost), when first needed.
  std::optional<Message> pinned_task;
  int64_t pinned_task_tokens = 0;
  // TakeFreshTail
  size_t tail_start = 0;          // first entry of the fresh tail
  size_t keep_from = 0;           // first entry kept (moved back by the fill passes)
  std::vector<int64_t> tail_cap;  // per-entry cap inside the tail
  int64_t tail = 0;               // what the tail costs as rendered
  // Tool outputs through this seq go at SqueezedCap: the anchor's or the preset's
  // (TakeFreshTail), a move's (SqueezeOlderToolOutputs).
  int64_t squeezed_through = 0;
  // Set before the passes: a second run after a move that squeezed the tail; the anchor
  // moves, with these squeezed from the start.
  std::optional<int64_t> squeeze_preset;
  bool squeeze_moved = false;  // SqueezeOlderToolOutputs moved squeezed_through
  // AddMemoryAndLearnings
  bool pin_task = false;    // a task is given and the tail does not hold it
  int64_t system_side = 0;  // what the system side costs (measured, or reserve + ours)
  int64_t remaining = 0;    // of the history budget, what the passes still may take
  // PinTask
  std::optional<Message> task_message;  // the pinned task to send, if it fits
  // ChooseSummaryForms, FillNewestFirst, KeepFromAnchor
  std::vector<Message> summary_messages;                // in order
  SeqRanges included;                                   // what the included summaries cover
  std::optional<FoldedHistory::LastGroup> folded_last;  // the folded part's newest group

  // The message at entry `i` (for groups.h and the sanitizer's walks).
  MessageAt EntryAt() const {
    return [this](size_t i) -> const Message& { return *entries[i].msg; };
  }
};

// What a pruned tool message costs (overhead + placeholder + tool_call_id + name), the same
// as CountMessage(PrunedMessage(m)) without building it; rendering counts the real one.
inline int64_t PrunedCost(const AssemblyState& s, const Entry& e) {
  return s.counter.options().per_message_overhead + s.placeholder_tokens +
         s.counter.CountText(e.msg->tool_call_id) + s.counter.CountText(e.msg->name);
}

// What an entry costs once sent, without rendering it: a long tool output at its rule-6
// cap (+ kTruncationSlack, and its images, which the cap of its text leaves whole), a
// pruned one the placeholder. Drives demand, zone and pruning.
inline int64_t SentEstimate(const AssemblyState& s, const Entry& e) {
  if (e.pruned) return PrunedCost(s, e);
  if (e.msg->role == Role::kTool) {
    const int64_t images = e.msg->parts.empty() ? 0 : s.counter.CountImages(*e.msg);
    return std::min(e.stored_tokens, s.in.tool_output_max_tokens + kTruncationSlack + images);
  }
  return e.stored_tokens;
}

// The cap of tool outputs squeezed at an anchor's move: a quarter of the full cap, not
// below the tail's floor, never above the full cap (a tool_output_max_tokens under
// min_tool_output_tokens would otherwise make a squeezed output larger).
inline int64_t SqueezedCap(const ContextInput& in) {
  return std::min(in.tool_output_max_tokens,
                  std::max(in.min_tool_output_tokens, in.tool_output_max_tokens / 4));
}

// Rule 6's cap for a kept entry: SqueezedCap for a tool output through squeezed_through
// (never the new message: stored, it comes after), else tool_output_max_tokens (a cut
// user message of the last turn keeps the cap its cut gave it).
inline int64_t KeptCap(const AssemblyState& s, const Entry& e) {
  const bool squeezed =
      e.msg->role == Role::kTool && !e.is_new && e.seq <= s.squeezed_through;
  return squeezed ? SqueezedCap(s.in) : s.in.tool_output_max_tokens;
}

// ---- The passes, in pipeline order ----------------------------------------------------

// InvalidArgument for an invalid budget, tool_output_max_tokens or threshold_pct.
Status ValidateInput(const ContextInput& in);

// Report: window, system and tool tokens (measured or reserved), available. ContextOverflow
// when the system prompt and tool definitions exceed the budget. (assembly_demand.cpp)
Status MeasureFixedParts(AssemblyState& s);

// History + new message sanitized together (the new message may answer a call) into
// `entries` and their `groups`; the report lists what was dropped. (assembly_demand.cpp)
void SanitizeHistory(AssemblyState& s);

// Coverage by any given summary, the thresholds, and the demand of what no summary
// covers, the folded part's included. (assembly_demand.cpp)
void MeasureDemand(AssemblyState& s);

// Rule 5: when the demand is over the threshold, old tool outputs of the uncovered history
// go pruned (newly_pruned_seqs), the demand drops by what they free; then the zone and
// should_summarize. (assembly_prune.cpp)
void PruneOldToolOutput(AssemblyState& s);

// Rule 1: the fresh tail (the last fresh_tail_count messages from a group start, and the
// new message) fits in the room the pinned task leaves, squeezed, shortened and at last
// cut middle-out if it must; ContextOverflow only for a last turn that cannot fit even
// cut; sets needs_more_history when the tail may reach into the folded part.
// (assembly_tail.cpp)
Status TakeFreshTail(AssemblyState& s);

// Memory (truncated to its budget) and learnings (as many as fit) into the enriched
// system prompt, within their fractions and what the tail and the task leave; then the
// history budget and `remaining`. (assembly_system.cpp)
void AddMemoryAndLearnings(AssemblyState& s);

// The pinned task unless the tail holds it, its room first after the tail's, cut
// middle-out to what is left when the last turn leaves less. (assembly_task.cpp)
void PinTask(AssemblyState& s);

// Rule 2 (no eviction anchor): every summary, oldest first, in `remaining`; the oldest
// short when that is what it takes for all to fit, one skipped when even so it does not.
// (assembly_summaries.cpp)
void ChooseSummaryForms(AssemblyState& s);

// Rule 3 (no eviction anchor): the evictable history newest first by whole groups in
// `remaining`, up to the first group that does not fit or that an included summary
// covers, so the kept part is contiguous and after the summaries. (assembly_fill.cpp)
void FillNewestFirst(AssemblyState& s);

// Cache-friendly eviction (EvictionOptions::anchor_seq > 0), instead of the two above:
// the kept part starts at the anchor, with the summaries in the forms it was set with,
// while all of that fits and none is left out; else the anchor moves forward, the
// summaries are chosen afresh, and slack_fraction of the history budget and at least three
// quarters of the evictable history's room are left free. (assembly_fill.cpp)
void KeepFromAnchor(AssemblyState& s);

// Rule 6: every kept entry before the tail rendered with its tool output cut middle-out
// to its KeptCap (the tail's are rendered at their own caps already).
// (assembly_output.cpp)
void CapKeptToolOutputs(AssemblyState& s);

// The messages (system, task, summaries, kept history, tail, new message) and the rest of
// the report: kept, dropped, covered, truncated, pruned, used tokens. (assembly_output.cpp)
void WriteMessagesAndReport(AssemblyState& s);

// ---- Shared by the passes -------------------------------------------------------------

// At a move of the anchor (KeepFromAnchor): every tool output but the newest
// kFullToolOutputsAtMove goes at SqueezedCap from now until the next move (the prefix
// changes here anyway); what that frees in the tail goes to `remaining`, and
// squeeze_moved says the pipeline must run again with them squeezed from the start.
// (assembly_tail.cpp)
void SqueezeOlderToolOutputs(AssemblyState& s);

// The pinned task as sent on its own (header + text cut beyond task_max_tokens), built on
// the first call; what it costs. Requires in.task. (assembly_task.cpp)
int64_t PinnedTaskCost(AssemblyState& s);

// The fresh tail (from tail_start) holds the task's message. (assembly_task.cpp)
bool TaskInTail(const AssemblyState& s);

// What the pinned task's header line costs as a message. (assembly_task.cpp)
int64_t TaskHeaderCost(const AssemblyState& s);

// Those of `from` that start before `before_seq`, the ones ending at or before
// `stub_through` short, in `remaining` (not taken from it): summary_messages, included,
// the report's summary fields and folded_last. What they cost. (assembly_summaries.cpp)
int64_t SetSummaries(AssemblyState& s, const std::vector<SummaryView>& from, int64_t before_seq,
                     int64_t stub_through);

}  // namespace missy::assembly

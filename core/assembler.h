// The context assembler (DESIGN.md §4): given a session's stored history and what the
// daemon found for it (summaries, memory hits, learnings), builds the message list to
// send to the provider and a budget report. Pure: no I/O, no clock; same input, same
// output. The result never exceeds the budget; tool-call groups are never split.
//
// Output order (Missy's): the enriched system message (base prompt + "## Relevant
// Memory" + "## Past Learnings"; absent when all three are empty), one user message per
// included summary ("[Conversation Summary — depth D, N messages, covers START to END;
// id ID, originals via missy_recall]\n" + text, or its short form when room is short:
// core/context_summaries.h), the kept evictable history, the fresh
// tail, the new message. History is sanitized first (core/sanitizer.h); long tool outputs are
// middle-out truncated (rule 6) and pruned ones (kFlagPruned, sticky) sent as the placeholder, in
// the output only.
//
// What the caller persists afterwards: kFlagPruned on report.newly_pruned_seqs (so the
// next request renders the same bytes), and, with cache-friendly eviction, the
// report.first_kept_seq as the next EvictionOptions::anchor_seq.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/budget.h"
#include "core/context_types.h"
#include "core/folded_history.h"
#include "core/message.h"
#include "core/pruning.h"
#include "core/status.h"
#include "core/token_counter.h"

namespace missy {

// A long tool output costs at most tool_output_max_tokens plus this (framing) in a context.
inline constexpr int64_t kTruncationSlack = 16;

// Cache-friendly eviction. Plain rule 3 keeps the longest suffix that fits, so once the
// budget is full every request evicts a little and the provider's prompt cache misses.
// When the daemon passes the previous context's report.first_kept_seq as anchor_seq,
// the kept part starts exactly there while everything from it fits, with the summaries
// it was set with in their forms (older groups are not added back even if they would
// fit); when it no longer fits, the summaries are chosen afresh (the oldest short if
// that is what it takes to leave slack_fraction of the history budget free), groups are
// evicted from the front down to (1 - slack_fraction) of the room and at most a quarter of
// it (every kept tool output but the newest two cut to a quarter of
// tool_output_max_tokens until the next move), and the new first_kept_seq is the next
// anchor. A summary included later needs no reset: covered groups end the kept part
// anyway. Both modes keep the kept part contiguous and within budget.
struct EvictionOptions {
  int64_t anchor_seq = 0;       // 0: plain rule 3 (newest-first fill, maximal)
  double slack_fraction = 0.2;  // share of the room left free when the anchor moves
  // At a move, every kept tool output but the newest two goes cut to a quarter of
  // tool_output_max_tokens until the next move (ContextInput::anchored_squeezed_through).
  // False: none is, and anchored_squeezed_through is not applied.
  bool squeeze_older_outputs = true;
  // Move the anchor now, as if it no longer fitted: the caller changes the prefix anyway
  // (newer summaries shown, the memory brought up to date), so the same break also frees
  // the slack and the following requests keep their prefix longer.
  bool move = false;
};

struct ContextInput {
  TokenBudget budget;          // budget.total already reflects the model window
  int64_t context_window = 0;  // the model's window (report only; 0 = unknown)
  int64_t max_output_tokens = 0;
  std::string system_prompt;           // base system prompt (empty = none known)
  int64_t tool_tokens = -1;            // measured tool definitions; -1 = unknown (reserve applies)
  std::vector<StoredMessage> history;  // the session's history after `folded`, seq order
  // The history before `history`, without content (core/folded_history.h). Null or
  // empty: `history` is the whole history. Otherwise `history` starts with a safe cut
  // (IsSafeFoldCut).
  const FoldedHistory* folded = nullptr;
  std::vector<SummaryView> summaries;  // oldest first
  // What a context at the eviction anchor shows while the anchor holds (the summaries
  // as they were when it was set), oldest first. Unset: those of `summaries` that cover
  // something before the anchor. Either way, when the anchor moves, `summaries` shows.
  std::optional<std::vector<SummaryView>> anchored_summaries;
  // While the anchor holds, the summaries with last_seq <= this go short
  // (core/context_summaries.h), as the context that set it sent them: its
  // report.stub_through_seq (0: none).
  int64_t anchored_stub_through = 0;
  // While the anchor holds, the tool outputs with seq <= this are sent at the squeezed cap
  // (tool_output_max_tokens / 4), as the context that moved it sent them: its
  // report.squeezed_through_seq (0: none).
  int64_t anchored_squeezed_through = 0;
  std::vector<MemoryHit> memory;       // most relevant first
  std::vector<Learning> learnings;     // newest first
  std::optional<Message> new_message;  // appended last (not stored by the assembler)
  double threshold_pct = 0.75;         // warning zone starts at this share of history budget
  int64_t message_threshold = 200;     // summarization trigger by count
  int64_t tool_output_max_tokens = 2500;
  // Added by the context engine (issue 4):
  PruningOptions pruning;                // rule 5; history entries flagged kFlagPruned always
                                         // render pruned, whatever these options say
  int64_t min_tool_output_tokens = 128;  // floor when the fresh tail must be squeezed (rule 1)
  int64_t max_learnings = 5;             // at most this many learnings, as many as fit
  EvictionOptions eviction;              // cache-friendly eviction (off unless anchored)
  // The session's task (its first user message, or the one the agent pinned): always in
  // the context. When the kept history does not hold it, it is sent after the system
  // message, verbatim up to task_max_tokens (middle-out truncated beyond); its room comes
  // right after the last turn's (the fresh tail's older tool outputs are squeezed for it)
  // and before memory, learnings, summaries and older history. A last turn that leaves
  // less than it needs gets it cut middle-out to what is left (left out only when that is
  // less than its header and the cut's marker).
  std::optional<StoredMessage> task;
  int64_t task_max_tokens = 2000;
};

// A tool output shortened middle-out in this context (rule 6, or rule 1 in the tail).
struct TruncatedItem {
  int64_t seq = 0;              // 0: the new message
  int64_t original_tokens = 0;  // the message as stored
  int64_t tokens = 0;           // the message as sent
};

struct ContextReport {
  int64_t context_window = 0;
  int64_t max_output_tokens = 0;
  int64_t total = 0;  // budget.total
  int64_t system_tokens = 0;
  bool system_measured = false;
  int64_t tool_tokens = 0;
  bool tools_measured = false;
  int64_t available = 0;
  int64_t memory_budget = 0, memory_tokens = 0, memory_items = 0;
  int64_t learnings_budget = 0, learnings_tokens = 0, learnings_items = 0;
  int64_t history_budget = 0, history_tokens = 0;
  int64_t summary_tokens = 0, summaries_included = 0, summaries_skipped = 0;
  int64_t new_message_tokens = 0;
  int64_t used_tokens = 0;  // everything in the assembled context
  int64_t kept_messages = 0, dropped_messages = 0, fresh_tail_messages = 0;
  int64_t first_kept_seq = 0;  // 0 when no stored message is kept
  std::string zone;            // "safe" | "warning" | "overflow"
  bool should_summarize = false;
  // Added by the context engine (issue 4):
  int64_t system_message_tokens = 0;  // the enriched system message as sent (0: none sent)
  int64_t history_demand_tokens = 0;  // uncovered history + new message as it would be sent
                                      // (long tool outputs at their cap, pruned ones as
                                      // the placeholder); drives zone and pruning
  int64_t threshold_tokens = 0;       // threshold_pct x full-share history budget
  int64_t uncovered_messages = 0;     // history messages no given summary covers
  int64_t covered_messages = 0;       // not repeated: an included summary covers them
  int64_t first_fresh_seq = 0;        // first stored message of the fresh tail (0: none)
  std::vector<std::string> included_summary_ids, skipped_summary_ids;
  // Summaries sent short (core/context_summaries.h): those with last_seq <= stub_through_seq.
  int64_t summaries_stubbed = 0, stub_through_seq = 0;
  // Tool outputs sent at the squeezed cap since the anchor last moved: those with seq <=
  // this (0: none). They are listed in `truncated` like any other cut.
  int64_t squeezed_through_seq = 0;
  std::vector<SanitizedItem> sanitized;
  std::vector<TruncatedItem> truncated;
  int64_t pruned_messages = 0;             // tool results sent as the placeholder (sticky or new)
  std::vector<int64_t> newly_pruned_seqs;  // the daemon must persist kFlagPruned on these
  int64_t pruned_freed_tokens = 0;         // freed by newly_pruned_seqs
  bool tail_squeezed = false;              // rule 1: the fresh tail alone did not fit
  int64_t tail_dropped_messages = 0;       // rule 1: oldest tail groups left out
  // Rule 1: the last turn alone was larger than the room: its largest user and tool
  // messages were cut middle-out (listed in `truncated`) instead of refusing the context.
  bool last_turn_truncated = false;
  bool new_message_dropped = false;        // the sanitizer removed the new message
  std::string eviction = "fill";           // "fill" (rule 3) | "anchored" | "anchor_moved"
  // The pinned task (ContextInput::task): its seq (0: none given), whether it was sent
  // on its own (false: the kept history holds it, or it did not fit), what it cost, and
  // whether it was cut middle-out.
  int64_t task_seq = 0;
  bool task_pinned = false;
  int64_t task_tokens = 0;
  bool task_truncated = false;
};

struct AssembledContext {
  std::vector<Message> messages;  // system (enriched) first when there is one
  std::string system;             // the enriched system prompt alone (Anthropic-style)
  ContextReport report;
  std::vector<int64_t> kept_seqs;  // stored messages included, in order
  // The fill, the fresh tail or the eviction anchor reached the start of `history` while
  // folded messages could still have been kept: the rest of the result is not what the
  // whole history gives. Unfold more of the history and assemble again.
  bool needs_more_history = false;
};

// With a folded part, the result (messages and report) is exactly the one the whole
// history gives, unless needs_more_history is set.
// Fails with InvalidArgument for an invalid budget and ContextOverflow (with the
// numbers) when the system prompt and tool definitions cannot fit, or the last turn
// cannot even once its largest messages are cut (ContextReport::last_turn_truncated).
// Stored tokens must come from the same counter (0 = unknown: counted here).
Result<AssembledContext> AssembleContext(const ContextInput& input,
                                         const MessageTokenCounter& counter);

// ISO-8601 UTC with second precision ("2026-11-21T16:34:47Z"), as in summary headers.
std::string FormatIsoUtcSeconds(int64_t epoch_ms);
// "[Conversation Summary — depth D, N messages, covers START to END; id ID, originals via
// missy_recall]" (without "; id ..." when the view has no id)
std::string SummaryHeader(const SummaryView& s);
// "[Session task — message N, pinned]": the line before a pinned task's text.
std::string TaskHeader(int64_t seq);

}  // namespace missy

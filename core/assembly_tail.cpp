// The assembler's fresh tail (rule 1; core/assembly_state.h): always sent, and made to
// fit when it alone is larger than the room.
#include <algorithm>
#include <string>
#include <vector>

#include "core/assembly_state.h"

namespace missy::assembly {
namespace {

// What a last turn cut to fit leaves the pinned task at least, besides its header: the
// cut marker and a little of its text.
constexpr int64_t kTaskCutFloor = 128;
// No message of a last turn is cut below this.
constexpr int64_t kSmallestCut = 64;
// The newest tool outputs an anchor's move leaves at their full cap (the agent's next step
// reads them); older ones go squeezed. Measured on the replay tests: 1 kept the prefix in
// a few more contexts (93.9% against 93.3% on the retention test's sessions), at the cost
// of the output before the newest.
constexpr int kFullToolOutputsAtMove = 2;

// The tail from tail_start, each entry rendered at its tail_cap; what it costs.
int64_t TailTokens(AssemblyState& s) {
  int64_t sum = 0;
  for (size_t i = s.tail_start; i < s.entries.size(); ++i) {
    s.renderer.Render(s.entries[i], s.tail_cap[i]);
    sum += s.entries[i].tokens;
  }
  return sum;
}

// What the tail may take: the room, less the pinned task's when the tail does not hold it.
int64_t TailRoom(AssemblyState& s) {
  return s.ctx.report.available - (s.in.task && !TaskInTail(s) ? PinnedTaskCost(s) : 0);
}

// The tool outputs of entries [from, to) middle-out with a halving cap, down to
// min_tool_output_tokens, until the tail fits its room.
void SqueezeToolOutputs(AssemblyState& s, size_t from, size_t to) {
  for (int64_t c = s.in.tool_output_max_tokens / 2; s.tail > TailRoom(s); c /= 2) {
    c = std::max(c, s.in.min_tool_output_tokens);
    for (size_t i = from; i < to; ++i) {
      if (s.entries[i].msg->role == Role::kTool) s.tail_cap[i] = std::min(s.tail_cap[i], c);
    }
    s.tail = TailTokens(s);
    if (c <= s.in.min_tool_output_tokens) break;
  }
}

// The tail shortened to the last safe boundary: its oldest groups dropped until it fits,
// never past the start of the last turn (the last user message; the last group when
// there is none).
void DropOldestTailGroups(AssemblyState& s, size_t newest_group_start) {
  const size_t n_entries = s.entries.size();
  size_t last_turn = LastTurnStart(n_entries, s.EntryAt());
  if (last_turn == n_entries) {
    // No user message here: the last turn starts in the folded part (before the tail,
    // so nothing may be dropped), or there is none (the newest group instead).
    last_turn = s.folded_stats != nullptr && s.folded->has_kept_user() ? 0 : newest_group_start;
  }
  const std::vector<GroupSpan>& groups = s.groups;
  size_t gi = 0;
  while (gi < groups.size() && groups[gi].begin < s.tail_start) ++gi;
  while (s.tail > TailRoom(s) && gi + 1 < groups.size() && groups[gi + 1].begin <= last_turn) {
    s.ctx.report.tail_dropped_messages += static_cast<int64_t>(groups[gi].size());
    s.tail_start = groups[++gi].begin;
    s.tail = TailTokens(s);
  }
}

// What an assistant message costs besides the text and arguments a cut shares out
// (CutAssistant): the message's and each call's framing, ids and names. (Another
// message's frame is its images, which a cut keeps: WithText; its framing is within
// kTruncationSlack.)
int64_t CutFrame(const AssemblyState& s, const Entry& e) {
  int64_t pieces = s.counter.CountText(e.msg->PlainText());
  for (const ToolCall& c : e.msg->tool_calls) pieces += s.counter.CountText(c.arguments);
  return std::max<int64_t>(0, e.stored_tokens - pieces);
}

// A last turn still larger than the whole room is cut, not refused: its largest messages
// (a pasted text, a tool output past the floor, a file the agent wrote whole in a tool
// call's arguments) middle-out, each cut marked, until it fits with room for the task's
// header and a little of it (the task is then cut to what is left, as when the last turn
// merely leaves it less than it needs: PinTask). Each cut takes off what the turn is
// over by, no more: a paste a little over the room keeps most of itself.
void CutLastTurn(AssemblyState& s) {
  ContextReport& r = s.ctx.report;
  const size_t n_entries = s.entries.size();
  int64_t cut_target = r.available;
  if (s.tail > r.available && s.in.task && !TaskInTail(s)) {
    cut_target -= std::min(PinnedTaskCost(s), TaskHeaderCost(s) + kTaskCutFloor);
  }
  const bool cut_turn = s.tail > r.available;
  // Entries no further cut makes smaller: at the smallest cut, or whose values are
  // shorter than a marker (tool-call arguments of many short fields).
  std::vector<char> done(n_entries, 0);
  for (int round = 0; cut_turn && s.tail > cut_target && round < 64; ++round) {
    size_t largest = n_entries;
    for (size_t i = s.tail_start; i < n_entries; ++i) {
      if (s.entries[i].msg->role == Role::kSystem || s.entries[i].pruned || done[i]) continue;
      if (largest == n_entries || s.entries[i].tokens > s.entries[largest].tokens) largest = i;
    }
    if (largest == n_entries || s.entries[largest].tokens <= kSmallestCut) break;
    Entry& e = s.entries[largest];
    // The cap its cut part has now: a tool output's (or a cut message's) last cap, the
    // whole of a message not cut yet; the next is what it costs less the excess (and the
    // framing's slack), and always less, so that every round makes progress. The caps
    // are of the text alone: a screenshot beside a tool output's text stays whole.
    const int64_t frame = e.msg->role == Role::kAssistant ? CutFrame(s, e)
                          : e.msg->parts.empty()           ? 0
                                                           : s.counter.CountImages(*e.msg);
    const int64_t now = e.cut || e.msg->role == Role::kTool
                            ? std::min(s.tail_cap[largest], e.tokens - frame)
                            : e.tokens - frame;
    const int64_t next =
        std::max(kSmallestCut,
                 std::min(e.tokens - frame - (s.tail - cut_target) - kTruncationSlack, now - 1));
    if (e.cut && next >= s.tail_cap[largest]) {
      done[largest] = 1;
      continue;
    }
    const int64_t before = e.tokens;
    e.cut = true;
    e.cap = -1;  // render again with the new cap
    s.tail_cap[largest] = next;
    s.tail = TailTokens(s);
    if (e.tokens >= before) {
      done[largest] = 1;
    } else {
      r.last_turn_truncated = true;
    }
  }
}

}  // namespace

Status TakeFreshTail(AssemblyState& s) {
  const ContextInput& in = s.in;
  ContextReport& r = s.ctx.report;
  const size_t n_entries = s.entries.size();
  if (in.task) r.task_seq = in.task->seq;
  // The last fresh_tail_count messages, the new one counted (a context with the new
  // message is the one it gets once that message is stored), moved back to a group start.
  s.tail_start = std::min(FreshTailStart(n_entries, s.EntryAt(), in.budget.fresh_tail_count),
                          s.n_hist_entries);
  if (s.folded_kept && s.tail_start == 0) {
    s.ctx.needs_more_history = true;  // the tail may reach into the folded part
    return Status::Ok();
  }
  s.squeezed_through = s.squeeze_preset ? *s.squeeze_preset
                       : in.eviction.anchor_seq > 0 && in.eviction.squeeze_older_outputs
                           ? in.anchored_squeezed_through
                           : 0;
  s.tail_cap.assign(n_entries, in.tool_output_max_tokens);
  for (size_t i = s.tail_start; i < n_entries; ++i) s.tail_cap[i] = KeptCap(s, s.entries[i]);
  s.tail = TailTokens(s);
  if (s.tail > TailRoom(s)) {
    r.tail_squeezed = true;
    const size_t newest_group_start = s.groups.empty() ? n_entries : s.groups.back().begin;
    SqueezeToolOutputs(s, s.tail_start, newest_group_start);  // old tool outputs first
    DropOldestTailGroups(s, newest_group_start);
    // Then every tool output left, the newest too. A last turn that still leaves no room
    // for the task gets what it needs: the task is cut to what is left (PinTask).
    if (s.tail > TailRoom(s)) SqueezeToolOutputs(s, s.tail_start, n_entries);
    CutLastTurn(s);
    if (s.tail > r.available) {
      return Status::ContextOverflow("the last turn needs " + std::to_string(s.tail) +
                                     " tokens but only " + std::to_string(r.available) +
                                     " are available (total " + std::to_string(in.budget.total) +
                                     " - system " + std::to_string(r.system_tokens) + " - tools " +
                                     std::to_string(r.tool_tokens) + ")");
    }
  }
  s.keep_from = s.tail_start;  // nothing older kept yet
  return Status::Ok();
}

void SqueezeOlderToolOutputs(AssemblyState& s) {
  if (!s.in.eviction.squeeze_older_outputs) return;
  // Counted with the new message (a context asked with it is the one it gets once stored).
  int64_t through = 0;
  int newer = 0;
  for (size_t i = s.entries.size(); i > 0 && through == 0; --i) {
    const Entry& e = s.entries[i - 1];
    if (e.msg->role == Role::kTool && ++newer > kFullToolOutputsAtMove) through = e.seq;
  }
  if (through <= s.squeezed_through) return;
  s.squeezed_through = through;
  for (size_t i = s.tail_start; i < s.n_hist_entries; ++i) {
    s.tail_cap[i] = std::min(s.tail_cap[i], KeptCap(s, s.entries[i]));
  }
  const int64_t before = s.tail;
  s.tail = TailTokens(s);
  s.remaining += before - s.tail;
  s.squeeze_moved = true;
}

}  // namespace missy::assembly

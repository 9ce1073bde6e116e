// The assembler's first passes: what the fixed parts cost, the history as sendable
// entries, and what the history demands (core/assembly_state.h).
#include <algorithm>
#include <string>
#include <utility>

#include "core/assembly_state.h"
#include "core/sanitizer.h"

namespace missy::assembly {

Status MeasureFixedParts(AssemblyState& s) {
  const ContextInput& in = s.in;
  const TokenBudget& b = in.budget;
  ContextReport& r = s.ctx.report;
  r.context_window = in.context_window;
  r.max_output_tokens = in.max_output_tokens;
  r.total = b.total;
  r.system_measured = !in.system_prompt.empty();
  s.base_system_cost =
      r.system_measured ? s.counter.CountMessage(Message::System(in.system_prompt)) : 0;
  r.system_tokens = r.system_measured ? s.base_system_cost : b.system_reserve;
  r.tools_measured = in.tool_tokens >= 0;
  r.tool_tokens = r.tools_measured ? in.tool_tokens : b.tool_definitions_reserve;
  r.available = b.total - r.system_tokens - r.tool_tokens;
  if (r.available < 0) {
    return Status::ContextOverflow(
        "system prompt (" + std::to_string(r.system_tokens) + " tokens) and tool definitions (" +
        std::to_string(r.tool_tokens) + " tokens) exceed the budget of " + std::to_string(b.total) +
        " tokens");
  }
  return Status::Ok();
}

void SanitizeHistory(AssemblyState& s) {
  const ContextInput& in = s.in;
  ContextReport& r = s.ctx.report;
  const size_t n_hist = in.history.size();
  const size_t n_all = n_hist + (in.new_message.has_value() ? 1 : 0);
  const MessageAt at = [&](size_t i) -> const Message& {
    return i < n_hist ? in.history[i].message : *in.new_message;
  };
  s.folded = in.folded != nullptr && !in.folded->empty() ? in.folded : nullptr;
  SanitizeResult sanitized =
      SanitizeForProvider(n_all, at, s.folded != nullptr ? s.folded->end_state() : SanitizeStart{});
  if (s.folded != nullptr) r.sanitized = s.folded->sanitized();
  for (const DroppedMessage& d : sanitized.dropped) {
    r.sanitized.push_back({d.index < n_hist ? in.history[d.index].seq : 0, d.tool_call_id,
                           std::string(DropReasonName(d.reason)), d.detail});
    if (d.index == n_hist) r.new_message_dropped = true;
  }
  std::vector<Entry>& entries = s.entries;
  entries.reserve(sanitized.kept.size());
  for (size_t i : sanitized.kept) {
    Entry e;
    e.msg = &at(i);
    if (i < n_hist) {
      const StoredMessage& sm = in.history[i];
      e.seq = sm.seq;
      e.stored_tokens = sm.tokens > 0 ? sm.tokens : s.counter.CountMessage(sm.message);
      e.pruned = (sm.flags & kFlagPruned) != 0 && sm.message.role == Role::kTool;
    } else {
      e.is_new = true;
      e.stored_tokens = s.counter.CountMessage(*e.msg);
    }
    entries.push_back(std::move(e));
  }
  const size_t n_entries = entries.size();
  s.n_hist_entries = (n_entries > 0 && entries.back().is_new) ? n_entries - 1 : n_entries;
  s.groups = ComputeGroups(n_entries, s.EntryAt());
}

void MeasureDemand(AssemblyState& s) {
  const ContextInput& in = s.in;
  ContextReport& r = s.ctx.report;
  const size_t n_entries = s.entries.size();
  for (const SummaryView& v : in.summaries) s.any_summary.push_back({v.first_seq, v.last_seq});
  s.any_summary = MergeRanges(std::move(s.any_summary));
  s.covered_any.assign(n_entries, 0);
  for (const GroupSpan& g : s.groups) {
    bool covered = false;
    for (size_t i = g.begin; i < g.end && !covered; ++i) {
      covered = !s.entries[i].is_new && RangesCover(s.any_summary, s.entries[i].seq);
    }
    if (covered) std::fill(s.covered_any.begin() + g.begin, s.covered_any.begin() + g.end, 1);
  }

  // Stored sizes, sticky pruning applied, long tool outputs at their cap.
  s.placeholder_tokens = s.counter.CountText(kPrunedPlaceholder);
  s.full_history_budget = in.budget.HistoryBudget(r.available);
  r.threshold_tokens =
      static_cast<int64_t>(static_cast<double>(s.full_history_budget) * in.threshold_pct);
  int64_t demand = 0;
  for (size_t i = 0; i < n_entries; ++i) {
    if (s.covered_any[i]) continue;
    const Entry& e = s.entries[i];
    if (!e.is_new) ++r.uncovered_messages;
    demand += SentEstimate(s, e);
  }
  s.folded_key = FoldedStatsKey{in.tool_output_max_tokens + kTruncationSlack,
                                s.counter.options().per_message_overhead + s.placeholder_tokens,
                                s.any_summary};
  s.folded_stats = s.folded != nullptr ? &s.folded->Stats(s.folded_key) : nullptr;
  if (s.folded_stats != nullptr) {
    r.uncovered_messages += s.folded_stats->uncovered;
    demand += s.folded_stats->demand;
  }
  s.folded_kept = s.folded_stats != nullptr && s.folded_stats->kept > 0;
  s.demand = demand;
}

}  // namespace missy::assembly

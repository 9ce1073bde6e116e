// The assembler's last passes (core/assembly_state.h): the kept history as sent (rule 6),
// the message list in Missy's order, and the rest of the report.
#include <utility>

#include "core/assembly_state.h"

namespace missy::assembly {

void CapKeptToolOutputs(AssemblyState& s) {
  for (size_t i = s.keep_from; i < s.tail_start; ++i) {
    s.renderer.Render(s.entries[i], KeptCap(s, s.entries[i]));  // cached: the fill's
  }
}

void WriteMessagesAndReport(AssemblyState& s) {
  AssembledContext& ctx = s.ctx;
  ContextReport& r = ctx.report;
  if (!ctx.system.empty()) ctx.messages.push_back(Message::System(ctx.system));
  if (s.task_message) {
    bool kept_anyway = false;  // the fill reached it: no second copy
    for (size_t i = s.keep_from; i < s.tail_start && !kept_anyway; ++i) {
      kept_anyway = s.entries[i].seq == r.task_seq;
    }
    if (kept_anyway) {
      r.task_tokens = 0;
      r.task_truncated = false;
    } else {
      ctx.messages.push_back(std::move(*s.task_message));
      r.task_pinned = true;
    }
  }
  for (Message& m : s.summary_messages) ctx.messages.push_back(std::move(m));
  const size_t n_entries = s.entries.size();
  for (size_t i = s.keep_from; i < n_entries; ++i) {
    const Entry& e = s.entries[i];
    ctx.messages.push_back(s.renderer.Out(e));
    if (e.pruned) ++r.pruned_messages;
    if (e.changed && !e.pruned) r.truncated.push_back({e.seq, e.stored_tokens, e.tokens});
    if (e.is_new) {
      r.new_message_tokens = e.tokens;
      continue;
    }
    r.history_tokens += e.tokens;
    ++r.kept_messages;
    ctx.kept_seqs.push_back(e.seq);
    if (i >= s.tail_start) ++r.fresh_tail_messages;
  }
  r.first_kept_seq = ctx.kept_seqs.empty() ? 0 : ctx.kept_seqs.front();
  // None kept at or before it: none squeezed (whatever part of the history the window
  // holds, the same report).
  r.squeezed_through_seq = s.squeezed_through >= r.first_kept_seq ? s.squeezed_through : 0;
  r.first_fresh_seq = s.tail_start < s.n_hist_entries ? s.entries[s.tail_start].seq : 0;
  for (size_t i = 0; i < s.keep_from; ++i) {
    if (RangesCover(s.included, s.entries[i].seq)) {
      ++r.covered_messages;
    } else {
      ++r.dropped_messages;
    }
  }
  if (s.folded_kept) {
    const int64_t covered = s.folded->CountKeptIn(s.included);
    r.covered_messages += covered;
    r.dropped_messages += s.folded_stats->kept - covered;
  }
  r.used_tokens = s.system_side + r.tool_tokens + r.task_tokens + r.summary_tokens +
                  r.history_tokens + r.new_message_tokens;
}

}  // namespace missy::assembly

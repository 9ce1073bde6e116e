// The assembler's pruning pass (rule 5) and the zone it leaves (core/assembly_state.h).
#include <utility>
#include <vector>

#include "core/assembly_state.h"

namespace missy::assembly {

void PruneOldToolOutput(AssemblyState& s) {
  const ContextInput& in = s.in;
  ContextReport& r = s.ctx.report;
  if (s.demand > r.threshold_tokens && in.pruning.enabled) {
    PruneWalk walk(in.pruning);
    std::vector<size_t> walked;  // entries stepped, newest first
    for (size_t i = s.n_hist_entries; i > 0; --i) {
      if (s.covered_any[i - 1]) continue;
      const Entry& e = s.entries[i - 1];
      PruneEntry p;
      p.seq = e.seq;
      p.role = e.msg->role;
      p.tokens = SentEstimate(s, e);
      p.already_pruned = e.pruned;
      p.pruned_tokens = (p.role == Role::kTool && !e.pruned) ? PrunedCost(s, e) : p.tokens;
      walk.Step(p);
      walked.push_back(i - 1);
    }
    if (s.folded_stats != nullptr) {
      // The folded part's candidates in bulk; their seqs only when pruning will happen.
      const FoldedPrune older = s.folded->ContinuePruneWalk(s.folded_key, in.pruning,
                                                            walk.user_turns(), walk.tool_total());
      if (older.freed > 0 && walk.freed() + older.freed >= in.pruning.minimum_freed_tokens) {
        walk.AddOlder(s.folded->PruneSeqs(s.folded_key, older), older.freed);
      } else {
        walk.AddOlder({}, older.freed);
      }
    }
    PruneDecision decision = walk.Finish();
    if (!decision.seqs.empty()) {
      // Both ascending: mark the window's entries among the decided seqs.
      size_t k = 0;
      for (auto w = walked.rbegin(); w != walked.rend(); ++w) {
        Entry& e = s.entries[*w];
        while (k < decision.seqs.size() && decision.seqs[k] < e.seq) ++k;
        if (k < decision.seqs.size() && decision.seqs[k] == e.seq) e.pruned = true;
      }
      r.newly_pruned_seqs = std::move(decision.seqs);
      r.pruned_freed_tokens = decision.freed_tokens;
      s.demand -= decision.freed_tokens;
    }
  }
  r.history_demand_tokens = s.demand;
  r.zone = s.demand < r.threshold_tokens       ? "safe"
           : s.demand <= s.full_history_budget ? "warning"
                                               : "overflow";
  r.should_summarize = r.uncovered_messages > in.message_threshold || s.demand > r.threshold_tokens;
}

}  // namespace missy::assembly

// The assembler's summaries and their forms (rule 2; core/context_summaries.h decides
// which go whole, short or not at all; core/assembly_state.h).
#include <cstdint>
#include <utility>

#include "core/assembly_state.h"
#include "core/context_summaries.h"

namespace missy::assembly {

int64_t SetSummaries(AssemblyState& s, const std::vector<SummaryView>& from, int64_t before_seq,
                     int64_t stub_through) {
  ContextReport& r = s.ctx.report;
  SummaryChoice c = ChooseSummaries(from, before_seq, stub_through, s.remaining, s.counter);
  s.summary_messages = std::move(c.messages);
  s.included = std::move(c.included);
  r.summary_tokens = c.tokens;
  r.summaries_included = static_cast<int64_t>(c.included_ids.size());
  r.summaries_skipped = static_cast<int64_t>(c.skipped_ids.size());
  r.summaries_stubbed = c.stubbed;
  r.stub_through_seq = c.stub_through;
  r.included_summary_ids = std::move(c.included_ids);
  r.skipped_summary_ids = std::move(c.skipped_ids);
  // When a walk back over the groups runs out of `history`, the folded part's newest
  // group comes next (FillGroups).
  s.folded_last = s.folded_kept ? s.folded->LastKeptGroup(s.included) : std::nullopt;
  return r.summary_tokens;
}

void ChooseSummaryForms(AssemblyState& s) {
  const std::vector<SummaryView>& all = s.in.summaries;
  s.remaining -= SetSummaries(s, all, INT64_MAX, StubThroughFor(all, s.remaining, s.counter));
}

}  // namespace missy::assembly

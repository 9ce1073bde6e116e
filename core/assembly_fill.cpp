// The assembler's evictable history (rule 3; core/assembly_state.h): newest first by
// whole groups, or from the eviction anchor.
//
// A group covered by an included summary is not repeated, and the fill stops there: raw
// messages older than an included summary would break chronological order. The first
// group that does not fit ends the fill, so the kept part is contiguous.
// With an eviction anchor (cache-friendly eviction), the kept part starts exactly at the
// anchor while everything from it fits; once it does not, whole groups are evicted from
// the front down to (1 - slack_fraction) of the room and at most a quarter of it, so the
// following requests share the same prefix again for long. While the anchor holds, only
// summaries of something before it are shown, in the forms the anchor was set with: a
// summary of messages the context still shows raw waits for the next eviction, so a new
// summary changes the prefix only when eviction changes it anyway (one compaction event
// replaces a large block, and the provider's prompt cache keeps hitting between).
#include <algorithm>
#include <cstdint>

#include "core/assembly_state.h"
#include "core/context_summaries.h"

namespace missy::assembly {
namespace {

// At a move of the anchor (KeepFromAnchor), the share of the history budget the summaries
// may take whole (the oldest go short beyond it: their short forms keep their files and
// errors), and the share of what is then left that older history may fill besides the
// fresh tail. A move breaks the prefix whatever it evicts, and the room it frees is what
// the anchor then lives on: with outputs of 2,500 tokens a turn, a move that left a
// quarter of the room free was followed by another three or four requests later.
// Measured on the replay tests (prefix kept over consecutive contexts; files and errors
// in view unchanged at 94/94, 84/86, 75/86 and 238/238): 0.3 and a half gave 96.3% on
// the recorded sessions, 94.1% on the six as one, 97.7% and 86.9% on the synthetic
// and the retention test's sessions; 0.15 and a quarter 97.0%, 95.8%, 97.9% and 89.9%.
// Evicting everything before the tail (0) lost errors in view.
constexpr double kMovedSummaryShare = 0.15;
constexpr double kMovedKeepShare = 0.25;

// One past the newest group before the fresh tail (the walks go back from it).
size_t FirstGroupBeforeTail(const AssemblyState& s) {
  size_t gi = s.groups.size();
  while (gi > 0 && s.groups[gi - 1].begin >= s.tail_start) --gi;
  return gi;
}

bool CoveredByIncluded(const AssemblyState& s, const GroupSpan& g) {
  for (size_t i = g.begin; i < g.end; ++i) {
    if (RangesCover(s.included, s.entries[i].seq)) return true;
  }
  return false;
}

// The group rendered with rule 6's cap; what it costs.
int64_t GroupTokens(AssemblyState& s, const GroupSpan& g) {
  int64_t t = 0;
  for (size_t i = g.begin; i < g.end; ++i) {
    s.renderer.Render(s.entries[i], KeptCap(s, s.entries[i]));
    t += s.entries[i].tokens;
  }
  return t;
}

// A walk back over the groups ran out of `history`: the folded part's newest group comes
// next, and the walk would stop there only if an included summary covers it (or, for a
// walk bounded by the anchor, if it starts before the anchor). Otherwise the result
// depends on folded content: needs_more_history.
void RanOut(AssemblyState& s, bool before_anchor_stops) {
  if (!s.folded_last || s.folded_last->covered) return;
  if (before_anchor_stops && s.folded_last->first_seq < s.in.eviction.anchor_seq) return;
  s.ctx.needs_more_history = true;
}

// Newest-first fill within `room`, never of a group starting before `stop_before` (0: no
// such limit), moving keep_from back; returns the tokens used.
int64_t FillGroups(AssemblyState& s, int64_t room, int64_t stop_before) {
  int64_t used = 0;
  for (size_t gi = FirstGroupBeforeTail(s);; --gi) {
    if (gi == 0) {
      RanOut(s, stop_before > 0);
      break;
    }
    const GroupSpan& g = s.groups[gi - 1];
    if (CoveredByIncluded(s, g) || s.entries[g.begin].seq < stop_before) break;
    const int64_t t = GroupTokens(s, g);
    if (used + t > room) break;
    used += t;
    s.keep_from = g.begin;
  }
  return used;
}

}  // namespace

void FillNewestFirst(AssemblyState& s) { s.remaining -= FillGroups(s, s.remaining, 0); }

void KeepFromAnchor(AssemblyState& s) {
  const ContextInput& in = s.in;
  ContextReport& r = s.ctx.report;
  const int64_t anchor = in.eviction.anchor_seq;
  const double slack = std::clamp(in.eviction.slack_fraction, 0.0, 1.0);
  const int64_t slack_tokens = static_cast<int64_t>(slack * static_cast<double>(r.history_budget));
  const std::vector<SummaryView>& shown =
      in.anchored_summaries ? *in.anchored_summaries : in.summaries;
  const int64_t before_anchor =
      SetSummaries(s, shown, in.anchored_summaries ? INT64_MAX : anchor, in.anchored_stub_through);
  // The anchor's summaries, in their forms, must all fit for it to hold: leaving one
  // out would lose what it covers and change the prefix anyway (unless all were short
  // already when it was set: nothing shorter is left to send, and moving would not
  // bring it back). Not "all included ones short": with none included that holds for
  // nothing, and a summary shown whole at the move vanished while its messages stayed
  // evicted.
  bool all_short = true;
  for (const SummaryView& v : shown)
    all_short = all_short && v.last_seq <= in.anchored_stub_through;
  const bool summaries_hold = r.summaries_skipped == 0 || all_short;
  s.remaining -= before_anchor;
  int64_t from_anchor = 0;
  size_t anchor_from = s.tail_start;
  for (size_t gi = FirstGroupBeforeTail(s);; --gi) {
    if (gi == 0) {
      RanOut(s, true);
      break;
    }
    const GroupSpan& g = s.groups[gi - 1];
    if (s.entries[g.begin].seq < anchor || CoveredByIncluded(s, g)) break;
    from_anchor += GroupTokens(s, g);
    anchor_from = g.begin;
    if (from_anchor > s.remaining) break;
  }
  if (!in.eviction.move && !s.squeeze_preset && summaries_hold && from_anchor <= s.remaining) {
    s.keep_from = anchor_from;
    s.remaining -= from_anchor;
    r.eviction = "anchored";
    return;
  }
  // The anchor moves: now every summary may come in, the oldest short if that is what it
  // takes to leave slack_fraction of the history budget free (as ChooseSummaryForms), or
  // for them to take at most kMovedSummaryShare of it whole (their short forms keep their
  // files and errors): the room a move frees is what the anchor then lives on, and
  // summaries grow to half the budget before they are condensed.
  s.remaining += before_anchor;
  SqueezeOlderToolOutputs(s);
  const int64_t summary_room =
      std::min(s.remaining - slack_tokens,
               static_cast<int64_t>(kMovedSummaryShare * static_cast<double>(r.history_budget)));
  s.remaining -= SetSummaries(s, in.summaries, INT64_MAX,
                              StubThroughFor(in.summaries, summary_room, s.counter));
  // Free slack_fraction of the history budget (not of what is left of it: with summaries
  // and the tail taking most of the budget, a share of the rest would free so little that
  // the anchor moved again a request or two later), and at least three quarters of the
  // room the evictable history has: a move is a break of the prefix whatever it evicts,
  // so one that replaces a large block lets the anchor hold for many requests, where one
  // that frees a few groups is followed by another a few requests later. What it evicts
  // is summarized (the eviction's leaves), so the context still holds it.
  const double keep_share = std::min(1.0 - slack, kMovedKeepShare);
  const int64_t keep =
      std::min(static_cast<int64_t>(static_cast<double>(s.remaining) * keep_share),
               s.remaining - slack_tokens);
  // A moved anchor only moves forward: what was evicted stays evicted (a summary freeing
  // room does not bring raw messages back and change the prefix again).
  s.remaining -= FillGroups(s, std::max<int64_t>(0, keep), anchor);
  r.eviction = "anchor_moved";
}

}  // namespace missy::assembly

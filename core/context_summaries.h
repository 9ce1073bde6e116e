// Which summaries a context shows, and in which form (DESIGN.md §4, rule 2). Pure.
//
// A summary goes whole (its header line and text) or short: when a context has no room
// for every summary whole, the oldest go short instead of being left out. The short form
// is the header (the id, for missy_recall) and the files and errors of the summary's
// artifact trail, the lines the agent needs most to find its way back. Which ones are
// short is decided when the eviction anchor moves, with the anchor's slack kept free, and
// held while the anchor holds, so that a context shows the same bytes request after
// request (core/assembler.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/context_types.h"
#include "core/folded_history.h"
#include "core/message.h"
#include "core/token_counter.h"

namespace missy {

// The line after a short form's header, saying what was left out and how to get it.
inline constexpr char kSummaryStubNote[] =
    "(shortened for room: its files and errors only; the whole summary via missy_recall)";

// SummaryHeader(s) + "\n" + kSummaryStubNote, then the text's file and error lines as they
// are: the extractive form's "Files: ..." line and "Errors:" bullets, the llm form's
// "files: ..." and "errors: ..." lines under "Artifacts:". A text without them (an llm
// answer with no trail) gives the header and the note alone.
std::string SummaryStubText(const SummaryView& s);

// The summary's context message, whole or short, and what it costs (the view's
// message_tokens / stub_tokens when known, else counted).
Message SummaryMessage(const SummaryView& s, bool stub);
int64_t SummaryMessageTokens(const SummaryView& s, bool stub, const MessageTokenCounter& counter);

struct SummaryChoice {
  std::vector<Message> messages;  // in order
  SeqRanges included;             // what the included ones cover (merged)
  int64_t tokens = 0;
  int64_t stub_through = 0;  // those with last_seq <= this went short
  int64_t stubbed = 0;
  std::vector<std::string> included_ids, skipped_ids;
};

// Those of `from` (oldest first) that start before `before_seq`, in order; the ones
// ending at or before `stub_through` short (unless the short form would not be shorter).
// One that does not fit in what `room` has left is skipped (the next may fit).
SummaryChoice ChooseSummaries(const std::vector<SummaryView>& from, int64_t before_seq,
                              int64_t stub_through, int64_t room,
                              const MessageTokenCounter& counter);

// The stub_through that makes all of `from` fit in `target` with as few short forms as
// it takes, the oldest first (they matter least to the work at hand): 0 when they fit
// whole; the last one's last_seq when even all short do not fit.
int64_t StubThroughFor(const std::vector<SummaryView>& from, int64_t target,
                       const MessageTokenCounter& counter);

}  // namespace missy

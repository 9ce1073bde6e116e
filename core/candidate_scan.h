// Where a pattern may start in a text: the positions the extractive summarizer's
// classifiers (core/summary_text.h) and the path scan look at, found 16 bytes a step with
// SSE2 where available. Pure.
#pragma once

#include <cstddef>
#include <string_view>

namespace missy::extractive {

// Which patterns: the classifiers and the path scan look only at lines and tokens around
// these positions.
enum CandidateSet : unsigned {
  kColon = 1,          // ':' (key markers)
  kErrorWords = 2,     // err, exc, fai, fat, pan (any case), "Tra", "No ", "not", "** ",
                       // and rmi, fus, seg, dum, efe, nva (any case): the phrases of
                       // ReportsError with no error word (peRMIssion denied, ...)
  kDecisionWords = 4,  // dec (any case) (IsDecisionLine)
  kPathChars = 8,      // '/', or '.' before a letter: a path has a '/' or an extension
};
// The first position >= pos where a pattern of `set` may start, or s.size(). Never skips a
// position where one starts; may return positions where none does.
size_t NextCandidate(std::string_view s, size_t pos, unsigned set);
// The line (between '\n's, trimmed) of `s` around position `pos`, and where it ends.
std::string_view LineAround(std::string_view s, size_t pos, size_t* line_end);

}  // namespace missy::extractive

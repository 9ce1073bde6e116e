// Middle-out truncation of one long text (DESIGN.md §4 rule 6): head + marker + tail.
// Cuts land on UTF-8 code point boundaries, and on a line boundary when one lies within
// kSnapWindowBytes of the cut (a newline ends a BPE pre-token in cl100k/o200k, so such a
// cut is also a token boundary). The TokenCounter interface only counts, so the cut
// positions are found by binary search over byte lengths with Count(); the result is
// verified with the counter and shrunk until it holds. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/token_counter.h"

namespace missy {

inline constexpr size_t kSnapWindowBytes = 256;

struct TruncatedText {
  std::string text;  // the input when nothing was cut
  bool truncated = false;
  int64_t original_tokens = 0;  // CountText(input)
  int64_t tokens = 0;           // CountText(text)
  int64_t removed_tokens = 0;   // N in the marker: original - head - tail
};

// `text` as it is, not truncated, counting `tokens`.
TruncatedText Untruncated(std::string_view text, int64_t tokens);

// Marker placed between head and tail ("[...truncated 1234 tokens...]").
std::string TruncationMarker(int64_t removed_tokens);

// Keeps `text` when CountText(text) <= max_tokens; otherwise returns head + "\n" + marker +
// "\n" + tail with CountText(result) <= max_tokens, head and tail getting about half of
// what the marker leaves each. When max_tokens is too small for the marker itself the
// result is the marker alone (tokens may then exceed max_tokens by the marker's size).
// With `list_cut_reports`, the marker also lists, as printed, the distinct lines of the cut
// part that report an error (extractive::ReportsError: a build's one failing step in the
// middle of its log, a test's exception), at most kMaxCutReports of them within a quarter
// of max_tokens; the head and tail make room for them:
//   [...truncated 1234 tokens; the cut part reported:
//   src/io.cpp:12:5: error: ...
//   ...]
TruncatedText TruncateMiddleOut(std::string_view text, int64_t max_tokens,
                                const MessageTokenCounter& counter, bool list_cut_reports = false);

inline constexpr size_t kMaxCutReports = 8;

// The largest code point boundary <= pos, and the smallest >= pos (pos clamped to size).
size_t Utf8BoundaryAtOrBefore(std::string_view s, size_t pos);
size_t Utf8BoundaryAtOrAfter(std::string_view s, size_t pos);

}  // namespace missy

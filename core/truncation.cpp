#include "core/truncation.h"

#include <algorithm>
#include <vector>

#include "core/summary_text.h"

namespace missy {

namespace {

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Counting a whole prefix at every step of a binary search costs O(n log n) tokenizer
// work per output, which dominated context assembly with large tool outputs. Instead the
// text is counted once in newline-bounded chunks (a tokenizer piece rarely spans a
// newline, so chunk counts add up to the whole count or slightly above), the search runs
// only inside the chunk where the cut falls, and one exact count verifies the result;
// when it does not verify, the exact search over the whole range is the fallback.
constexpr size_t kChunkBytes = 1024;

// End of the chunk starting at `pos`: just after the next newline within kChunkBytes,
// otherwise kChunkBytes further on a code point boundary.
size_t ChunkEnd(std::string_view s, size_t pos) {
  const size_t limit = std::min(s.size(), pos + kChunkBytes);
  const size_t nl = s.substr(pos, limit - pos).find('\n');
  if (nl != std::string_view::npos) return pos + nl + 1;
  if (limit == s.size()) return limit;
  const size_t b = Utf8BoundaryAtOrBefore(s, limit);
  return b > pos ? b : Utf8BoundaryAtOrAfter(s, limit);
}

// Largest cut in [lo, hi] on a code point boundary with fits(cut); fits(lo) holds.
template <typename Fits>
size_t LargestFittingCut(std::string_view s, size_t lo, size_t hi, Fits fits) {
  while (lo < hi) {
    size_t mid = Utf8BoundaryAtOrBefore(s, lo + (hi - lo + 1) / 2);
    if (mid <= lo) {
      mid = Utf8BoundaryAtOrAfter(s, lo + 1);
      if (mid > hi) break;
    }
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return Utf8BoundaryAtOrBefore(s, lo);
}

// Smallest start in [lo, hi] on a code point boundary with fits(start); fits(hi) holds.
template <typename Fits>
size_t SmallestFittingStart(std::string_view s, size_t lo, size_t hi, Fits fits) {
  while (lo < hi) {
    size_t mid = Utf8BoundaryAtOrAfter(s, lo + (hi - lo) / 2);
    if (mid >= hi) {
      mid = Utf8BoundaryAtOrBefore(s, hi - 1);
      if (mid < lo) break;
    }
    if (fits(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return Utf8BoundaryAtOrAfter(s, hi);
}

// Longest prefix of `s` (in bytes, on a code point boundary) with at most `budget` tokens.
size_t LongestHead(std::string_view s, int64_t budget, const MessageTokenCounter& counter) {
  if (budget <= 0) return 0;
  auto fits = [&](size_t cut) { return counter.CountText(s.substr(0, cut)) <= budget; };
  size_t pos = 0;
  int64_t used = 0;
  size_t chunk_end = s.size();
  while (pos < s.size()) {
    chunk_end = ChunkEnd(s, pos);
    const int64_t t = counter.CountText(s.substr(pos, chunk_end - pos));
    if (used + t > budget) break;
    used += t;
    pos = chunk_end;
  }
  size_t lo = pos;
  if (pos < s.size()) {
    const int64_t left = budget - used;
    lo = LargestFittingCut(s, pos, chunk_end, [&](size_t cut) {
      return counter.CountText(s.substr(pos, cut - pos)) <= left;
    });
  }
  if (!fits(lo)) lo = LargestFittingCut(s, 0, lo, fits);  // chunks undercounted: exact search
  // Snap to just after a newline close to the cut.
  size_t window_start = lo > kSnapWindowBytes ? lo - kSnapWindowBytes : 0;
  size_t nl = s.substr(0, lo).rfind('\n');
  if (nl != std::string_view::npos && nl + 1 > window_start && nl + 1 < lo) lo = nl + 1;
  return lo;
}

// Start of the longest suffix of `s` with at most `budget` tokens.
size_t LongestTailStart(std::string_view s, int64_t budget, const MessageTokenCounter& counter) {
  if (budget <= 0) return s.size();
  auto fits = [&](size_t start) { return counter.CountText(s.substr(start)) <= budget; };
  // Chunks from the end: each ends just after a newline (or at a code point boundary).
  size_t end = s.size();
  int64_t used = 0;
  size_t chunk_start = 0;
  while (end > 0) {
    const size_t floor = end > kChunkBytes ? end - kChunkBytes : 0;
    const size_t nl = end >= 2 ? s.substr(0, end - 1).rfind('\n') : std::string_view::npos;
    chunk_start =
        (nl != std::string_view::npos && nl + 1 > floor) ? nl + 1 : Utf8BoundaryAtOrAfter(s, floor);
    if (chunk_start >= end) chunk_start = Utf8BoundaryAtOrBefore(s, end - 1);
    const int64_t t = counter.CountText(s.substr(chunk_start, end - chunk_start));
    if (used + t > budget) break;
    used += t;
    end = chunk_start;
  }
  size_t start = end;
  if (end > 0) {
    const int64_t left = budget - used;
    const size_t stop = end;
    start = SmallestFittingStart(s, chunk_start, stop, [&](size_t st) {
      return counter.CountText(s.substr(st, stop - st)) <= left;
    });
  }
  if (!fits(start)) start = SmallestFittingStart(s, start, s.size(), fits);
  // Snap to just after a newline close to the cut (the tail then starts a line).
  size_t nl = s.find('\n', start);
  if (nl != std::string_view::npos && nl + 1 < s.size() && nl < start + kSnapWindowBytes &&
      start != 0 && s[start - 1] != '\n') {
    start = nl + 1;
  }
  return start;
}

}  // namespace

size_t Utf8BoundaryAtOrBefore(std::string_view s, size_t pos) {
  if (pos >= s.size()) return s.size();
  while (pos > 0 && IsContinuation(static_cast<unsigned char>(s[pos]))) --pos;
  return pos;
}

size_t Utf8BoundaryAtOrAfter(std::string_view s, size_t pos) {
  while (pos < s.size() && IsContinuation(static_cast<unsigned char>(s[pos]))) ++pos;
  return std::min(pos, s.size());
}

std::string TruncationMarker(int64_t removed_tokens) {
  return "[...truncated " + std::to_string(removed_tokens) + " tokens...]";
}

namespace {

// A line that reports an error, where it lies in the text (its first byte, one past its
// last), as listed (at most 300 bytes).
struct Report {
  size_t begin = 0, end = 0;
  std::string_view line;
};

// The distinct lines of text[from, to) that report an error, at most kMaxCutReports of
// them within `room_tokens` (each line counted alone, and one token for its newline);
// `*tokens` is what they cost so counted.
std::vector<Report> FindReports(std::string_view text, size_t from, size_t to, int64_t room_tokens,
                                const MessageTokenCounter& counter, int64_t* tokens) {
  std::vector<Report> out;
  *tokens = 0;
  extractive::ForEachErrorWordLine(text.substr(from, to - from), [&](std::string_view line) {
    const std::string_view shown = line.substr(0, Utf8BoundaryAtOrBefore(line, 300));
    // A repeat first (a log repeats its one error hundreds of times), then the rules.
    if (std::any_of(out.begin(), out.end(), [&](const Report& r) { return r.line == shown; }) ||
        extractive::NumberedListingLine(line) || !extractive::ReportsError(line)) {
      return true;
    }
    const int64_t cost = counter.CountText(shown) + 1;
    if (*tokens + cost > room_tokens) return false;
    *tokens += cost;
    const size_t begin = static_cast<size_t>(line.data() - text.data());
    out.push_back({begin, begin + line.size(), shown});
    return out.size() < kMaxCutReports;
  });
  return out;
}

// The reports that lie wholly in the part cut, text[head_end, tail_start), and are not
// repeated in the part kept, as the marker lists them.
std::string Listed(const std::vector<Report>& reports, std::string_view text, size_t head_end,
                   size_t tail_start) {
  const std::string_view head = text.substr(0, head_end), tail = text.substr(tail_start);
  std::string out;
  for (const Report& r : reports) {
    if (r.begin < head_end || r.end > tail_start || tail.find(r.line) != std::string_view::npos ||
        head.find(r.line) != std::string_view::npos) {
      continue;
    }
    out.append("\n").append(r.line);
  }
  return out;
}

std::string Marker(int64_t removed_tokens, const std::string& reports) {
  if (reports.empty()) return TruncationMarker(removed_tokens);
  return "[...truncated " + std::to_string(removed_tokens) +
         " tokens; the cut part reported:" + reports + "\n...]";
}

}  // namespace

TruncatedText Untruncated(std::string_view text, int64_t tokens) {
  TruncatedText out;
  out.text = std::string(text);
  out.original_tokens = tokens;
  out.tokens = tokens;
  return out;
}

TruncatedText TruncateMiddleOut(std::string_view text, int64_t max_tokens,
                                const MessageTokenCounter& counter, bool list_cut_reports) {
  const int64_t original_tokens = counter.CountText(text);
  if (original_tokens <= max_tokens) return Untruncated(text, original_tokens);
  TruncatedText out;
  out.original_tokens = original_tokens;
  out.truncated = true;
  // The marker's size with a generous number; separators counted with it.
  const auto framed = [](const std::string& marker) {
    std::string out;
    out.reserve(marker.size() + 2);
    out.append("\n").append(marker).append("\n");
    return out;
  };
  int64_t marker_tokens = counter.CountText(framed(TruncationMarker(out.original_tokens)));
  int64_t room = max_tokens - marker_tokens;
  // The reports of the part the cut will about take (head and tail get about room / 2
  // tokens each; a quarter of the head's bytes either way), their room taken from head
  // and tail before the one cut: those that end up kept are then not listed.
  std::vector<Report> reports;
  if (list_cut_reports && room > 0) {
    const double bytes_per_token =
        static_cast<double>(text.size()) / static_cast<double>(out.original_tokens);
    const size_t side = static_cast<size_t>(static_cast<double>(room / 2) * bytes_per_token);
    const size_t from = side - side / 4, to = text.size() - std::min(text.size(), side - side / 4);
    int64_t listed_tokens = 0;
    if (from < to) reports = FindReports(text, from, to, max_tokens / 4, counter, &listed_tokens);
    if (!reports.empty()) {  // the listing's frame, then its lines
      marker_tokens = counter.CountText(framed(Marker(out.original_tokens, "\n"))) + listed_tokens;
      room = max_tokens - marker_tokens;
    }
  }
  for (int attempt = 0; attempt < 8; ++attempt) {
    if (room <= 0) {
      out.removed_tokens = out.original_tokens;
      out.text = TruncationMarker(out.removed_tokens);
      out.tokens = counter.CountText(out.text);
      return out;
    }
    int64_t head_budget = room / 2;
    int64_t tail_budget = room - head_budget;
    size_t head_end = LongestHead(text, head_budget, counter);
    size_t tail_start = LongestTailStart(text, tail_budget, counter);
    if (tail_start < head_end) tail_start = head_end;  // cannot happen when truncating; defensive
    std::string_view head = text.substr(0, head_end);
    std::string_view tail = text.substr(tail_start);
    int64_t kept = counter.CountText(head) + counter.CountText(tail);
    out.removed_tokens = std::max<int64_t>(0, out.original_tokens - kept);
    out.text.clear();
    out.text.reserve(head.size() + tail.size() + 40);
    out.text.append(head);
    if (!head.empty() && head.back() != '\n') out.text.push_back('\n');
    out.text += Marker(out.removed_tokens, Listed(reports, text, head_end, tail_start));
    out.text.push_back('\n');
    out.text.append(tail);
    out.tokens = counter.CountText(out.text);
    if (out.tokens <= max_tokens) return out;
    room -= (out.tokens - max_tokens) + 1;  // counts are not additive: shrink and retry
  }
  return out;
}

}  // namespace missy

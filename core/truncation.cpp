#include "core/truncation.h"

#include <algorithm>

namespace missy {

namespace {

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Longest prefix of `s` (in bytes, on a code point boundary) with at most `budget` tokens.
size_t LongestHead(std::string_view s, int64_t budget, const MessageTokenCounter& counter) {
  if (budget <= 0) return 0;
  // A token spans at most a few dozen bytes in practice; bound the search for speed.
  size_t hi = std::min(s.size(), static_cast<size_t>(budget) * 64);
  size_t lo = 0;
  while (lo < hi) {
    size_t mid = Utf8BoundaryAtOrBefore(s, lo + (hi - lo + 1) / 2);
    if (mid <= lo) {
      // No boundary strictly between lo and the midpoint: try the next one up.
      mid = Utf8BoundaryAtOrAfter(s, lo + 1);
      if (mid > hi) break;
    }
    if (counter.CountText(s.substr(0, mid)) <= budget) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  lo = Utf8BoundaryAtOrBefore(s, lo);
  // Snap to just after a newline close to the cut.
  size_t window_start = lo > kSnapWindowBytes ? lo - kSnapWindowBytes : 0;
  size_t nl = s.substr(0, lo).rfind('\n');
  if (nl != std::string_view::npos && nl + 1 > window_start && nl + 1 < lo) lo = nl + 1;
  return lo;
}

// Start of the longest suffix of `s` with at most `budget` tokens.
size_t LongestTailStart(std::string_view s, int64_t budget, const MessageTokenCounter& counter) {
  if (budget <= 0) return s.size();
  size_t max_len = std::min(s.size(), static_cast<size_t>(budget) * 64);
  size_t lo = s.size() - max_len;  // candidate starts in [lo, hi]; hi always fits
  size_t hi = s.size();
  while (lo < hi) {
    size_t mid = Utf8BoundaryAtOrAfter(s, lo + (hi - lo) / 2);
    if (mid >= hi) {
      mid = Utf8BoundaryAtOrBefore(s, hi - 1);
      if (mid < lo) break;
    }
    if (counter.CountText(s.substr(mid)) <= budget) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  size_t start = Utf8BoundaryAtOrAfter(s, hi);
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

TruncatedText TruncateMiddleOut(std::string_view text, int64_t max_tokens,
                                const MessageTokenCounter& counter) {
  TruncatedText out;
  out.original_tokens = counter.CountText(text);
  if (out.original_tokens <= max_tokens) {
    out.text = std::string(text);
    out.tokens = out.original_tokens;
    return out;
  }
  out.truncated = true;
  // The marker's size with a generous number; separators counted with it.
  const int64_t marker_tokens =
      counter.CountText("\n" + TruncationMarker(out.original_tokens) + "\n");
  int64_t room = max_tokens - marker_tokens;
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
    out.text += TruncationMarker(out.removed_tokens);
    out.text.push_back('\n');
    out.text.append(tail);
    out.tokens = counter.CountText(out.text);
    if (out.tokens <= max_tokens) return out;
    room -= (out.tokens - max_tokens) + 1;  // counts are not additive: shrink and retry
  }
  return out;
}

}  // namespace missy

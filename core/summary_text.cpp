#include "core/summary_text.h"

#include <array>

#include "core/utf8.h"

namespace missy::extractive {

bool IsAlnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsAlpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsWordChar(unsigned char c) { return IsAlnum(c) || c == '_'; }
unsigned char Lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// Case-insensitive: does `s` hold lowercase `word` at `pos`?
bool HasAt(std::string_view s, size_t pos, std::string_view word) {
  if (pos + word.size() > s.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (Lower(static_cast<unsigned char>(s[pos + i])) != static_cast<unsigned char>(word[i])) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && static_cast<unsigned char>(s[b]) <= ' ') ++b;
  while (e > b && static_cast<unsigned char>(s[e - 1]) <= ' ') --e;
  return s.substr(b, e - b);
}

// At most `max_chars` code points of `s`, cut on a boundary, as valid UTF-8.
std::string CapChars(std::string_view s, size_t max_chars, bool* was_cut) {
  size_t pos = 0, chars = 0;
  while (pos < s.size() && chars < max_chars) {
    ++pos;
    while (pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) ++pos;
    ++chars;
  }
  if (was_cut) *was_cut = pos < s.size();
  std::string_view head = s.substr(0, pos);
  if (InvalidUtf8At(head) != std::string_view::npos) return ToValidUtf8(head);
  return std::string(head);
}

// One line: control characters and runs of whitespace become one space; capped.
std::string OneLine(std::string_view s, size_t max_chars) {
  std::string flat;
  flat.reserve(std::min(s.size(), max_chars + 8));
  bool space = false;
  size_t chars = 0;
  for (char ch : Trim(s)) {
    if (static_cast<unsigned char>(ch) <= ' ') {
      space = true;
      continue;
    }
    if (space) flat.push_back(' ');
    space = false;
    flat.push_back(ch);
    chars += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
    if (chars > max_chars + 1) break;  // enough to know it is cut
  }
  bool cut = false;
  std::string out = CapChars(flat, max_chars, &cut);
  if (cut) out += "…";
  return out;
}

size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// ---------------------------------------------------------------------------------------
// Lines of interest.

// Missy's MemoryConsolidator markers.
bool HasKeyMarker(std::string_view line) {
  static constexpr std::array<std::string_view, 10> kMarkers = {
      "result",  "decided", "found",   "error",     "success",
      "created", "updated", "deleted", "confirmed", "output"};
  size_t colon = line.find(':');
  while (colon != std::string_view::npos) {
    size_t b = colon;
    while (b > 0 && IsAlpha(static_cast<unsigned char>(line[b - 1]))) --b;
    const size_t len = colon - b;
    if (len >= 5 && len <= 9) {
      for (std::string_view m : kMarkers) {
        if (m.size() == len && HasAt(line, b, m)) return true;
      }
    }
    colon = line.find(':', colon + 1);
  }
  return false;
}

bool IsDecisionLine(std::string_view line) {
  for (size_t i = 0; i + 6 < line.size(); ++i) {
    const unsigned char c = Lower(static_cast<unsigned char>(line[i]));
    if (c == 'd' && (i == 0 || !IsWordChar(line[i - 1])) &&
        (HasAt(line, i, "decided:") || HasAt(line, i, "decision:") ||
         HasAt(line, i, "decided to "))) {
      return true;
    }
  }
  return false;
}

namespace {

bool WordEndsAt(std::string_view s, size_t end) {
  return end >= s.size() || !IsWordChar(static_cast<unsigned char>(s[end]));
}

}  // namespace

// error/Error/ERROR (a word, or an "XxxError:"/"XxxException:" name), "exception:",
// Traceback, failed/FAILED, fatal, panic(ked), "No such file".
bool IsErrorLine(std::string_view s) {
  const size_t n = s.size();
  for (size_t i = 0; i < n; ++i) {
    static const std::array<bool, 256> kFirst = [] {
      std::array<bool, 256> t{};
      for (unsigned char c : std::string_view("eEfFtTpPnN")) t[c] = true;
      return t;
    }();
    if (!kFirst[static_cast<unsigned char>(s[i])]) continue;
    const unsigned char c = Lower(static_cast<unsigned char>(s[i]));
    const bool word_start = i == 0 || !IsWordChar(static_cast<unsigned char>(s[i - 1]));
    const bool camel = i > 0 && s[i] == 'E' && s[i - 1] >= 'a' && s[i - 1] <= 'z';
    switch (c) {
      case 'e':
        if (HasAt(s, i, "error")) {
          const size_t e = i + 5;
          if (word_start && (WordEndsAt(s, e) || (e < n && s[e] == 's' && WordEndsAt(s, e + 1))))
            return true;
          if (camel && e < n && s[e] == ':') return true;
        } else if (HasAt(s, i, "exception") && i + 9 < n && s[i + 9] == ':' &&
                   (word_start || camel)) {
          return true;
        }
        break;
      case 'f':
        if (word_start && ((HasAt(s, i, "failed") && WordEndsAt(s, i + 6)) ||
                           (HasAt(s, i, "fatal") && WordEndsAt(s, i + 5)))) {
          return true;
        }
        break;
      case 't':
        if (s[i] == 'T' && s.substr(i).starts_with("Traceback")) return true;
        break;
      case 'p':
        if (word_start && HasAt(s, i, "panic")) return true;
        break;
      case 'n':
        if (s[i] == 'N' && s.substr(i).starts_with("No such file")) return true;
        break;
    }
  }
  return false;
}

// Head and tail of a long text (each about `window` bytes, on line boundaries).
std::pair<std::string_view, std::string_view> HeadAndTail(std::string_view s, size_t window) {
  if (s.size() <= 2 * window) return {s, {}};
  size_t head_end = s.rfind('\n', window);
  if (head_end == std::string_view::npos) head_end = window;
  size_t tail_begin = s.find('\n', s.size() - window);
  if (tail_begin == std::string_view::npos) tail_begin = s.size() - window;
  return {s.substr(0, head_end), s.substr(tail_begin)};
}

}  // namespace missy::extractive

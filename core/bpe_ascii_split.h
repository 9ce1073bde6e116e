// Fast path of the pre-tokenizer: the match the split pattern makes at a position,
// computed by hand when it only depends on ASCII characters. Each function returns the
// end of the match starting at `pos`, or 0 when a non-ASCII character could change the
// outcome (the caller then asks PCRE2). They follow the patterns in bpe_encoding.cpp
// alternative by alternative, backtracking included; the oracle tests cover both paths.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace missy::bpe_ascii {

enum Class : uint8_t {
  kEnd,       // past the end of the text
  kNonAscii,  // undecided: the caller falls back to PCRE2
  kLower,     // a-z
  kUpper,     // A-Z
  kDigit,     // 0-9
  kBlank,     // \t \v \f and space: White_Space but not a newline
  kNewline,   // \r \n
  kOther,     // punctuation, symbols, other controls
};

inline constexpr std::array<uint8_t, 128> kClasses = [] {
  std::array<uint8_t, 128> t{};
  for (int c = 0; c < 128; ++c) {
    Class k = kOther;
    if (c >= 'a' && c <= 'z')
      k = kLower;
    else if (c >= 'A' && c <= 'Z')
      k = kUpper;
    else if (c >= '0' && c <= '9')
      k = kDigit;
    else if (c == '\r' || c == '\n')
      k = kNewline;
    else if (c == ' ' || c == '\t' || c == '\v' || c == '\f')
      k = kBlank;
    t[c] = k;
  }
  return t;
}();

struct Text {
  const uint8_t* s;
  size_t n;
  Class operator[](size_t i) const {
    if (i >= n) return kEnd;
    return s[i] >= 0x80 ? kNonAscii : static_cast<Class>(kClasses[s[i]]);
  }
  bool Is(size_t i, char c) const { return i < n && s[i] == static_cast<uint8_t>(c); }
};

inline uint8_t Lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// (?i:'s|'t|'re|'ve|'m|'ll|'d) at i: the end of the contraction, i if there is none,
// 0 if undecided ("'" followed by a non-ASCII character: U+017F matches 's').
inline size_t Contraction(const Text& t, size_t i) {
  if (!t.Is(i, '\'')) return i;
  if (t[i + 1] == kNonAscii) return 0;
  if (i + 1 >= t.n) return i;
  const uint8_t a = Lower(t.s[i + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if (i + 2 >= t.n) return i;
  const uint8_t b = Lower(t.s[i + 2]);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return i;
}

// \p{N}{1,3}
inline size_t Digits(const Text& t, size_t pos) {
  size_t k = pos;
  while (k < pos + 3 && t[k] == kDigit) ++k;
  if (k < pos + 3 && t[k] == kNonAscii) return 0;
  return k;
}

// \s*[\r\n]+ | \s+(?!\S) | \s+   at a White_Space character.
inline size_t WhiteSpace(const Text& t, size_t pos) {
  size_t e = pos;
  size_t last_newline = 0;
  bool newline = false;
  for (;; ++e) {
    Class c = t[e];
    if (c == kNewline) {
      newline = true;
      last_newline = e;
    } else if (c != kBlank) {
      if (c == kNonAscii) return 0;  // U+00A0, U+3000 ... are White_Space too
      break;
    }
  }
  if (newline) return last_newline + 1;  // \s*[\r\n]+ backtracks to the last newline
  if (e == t.n) return e;                // \s+(?!\S) at the end of the text
  if (e - pos >= 2) return e - 1;        // \s+(?!\S) leaves one blank before \S
  return e;                              // \s+
}

// \p{L} runs end on a non-ASCII character: undecided (it may be a letter or a mark).
// ` ?[^\s\p{L}\p{N}]+` + trailing: 0 if undecided, kNoMatch if it does not match.
inline constexpr size_t kNoMatch = ~size_t{0};
inline size_t Punctuation(const Text& t, size_t pos, bool slash_too) {
  size_t j = t.Is(pos, ' ') ? pos + 1 : pos;
  Class c = t[j];
  if (c == kNonAscii) return 0;
  if (c != kOther) return kNoMatch;
  size_t k = j;
  while (t[k] == kOther) ++k;
  if (t[k] == kNonAscii) return 0;
  while (t[k] == kNewline || (slash_too && t.Is(k, '/'))) ++k;
  return k;
}

// o200k_base:
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|...)?
//   |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|...)?
//   |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
inline size_t O200kMatch(const uint8_t* s, size_t n, size_t pos) {
  const Text t{s, n};
  const Class c0 = t[pos];
  if (c0 == kNonAscii || c0 == kEnd) return 0;
  // The letter alternatives. Without the optional prefix they would start on the
  // prefix character itself, which is not a letter, so the prefix is taken if possible.
  const bool prefix = c0 == kBlank || c0 == kOther;
  if (prefix || c0 == kUpper || c0 == kLower) {
    const size_t j = prefix ? pos + 1 : pos;
    size_t k = j;
    while (t[k] == kUpper) ++k;
    if (t[k] == kNonAscii) return 0;
    if (t[k] == kLower) {  // first alternative: upper* lower+
      while (t[k] == kLower) ++k;
      if (t[k] == kNonAscii) return 0;
      return Contraction(t, k);
    }
    if (k > j) return Contraction(t, k);  // second alternative: upper+ (no lower follows)
  }
  if (c0 == kDigit) return Digits(t, pos);
  if (c0 == kOther || c0 == kBlank) {
    size_t e = Punctuation(t, pos, /*slash_too=*/true);
    if (e != kNoMatch) return e;
  }
  if (c0 == kBlank || c0 == kNewline) return WhiteSpace(t, pos);
  return 0;
}

// cl100k_base:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+
//   | ?[^\s\p{L}\p{N}]++[\r\n]*+|\s*[\r\n]+|\s+(?!\S)|\s+
inline size_t Cl100kMatch(const uint8_t* s, size_t n, size_t pos) {
  const Text t{s, n};
  const Class c0 = t[pos];
  if (c0 == kNonAscii || c0 == kEnd) return 0;
  if (t.Is(pos, '\'')) {
    size_t e = Contraction(t, pos);
    if (e != pos) return e;  // a contraction, or 0: undecided
  }
  const bool prefix = c0 == kBlank || c0 == kOther;
  if (prefix || c0 == kUpper || c0 == kLower) {
    size_t k = prefix ? pos + 1 : pos;
    const size_t j = k;
    while (t[k] == kUpper || t[k] == kLower) ++k;
    if (t[k] == kNonAscii) return 0;
    if (k > j) return k;
  }
  if (c0 == kDigit) return Digits(t, pos);
  if (c0 == kOther || c0 == kBlank) {
    size_t e = Punctuation(t, pos, /*slash_too=*/false);
    if (e != kNoMatch) return e;
  }
  if (c0 == kBlank || c0 == kNewline) return WhiteSpace(t, pos);
  return 0;
}

}  // namespace missy::bpe_ascii

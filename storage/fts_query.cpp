#include "storage/fts_query.h"

#include <unordered_set>

namespace missy::fts {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t len;
  char32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  return len;
}

bool IsAsciiWordChar(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::vector<std::string> QueryTerms(std::string_view raw, const QueryLimits& limits) {
  std::vector<std::string> terms;
  std::unordered_set<std::string> seen;
  std::string current;
  bool truncated = false;
  auto flush = [&] {
    if (!current.empty() && terms.size() < limits.max_terms &&
        seen.insert(AsciiLower(current)).second) {
      terms.push_back(current);
    }
    current.clear();
    truncated = false;
  };
  size_t i = 0;
  while (i < raw.size() && terms.size() < limits.max_terms) {
    size_t len = Utf8SequenceLength(raw, i);
    bool word = len > 1 || (len == 1 && IsAsciiWordChar(static_cast<unsigned char>(raw[i])));
    if (!word) {
      flush();
      i += len == 0 ? 1 : len;
      continue;
    }
    if (!truncated && current.size() + len <= limits.max_term_bytes) {
      current.append(raw.substr(i, len));
    } else {
      truncated = true;  // keep the prefix, skip the rest of the word
    }
    i += len;
  }
  flush();
  return terms;
}

std::string BuildMatchExpression(const std::vector<std::string>& terms, bool all_terms) {
  std::string out;
  for (const std::string& t : terms) {
    if (!out.empty()) out += all_terms ? " AND " : " OR ";
    out += '"';
    for (char c : t) {
      if (c == '"') out += '"';  // cannot occur (quotes separate words), but never trust that
      out += c;
    }
    out += '"';
  }
  return out;
}

}  // namespace missy::fts

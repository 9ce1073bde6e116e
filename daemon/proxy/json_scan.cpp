#include "daemon/proxy/json_scan.h"

#include <boost/json.hpp>
#include <cstring>
#include <unordered_set>

namespace missy::proxy {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A member's name as JSON reads it: the raw bytes between the quotes when they hold no
// escape, else decoded (undecodable: the raw bytes, which then match only themselves).
std::string MemberName(std::string_view quoted) {
  const std::string_view inner = quoted.substr(1, quoted.size() - 2);
  if (inner.find('\\') == std::string_view::npos) return std::string(inner);
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(quoted, ec);
  if (ec || !v.is_string()) return std::string(quoted);
  return std::string(v.get_string());
}

}  // namespace

size_t SkipSpace(std::string_view t, size_t p) {
  while (p < t.size() && IsSpace(t[p])) ++p;
  return p;
}

size_t SkipString(std::string_view t, size_t p) {
  ++p;
  while (p < t.size()) {
    const char* q = static_cast<const char*>(std::memchr(t.data() + p, '"', t.size() - p));
    if (q == nullptr) return std::string_view::npos;
    size_t at = static_cast<size_t>(q - t.data());
    size_t slashes = 0;
    while (at - slashes > p && t[at - slashes - 1] == '\\') ++slashes;
    if (slashes % 2 == 0) return at + 1;
    p = at + 1;
  }
  return std::string_view::npos;
}

size_t SkipValue(std::string_view t, size_t p) {
  if (p >= t.size()) return std::string_view::npos;
  if (t[p] == '"') return SkipString(t, p);
  if (t[p] != '{' && t[p] != '[') {
    while (p < t.size() && t[p] != ',' && t[p] != '}' && t[p] != ']' && !IsSpace(t[p])) ++p;
    return p;
  }
  size_t depth = 0;
  while (p < t.size()) {
    const char c = t[p];
    if (c == '"') {
      p = SkipString(t, p);
      if (p == std::string_view::npos) return p;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return p + 1;
    }
    ++p;
  }
  return std::string_view::npos;
}

std::string DuplicateMember(std::string_view text) {
  std::unordered_set<std::string> names;  // a body of a million members stays linear
  size_t p = SkipSpace(text, 0);
  if (p >= text.size() || text[p] != '{') return "";
  p = SkipSpace(text, p + 1);
  while (p < text.size() && text[p] == '"') {
    const size_t key_end = SkipString(text, p);
    if (key_end == std::string_view::npos) return "";
    std::string name = MemberName(text.substr(p, key_end - p));
    if (names.contains(name)) return name;
    names.insert(std::move(name));
    p = SkipSpace(text, key_end);
    if (p >= text.size() || text[p] != ':') return "";
    p = SkipValue(text, SkipSpace(text, p + 1));
    if (p == std::string_view::npos) return "";
    p = SkipSpace(text, p);
    if (p >= text.size() || text[p] != ',') return "";
    p = SkipSpace(text, p + 1);
  }
  return "";
}

}  // namespace missy::proxy

// Internal to storage/: turns raw user text into an FTS5 query that cannot fail to
// parse. Each word becomes a double-quoted string (so NEAR, AND, *, -, ^, :, and
// parentheses are plain text); invalid UTF-8 and control characters separate words.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace missy::fts {

struct QueryLimits {
  size_t max_terms = 32;        // further words are ignored
  size_t max_term_bytes = 128;  // longer words are cut (at a UTF-8 boundary)
};

// The distinct words of `raw` (first occurrence order, ASCII-case-insensitive dedup).
std::vector<std::string> QueryTerms(std::string_view raw, const QueryLimits& limits = {});

// `"a" AND "b"` (all_terms) or `"a" OR "b"`; empty when there are no terms.
std::string BuildMatchExpression(const std::vector<std::string>& terms, bool all_terms);

}  // namespace missy::fts

#include "core/argument_truncation.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <vector>

namespace missy {
namespace {

namespace json = boost::json;

// Nesting deeper than this is left as it is (Boost.JSON's own parse limit is 32).
constexpr int kMaxDepth = 32;
// Rounds of "cut, serialize, count, cut further": escapes and the markers make the first
// estimate a little short now and then; each round takes the excess off the level.
constexpr int kRounds = 8;

struct StringValue {
  json::string* value;
  std::string original;
  int64_t raw_tokens;  // of the value
  int64_t tokens;      // of the value as the document holds it: quoted and escaped
};

void CollectStrings(json::value& v, int depth, const MessageTokenCounter& counter,
                    std::vector<StringValue>& out) {
  if (depth > kMaxDepth) return;
  if (json::string* s = v.if_string()) {
    std::string text(s->data(), s->size());
    const int64_t raw = counter.CountText(text);
    const int64_t escaped = counter.CountText(json::serialize(*s));
    out.push_back({s, std::move(text), raw, escaped});
  } else if (json::object* o = v.if_object()) {
    for (auto& kv : *o) CollectStrings(kv.value(), depth + 1, counter, out);
  } else if (json::array* a = v.if_array()) {
    for (json::value& e : *a) CollectStrings(e, depth + 1, counter, out);
  }
}

}  // namespace

int64_t CutLevel(std::vector<int64_t> sizes, int64_t budget) {
  std::sort(sizes.begin(), sizes.end());
  int64_t below = 0;  // the sizes under the level, whole
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t above = static_cast<int64_t>(sizes.size() - i);
    const int64_t level = (budget - below) / above;
    if (level < sizes[i]) return std::max<int64_t>(0, level);
    below += sizes[i];
  }
  return sizes.empty() ? 0 : sizes.back();
}

TruncatedText TruncateToolArguments(std::string_view arguments, int64_t max_tokens,
                                    const MessageTokenCounter& counter) {
  const int64_t original_tokens = counter.CountText(arguments);
  if (original_tokens <= max_tokens) return Untruncated(arguments, original_tokens);
  boost::system::error_code ec;
  json::value doc = json::parse(arguments, ec);
  if (ec || !(doc.is_object() || doc.is_array() || doc.is_string())) {
    return TruncateMiddleOut(arguments, max_tokens, counter);
  }
  std::vector<StringValue> strings;
  CollectStrings(doc, 0, counter, strings);
  int64_t in_strings = 0;
  std::vector<int64_t> sizes;
  for (const StringValue& s : strings) {
    in_strings += s.tokens;
    sizes.push_back(s.tokens);
  }
  // What the document costs besides its string values: keys, punctuation, numbers.
  const int64_t frame = original_tokens - in_strings;
  int64_t budget = max_tokens - frame;
  std::string text;
  int64_t tokens = original_tokens;
  for (int round = 0; round < kRounds; ++round) {
    const int64_t level = CutLevel(sizes, budget);
    for (StringValue& s : strings) {
      // The level is in escaped tokens; the cut is of the value (newlines and quotes cost
      // more once escaped, in the same share of what is kept).
      TruncatedText cut;
      if (s.tokens > level) {
        cut = TruncateMiddleOut(s.original, level * s.raw_tokens / std::max<int64_t>(1, s.tokens),
                                counter);
      }
      // A short value cut to a level below the marker's size would only grow.
      *s.value = cut.truncated && cut.tokens < s.tokens ? cut.text : s.original;
    }
    text = json::serialize(doc);
    tokens = counter.CountText(text);
    if (tokens <= max_tokens || level == 0) break;
    budget -= tokens - max_tokens;
  }
  if (tokens >= original_tokens) {  // markers longer than what they replace
    return Untruncated(arguments, original_tokens);
  }
  TruncatedText out;
  out.original_tokens = original_tokens;
  out.text = std::move(text);
  out.truncated = true;
  out.tokens = tokens;
  out.removed_tokens = std::max<int64_t>(0, original_tokens - tokens);
  return out;
}

}  // namespace missy

#include "daemon/proxy/parse_cache.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>

#include "daemon/net/body_pool.h"
#include "daemon/proxy/json_scan.h"

namespace missy::proxy {
namespace {

namespace json = boost::json;
using Spans = std::vector<std::pair<size_t, size_t>>;

// Scans the array's elements from `p`: just past its '[' (`first`) or just past an
// element. Appends their spans; false when malformed.
bool ScanElements(std::string_view t, size_t p, bool first, Spans& spans) {
  p = SkipSpace(t, p);
  if (first && p < t.size() && t[p] == ']') return true;
  if (!first) {
    if (p < t.size() && t[p] == ']') return true;
    if (p >= t.size() || t[p] != ',') return false;
    p = SkipSpace(t, p + 1);
  }
  for (;;) {
    const size_t end = SkipValue(t, p);
    if (end == std::string_view::npos || end == p) return false;
    spans.emplace_back(p, end);
    p = SkipSpace(t, end);
    if (p >= t.size()) return false;
    if (t[p] == ']') return true;
    if (t[p] != ',') return false;
    p = SkipSpace(t, p + 1);
  }
}

// How many leading bytes of `a` and `b` are equal.
size_t CommonBytes(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  constexpr size_t kBlock = 4096;
  size_t p = 0;
  while (p + kBlock <= n && std::memcmp(a.data() + p, b.data() + p, kBlock) == 0) p += kBlock;
  while (p < n && a[p] == b[p]) ++p;
  return p;
}

std::string_view ListKey(Api api) { return api == Api::kResponses ? "input" : "messages"; }

// Each list element is one message (after chat's leading system ones).
bool OneMessagePerElement(const ParsedBody& p) {
  return p.list_open != std::string_view::npos &&
         p.spans.size() == p.request.leading + p.request.messages.size();
}

// Where the list whose last element ends at `p` closes (its ']'), or npos.
size_t ListClose(std::string_view t, size_t p) {
  p = SkipSpace(t, p);
  return p < t.size() && t[p] == ']' ? p : std::string_view::npos;
}

size_t EstimatedBytes(const std::string& body) { return body.size() * ParseCache::kMemoryPerByte; }

// A kept body's memory serves a later request's body (net::BodyPool), unless a watch
// still compares with it.
void GiveBack(std::shared_ptr<std::string> body) {
  if (body && body.use_count() == 1) net::BodyPool::Shared().Give(std::move(*body));
}

// The turn parsed when everything past the list is the kept request's, byte for byte, as
// everything before it is (the agent's system prompt and tools, resent every turn): only
// the new elements are parsed, in a body of the model, the list's leading elements (chat's
// system messages) and them; every other field is the kept parse's. `spans`: the body's
// elements, the first `reuse` the kept ones (moved into the result). Nothing when the rest
// differs or the short body does not parse as expected (the caller then parses the rest
// whole, `spans` untouched).
std::optional<ParsedBody> ParseNewOnly(Api api, std::string_view body, ParseCache::FullParse parse,
                                       std::string_view kept_body, ParsedBody& kept,
                                       Spans& spans, size_t reuse) {
  const size_t leading = kept.request.leading;
  const size_t close = ListClose(body, spans.back().second);
  const size_t kept_close = ListClose(kept_body, kept.spans.back().second);
  if (close == std::string_view::npos || kept_close == std::string_view::npos ||
      body.substr(close) != kept_body.substr(kept_close)) {
    return std::nullopt;
  }
  std::string light = "{\"model\":" + json::serialize(json::value(kept.request.model)) + ",\"";
  light.append(ListKey(api));
  light.append("\":[");
  if (leading > 0)
    light.append(body.substr(spans[0].first, spans[leading - 1].second - spans[0].first));
  if (reuse < spans.size()) {
    if (leading > 0) light.push_back(',');
    light.append(body.substr(spans[reuse].first, spans.back().second - spans[reuse].first));
  }
  light.append("]}");
  Result<ParsedRequest> fresh = parse(light);
  if (!fresh.ok() || fresh->leading != leading || fresh->messages.size() != spans.size() - reuse) {
    return std::nullopt;
  }
  json::value* list = kept.request.body.if_contains(ListKey(api));
  if (list == nullptr || !list->is_array()) return std::nullopt;
  ParsedBody out;
  out.request = std::move(kept.request);
  out.request.messages.resize(reuse - leading);
  out.request.messages.reserve(out.request.messages.size() + fresh->messages.size());
  for (NativeMessage& m : fresh->messages) out.request.messages.push_back(std::move(m));
  // The list holds what a whole parse leaves where it took a message out (an empty object).
  out.request.body.at(ListKey(api))
      .get_array()
      .resize(leading + out.request.messages.size(), json::value(json::object()));
  out.list_open = kept.list_open;
  out.reused = reuse - leading;
  out.spans = std::move(spans);  // taken only here: the caller falls back on them otherwise
  return out;
}

}  // namespace

size_t ListCloseOf(std::string_view text, const ParsedBody& parsed) {
  if (parsed.list_open == std::string_view::npos) return std::string_view::npos;
  return ListClose(text, parsed.spans.empty() ? parsed.list_open + 1 : parsed.spans.back().second);
}

bool ScanList(std::string_view text, std::string_view key, size_t& list_open, Spans& spans) {
  spans.clear();
  size_t p = SkipSpace(text, 0);
  if (p >= text.size() || text[p] != '{') return false;
  p = SkipSpace(text, p + 1);
  while (p < text.size() && text[p] == '"') {
    const size_t key_end = SkipString(text, p);
    if (key_end == std::string_view::npos) return false;
    const std::string_view name = text.substr(p + 1, key_end - p - 2);
    p = SkipSpace(text, key_end);
    if (p >= text.size() || text[p] != ':') return false;
    p = SkipSpace(text, p + 1);
    if (name == key) {
      if (p >= text.size() || text[p] != '[') return false;
      list_open = p;
      return ScanElements(text, p + 1, true, spans);
    }
    p = SkipValue(text, p);
    if (p == std::string_view::npos) return false;
    p = SkipSpace(text, p);
    if (p >= text.size() || text[p] != ',') return false;
    p = SkipSpace(text, p + 1);
  }
  return false;
}

PrefixWatch::PrefixWatch(std::vector<std::shared_ptr<const std::string>> kept) {
  candidates_.reserve(kept.size());
  for (auto& body : kept) candidates_.push_back(Candidate{std::move(body)});
}

void PrefixWatch::Arrived(size_t offset, std::string_view bytes) {
  for (Candidate& c : candidates_) {
    if (c.diverged || c.same != offset) {
      c.diverged = true;
      continue;
    }
    const std::string_view kept =
        std::string_view(*c.body).substr(std::min(offset, c.body->size()), bytes.size());
    const size_t n = CommonBytes(kept, bytes);
    c.same += n;
    c.diverged = n < bytes.size();
  }
}

std::optional<size_t> PrefixWatch::Common(const std::string* kept) const {
  for (const Candidate& c : candidates_) {
    if (c.body.get() == kept) return c.same;
  }
  return std::nullopt;
}

std::shared_ptr<PrefixWatch> ParseCache::Watch(Api api) const {
  if (api == Api::kResponses) return nullptr;
  std::vector<std::shared_ptr<const std::string>> kept;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : entries_) {
    if (e.parsed.request.api == api && OneMessagePerElement(e.parsed)) kept.push_back(e.body);
  }
  if (kept.empty()) return nullptr;
  return std::make_shared<PrefixWatch>(std::move(kept));
}

bool ParseCache::TakeBest(Api api, std::string_view body, const PrefixWatch* watch, Entry& out,
                          size_t& same) {
  std::lock_guard<std::mutex> lock(mu_);
  auto best = entries_.end();
  same = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->parsed.request.api != api || !OneMessagePerElement(it->parsed)) continue;
    const std::optional<size_t> watched =
        watch != nullptr ? watch->Common(it->body.get()) : std::nullopt;
    const size_t n = watched ? *watched : CommonBytes(*it->body, body);
    // Of use only when its first history message is among the equal bytes (else it is
    // another conversation's, left for it).
    const auto& spans = it->parsed.spans;
    const size_t leading = it->parsed.request.leading;
    if (spans.size() <= leading || spans[leading].second > n) continue;
    if (n > same) {
      same = n;
      best = it;
    }
  }
  if (best == entries_.end()) return false;
  bytes_ -= EstimatedBytes(*best->body);
  out = std::move(*best);
  entries_.erase(best);
  return true;
}

Result<ParsedBody> ParseCache::Parse(Api api, std::string_view body, FullParse parse,
                                     std::shared_ptr<BodyWatch> watch) {
  Entry kept;
  struct GiveBackAtEnd {
    Entry& e;
    ~GiveBackAtEnd() { GiveBack(std::move(e.body)); }
  } give_back{kept};
  size_t same = 0;
  const bool found = api != Api::kResponses &&
                     TakeBest(api, body, dynamic_cast<const PrefixWatch*>(watch.get()), kept, same);
  watch.reset();  // it holds the kept bodies it compared with
  if (found) {
    const Spans& old = kept.parsed.spans;
    const size_t leading = kept.parsed.request.leading;
    // The elements that are the same bytes as last time, and in the same place.
    const size_t reuse =
        static_cast<size_t>(std::upper_bound(old.begin(), old.end(), same,
                                             [](size_t n, const std::pair<size_t, size_t>& s) {
                                               return n < s.second;
                                             }) -
                            old.begin());
    Spans spans(old.begin(), old.begin() + reuse);
    if (reuse > leading && ScanElements(body, spans.back().second, false, spans)) {
      // The body without the reused messages: they are not parsed again.
      const size_t cut_from = leading > 0 ? spans[leading - 1].second : spans[leading].first;
      const size_t cut_to = reuse < spans.size() ? spans[reuse].first : spans[reuse - 1].second;
      if (std::optional<ParsedBody> light =
              ParseNewOnly(api, body, parse, *kept.body, kept.parsed, spans, reuse)) {
        return std::move(*light);
      }
      std::string rest;
      rest.reserve(body.size() - (cut_to - cut_from));
      rest.append(body.substr(0, cut_from));
      if (leading > 0 && reuse < spans.size()) rest.push_back(',');
      rest.append(body.substr(cut_to));
      Result<ParsedRequest> tail = parse(rest);
      if (tail.ok() && tail->leading == leading && tail->messages.size() == spans.size() - reuse) {
        std::vector<NativeMessage> messages = std::move(kept.parsed.request.messages);
        messages.resize(reuse - leading);
        messages.reserve(messages.size() + tail->messages.size());
        for (NativeMessage& m : tail->messages) messages.push_back(std::move(m));
        ParsedBody out;
        out.request = std::move(*tail);
        out.request.messages = std::move(messages);
        // The list in `body` holds what a whole parse leaves where it took a message out
        // (a moved-from object: empty).
        if (json::value* list = out.request.body.if_contains(ListKey(api));
            list != nullptr && list->is_array()) {
          json::array& a = list->get_array();
          a.insert(a.begin() + static_cast<std::ptrdiff_t>(std::min(leading, a.size())),
                   reuse - leading, json::value(json::object()));
        }
        out.list_open = kept.parsed.list_open;
        out.spans = std::move(spans);
        out.reused = reuse - leading;
        return out;
      }
    }
  }
  Result<ParsedRequest> whole = parse(body);
  if (!whole.ok()) return whole.status();
  ParsedBody out;
  out.request = std::move(*whole);
  if (api != Api::kResponses && !ScanList(body, ListKey(api), out.list_open, out.spans)) {
    out.list_open = std::string_view::npos;
    out.spans.clear();
  }
  return out;
}

void ParseCache::Keep(std::string body, ParsedBody parsed) {
  if (parsed.request.api == Api::kResponses || !OneMessagePerElement(parsed) ||
      EstimatedBytes(body) > kMaxBytes) {
    return;
  }
  auto kept = std::make_shared<std::string>(std::move(body));
  std::lock_guard<std::mutex> lock(mu_);
  bytes_ += EstimatedBytes(*kept);
  entries_.push_front(Entry{std::move(kept), std::move(parsed)});
  while (entries_.size() > kMaxEntries || bytes_ > kMaxBytes) {
    bytes_ -= EstimatedBytes(*entries_.back().body);
    GiveBack(std::move(entries_.back().body));
    entries_.pop_back();
  }
}

size_t ParseCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace missy::proxy

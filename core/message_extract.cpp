#include "core/message_extract.h"

#include <algorithm>
#include <cstring>

#include "core/summary_text.h"
#include "core/utf8.h"

namespace missy {

using namespace extractive;

namespace {

ArtifactOptions TrailOptions(const ExtractiveOptions& o) {
  ArtifactOptions a;
  a.max_line_chars = o.max_line_chars;
  a.command_chars = o.command_chars;
  a.scan_window_bytes = o.scan_window_bytes;
  a.key_lines_from = o.tool_result_chars;
  a.text_window_bytes = o.text_window_bytes;
  return a;
}

// Requests and facts of one message, formatted and deduplicated (first seen wins).
class Recorder final : public FactSink {
 public:
  explicit Recorder(const ExtractiveOptions& o) : o_(o) {}
  void Clear() {
    requests.clear();
    facts.clear();
  }
  void UserMessage(std::string_view text) override {
    Put(requests, UserRequest(text, o_.user_message_chars));
  }
  void ToolResult(std::string_view text) override {
    std::string line = "[tool] ";
    AppendOneLine(line, text, o_.tool_result_chars);
    Put(facts, std::move(line));
  }
  void KeyLine(std::string_view line) override {
    std::string fact;
    AppendOneLine(fact, line, o_.max_line_chars);
    if (!fact.empty()) Put(facts, std::move(fact));
  }

  std::vector<std::string> requests, facts;

 private:
  static void Put(std::vector<std::string>& list, std::string item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
  }
  const ExtractiveOptions& o_;
};

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

bool GetVarint(std::string_view in, size_t& pos, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && pos < in.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(in[pos++]);
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

void PutItem(std::string& out, std::string_view item) {
  PutVarint(out, item.size());
  out.append(item);
  const uint64_t h = ItemHash(item);
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((h >> (8 * i)) & 0xFF);
  out.append(bytes, 8);
}

uint64_t Load64(const char* p, size_t n) {  // little-endian, n <= 8
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

void PutTrailList(std::string& out, const RecentSet& set) {
  const std::vector<std::string>& items = set.items();
  PutVarint(out, items.size());
  for (const std::string& item : items) PutItem(out, item);
  if (items.size() > 1) {
    const std::vector<size_t> newest_first = set.ByRecency();
    for (auto it = newest_first.rbegin(); it != newest_first.rend(); ++it) PutVarint(out, *it);
  }
}

void PutList(std::string& out, const std::vector<std::string>& items) {
  PutVarint(out, items.size());
  for (const std::string& item : items) PutItem(out, item);
}

}  // namespace

bool ExtractiveOptions::ExtractsMatchDefaults() const {
  const ExtractiveOptions d;
  return user_message_chars == d.user_message_chars && tool_result_chars == d.tool_result_chars &&
         max_line_chars == d.max_line_chars && command_chars == d.command_chars &&
         scan_window_bytes == d.scan_window_bytes && text_window_bytes == d.text_window_bytes;
}

uint64_t ItemHash(std::string_view s) {
  constexpr uint64_t kMul1 = 0xBF58476D1CE4E5B9ull, kMul2 = 0x94D049BB133111EBull;
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * kMul2);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    h = (h ^ Load64(s.data() + i, 8)) * kMul1;
    h ^= h >> 31;
  }
  h = (h ^ Load64(s.data() + i, s.size() - i)) * kMul2;
  h ^= h >> 29;
  h *= kMul1;
  return h ^ (h >> 32);
}

std::string UserRequest(std::string_view text, size_t max_chars) {
  text = Trim(text);
  std::string valid;
  if (InvalidUtf8At(text) != std::string_view::npos) {
    valid = ToValidUtf8(text);
    text = valid;
  }
  const size_t chars = CodePoints(text);
  if (chars <= max_chars) return std::string(text);
  // Middle-out by characters: two thirds head, one third tail.
  const size_t head_chars = max_chars * 2 / 3, tail_chars = max_chars - head_chars;
  std::string head = CapChars(text, head_chars);
  size_t tail_pos = text.size(), skipped = 0;
  while (skipped < tail_chars && tail_pos > head.size()) {
    --tail_pos;
    while (tail_pos > 0 && (static_cast<unsigned char>(text[tail_pos]) & 0xC0) == 0x80) {
      --tail_pos;
    }
    ++skipped;
  }
  return head + " […" + std::to_string(chars - head_chars - skipped) + " chars cut…] " +
         std::string(text.substr(tail_pos));
}

struct MessageExtractor::Scratch {
  explicit Scratch(const ExtractiveOptions& o) : recorder(o) {}
  TrailBuilder trail;
  Recorder recorder;
};

MessageExtractor::MessageExtractor(const ExtractiveOptions& options)
    : options_(options), scratch_(std::make_unique<Scratch>(options_)) {}

MessageExtractor::~MessageExtractor() = default;

std::string MessageExtractor::Extract(const Message& m) {
  TrailBuilder& trail = scratch_->trail;
  Recorder& recorder = scratch_->recorder;
  trail.Clear();
  recorder.Clear();
  ExtractInto(m, TrailOptions(options_), trail, &recorder);
  std::string out(1, static_cast<char>(kExtractVersion));
  PutTrailList(out, trail.files);
  PutTrailList(out, trail.commands);
  PutTrailList(out, trail.errors);
  PutTrailList(out, trail.decisions);
  PutList(out, recorder.requests);
  PutList(out, recorder.facts);
  return out;
}

std::string ExtractMessage(const Message& m, const ExtractiveOptions& options) {
  return MessageExtractor(options).Extract(m);
}

// ---------------------------------------------------------------------------------------

size_t ItemSet::IndexOf(std::string_view item) const {
  if (slots_.empty()) return SIZE_MAX;
  bool found = false;
  const size_t slot = Find(item, ItemHash(item), &found);
  return found ? slots_[slot] - 1 : SIZE_MAX;
}

size_t ItemSet::Find(std::string_view item, uint64_t hash, bool* found) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const uint32_t s = slots_[i];
    if (s == 0 || (hashes_[s - 1] == hash && items_[s - 1] == item)) {
      *found = s != 0;
      return i;
    }
  }
}

void ItemSet::Grow() {
  slots_.assign(std::max<size_t>(16, slots_.size() * 2), 0);
  const size_t mask = slots_.size() - 1;
  for (size_t k = 0; k < items_.size(); ++k) {
    size_t i = hashes_[k] & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = static_cast<uint32_t>(k + 1);
  }
}

size_t ItemSet::Insert(std::string_view item, uint64_t hash, bool* added) {
  if ((items_.size() + 1) * 2 > slots_.size()) Grow();
  bool found = false;
  const size_t slot = Find(item, hash, &found);
  *added = !found;
  if (found) return slots_[slot] - 1;
  slots_[slot] = static_cast<uint32_t>(items_.size() + 1);
  items_.push_back(item);
  hashes_.push_back(hash);
  last_seen_.push_back(++clock_);
  return items_.size() - 1;
}

size_t ItemSet::Add(std::string_view item, uint64_t hash) {
  bool added = false;
  const size_t index = Insert(item, hash, &added);
  if (!added) Touch(index);
  return index;
}

bool ItemSet::AddIfNew(std::string_view item, uint64_t hash) {
  bool added = false;
  Insert(item, hash, &added);
  return added;
}

// ---------------------------------------------------------------------------------------

namespace {

using DecodedItem = ExtractMerge::DecodedItem;

// Parses an extract whole; false (and `lists` partly filled) when it is not one, or when
// an item is not valid UTF-8 (summaries must be).
bool Decode(std::string_view in, std::vector<DecodedItem> (&lists)[kExtractLists],
            std::vector<uint32_t> (&orders)[kExtractTrailLists]) {
  if (in.empty() || static_cast<uint8_t>(in[0]) != kExtractVersion) return false;
  size_t pos = 1;
  for (size_t l = 0; l < kExtractLists; ++l) {
    lists[l].clear();
    uint64_t n = 0;
    if (!GetVarint(in, pos, n) || n > in.size()) return false;
    for (uint64_t k = 0; k < n; ++k) {
      uint64_t len = 0;
      if (!GetVarint(in, pos, len) || len > in.size() - pos || in.size() - pos - len < 8) {
        return false;
      }
      const std::string_view text = in.substr(pos, len);
      // damaged: its items are not shown
      if (InvalidUtf8At(text) != std::string_view::npos) return false;
      lists[l].push_back({text, Load64(in.data() + pos + len, 8)});
      pos += len + 8;
    }
    if (l < kExtractTrailLists) {
      orders[l].clear();
      if (n > 1) {
        for (uint64_t k = 0; k < n; ++k) {
          uint64_t index = 0;
          if (!GetVarint(in, pos, index) || index >= n) return false;
          orders[l].push_back(static_cast<uint32_t>(index));
        }
      }
    }
  }
  return pos == in.size();
}

}  // namespace

void ExtractMerge::Add(const StoredMessage& m) {
  if (m.message.role == Role::kSystem) return;
  added_errors_.clear();
  if (m.extract.empty() || !stored_extracts_usable_ || !Apply(m.extract)) {
    if (!extractor_) extractor_ = std::make_unique<MessageExtractor>(options_);
    owned_.push_back(extractor_->Extract(m.message));
    Apply(owned_.back());
  }
  TrackRuns(m);
}

void ExtractMerge::TrackRuns(const StoredMessage& m) {
  constexpr size_t kMaxKeyBytes = 4096;
  if (m.message.role == Role::kAssistant) {
    // A run is the tool and the start of its arguments, kept as their hash: the string was
    // built, hashed and compared (up to 4 KB) for every call and every result.
    for (const ToolCall& c : m.message.tool_calls) {
      const uint64_t name = ItemHash(c.name);
      const uint64_t arguments =
          ItemHash(std::string_view(c.arguments).substr(0, kMaxKeyBytes));
      call_keys_[c.id] = arguments ^ (name * 0x9E3779B97F4A7C15ull + (name >> 17));
    }
    return;
  }
  if (m.message.role != Role::kTool) return;
  const auto key = call_keys_.find(m.message.tool_call_id);
  if (key == call_keys_.end()) return;
  std::vector<size_t>& previous = last_run_errors_[key->second];
  auto named_now = [&](size_t e) {
    return std::find(added_errors_.begin(), added_errors_.end(), e) != added_errors_.end();
  };
  for (size_t e : previous) {
    if (!named_now(e)) fixed_at_.emplace(e, m.seq);  // the first run without it
  }
  for (size_t e : added_errors_) fixed_at_.erase(e);
  previous = added_errors_;
}

int64_t ExtractMerge::FixedAt(size_t index) const {
  const auto it = fixed_at_.find(index);
  return it == fixed_at_.end() ? 0 : it->second;
}

void ExtractMerge::SetFixedAt(size_t index, int64_t seq) {
  if (seq > 0) {
    fixed_at_[index] = seq;
  } else {
    fixed_at_.erase(index);
  }
}

void ExtractMerge::AddAll(std::span<const StoredMessage> messages) {
  // Extracts are small and scattered over the heap: reading them is memory latency, so
  // the ones a few messages ahead are fetched while this one is merged.
  constexpr size_t kAhead = 8;
  auto prefetch = [&](size_t i) {
    if (i >= messages.size()) return;
    const std::string& e = messages[i].extract;
    for (size_t off = 0; off < std::min<size_t>(e.size(), 256); off += 64) {
      __builtin_prefetch(e.data() + off);
    }
  };
  for (size_t i = 0; i < kAhead; ++i) prefetch(i);
  for (size_t i = 0; i < messages.size(); ++i) {
    prefetch(i + kAhead);
    Add(messages[i]);
  }
}

bool ExtractMerge::Apply(std::string_view extract) {
  if (!Decode(extract, decoded_, orders_)) return false;
  for (size_t l = 0; l < kExtractTrailLists; ++l) {
    ItemSet& set = lists_[l];
    indices_.clear();
    for (const DecodedItem& item : decoded_[l]) indices_.push_back(set.Add(item.text, item.hash));
    if (l == kExErrors) added_errors_ = indices_;
    // Recency as the message left it: the order in which it last named them.
    for (uint32_t k : orders_[l]) set.Touch(indices_[k]);
  }
  for (size_t l = kExtractTrailLists; l < kExtractLists; ++l) {
    for (const DecodedItem& item : decoded_[l]) lists_[l].AddIfNew(item.text, item.hash);
  }
  return true;
}

ArtifactTrail ExtractMerge::Trail() const {
  return {lists_[kExFiles].Copy(), lists_[kExCommands].Copy(), lists_[kExErrors].Copy(),
          lists_[kExDecisions].Copy()};
}

std::string_view ExtractMerge::Keep(std::string s) { return owned_.emplace_back(std::move(s)); }

bool ExtractMerge::AddFile(std::string_view path) {
  if (!TrailPath(path)) return false;
  lists_[kExFiles].Add(Keep(std::string(path)));
  return true;
}

bool ExtractDecodes(std::string_view extract) {
  thread_local std::vector<ExtractMerge::DecodedItem> decoded[kExtractLists];
  thread_local std::vector<uint32_t> orders[kExtractTrailLists];
  return Decode(extract, decoded, orders);
}

ArtifactTrail ExtractArtifacts(std::span<const StoredMessage> messages) {
  ExtractMerge merge(ExtractiveOptions{});
  merge.AddAll(messages);
  return merge.Trail();
}

}  // namespace missy

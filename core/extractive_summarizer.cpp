#include "core/extractive_summarizer.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "core/summary_text.h"
#include "core/truncation.h"
#include "core/utf8.h"

namespace missy {

using namespace extractive;

namespace {

// ---------------------------------------------------------------------------------------
// The items of a summary, and the layout.

struct Pieces {
  std::vector<std::string> requests;  // oldest first; [0] is the task
  std::vector<std::string> facts;     // oldest first
  std::string prior;
};

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

// A bullet; continuation lines are indented so the text reads back item by item.
void AppendBullet(std::string& out, std::string_view item) {
  out += "- ";
  size_t pos = 0;
  while (true) {
    const size_t nl = item.find('\n', pos);
    out.append(item.substr(pos, nl == std::string_view::npos ? nl : nl - pos));
    out += '\n';
    if (nl == std::string_view::npos) break;
    out += "  ";
    pos = nl + 1;
  }
}

constexpr std::string_view kPriorHeader = "Earlier:\n";
constexpr std::string_view kRequestsHeader = "Task/requests:\n";
constexpr std::string_view kFactsHeader = "Facts:\n";
constexpr std::string_view kFilesHeader = "Files: ";
constexpr std::string_view kCommandsHeader = "Commands:\n";
constexpr std::string_view kErrorsHeader = "Errors:\n";
constexpr std::string_view kDecisionsHeader = "Decisions:\n";

enum Section { kRequests, kFacts, kFiles, kCommands, kErrors, kDecisions, kSectionCount };

// Which items are shown: keep[section][index].
struct Selection {
  std::array<std::vector<char>, kSectionCount> keep;
  bool prior = false;
};

struct Lists {
  std::array<const std::vector<std::string>*, kSectionCount> items;
  std::string_view prior;
};

std::string Render(const Lists& l, const Selection& s, size_t omitted) {
  std::string out;
  if (s.prior && !l.prior.empty()) {
    out += kPriorHeader;
    AppendBullet(out, l.prior);
  }
  auto bullets = [&](Section sec, std::string_view header) {
    bool any = false;
    for (size_t i = 0; i < l.items[sec]->size(); ++i) {
      if (!s.keep[sec][i]) continue;
      if (!any) out += header;
      any = true;
      AppendBullet(out, (*l.items[sec])[i]);
    }
  };
  bullets(kRequests, kRequestsHeader);
  bullets(kFacts, kFactsHeader);
  bool any = false;
  for (size_t i = 0; i < l.items[kFiles]->size(); ++i) {
    if (!s.keep[kFiles][i]) continue;
    out += any ? ", " : kFilesHeader;
    any = true;
    out += (*l.items[kFiles])[i];
  }
  if (any) out += '\n';
  bullets(kCommands, kCommandsHeader);
  bullets(kErrors, kErrorsHeader);
  bullets(kDecisions, kDecisionsHeader);
  if (omitted > 0) {
    out += '(';
    out += std::to_string(omitted);
    out += " older items omitted)\n";
  }
  return out;
}

// Chooses what fits `budget` tokens by priority, then verifies with one exact count per
// round and drops the last admitted items until the text fits.
struct Bounded {
  std::string text;
  int64_t tokens = 0;
  bool cut = false;
};

Bounded Bound(const Pieces& p, const TrailBuilder& trail, int64_t budget,
              const MessageTokenCounter& counter) {
  // The task gets at most half the budget (middle-out cut beyond that).
  std::vector<std::string> requests = p.requests;
  if (!requests.empty()) {
    const int64_t share = budget / 2 - counter.CountText(kRequestsHeader) - 2;
    if (counter.CountText(requests[0]) > share) {
      requests[0] = TruncateMiddleOut(requests[0], std::max<int64_t>(share, 1), counter).text;
    }
  }
  const Lists lists{{&requests, &p.facts, &trail.files.items(), &trail.commands.items(),
                     &trail.errors.items(), &trail.decisions.items()},
                    p.prior};
  Selection sel;
  size_t total_items = 0;
  for (int s = 0; s < kSectionCount; ++s) {
    sel.keep[s].assign(lists.items[s]->size(), 0);
    total_items += lists.items[s]->size();
  }
  std::vector<std::pair<Section, size_t>> admitted;  // in priority order
  std::vector<int64_t> cost_of;                      // parallel to admitted
  std::array<bool, kSectionCount> opened{};
  int64_t used = 2;  // the omitted-items note, roughly
  auto admit = [&](Section sec, size_t i, int64_t cap) {
    if (sel.keep[sec][i]) return true;
    const std::string& item = (*lists.items[sec])[i];
    int64_t cost = counter.CountText(item) + (sec == kFiles ? 1 : 2);
    if (!opened[sec]) cost += 3;
    if (used + cost > cap) return false;
    opened[sec] = true;
    used += cost;
    sel.keep[sec][i] = 1;
    admitted.emplace_back(sec, i);
    cost_of.push_back(cost);
    return true;
  };
  // Admits the most recent items of a section (up to `limit`) while they fit `cap`.
  auto admit_recent = [&](Section sec, const std::vector<size_t>& order, size_t limit,
                          int64_t cap) {
    size_t n = 0;
    for (size_t i : order) {
      if (n >= limit) break;
      if (sel.keep[sec][i]) {
        ++n;
        continue;
      }
      if (!admit(sec, i, cap)) break;
      ++n;
    }
  };
  auto newest_first = [](size_t n, size_t skip_front) {
    std::vector<size_t> order;
    for (size_t i = n; i > skip_front; --i) order.push_back(i - 1);
    return order;
  };
  const std::vector<size_t> files = trail.files.ByRecency(), commands = trail.commands.ByRecency(),
                            errors = trail.errors.ByRecency(),
                            decisions = trail.decisions.ByRecency();
  const std::vector<size_t> request_order = newest_first(requests.size(), 1);
  const std::vector<size_t> facts = newest_first(p.facts.size(), 0);

  if (!requests.empty()) admit(kRequests, 0, budget);
  admit_recent(kFiles, files, 12, budget);
  admit_recent(kErrors, errors, 6, budget);
  admit_recent(kCommands, commands, 6, budget);
  admit_recent(kDecisions, decisions, 4, budget);
  admit_recent(kRequests, request_order, SIZE_MAX, used + budget * 3 / 10);
  admit_recent(kFacts, facts, SIZE_MAX, used + budget / 4);
  admit_recent(kFiles, files, SIZE_MAX, budget);
  admit_recent(kErrors, errors, SIZE_MAX, budget);
  admit_recent(kDecisions, decisions, SIZE_MAX, budget);
  admit_recent(kCommands, commands, SIZE_MAX, budget);
  admit_recent(kRequests, request_order, SIZE_MAX, budget);
  admit_recent(kFacts, facts, SIZE_MAX, budget);
  // The prior excerpt only when everything else is in.
  if (!p.prior.empty() && admitted.size() == total_items &&
      used + counter.CountText(p.prior) + 4 <= budget) {
    sel.prior = true;
  }

  Bounded out;
  const size_t keep_first = requests.empty() ? 0 : 1;
  while (true) {
    const size_t omitted = total_items - admitted.size() + (p.prior.empty() || sel.prior ? 0 : 1);
    out.text = Render(lists, sel, omitted);
    out.tokens = counter.CountText(out.text);
    out.cut = omitted > 0;
    if (out.tokens <= budget) return out;
    if (sel.prior) {
      sel.prior = false;
      continue;
    }
    // Drop the lowest-priority items worth the excess (the task goes last).
    int64_t excess = out.tokens - budget;
    while (excess > 0 && admitted.size() > keep_first) {
      const auto [sec, i] = admitted.back();
      sel.keep[sec][i] = 0;
      excess -= cost_of.back();
      admitted.pop_back();
      cost_of.pop_back();
    }
    if (admitted.size() <= keep_first && excess > 0) break;
  }
  // Only the task is left and it is still too long (or nothing at all fits): cut it
  // further, the omitted-items note going first.
  if (requests.empty() || admitted.empty()) return out;
  out.cut = true;
  const std::string note = "(" + std::to_string(total_items - 1) + " older items omitted)\n";
  auto render_task = [&](std::string_view task, bool with_note) {
    out.text = std::string(kRequestsHeader);
    AppendBullet(out.text, task);
    if (with_note && total_items > 1) out.text += note;
    out.tokens = counter.CountText(out.text);
    return out.tokens <= budget;
  };
  int64_t room = budget - counter.CountText(std::string(kRequestsHeader) + "- \n") - 1;
  for (int attempt = 0; attempt < 8 && room > 0; ++attempt) {
    const TruncatedText t = TruncateMiddleOut(requests[0], room, counter);
    if (render_task(t.text, true) || render_task(t.text, false)) return out;
    room -= out.tokens - budget + 1;
  }
  // The marker itself does not fit: the head of the task alone.
  for (size_t chars = CodePoints(requests[0]); chars > 0; chars /= 2) {
    if (render_task(CapChars(requests[0], chars), false)) return out;
  }
  render_task("", false);
  return out;
}

ExtractiveSummary Finish(const Pieces& pieces, const TrailBuilder& trail, int64_t source_tokens,
                         const ExtractiveOptions& o, const MessageTokenCounter& counter) {
  ExtractiveSummary s;
  s.source_tokens = source_tokens;
  int64_t budget = o.target_tokens;
  if (source_tokens > 0) budget = std::min(budget, source_tokens - 1);
  Bounded b = Bound(pieces, trail, std::max<int64_t>(budget, 1), counter);
  s.text = std::move(b.text);
  s.tokens = b.tokens;
  s.cut = b.cut;
  s.artifacts = trail.Build();
  return s;
}

// Collects the requests and facts reported during extraction, deduplicated.
class PieceCollector final : public FactSink {
 public:
  PieceCollector(Pieces& pieces, const ExtractiveOptions& o) : p_(pieces), o_(o) {}
  void UserMessage(std::string_view text) override {
    std::string r = UserRequest(text, o_.user_message_chars);
    if (seen_requests_.insert(r).second) p_.requests.push_back(std::move(r));
  }
  void ToolResult(std::string_view text) override {
    line_.assign("[tool] ");
    AppendOneLine(line_, text, o_.tool_result_chars);
    AddFact();
  }
  void KeyLine(std::string_view line) override {
    line_.clear();
    AppendOneLine(line_, line, o_.max_line_chars);
    AddFact();
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  void AddFact() {
    if (line_.empty() || seen_facts_.contains(std::string_view(line_))) return;
    seen_facts_.insert(line_);
    p_.facts.push_back(line_);
  }

  Pieces& p_;
  const ExtractiveOptions& o_;
  std::string line_;  // the fact being formatted (reused)
  std::unordered_set<std::string, Hash, std::equal_to<>> seen_facts_;
  std::unordered_set<std::string> seen_requests_;
};

ArtifactOptions TrailOptions(const ExtractiveOptions& o) {
  ArtifactOptions a;
  a.max_line_chars = o.max_line_chars;
  a.command_chars = o.command_chars;
  a.scan_window_bytes = o.scan_window_bytes;
  a.key_lines_from = o.tool_result_chars;
  a.text_window_bytes = o.text_window_bytes;
  return a;
}

// Reads a summary text back into requests and facts (CondenseSummaries).
void ReadBack(std::string_view text, Pieces& p, std::unordered_map<std::string, char>& seen_req,
              std::unordered_map<std::string, char>& seen_facts, const ExtractiveOptions& o) {
  enum { kNone, kReq, kFact, kSkip } section = kNone;
  std::vector<std::string>* current = nullptr;
  std::string item;
  auto flush = [&] {
    if (current && !item.empty()) {
      auto& seen = current == &p.requests ? seen_req : seen_facts;
      if (seen.try_emplace(item, 1).second) current->push_back(item);
    }
    item.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.starts_with("  ") && !item.empty()) {
      item += '\n';
      item += line.substr(2);
      continue;
    }
    if (line.starts_with("- ")) {
      flush();
      if (section == kReq || section == kFact) {
        current = section == kReq ? &p.requests : &p.facts;
        item = std::string(line.substr(2));
      }
      continue;
    }
    flush();
    current = nullptr;
    const std::string with_nl = std::string(line) + "\n";
    if (with_nl == kRequestsHeader) {
      section = kReq;
    } else if (with_nl == kFactsHeader) {
      section = kFact;
    } else if (with_nl == kPriorHeader || with_nl == kCommandsHeader || with_nl == kErrorsHeader ||
               with_nl == kDecisionsHeader || line.starts_with(kFilesHeader) ||
               (line.starts_with("(") && line.ends_with("older items omitted)"))) {
      section = kSkip;
    } else if (!Trim(line).empty()) {  // not our layout: each line is a fact
      section = kNone;
      std::string fact = OneLine(line, o.max_line_chars);
      if (seen_facts.try_emplace(fact, 1).second) p.facts.push_back(std::move(fact));
    }
  }
  flush();
}

}  // namespace

ExtractiveSummary SummarizeMessages(std::span<const StoredMessage> chunk, std::string_view prior,
                                    const ExtractiveOptions& options,
                                    const MessageTokenCounter& counter) {
  TrailBuilder trail;
  Pieces pieces;
  PieceCollector collector(pieces, options);
  ExtractInto(chunk, TrailOptions(options), trail, &collector);
  int64_t source = 0;
  for (const StoredMessage& m : chunk) {
    source += m.tokens > 0 ? m.tokens : counter.CountMessage(m.message);
  }
  prior = Trim(prior);
  if (!prior.empty()) {
    // The prior summary's excerpt: at most a tenth of the target.
    pieces.prior = TruncateMiddleOut(ToValidUtf8(prior),
                                     std::max<int64_t>(options.target_tokens / 10, 16), counter)
                       .text;
  }
  return Finish(pieces, trail, source, options, counter);
}

ExtractiveSummary CondenseSummaries(std::span<const ChildSummary> children,
                                    const ExtractiveOptions& options,
                                    const MessageTokenCounter& counter) {
  TrailBuilder trail;
  Pieces pieces;
  std::unordered_map<std::string, char> seen_req, seen_facts;
  int64_t source = 0;
  for (const ChildSummary& c : children) {
    source += c.tokens > 0 ? c.tokens : counter.CountText(c.text);
    ReadBack(ToValidUtf8(c.text), pieces, seen_req, seen_facts, options);
    for (const std::string& f : c.artifacts.files) trail.AddFile(f);
    for (const std::string& x : c.artifacts.commands) trail.commands.Add(ToValidUtf8(x));
    for (const std::string& x : c.artifacts.errors) trail.errors.Add(ToValidUtf8(x));
    for (const std::string& x : c.artifacts.decisions) trail.decisions.Add(ToValidUtf8(x));
  }
  return Finish(pieces, trail, source, options, counter);
}

}  // namespace missy

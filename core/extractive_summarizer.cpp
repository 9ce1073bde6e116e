#include "core/extractive_summarizer.h"

#include <algorithm>
#include <array>

#include "core/summary_text.h"
#include "core/truncation.h"
#include "core/utf8.h"

namespace missy {

using namespace extractive;

namespace {

// ---------------------------------------------------------------------------------------
// The items of a summary, and the layout.

struct Pieces {
  std::vector<std::string_view> requests;  // oldest first; [0] is the task
  std::vector<std::string_view> facts;     // oldest first
  std::string prior;
};

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
constexpr std::string_view kFilesHeader = kSummaryFilesHeader;
constexpr std::string_view kCommandsHeader = "Commands:\n";
constexpr std::string_view kErrorsHeader = kSummaryErrorsHeader;
constexpr std::string_view kDecisionsHeader = "Decisions:\n";

// How a summary shares its room. After the task and the first of each list, its other
// files and the other errors that report one may take these shares of the room before the
// older requests and facts: a leaf 30% and 20%; a condensed summary half and 40%, whose
// trail is the union of four or more leaves' while its requests and facts are theirs,
// already chosen (and full of an agent harness's repeated prompts); there, once the newer
// requests are in, every error that reports one comes before the facts (the heads of tool
// outputs its leaves chose: what is least worth keeping of a long stretch). A condensed summary
// shows an error line's head (its first error_chars code points, "…" after): the head names
// the error, the whole line is in the trail and the children (recall), and a long session
// has many distinct errors to show.
struct Shares {
  int64_t files_pct = 30;
  int64_t errors_pct = 20;
  size_t error_chars = 0;             // 0: the line as extracted
  bool reports_before_facts = false;  // all the reports, after the requests, before the facts
};
constexpr Shares kLeafShares{};
constexpr ptrdiff_t kNewestErrors = 6;  // the newest open reports, shown first
constexpr Shares kCondensedShares{50, 40, 100, true};

enum Section { kRequests, kFacts, kFiles, kCommands, kErrors, kDecisions, kSectionCount };

// Which items are shown: keep[section][index].
struct Selection {
  std::array<std::vector<char>, kSectionCount> keep;
  bool prior = false;
};

struct Lists {
  std::array<const std::vector<std::string_view>*, kSectionCount> items;
  std::string_view prior;
  const ExtractMerge* trail = nullptr;  // FixedAt of the errors
};

// What an error's bullet says after the line when a rerun showed it gone.
std::string FixedNote(int64_t seq) {
  return seq > 0 ? std::string(kFixedNoteHead) + std::to_string(seq) + ")" : std::string();
}

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
  any = false;
  for (size_t i = 0; i < l.items[kErrors]->size(); ++i) {
    if (!s.keep[kErrors][i]) continue;
    if (!any) out += kErrorsHeader;
    any = true;
    AppendBullet(out, std::string((*l.items[kErrors])[i]) + FixedNote(l.trail->FixedAt(i)));
  }
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

Bounded Bound(const Pieces& p, const ExtractMerge& trail, int64_t budget, const Shares& shares,
              const MessageTokenCounter& counter) {
  // The task gets at most half the budget (middle-out cut beyond that).
  std::vector<std::string_view> requests = p.requests;
  std::string cut_task;
  if (!requests.empty()) {
    const int64_t share = budget / 2 - counter.CountText(kRequestsHeader) - 2;
    if (counter.CountText(requests[0]) > share) {
      cut_task = TruncateMiddleOut(requests[0], std::max<int64_t>(share, 1), counter).text;
      requests[0] = cut_task;
    }
  }
  const ItemSet &files_set = trail.list(kExFiles), &commands_set = trail.list(kExCommands),
                &errors_set = trail.list(kExErrors), &decisions_set = trail.list(kExDecisions);
  // The error lines as shown (their heads, in a condensed summary).
  std::vector<std::string> error_heads;
  std::vector<std::string_view> error_views = errors_set.items();
  if (shares.error_chars > 0) {
    error_heads.reserve(error_views.size());
    for (std::string_view e : error_views) {
      bool cut = false;
      error_heads.push_back(CapChars(e, shares.error_chars, &cut));
      if (cut) error_heads.back() += "…";
    }
    error_views.assign(error_heads.begin(), error_heads.end());
  }
  const Lists lists{{&requests, &p.facts, &files_set.items(), &commands_set.items(), &error_views,
                     &decisions_set.items()},
                    p.prior,
                    &trail};
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
    const std::string_view item = (*lists.items[sec])[i];
    int64_t cost = counter.CountText(item) + (sec == kFiles ? 1 : 2);
    if (sec == kErrors && trail.FixedAt(i) > 0)
      cost += counter.CountText(FixedNote(trail.FixedAt(i)));
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
  const std::vector<size_t> commands = commands_set.ByRecency(),
                            decisions = decisions_set.ByRecency();
  // Paths before URLs (a URL costs the room of several paths), each the newest first.
  std::vector<size_t> files = files_set.ByRecency();
  std::stable_partition(files.begin(), files.end(), [&](size_t i) {
    return files_set.items()[i].find("://") == std::string_view::npos;
  });
  // Lines that report an error before those that only mention one (the newest first); of
  // the reports, the few newest still open (the state the stretch ended in), then all the
  // others in the order they were first seen: an error reported once early, since fixed or
  // drowned by repeats of others, is what only this summary can still show, while the
  // newest come back in later runs and later summaries.
  std::vector<size_t> errors = errors_set.ByRecency();
  std::vector<char> is_reports(errors_set.items().size());  // ReportsError, once an item
  for (size_t i = 0; i < is_reports.size(); ++i) {
    is_reports[i] = ReportsError(errors_set.items()[i]);
  }
  auto is_report = [&](size_t i) { return is_reports[i] != 0; };
  auto open_report = [&](size_t i) { return is_report(i) && trail.FixedAt(i) == 0; };
  const auto reports_end = std::stable_partition(errors.begin(), errors.end(), is_report);
  const auto open_end = std::stable_partition(errors.begin(), reports_end, open_report);
  const auto newest_end =
      open_end - errors.begin() > kNewestErrors ? errors.begin() + kNewestErrors : open_end;
  std::sort(newest_end, reports_end);  // index order is first-seen order
  const std::vector<size_t> request_order = newest_first(requests.size(), 1);
  const std::vector<size_t> facts = newest_first(p.facts.size(), 0);

  if (!requests.empty()) admit(kRequests, 0, budget);
  admit_recent(kFiles, files, 12, budget);
  admit_recent(kErrors, errors, kNewestErrors, budget);
  admit_recent(kCommands, commands, 6, budget);
  admit_recent(kDecisions, decisions, 4, budget);
  // Then the other files and errors, up to shares of the room, before the older requests
  // and facts: a summary that condenses many leaves has hundreds of trail items, which the
  // requests and facts would otherwise crowd out (the trail is what an agent looks for).
  const size_t reports = static_cast<size_t>(reports_end - errors.begin());
  admit_recent(kFiles, files, SIZE_MAX, std::min(budget, used + budget * shares.files_pct / 100));
  admit_recent(kErrors, errors, reports, std::min(budget, used + budget * shares.errors_pct / 100));
  admit_recent(kRequests, request_order, SIZE_MAX, used + budget * 3 / 10);
  if (shares.reports_before_facts) admit_recent(kErrors, errors, reports, budget);
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

ExtractiveSummary Finish(const Pieces& pieces, const ExtractMerge& trail, int64_t source_tokens,
                         const Shares& shares, const ExtractiveOptions& o,
                         const MessageTokenCounter& counter) {
  ExtractiveSummary s;
  s.source_tokens = source_tokens;
  int64_t budget = o.target_tokens;
  if (source_tokens > 0) budget = std::min(budget, source_tokens - 1);
  Bounded b = Bound(pieces, trail, std::max<int64_t>(budget, 1), shares, counter);
  s.text = std::move(b.text);
  s.tokens = b.tokens;
  s.cut = b.cut;
  s.artifacts = trail.Trail();
  return s;
}

// An error bullet's line and the seq of its fix note (0 without one).
std::pair<std::string_view, int64_t> SplitFixedNote(std::string_view bullet) {
  const size_t at = bullet.rfind(kFixedNoteHead);
  if (at == std::string_view::npos || !bullet.ends_with(")")) return {bullet, 0};
  const std::string_view digits =
      bullet.substr(at + kFixedNoteHead.size(), bullet.size() - 1 - at - kFixedNoteHead.size());
  int64_t seq = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || seq > INT64_MAX / 20) return {bullet, 0};
    seq = seq * 10 + (c - '0');
  }
  return {bullet.substr(0, at), digits.empty() ? 0 : seq};
}

// The trail item an error bullet shows: the same line, or the one it is the head of
// (a condensed summary's "head…"); SIZE_MAX when none.
size_t ShownErrorIndex(const ItemSet& errors, std::string_view shown) {
  const size_t exact = errors.IndexOf(shown);
  if (exact != SIZE_MAX || !shown.ends_with("…")) return exact;
  const std::string_view head = shown.substr(0, shown.size() - std::string_view("…").size());
  for (size_t i = 0; i < errors.items().size(); ++i) {
    if (errors.items()[i].starts_with(head)) return i;
  }
  return SIZE_MAX;
}

// Reads a summary text back into requests and facts (CondenseSummaries), deduplicated
// (first seen wins) in `merge`'s lists, which keep the strings; the error bullets it shows,
// with their fix notes, into `shown_errors`.
void ReadBack(std::string_view text, ExtractMerge& merge, const ExtractiveOptions& o,
              std::vector<std::pair<std::string, int64_t>>& shown_errors) {
  enum { kNone, kReq, kFact, kErr, kSkip } section = kNone;
  ItemSet* current = nullptr;
  std::string item;
  auto put = [&](ItemSet& set, std::string s) {
    const uint64_t hash = ItemHash(s);
    set.AddIfNew(merge.Keep(std::move(s)), hash);
  };
  auto flush = [&] {
    if (current && !item.empty()) put(*current, std::move(item));
    item.clear();
  };
  ForEachRawLine(text, [&](std::string_view line) {
    if (line.starts_with("  ") && !item.empty()) {
      item += '\n';
      item += line.substr(2);
      return;
    }
    if (line.starts_with("- ")) {
      flush();
      if (section == kErr) {
        const auto [error, seq] = SplitFixedNote(line.substr(2));
        shown_errors.emplace_back(std::string(error), seq);
      }
      if (section == kReq || section == kFact) {
        current = &merge.list(section == kReq ? kExRequests : kExFacts);
        item = std::string(line.substr(2));
      }
      return;
    }
    flush();
    current = nullptr;
    const std::string with_nl = std::string(line) + "\n";
    if (with_nl == kRequestsHeader) {
      section = kReq;
    } else if (with_nl == kFactsHeader) {
      section = kFact;
    } else if (with_nl == kErrorsHeader) {
      section = kErr;
    } else if (with_nl == kPriorHeader || with_nl == kCommandsHeader ||
               with_nl == kDecisionsHeader || line.starts_with(kFilesHeader) ||
               (line.starts_with("(") && line.ends_with("older items omitted)"))) {
      section = kSkip;
    } else if (!Trim(line).empty()) {  // not our layout: each line is a fact
      section = kNone;
      put(merge.list(kExFacts), OneLine(line, o.max_line_chars));
    }
  });
  flush();
}

}  // namespace

ExtractiveSummary SummarizeMessages(std::span<const StoredMessage> chunk, std::string_view prior,
                                    const ExtractiveOptions& options,
                                    const MessageTokenCounter& counter) {
  ExtractMerge merge(options);
  merge.AddAll(chunk);
  Pieces pieces;
  pieces.requests = merge.list(kExRequests).items();
  pieces.facts = merge.list(kExFacts).items();
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
  return Finish(pieces, merge, source, kLeafShares, options, counter);
}

ExtractiveSummary CondenseSummaries(std::span<const ChildSummary> children,
                                    const ExtractiveOptions& options,
                                    const MessageTokenCounter& counter) {
  ExtractMerge merge(options);
  int64_t source = 0;
  std::vector<std::pair<std::string, int64_t>> shown_errors;
  for (const ChildSummary& c : children) {
    source += c.tokens > 0 ? c.tokens : counter.CountText(c.text);
    shown_errors.clear();
    ReadBack(ToValidUtf8(c.text), merge, options, shown_errors);
    for (const std::string& f : c.artifacts.files) merge.AddFile(f);
    for (ExtractList l : {kExCommands, kExErrors, kExDecisions}) {
      const std::vector<std::string>& items = l == kExCommands ? c.artifacts.commands
                                              : l == kExErrors ? c.artifacts.errors
                                                               : c.artifacts.decisions;
      for (const std::string& x : items) merge.list(l).Add(merge.Keep(ToValidUtf8(x)));
    }
    // An error the child shows says whether it was fixed by then (a later child's word
    // wins); one it left out keeps what an earlier child said.
    for (const auto& [error, seq] : shown_errors) {
      const size_t index = ShownErrorIndex(merge.list(kExErrors), error);
      if (index != SIZE_MAX) merge.SetFixedAt(index, seq);
    }
  }
  Pieces pieces;
  pieces.requests = merge.list(kExRequests).items();
  pieces.facts = merge.list(kExFacts).items();
  return Finish(pieces, merge, source, kCondensedShares, options, counter);
}

}  // namespace missy

#include "core/extractive_summarizer.h"

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cstring>
#include <unordered_map>

#include "core/truncation.h"
#include "core/utf8.h"

namespace missy {

namespace {

constexpr size_t kMaxPathBytes = 256;
constexpr size_t kMaxCommandScanBytes = 8192;  // paths are looked for this far into a command
constexpr int kMaxJsonDepth = 6;

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
std::string CapChars(std::string_view s, size_t max_chars, bool* was_cut = nullptr) {
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
// Deduplicated lists that remember when an item was last seen (for "newest first" cuts).

class RecentSet {
 public:
  bool Add(std::string item) {
    ++clock_;
    auto [it, inserted] = index_.try_emplace(item, items_.size());
    if (!inserted) {
      last_seen_[it->second] = clock_;
      return false;
    }
    items_.push_back(std::move(item));
    last_seen_.push_back(clock_);
    return true;
  }
  const std::vector<std::string>& items() const { return items_; }
  std::vector<std::string> Take() { return std::move(items_); }
  // Item indices, most recently seen first.
  std::vector<size_t> ByRecency() const {
    std::vector<size_t> order(items_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return last_seen_[a] > last_seen_[b]; });
    return order;
  }

 private:
  std::vector<std::string> items_;
  std::vector<uint64_t> last_seen_;
  std::unordered_map<std::string, size_t> index_;
  uint64_t clock_ = 0;
};

struct TrailBuilder {
  RecentSet files, commands, errors, decisions;
  void AddFile(std::string_view p) {
    if (p.empty() || p.size() > kMaxPathBytes) return;
    if (InvalidUtf8At(p) != std::string_view::npos) return;  // not a path we can quote
    files.Add(std::string(p));
  }
  ArtifactTrail Build() const {
    return {files.items(), commands.items(), errors.items(), decisions.items()};
  }
};

// ---------------------------------------------------------------------------------------
// Paths.

bool KnownExtension(std::string_view ext) {
  static const std::vector<std::string_view> kExt = [] {
    std::vector<std::string_view> v = {
        "bash", "bat",   "c",    "cc",    "cfg",   "cjs",  "clj",    "cmake",   "conf",  "cpp",
        "cs",   "css",   "csv",  "cts",   "cxx",   "dart", "diff",   "ejs",     "env",   "erl",
        "ex",   "exs",   "fish", "fs",    "go",    "gql",  "gradle", "graphql", "h",     "hbs",
        "heex", "hh",    "hpp",  "hrl",   "hs",    "htm",  "html",   "hxx",     "ini",   "ipynb",
        "java", "jl",    "js",   "json",  "jsonl", "jsx",  "kt",     "kts",     "less",  "lock",
        "log",  "lua",   "m",    "md",    "mdx",   "mjs",  "mk",     "ml",      "mm",    "mts",
        "nix",  "patch", "php",  "pl",    "proto", "ps1",  "py",     "pyi",     "r",     "rb",
        "rs",   "rst",   "sass", "scala", "scss",  "sh",   "sql",    "svelte",  "swift", "tf",
        "toml", "ts",    "tsx",  "txt",   "vue",   "xml",  "yaml",   "yml",     "zig",   "zsh"};
    std::sort(v.begin(), v.end());
    return v;
  }();
  if (ext.empty() || ext.size() > 7) return false;
  char lower[8];
  for (size_t i = 0; i < ext.size(); ++i) lower[i] = static_cast<char>(Lower(ext[i]));
  return std::binary_search(kExt.begin(), kExt.end(), std::string_view(lower, ext.size()));
}

bool PathChar(unsigned char c) {
  return IsAlnum(c) || c == '/' || c == '.' || c == '_' || c == '-' || c == '~' || c == '+' ||
         c == '@' || c == '%' || c >= 0x80;
}

// Separators between tokens in text and commands (a table: this runs on every byte of
// user and assistant text).
struct SeparatorTable {
  std::array<bool, 256> is{};
  SeparatorTable() {
    for (int c = 0; c <= ' '; ++c) is[c] = true;
    for (unsigned char c : std::string_view("\"'`;|&<>(){}[],=*!?")) is[c] = true;
  }
};
bool TokenSeparator(unsigned char c) {
  static const SeparatorTable kTable;
  return kTable.is[c];
}

}  // namespace

bool LooksLikePath(std::string_view t, bool loose) {
  if (t.size() < 2 || t.size() > kMaxPathBytes) return false;
  if (t[0] == '-') return false;
  bool letter = false;
  for (unsigned char c : t) {
    if (!PathChar(c)) return false;
    letter |= IsAlpha(c);
  }
  if (!letter || t.find("//") != std::string_view::npos) return false;
  const size_t slash = t.rfind('/');
  const std::string_view last = slash == std::string_view::npos ? t : t.substr(slash + 1);
  const size_t dot = last.rfind('.');
  if (dot != std::string_view::npos && dot > 0 && KnownExtension(last.substr(dot + 1))) {
    return true;
  }
  if (slash == std::string_view::npos) return false;
  if (t[0] == '/' || t.starts_with("./") || t.starts_with("../") || t.starts_with("~/")) {
    return true;
  }
  if (!loose) return false;
  // Relative directories ("django/db/models", "src/"): every component two chars or more,
  // which keeps out sed expressions ("s/a/b/g") and "N/A".
  size_t begin = 0, components = 0;
  while (begin < t.size()) {
    size_t end = t.find('/', begin);
    if (end == std::string_view::npos) end = t.size();
    if (end - begin == 1) return false;
    components += end > begin;
    begin = end + 1;
  }
  return components >= 2 || t.back() == '/';
}

namespace {

// The path inside a raw token: surrounding punctuation and a ":line:col" suffix removed.
std::string_view CleanToken(std::string_view t) {
  if (t.find("://") != std::string_view::npos) return {};  // URL
  const size_t colon = t.find(':');
  if (colon != std::string_view::npos) t = t.substr(0, colon);
  while (!t.empty() && (t.back() == '.' || t.back() == ',' || t.back() == ':')) {
    t.remove_suffix(1);
  }
  return t;
}

// Adds the path-like tokens of `text` (at most `max_bytes` of it) to `files`.
void ScanPaths(std::string_view text, bool loose, TrailBuilder& trail,
               size_t max_bytes = std::string_view::npos) {
  text = text.substr(0, std::min(text.size(), max_bytes));
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    while (i < n && TokenSeparator(static_cast<unsigned char>(text[i]))) ++i;
    const size_t start = i;
    bool candidate = false;  // only tokens with '/' or '.' can be paths
    while (i < n && !TokenSeparator(static_cast<unsigned char>(text[i]))) {
      candidate |= text[i] == '/' || text[i] == '.';
      ++i;
    }
    if (!candidate) continue;
    const std::string_view tok = CleanToken(text.substr(start, i - start));
    if (LooksLikePath(tok, loose)) trail.AddFile(tok);
  }
}

// Diff headers in a patch: "*** Update File: p", "+++ b/p", "diff --git a/p b/p".
void ScanPatchHeaders(std::string_view patch, TrailBuilder& trail) {
  size_t pos = 0;
  while (pos < patch.size()) {
    size_t end = patch.find('\n', pos);
    if (end == std::string_view::npos) end = patch.size();
    std::string_view line = patch.substr(pos, end - pos);
    pos = end + 1;
    std::string_view rest;
    for (std::string_view prefix : {"*** Update File: ", "*** Add File: ", "*** Delete File: ",
                                    "*** Move to: ", "+++ ", "--- "}) {
      if (line.starts_with(prefix)) rest = Trim(line.substr(prefix.size()));
    }
    if (rest.starts_with("a/") || rest.starts_with("b/")) rest.remove_prefix(2);
    const size_t tab = rest.find('\t');
    if (tab != std::string_view::npos) rest = rest.substr(0, tab);
    if (LooksLikePath(rest, true)) trail.AddFile(rest);
  }
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

bool WordEndsAt(std::string_view s, size_t end) {
  return end >= s.size() || !IsWordChar(static_cast<unsigned char>(s[end]));
}

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

template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = Trim(text.substr(pos, end - pos));
    if (!line.empty()) fn(line);
    pos = end + 1;
  }
}

// ---------------------------------------------------------------------------------------
// Tool-call arguments.

bool IsPathKey(std::string_view k) {
  static constexpr std::array<std::string_view, 17> kKeys = {
      "dest",     "destination", "dst",      "file",          "file_path",  "filename",
      "filepath", "files",       "new_path", "notebook_path", "old_path",   "path",
      "paths",    "source_path", "src",      "target",        "target_file"};
  return std::find(kKeys.begin(), kKeys.end(), k) != kKeys.end();
}
bool IsCommandKey(std::string_view k) {
  return k == "command" || k == "cmd" || k == "script" || k == "commands" || k == "shell";
}
bool IsPatchKey(std::string_view k) {
  return k == "patch" || k == "diff" || k == "unified_diff" || k == "input";
}

std::string_view Sv(const boost::json::string& s) { return {s.data(), s.size()}; }

void AddCommand(std::string_view command, const ExtractiveOptions& o, TrailBuilder& trail) {
  ScanPaths(command, true, trail, kMaxCommandScanBytes);
  command = Trim(command);
  const size_t nl = command.find('\n');
  const std::string first = OneLine(command.substr(0, nl), o.command_chars);
  if (!first.empty()) trail.commands.Add(first);
}

void VisitArgument(std::string_view key, const boost::json::value& v, int depth,
                   const ExtractiveOptions& o, TrailBuilder& trail) {
  if (depth > kMaxJsonDepth) return;
  if (v.is_string()) {
    const std::string_view s = Sv(v.get_string());
    if (IsPathKey(key)) {
      const std::string_view p = Trim(s);
      if (p.find('\n') == std::string_view::npos && !p.empty() && p.size() <= kMaxPathBytes &&
          p.find("://") == std::string_view::npos) {
        trail.AddFile(p);
      }
    } else if (IsCommandKey(key)) {
      AddCommand(s, o, trail);
    } else if (IsPatchKey(key)) {
      ScanPatchHeaders(s, trail);
    }
    return;
  }
  if (v.is_array()) {
    const boost::json::array& a = v.get_array();
    if (IsCommandKey(key)) {  // argv: ["bash", "-lc", "make test"] or ["git", "status"]
      std::string joined;
      bool all_strings = true;
      for (const boost::json::value& x : a) all_strings &= x.is_string();
      if (all_strings && a.size() == 3 &&
          (Sv(a[1].get_string()) == "-c" || Sv(a[1].get_string()) == "-lc")) {
        joined = std::string(Sv(a[2].get_string()));
      } else {
        for (const boost::json::value& x : a) {
          if (!x.is_string()) continue;
          if (!joined.empty()) joined += ' ';
          joined += Sv(x.get_string());
        }
      }
      AddCommand(joined, o, trail);
      return;
    }
    for (const boost::json::value& x : a) VisitArgument(key, x, depth + 1, o, trail);
    return;
  }
  if (v.is_object()) {
    for (const auto& kv : v.get_object()) {
      const std::string_view k(kv.key().data(), kv.key().size());
      // Objects keyed by path ({"changes": {"src/a.rs": {...}}}).
      if (LooksLikePath(k, false) && k.find('/') != std::string_view::npos) trail.AddFile(k);
      VisitArgument(k, kv.value(), depth + 1, o, trail);
    }
  }
}

void ExtractFromCall(const ToolCall& call, const ExtractiveOptions& o, TrailBuilder& trail) {
  boost::json::error_code ec;
  unsigned char buffer[4096];
  boost::json::monotonic_resource mr(buffer, sizeof buffer);
  boost::json::value v = boost::json::parse(call.arguments, ec, &mr);
  if (!ec && v.is_object()) {
    VisitArgument("", v, 0, o, trail);
    return;
  }
  // Not a JSON object: a shell tool's raw command line, or text to look for paths in.
  const std::string_view raw = Trim(call.arguments);
  const bool shell = call.name == "bash" || call.name == "shell" || call.name == "sh" ||
                     call.name.find("execute") != std::string::npos;
  if (shell && !raw.empty()) {
    AddCommand(InvalidUtf8At(raw) == std::string_view::npos ? std::string(raw) : ToValidUtf8(raw),
               o, trail);
  } else {
    ScanPaths(raw, false, trail, kMaxCommandScanBytes);
  }
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
  if (omitted > 0) out += "(" + std::to_string(omitted) + " older items omitted)\n";
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

void AddFact(std::vector<std::string>& facts, std::unordered_map<std::string, char>& seen,
             std::string fact) {
  if (fact.empty()) return;
  if (seen.try_emplace(fact, 1).second) facts.push_back(std::move(fact));
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

void ExtractInto(std::span<const StoredMessage> messages, const ExtractiveOptions& o,
                 TrailBuilder& trail, Pieces* pieces) {
  std::unordered_map<std::string, char> seen_facts;
  std::unordered_map<std::string, char> seen_requests;
  std::string plain;
  for (const StoredMessage& sm : messages) {
    const Message& m = sm.message;
    if (m.role == Role::kSystem) continue;
    std::string_view text = m.text;
    if (m.content_form == ContentForm::kParts) {
      plain = m.PlainText();
      text = plain;
    }
    switch (m.role) {
      case Role::kUser: {
        ScanPaths(text, false, trail);
        ForEachLine(text.substr(0, std::min(text.size(), o.scan_window_bytes)),
                    [&](std::string_view line) {
                      if (IsDecisionLine(line))
                        trail.decisions.Add(OneLine(line, o.max_line_chars));
                    });
        if (pieces && !Trim(text).empty()) {
          std::string r = UserRequest(text, o.user_message_chars);
          if (seen_requests.try_emplace(r, 1).second) pieces->requests.push_back(std::move(r));
        }
        break;
      }
      case Role::kAssistant: {
        ScanPaths(text, false, trail);
        ForEachLine(text, [&](std::string_view line) {
          const bool decision = IsDecisionLine(line);
          if (decision) trail.decisions.Add(OneLine(line, o.max_line_chars));
          if (pieces && (decision || HasKeyMarker(line))) {
            AddFact(pieces->facts, seen_facts, OneLine(line, o.max_line_chars));
          }
        });
        for (const ToolCall& c : m.tool_calls) ExtractFromCall(c, o, trail);
        break;
      }
      case Role::kTool: {
        if (pieces && !Trim(text).empty()) {
          AddFact(pieces->facts, seen_facts, "[tool] " + OneLine(text, o.tool_result_chars));
        }
        // Key lines already inside the "[tool]" head are not repeated.
        const char* const fact_from = text.data() + std::min(text.size(), o.tool_result_chars);
        const auto [head, tail] = HeadAndTail(text, o.scan_window_bytes);
        auto scan = [&](std::string_view part) {
          ForEachLine(part, [&](std::string_view line) {
            if (IsErrorLine(line)) trail.errors.Add(OneLine(line, o.max_line_chars));
            if (pieces && line.data() >= fact_from && HasKeyMarker(line)) {
              AddFact(pieces->facts, seen_facts, OneLine(line, o.max_line_chars));
            }
          });
        };
        scan(head);
        scan(tail);
        break;
      }
      case Role::kSystem:
        break;
    }
  }
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

std::string ArtifactsToJson(const ArtifactTrail& t) {
  auto arr = [](const std::vector<std::string>& v) {
    boost::json::array a;
    a.reserve(v.size());
    for (const std::string& s : v) a.emplace_back(ToValidUtf8(s));
    return a;
  };
  boost::json::object o;
  o["files"] = arr(t.files);
  o["commands"] = arr(t.commands);
  o["errors"] = arr(t.errors);
  o["decisions"] = arr(t.decisions);
  return boost::json::serialize(o);
}

Result<ArtifactTrail> ArtifactsFromJson(std::string_view json) {
  boost::json::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return Status::InvalidArgument("artifact trail is not a JSON object");
  ArtifactTrail t;
  auto read = [&](std::string_view key, std::vector<std::string>& out) {
    const boost::json::value* x = v.get_object().if_contains(key);
    if (!x || !x->is_array()) return;
    for (const boost::json::value& s : x->get_array()) {
      if (s.is_string()) out.emplace_back(Sv(s.get_string()));
    }
  };
  read("files", t.files);
  read("commands", t.commands);
  read("errors", t.errors);
  read("decisions", t.decisions);
  return t;
}

ArtifactTrail ExtractArtifacts(std::span<const StoredMessage> messages) {
  TrailBuilder trail;
  ExtractInto(messages, ExtractiveOptions{}, trail, nullptr);
  return trail.Build();
}

void MergeArtifacts(ArtifactTrail& into, const ArtifactTrail& from) {
  auto merge = [](std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::unordered_map<std::string_view, char> seen;
    seen.reserve(a.size() + b.size());
    for (const std::string& s : a) seen.emplace(s, 1);
    const size_t n = a.size();
    std::vector<std::string> added;
    for (const std::string& s : b) {
      if (seen.emplace(s, 1).second) added.push_back(s);
    }
    a.reserve(n + added.size());
    for (std::string& s : added) a.push_back(std::move(s));
  };
  merge(into.files, from.files);
  merge(into.commands, from.commands);
  merge(into.errors, from.errors);
  merge(into.decisions, from.decisions);
}

ExtractiveSummary SummarizeMessages(std::span<const StoredMessage> chunk, std::string_view prior,
                                    const ExtractiveOptions& options,
                                    const MessageTokenCounter& counter) {
  TrailBuilder trail;
  Pieces pieces;
  ExtractInto(chunk, options, trail, &pieces);
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

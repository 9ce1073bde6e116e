#include "core/artifact_extraction.h"

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cstring>

#include "core/summary_text.h"
#include "core/utf8.h"

namespace missy {

using namespace extractive;

namespace {

constexpr size_t kMaxPathBytes = 256;
constexpr size_t kMaxCommandScanBytes = 8192;  // paths are looked for this far into a command
constexpr int kMaxJsonDepth = 6;

}  // namespace

bool RecentSet::Add(std::string_view item) {
  ++clock_;
  if (const auto it = index_.find(item); it != index_.end()) {
    last_seen_[it->second] = clock_;
    return false;
  }
  index_.emplace(std::string(item), items_.size());
  items_.emplace_back(item);
  last_seen_.push_back(clock_);
  return true;
}

std::vector<size_t> RecentSet::ByRecency() const {
  std::vector<size_t> order(items_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return last_seen_[a] > last_seen_[b]; });
  return order;
}

bool RecentSet::Refresh(std::string_view item) {
  const auto it = index_.find(item);
  if (it == index_.end()) return false;
  last_seen_[it->second] = ++clock_;
  return true;
}

void TrailBuilder::AddFile(std::string_view p) {
  if (p.empty() || p.size() > kMaxPathBytes || files.Refresh(p)) return;
  if (InvalidUtf8At(p) != std::string_view::npos) return;  // not a path we can quote
  files.Add(p);
}

ArtifactTrail TrailBuilder::Build() const {
  return {files.items(), commands.items(), errors.items(), decisions.items()};
}

namespace {

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
  static const std::array<bool, 256> kTable = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 256; ++c) {
      t[c] = IsAlnum(static_cast<unsigned char>(c)) || c >= 0x80;
    }
    for (unsigned char c : std::string_view("/._-~+@%")) t[c] = true;
    return t;
  }();
  return kTable[c];
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
  const size_t slash = t.rfind('/');
  const std::string_view last = slash == std::string_view::npos ? t : t.substr(slash + 1);
  const size_t dot = last.rfind('.');
  const bool known_ext =
      dot != std::string_view::npos && dot > 0 && KnownExtension(last.substr(dot + 1));
  if (!known_ext && slash == std::string_view::npos) return false;
  bool letter = false;
  for (unsigned char c : t) {
    if (!PathChar(c)) return false;
    letter |= IsAlpha(c);
  }
  if (!letter || t.find("//") != std::string_view::npos) return false;
  if (known_ext) return true;
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

// Adds the path-like tokens of `text` (at most `max_bytes` of it) to `files`. Only tokens
// holding a '/' or a '.' before a letter can be paths (LooksLikePath wants a slash or a
// known extension): the scan jumps from one such byte to the next.
void ScanPaths(std::string_view text, bool loose, TrailBuilder& trail,
               size_t max_bytes = std::string_view::npos) {
  text = text.substr(0, std::min(text.size(), max_bytes));
  const size_t n = text.size();
  size_t pos = 0;
  while ((pos = NextCandidate(text, pos, kPathChars)) < n) {
    size_t start = pos, end = pos + 1;
    while (start > 0 && !TokenSeparator(static_cast<unsigned char>(text[start - 1]))) --start;
    while (end < n && !TokenSeparator(static_cast<unsigned char>(text[end]))) ++end;
    const std::string_view tok = CleanToken(text.substr(start, end - start));
    if (LooksLikePath(tok, loose)) trail.AddFile(tok);
    pos = end;
  }
}

// Paths in a user or assistant text: all of it, or its head and tail windows.
void ScanTextPaths(std::string_view text, size_t window, TrailBuilder& trail) {
  const auto [head, tail] = HeadAndTail(text, window);
  ScanPaths(head, false, trail);
  ScanPaths(tail, false, trail);
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

// Tools whose "command"-like arguments are shell command lines. Editors such as
// str_replace_editor also take a "command" (view, create, str_replace): not a shell command.
bool IsShellTool(std::string_view name) {
  char lower[64];
  const size_t n = std::min(name.size(), sizeof lower);
  for (size_t i = 0; i < n; ++i) lower[i] = static_cast<char>(Lower(name[i]));
  const std::string_view l(lower, n);
  if (l == "sh" || l == "zsh" || l == "run" || l == "exec") return true;
  for (std::string_view word :
       {"bash", "shell", "exec", "terminal", "run_command", "run_cmd", "command", "console"}) {
    if (l.find(word) != std::string_view::npos) return true;
  }
  return false;
}

void AddCommand(std::string_view command, const ArtifactOptions& o, TrailBuilder& trail) {
  ScanPaths(command, true, trail, kMaxCommandScanBytes);
  command = Trim(command);
  const size_t nl = command.find('\n');
  const std::string first = OneLine(command.substr(0, nl), o.command_chars);
  if (!first.empty()) trail.commands.Add(first);
}

// Reads tool-call arguments as JSON without building a document: the whole text is checked
// for structure (objects, arrays, strings, literals; nesting up to 32 as Boost.JSON), keys
// and the string values the trail needs are decoded, every other string value is skipped
// with memchr (file contents, old/new strings). What it finds is applied only when the
// whole text is a JSON object; otherwise the caller treats the text as raw.
class ArgumentReader {
 public:
  ArgumentReader(const ArtifactOptions& o, TrailBuilder& trail) : o_(o), trail_(trail) {}

  void Extract(const ToolCall& call) {
    shell_ = IsShellTool(call.name);
    found_.clear();
    p_ = call.arguments.data();
    end_ = p_ + call.arguments.size();
    SkipSpace();
    bool ok = p_ < end_ && *p_ == '{' && Value({}, 0, true);
    SkipSpace();
    ok = ok && p_ == end_;
    if (ok) {
      for (const Found& f : found_) Apply(f);
      return;
    }
    // Not a JSON object: a shell tool's raw command line, or text to look for paths in.
    const std::string_view raw = Trim(call.arguments);
    if (shell_ && !raw.empty()) {
      AddCommand(InvalidUtf8At(raw) == std::string_view::npos ? std::string(raw) : ToValidUtf8(raw),
                 o_, trail_);
    } else {
      ScanPaths(raw, false, trail_, kMaxCommandScanBytes);
    }
  }

 private:
  enum class Kind { kFile, kCommand, kCommandPaths, kPatch };
  struct Found {
    Kind kind;
    std::string text;
  };
  static constexpr int kMaxParseDepth = 32;

  void Apply(const Found& f) {
    switch (f.kind) {
      case Kind::kFile:
        trail_.AddFile(f.text);
        break;
      case Kind::kCommand:
        AddCommand(f.text, o_, trail_);
        break;
      case Kind::kCommandPaths:
        ScanPaths(f.text, true, trail_, kMaxCommandScanBytes);
        break;
      case Kind::kPatch:
        ScanPatchHeaders(f.text, trail_);
        break;
    }
  }

  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // After the opening quote: to just past the closing one.
  bool SkipString() {
    while (true) {
      const void* q = std::memchr(p_, '"', static_cast<size_t>(end_ - p_));
      if (!q) return false;
      const char* quote = static_cast<const char*>(q);
      const char* b = quote;
      while (b > p_ && b[-1] == '\\') --b;
      p_ = quote + 1;
      if ((quote - b) % 2 == 0) return true;
    }
  }

  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool Hex4(uint32_t* v) {
    if (end_ - p_ < 4) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *p_++;
      *v <<= 4;
      if (c >= '0' && c <= '9') {
        *v |= static_cast<uint32_t>(c - '0');
      } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
        *v |= static_cast<uint32_t>((c | 0x20) - 'a' + 10);
      } else {
        return false;
      }
    }
    return true;
  }

  // After the opening quote: decodes into `out`, to just past the closing quote.
  bool ReadString(std::string& out) {
    out.clear();
    const char* quote = nullptr;  // the next '"' (found again once passed: it was escaped)
    while (true) {
      // Up to the next quote, or the first backslash before it.
      if (quote < p_) {
        const void* q = std::memchr(p_, '"', static_cast<size_t>(end_ - p_));
        if (!q) return false;
        quote = static_cast<const char*>(q);
      }
      const char* stop = quote;
      if (const void* b = std::memchr(p_, '\\', static_cast<size_t>(stop - p_))) {
        stop = static_cast<const char*>(b);
      }
      out.append(p_, static_cast<size_t>(stop - p_));
      p_ = stop;
      if (*p_++ == '"') return true;
      if (p_ == end_) return false;
      const char e = *p_++;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
            p_ += 2;
            uint32_t lo = 0;
            if (!Hex4(&lo)) return false;
            if (lo >= 0xDC00 && lo < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              AppendUtf8(out, 0xFFFD);
              cp = lo;
            }
          }
          if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;  // a lone surrogate
          AppendUtf8(out, cp);
          break;
        }
        default:
          return false;
      }
    }
  }

  bool Literal() {
    const char* b = p_;
    while (p_ < end_ &&
           (IsAlnum(static_cast<unsigned char>(*p_)) || *p_ == '-' || *p_ == '+' || *p_ == '.')) {
      ++p_;
    }
    const std::string_view t(b, static_cast<size_t>(p_ - b));
    if (t.empty()) return false;
    if (t == "true" || t == "false" || t == "null") return true;
    return t[0] == '-' || (t[0] >= '0' && t[0] <= '9');  // a number (not checked further)
  }

  void Record(Kind kind, std::string&& text) { found_.push_back({kind, std::move(text)}); }

  void StringValue(std::string_view key, std::string&& s) {
    if (IsPathKey(key)) {
      const std::string_view p = Trim(s);
      if (p.find('\n') == std::string_view::npos && !p.empty() && p.size() <= kMaxPathBytes &&
          p.find("://") == std::string_view::npos) {
        Record(Kind::kFile, std::string(p));
      }
    } else if (IsCommandKey(key)) {
      Record(shell_ ? Kind::kCommand : Kind::kCommandPaths, std::move(s));
    } else if (IsPatchKey(key)) {
      Record(Kind::kPatch, std::move(s));
    }
  }

  // A value whose key is `key` at nesting `depth` (the root object is 0). Unless `visit`
  // (under an argv, or deeper than kMaxJsonDepth) it is only checked.
  bool Value(std::string_view key, int depth, bool visit) {
    if (depth > kMaxParseDepth || p_ == end_) return false;
    visit = visit && depth <= kMaxJsonDepth;
    const char c = *p_++;
    if (c == '"') {
      if (!visit || !(IsPathKey(key) || IsCommandKey(key) || IsPatchKey(key))) {
        return SkipString();
      }
      std::string s;
      if (!ReadString(s)) return false;
      StringValue(key, std::move(s));
      return true;
    }
    if (c == '{') return Object(depth, visit);
    if (c == '[') {
      if (visit && IsCommandKey(key)) return Argv(depth);
      SkipSpace();
      if (p_ < end_ && *p_ == ']') return ++p_, true;
      while (true) {
        SkipSpace();
        if (!Value(key, depth + 1, visit)) return false;
        SkipSpace();
        if (p_ == end_) return false;
        const char d = *p_++;
        if (d == ']') return true;
        if (d != ',') return false;
      }
    }
    --p_;
    return Literal();
  }

  bool Object(int depth, bool visit) {
    std::string key;
    SkipSpace();
    if (p_ < end_ && *p_ == '}') return ++p_, true;
    while (true) {
      SkipSpace();
      if (p_ == end_ || *p_++ != '"' || !ReadString(key)) return false;
      // Objects keyed by path ({"changes": {"src/a.rs": {...}}}).
      if (visit && key.find('/') != std::string::npos && LooksLikePath(key, false)) {
        Record(Kind::kFile, std::string(key));
      }
      SkipSpace();
      if (p_ == end_ || *p_++ != ':') return false;
      SkipSpace();
      if (!Value(key, depth + 1, visit)) return false;
      SkipSpace();
      if (p_ == end_) return false;
      const char d = *p_++;
      if (d == '}') return true;
      if (d != ',') return false;
    }
  }

  // argv: ["bash", "-lc", "make test"] or ["git", "status"]; items that are not strings
  // are checked and left out.
  bool Argv(int depth) {
    std::vector<std::string> argv;
    bool all_strings = true;
    SkipSpace();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
    } else {
      while (true) {
        SkipSpace();
        if (p_ < end_ && *p_ == '"') {
          ++p_;
          argv.emplace_back();
          if (!ReadString(argv.back())) return false;
        } else {
          all_strings = false;
          if (!Value({}, depth + 1, false)) return false;
        }
        SkipSpace();
        if (p_ == end_) return false;
        const char d = *p_++;
        if (d == ']') break;
        if (d != ',') return false;
      }
    }
    std::string joined;
    if (all_strings && argv.size() == 3 && (argv[1] == "-c" || argv[1] == "-lc")) {
      joined = std::move(argv[2]);
    } else {
      for (const std::string& x : argv) {
        if (!joined.empty()) joined += ' ';
        joined += x;
      }
    }
    Record(shell_ ? Kind::kCommand : Kind::kCommandPaths, std::move(joined));
    return true;
  }

  const ArtifactOptions& o_;
  TrailBuilder& trail_;
  bool shell_ = false;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  std::vector<Found> found_;
};

}  // namespace

void ExtractInto(std::span<const StoredMessage> messages, const ArtifactOptions& o,
                 TrailBuilder& trail, FactSink* facts) {
  std::string plain;
  ArgumentReader arguments(o, trail);
  std::string flat;  // a line made one line, reused
  auto Flat = [&](std::string_view line) -> std::string_view {
    flat.clear();
    AppendOneLine(flat, line, o.max_line_chars);
    return flat;
  };
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
        ScanTextPaths(text, o.text_window_bytes, trail);
        const std::string_view head = text.substr(0, std::min(text.size(), o.scan_window_bytes));
        size_t pos = 0;
        while ((pos = NextCandidate(head, pos, kDecisionWords)) < head.size()) {
          const std::string_view line = LineAround(head, pos, &pos);
          if (IsDecisionLine(line)) trail.decisions.Add(Flat(line));
        }
        if (facts && !Trim(text).empty()) facts->UserMessage(text);
        break;
      }
      case Role::kAssistant: {
        ScanTextPaths(text, o.text_window_bytes, trail);
        size_t pos = 0;
        const unsigned set = facts ? kColon | kDecisionWords : kDecisionWords;
        while ((pos = NextCandidate(text, pos, set)) < text.size()) {
          if (text[pos] == ':' && !KeyMarkerColon(text, pos)) {
            ++pos;
            continue;
          }
          const std::string_view line = LineAround(text, pos, &pos);
          const bool decision = IsDecisionLine(line);
          if (decision) trail.decisions.Add(Flat(line));
          if (facts && (decision || HasKeyMarker(line))) facts->KeyLine(line);
        }
        for (const ToolCall& c : m.tool_calls) arguments.Extract(c);
        break;
      }
      case Role::kTool: {
        if (facts && !Trim(text).empty()) facts->ToolResult(text);
        // Key lines already inside the summarizer's head of the result are not repeated.
        const char* const fact_from = text.data() + std::min(text.size(), o.key_lines_from);
        const auto [head, tail] = HeadAndTail(text, o.scan_window_bytes);
        const unsigned set = facts ? kColon | kErrorWords : kErrorWords;
        for (const std::string_view part : {head, tail}) {
          size_t pos = 0;
          while ((pos = NextCandidate(part, pos, set)) < part.size()) {
            if (part[pos] == ':' ? !KeyMarkerColon(part, pos) : !ErrorWordAt(part, pos)) {
              ++pos;
              continue;
            }
            const std::string_view line = LineAround(part, pos, &pos);
            if (IsErrorLine(line)) trail.errors.Add(Flat(line));
            if (facts && line.data() >= fact_from && HasKeyMarker(line)) facts->KeyLine(line);
          }
        }
        break;
      }
      case Role::kSystem:
        break;
    }
  }
}

ArtifactTrail ExtractArtifacts(std::span<const StoredMessage> messages) {
  TrailBuilder trail;
  ExtractInto(messages, ArtifactOptions{}, trail, nullptr);
  return trail.Build();
}

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

}  // namespace missy

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

bool RecentSet::Add(std::string item) {
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

std::vector<size_t> RecentSet::ByRecency() const {
  std::vector<size_t> order(items_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return last_seen_[a] > last_seen_[b]; });
  return order;
}

void TrailBuilder::AddFile(std::string_view p) {
  if (p.empty() || p.size() > kMaxPathBytes) return;
  if (InvalidUtf8At(p) != std::string_view::npos) return;  // not a path we can quote
  files.Add(std::string(p));
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

void AddCommand(std::string_view command, const ArtifactOptions& o, TrailBuilder& trail) {
  ScanPaths(command, true, trail, kMaxCommandScanBytes);
  command = Trim(command);
  const size_t nl = command.find('\n');
  const std::string first = OneLine(command.substr(0, nl), o.command_chars);
  if (!first.empty()) trail.commands.Add(first);
}

void VisitArgument(std::string_view key, const boost::json::value& v, int depth,
                   const ArtifactOptions& o, TrailBuilder& trail) {
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

void ExtractFromCall(const ToolCall& call, const ArtifactOptions& o, TrailBuilder& trail) {
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

}  // namespace

void ExtractInto(std::span<const StoredMessage> messages, const ArtifactOptions& o,
                 TrailBuilder& trail, FactSink* facts) {
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
        if (facts && !Trim(text).empty()) facts->UserMessage(text);
        break;
      }
      case Role::kAssistant: {
        ScanPaths(text, false, trail);
        ForEachLine(text, [&](std::string_view line) {
          const bool decision = IsDecisionLine(line);
          if (decision) trail.decisions.Add(OneLine(line, o.max_line_chars));
          if (facts && (decision || HasKeyMarker(line))) facts->KeyLine(line);
        });
        for (const ToolCall& c : m.tool_calls) ExtractFromCall(c, o, trail);
        break;
      }
      case Role::kTool: {
        if (facts && !Trim(text).empty()) facts->ToolResult(text);
        // Key lines already inside the summarizer's head of the result are not repeated.
        const char* const fact_from = text.data() + std::min(text.size(), o.key_lines_from);
        const auto [head, tail] = HeadAndTail(text, o.scan_window_bytes);
        auto scan = [&](std::string_view part) {
          ForEachLine(part, [&](std::string_view line) {
            if (IsErrorLine(line)) trail.errors.Add(OneLine(line, o.max_line_chars));
            if (facts && line.data() >= fact_from && HasKeyMarker(line)) facts->KeyLine(line);
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

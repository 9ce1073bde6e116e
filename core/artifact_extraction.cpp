#include "core/artifact_extraction.h"

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cstring>
#include <functional>

#include "core/summary_text.h"
#include "core/tool_arguments.h"
#include "core/utf8.h"

namespace missy {

using namespace extractive;

namespace {

constexpr size_t kMaxPathBytes = 256;
constexpr size_t kMaxCommandScanBytes = 8192;  // paths are looked for this far into a command

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

std::vector<size_t> OrderByRecency(const std::vector<uint64_t>& last_seen) {
  std::vector<size_t> order(last_seen.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return last_seen[a] > last_seen[b]; });
  return order;
}

bool RecentSet::Refresh(std::string_view item) {
  const auto it = index_.find(item);
  if (it == index_.end()) return false;
  last_seen_[it->second] = ++clock_;
  return true;
}

void RecentSet::Clear() {
  items_.clear();
  last_seen_.clear();
  index_.clear();
  clock_ = 0;
}

void TrailBuilder::Clear() {
  files.Clear();
  commands.Clear();
  errors.Clear();
  decisions.Clear();
}

bool TrailPath(std::string_view path) {
  return !path.empty() && path.size() <= kMaxPathBytes &&
         InvalidUtf8At(path) == std::string_view::npos;
}

void TrailBuilder::AddFile(std::string_view p) {
  if (files.Refresh(p)) return;  // seen before: it was checked then
  if (TrailPath(p)) files.Add(p);
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
        "bash", "bat", "c", "cc", "cfg", "cjs", "clj", "cmake", "conf", "cpp", "cs", "css", "csv",
        "cts", "cxx", "dart", "diff", "ejs", "env", "erl", "ex", "exs", "fish", "fs", "go", "gql",
        "gradle", "graphql", "h", "hbs", "heex", "hh", "hpp", "hrl", "hs", "htm", "html", "hxx",
        "ini", "ipynb", "java", "jl", "js", "json", "jsonl", "jsx", "kt", "kts", "less", "lock",
        "log", "lua", "m", "md", "mdx", "mjs", "mk", "ml", "mm", "mts", "nix", "patch", "php", "pl",
        "proto", "ps1", "py", "pyi", "r", "rb", "rs", "rst", "sass", "scala", "scss", "sh", "sql",
        "svelte", "swift", "tf", "toml", "ts", "tsx", "txt", "vue", "xml", "yaml", "yml", "zig",
        "zsh",
        // build and project files of more toolchains (.NET, Scala, Haskell, Ruby, Apple,
        // Terraform, Bazel, Groovy), templates and other languages; not "props",
        // "properties" or "targets", which end code too (this.props, schema.properties)
        "asm", "bzl", "cabal", "cshtml", "csproj", "cu", "cuh", "erb", "f90", "fsproj", "fsx",
        "gemspec", "groovy", "haml", "hcl", "plist", "psm1", "pug", "razor", "sbt", "sln", "tex",
        "tfvars", "tsv", "vb", "vbproj", "xaml"};
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
    // "</name>" closes a markup tag (agent harnesses wrap every prompt in them): no path.
    if (start > 0 && text[start - 1] == '<' && text[start] == '/') {
      pos = end;
      continue;
    }
    const std::string_view tok = CleanToken(text.substr(start, end - start));
    if (LooksLikePath(tok, loose)) trail.AddFile(tok);
    pos = end;
  }
}

// The http(s) URLs of `text`, whole (up to a blank, a quote or a closing bracket, without
// a sentence's final punctuation), as files: a page the agent fetched or was pointed to is
// as much a thing it worked with as a file, and as easily lost.
void ScanUrls(std::string_view text, TrailBuilder& trail) {
  auto stop = [](unsigned char c) {
    return c <= ' ' ||
           std::string_view("\"'`<>)]}|\\").find(static_cast<char>(c)) != std::string_view::npos;
  };
  size_t pos = 0;
  while ((pos = text.find("://", pos)) != std::string_view::npos) {
    size_t begin = pos;
    while (begin > 0 && IsAlpha(static_cast<unsigned char>(text[begin - 1]))) --begin;
    size_t end = pos + 3;
    while (end < text.size() && !stop(static_cast<unsigned char>(text[end]))) ++end;
    std::string_view url = text.substr(begin, end - begin);
    while (!url.empty() && std::string_view(".,:;!?").find(url.back()) != std::string_view::npos) {
      url.remove_suffix(1);
    }
    const std::string_view scheme = text.substr(begin, pos - begin);
    if ((HasAt(scheme, 0, "http") && scheme.size() == 4) ||
        (HasAt(scheme, 0, "https") && scheme.size() == 5)) {
      if (url.size() > scheme.size() + 4) trail.AddFile(url);
    }
    pos = end;
  }
}

// Paths and URLs in a user or assistant text: all of it, or its head and tail windows.
void ScanTextPaths(std::string_view text, size_t window, TrailBuilder& trail) {
  const auto [head, tail] = HeadAndTail(text, window);
  ScanPaths(head, false, trail);
  ScanUrls(head, trail);
  ScanPaths(tail, false, trail);
  ScanUrls(tail, trail);
}

// Diff headers in a patch: "*** Update File: p", "+++ b/p", "diff --git a/p b/p".
void ScanPatchHeaders(std::string_view patch, TrailBuilder& trail) {
  ForEachRawLine(patch, [&](std::string_view line) {
    std::string_view rest;
    for (std::string_view prefix : {"*** Update File: ", "*** Add File: ", "*** Delete File: ",
                                    "*** Move to: ", "+++ ", "--- "}) {
      if (line.starts_with(prefix)) rest = Trim(line.substr(prefix.size()));
    }
    if (rest.starts_with("a/") || rest.starts_with("b/")) rest.remove_prefix(2);
    const size_t tab = rest.find('\t');
    if (tab != std::string_view::npos) rest = rest.substr(0, tab);
    if (LooksLikePath(rest, true)) trail.AddFile(rest);
  });
}

// ---------------------------------------------------------------------------------------
// Tool-call arguments.

std::string_view Sv(const boost::json::string& s) { return {s.data(), s.size()}; }

// Whether a quoted argument is a sed script: an address (digits, ',', '$') then a
// substitution with its delimiter three times ("25s/old/new/", "s|a|b|g"), or an append,
// insert or change of text ("2001a \ text"). Its words are code, not paths.
bool SedScript(std::string_view q) {
  size_t i = 0;
  while (i < q.size() && ((q[i] >= '0' && q[i] <= '9') || q[i] == ',' || q[i] == '$')) ++i;
  if (i + 1 >= q.size()) return false;
  const char op = q[i], next = q[i + 1];
  if (op == 's') {
    if (IsAlnum(static_cast<unsigned char>(next)) || next <= ' ' || next == '\\') return false;
    return std::count(q.begin() + static_cast<std::ptrdiff_t>(i) + 1, q.end(), next) >= 3;
  }
  return i > 0 && (op == 'a' || op == 'i' || op == 'c') && (next == ' ' || next == '\\');
}

// `command` with the sed scripts among its quoted arguments blanked (their words are not
// paths: "25s/def/" or "/raise" would be taken for some); itself when it has none.
std::string_view WithoutSedScripts(std::string_view command, std::string& scratch) {
  size_t pos = 0;
  bool copied = false;
  while (pos < command.size()) {
    const size_t open = command.find_first_of("'\"", pos);
    if (open == std::string_view::npos) break;
    const size_t close = command.find(command[open], open + 1);
    if (close == std::string_view::npos) break;
    if (SedScript(command.substr(open + 1, close - open - 1))) {
      if (!copied) scratch.assign(command), copied = true;
      std::fill(scratch.begin() + static_cast<std::ptrdiff_t>(open) + 1,
                scratch.begin() + static_cast<std::ptrdiff_t>(close), ' ');
    }
    pos = close + 1;
  }
  return copied ? std::string_view(scratch) : command;
}

void AddCommand(std::string_view command, const ArtifactOptions& o, TrailBuilder& trail) {
  ScanUrls(command.substr(0, std::min(command.size(), kMaxCommandScanBytes)), trail);
  std::string scratch;
  ScanPaths(
      WithoutSedScripts(command.substr(0, std::min(command.size(), kMaxCommandScanBytes)), scratch),
      true, trail, kMaxCommandScanBytes);
  command = Trim(command);
  const size_t nl = command.find('\n');
  const std::string first = OneLine(command.substr(0, nl), o.command_chars);
  if (!first.empty()) trail.commands.Add(first);
}

// Applies what a tool call's arguments name to the trail (one per ExtractInto: its buffer
// is reused).
class ArgumentReader {
 public:
  ArgumentReader(const ArtifactOptions& o, TrailBuilder& trail) : o_(o), trail_(trail) {}

  void Extract(const ToolCall& call) {
    const bool shell = IsShellTool(call.name);
    items_.clear();
    if (ReadToolArguments(call.arguments, shell, items_)) {
      for (const ArgumentItem& item : items_) Apply(item);
      return;
    }
    // Not a JSON object: a shell tool's raw command line, or text to look for paths in.
    const std::string_view raw = Trim(call.arguments);
    if (shell && !raw.empty()) {
      AddCommand(InvalidUtf8At(raw) == std::string_view::npos ? std::string(raw) : ToValidUtf8(raw),
                 o_, trail_);
    } else {
      ScanPaths(raw, false, trail_, kMaxCommandScanBytes);
    }
  }

 private:
  void Apply(const ArgumentItem& item) {
    switch (item.kind) {
      case ArgumentItem::Kind::kPath: {
        const std::string_view p = Trim(item.text);
        // "." and ".." (a listing's or a shell's working directory) name no file.
        if (p != "." && p != ".." && p.find('\n') == std::string_view::npos &&
            p.find("://") == std::string_view::npos) {
          trail_.AddFile(p);
        }
        break;
      }
      case ArgumentItem::Kind::kPathKey:
        if (LooksLikePath(item.text, false)) trail_.AddFile(item.text);
        break;
      case ArgumentItem::Kind::kCommand:
        AddCommand(item.text, o_, trail_);
        break;
      case ArgumentItem::Kind::kOtherCommand:
        ScanPaths(item.text, true, trail_, kMaxCommandScanBytes);
        break;
      case ArgumentItem::Kind::kPatch:
        ScanPatchHeaders(item.text, trail_);
        break;
      case ArgumentItem::Kind::kUrl:
        ScanUrls(item.text.substr(0, std::min(item.text.size(), kMaxCommandScanBytes)), trail_);
        break;
      case ArgumentItem::Kind::kText: {
        const std::string_view text =
            std::string_view(item.text).substr(0, std::min(item.text.size(), kMaxCommandScanBytes));
        ScanUrls(text, trail_);
        ScanPaths(text, false, trail_, kMaxCommandScanBytes);
        break;
      }
    }
  }

  const ArtifactOptions& o_;
  TrailBuilder& trail_;
  std::vector<ArgumentItem> items_;
};

// The error lines of one message into the trail, one per distinct error: a log repeats
// one error as lines that differ only in the time stamp they start with, so a stamped line
// goes in without its stamps (a repeat in a later output is then the same item), and of
// those one per shape with their digits masked (a request id, a count). Lines without a
// stamp are kept as printed (the same compiler error at two line numbers is two errors).
class ErrorLines {
 public:
  ErrorLines(const ArtifactOptions& o, TrailBuilder& trail) : o_(o), trail_(trail) {}

  // Whether the line was new to the trail.
  bool Add(std::string_view line) {
    line = Trim(line);
    const std::string_view unstamped = WithoutStamps(line);
    if (unstamped.size() < line.size() && !unstamped.empty()) {
      std::string masked(unstamped);
      for (char& c : masked) c = c >= '0' && c <= '9' ? '0' : c;
      const uint64_t shape = std::hash<std::string>{}(masked);
      if (std::find(shapes_.begin(), shapes_.end(), shape) != shapes_.end()) return false;
      shapes_.push_back(shape);
      line = unstamped;
    }
    return trail_.errors.Add(ErrorItem(line, o_.max_line_chars));
  }

 private:
  const ArtifactOptions& o_;
  TrailBuilder& trail_;
  std::vector<uint64_t> shapes_;
};

// The lines of `part` that report an error (ReportsError, not a mere mention, not a
// numbered listing's source), at most o.middle_error_lines distinct ones.
void ScanForReports(std::string_view part, const ArtifactOptions& o, ErrorLines& errors) {
  if (o.middle_error_lines == 0) return;
  size_t added = 0;
  ForEachErrorWordLine(part, [&](std::string_view line) {
    if (ReportsError(line) && !NumberedListingLine(line)) added += errors.Add(line);
    return added < o.middle_error_lines;
  });
}

// Between the head and tail windows of a long tool result, the lines that report an error
// (a runner's failure, an exception, a compiler's diagnostic): a test run prints its
// failures in the middle of its output, and a mention of an error there (source, logs) is
// not worth the scan's room.
void ScanMiddleForReports(std::string_view text, std::string_view head, std::string_view tail,
                          const ArtifactOptions& o, ErrorLines& errors) {
  const size_t from = head.size();
  ScanForReports(text.substr(from, static_cast<size_t>(tail.data() - text.data()) - from), o,
                 errors);
}

}  // namespace

void ExtractInto(const Message& m, const ArtifactOptions& o, TrailBuilder& trail, FactSink* facts) {
  if (m.role == Role::kSystem) return;
  std::string plain;
  ArgumentReader arguments(o, trail);
  std::string flat;  // a line made one line, reused
  auto Flat = [&](std::string_view line) -> std::string_view {
    flat.clear();
    AppendOneLine(flat, line, o.max_line_chars);
    return flat;
  };
  std::string_view text = m.text;
  if (m.content_form == ContentForm::kParts) {
    plain = m.PlainText();
    text = plain;
  }
  // An agent that sends a command's output back as a user message: read it as a tool's
  // (its errors and facts, without the agent's frame; not its paths, decisions or a
  // request).
  Role role = m.role;
  if (role == Role::kUser && ToolOutputInUserMessage(text)) {
    role = Role::kTool;
    text = ObservationBody(text);
  }
  switch (role) {
    case Role::kUser: {
      ScanTextPaths(text, o.text_window_bytes, trail);
      const std::string_view head = text.substr(0, std::min(text.size(), o.scan_window_bytes));
      size_t pos = 0;
      while ((pos = NextCandidate(head, pos, kDecisionWords)) < head.size()) {
        const std::string_view line = LineAround(head, pos, &pos);
        if (IsDecisionLine(line)) trail.decisions.Add(Flat(line));
      }
      ErrorLines errors(o, trail);
      ScanForReports(text, o, errors);  // a pasted log's reports
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
      ErrorLines errors(o, trail);
      for (const std::string_view part : {head, tail}) {
        size_t pos = 0;
        while ((pos = NextCandidate(part, pos, set)) < part.size()) {
          if (part[pos] == ':' ? !KeyMarkerColon(part, pos) : !ErrorWordAt(part, pos)) {
            ++pos;
            continue;
          }
          const std::string_view line = LineAround(part, pos, &pos);
          if (IsErrorLine(line) && !NumberedListingLine(line)) errors.Add(line);
          if (facts && line.data() >= fact_from && HasKeyMarker(line)) facts->KeyLine(line);
        }
      }
      if (!tail.empty()) ScanMiddleForReports(text, head, tail, o, errors);
      break;
    }
    case Role::kSystem:
      break;
  }
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

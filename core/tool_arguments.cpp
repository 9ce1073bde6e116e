#include "core/tool_arguments.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "core/summary_text.h"

namespace missy {

using namespace extractive;

namespace {

// What a key's value is to the trail. Keys are compared lower case without '_' and '-',
// so "file_path", "filePath" (OpenCode) and "FilePath" are one key.
enum class KeyRole { kNone, kPath, kCommand, kPatch, kUrl, kText };

KeyRole RoleOf(std::string_view key) {
  char buf[24];
  size_t n = 0;
  for (char c : key) {
    if (c == '_' || c == '-') continue;
    if (n == sizeof buf) return KeyRole::kNone;
    buf[n++] = static_cast<char>(Lower(static_cast<unsigned char>(c)));
  }
  const std::string_view k(buf, n);
  // Gemini CLI's read_file takes "absolute_path", its listings "dir_path"; Codex's shell
  // "workdir"; Serena's tools "relative_path"; OpenCode's "filePath".
  static constexpr std::array<std::string_view, 22> kPaths = {
      "absolutepath", "dest",     "destination", "dirpath",   "directory",    "dst",
      "file",         "filename", "filepath",    "filepaths", "files",        "newpath",
      "notebookpath", "oldpath",  "path",        "paths",     "relativepath", "sourcepath",
      "src",          "target",   "targetfile",  "workdir"};
  if (std::find(kPaths.begin(), kPaths.end(), k) != kPaths.end() || k == "workingdirectory") {
    return KeyRole::kPath;
  }
  if (k == "command" || k == "cmd" || k == "script" || k == "commands" || k == "shell") {
    return KeyRole::kCommand;
  }
  if (k == "patch" || k == "diff" || k == "unifieddiff" || k == "input") return KeyRole::kPatch;
  if (k == "url" || k == "uri" || k == "urls" || k == "href" || k == "link") return KeyRole::kUrl;
  // The agent's own words to a tool: a sub-agent's task, the prompt of a fetch that names
  // its URLs in it (Gemini CLI's web_fetch), a command's description, a search's query.
  if (k == "prompt" || k == "description" || k == "query" || k == "question" || k == "message" ||
      k == "instructions" || k == "task" || k == "reason" || k == "explanation" || k == "goal") {
    return KeyRole::kText;
  }
  return KeyRole::kNone;
}

// A single pass over the text; recursion is bounded by kMaxParseDepth.
class Reader {
 public:
  Reader(std::string_view json, bool shell, std::vector<ArgumentItem>& items)
      : shell_(shell), p_(json.data()), end_(json.data() + json.size()), items_(items) {}

  bool Run() {
    SkipSpace();
    bool ok = p_ < end_ && *p_ == '{' && Value(KeyRole::kNone, 0, true);
    SkipSpace();
    return ok && p_ == end_;
  }

 private:
  using Kind = ArgumentItem::Kind;
  static constexpr int kMaxParseDepth = 32;  // as Boost.JSON's default
  static constexpr int kMaxVisitDepth = 6;   // values deeper are checked, not reported

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

  void Record(Kind kind, std::string&& text) { items_.push_back({kind, std::move(text)}); }

  void StringValue(KeyRole role, std::string&& s) {
    switch (role) {
      case KeyRole::kPath:
        return Record(Kind::kPath, std::move(s));
      case KeyRole::kCommand:
        return Record(shell_ ? Kind::kCommand : Kind::kOtherCommand, std::move(s));
      case KeyRole::kPatch:
        return Record(Kind::kPatch, std::move(s));
      case KeyRole::kUrl:
        return Record(Kind::kUrl, std::move(s));
      case KeyRole::kText:
        return Record(Kind::kText, std::move(s));
      case KeyRole::kNone:
        return;
    }
  }

  // A value whose key has `role` at nesting `depth` (the root object is 0). Unless `visit`
  // (under an argv, or deeper than kMaxVisitDepth) it is only checked.
  bool Value(KeyRole role, int depth, bool visit) {
    if (depth > kMaxParseDepth || p_ == end_) return false;
    visit = visit && depth <= kMaxVisitDepth;
    const char c = *p_++;
    if (c == '"') {
      if (!visit || role == KeyRole::kNone) return SkipString();
      std::string s;
      if (!ReadString(s)) return false;
      StringValue(role, std::move(s));
      return true;
    }
    if (c == '{') return Object(depth, visit);
    if (c == '[') {
      if (visit && role == KeyRole::kCommand) return Argv(depth);
      SkipSpace();
      if (p_ < end_ && *p_ == ']') return ++p_, true;
      while (true) {
        SkipSpace();
        if (!Value(role, depth + 1, visit)) return false;
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
      if (visit && key.find('/') != std::string::npos) Record(Kind::kPathKey, std::string(key));
      SkipSpace();
      if (p_ == end_ || *p_++ != ':') return false;
      SkipSpace();
      if (!Value(RoleOf(key), depth + 1, visit)) return false;
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
          if (!Value(KeyRole::kNone, depth + 1, false)) return false;
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
    Record(shell_ ? Kind::kCommand : Kind::kOtherCommand, std::move(joined));
    return true;
  }

  const bool shell_;
  const char* p_;
  const char* const end_;
  std::vector<ArgumentItem>& items_;
};

}  // namespace

bool ReadToolArguments(std::string_view json, bool shell_tool, std::vector<ArgumentItem>& items) {
  return Reader(json, shell_tool, items).Run();
}

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

}  // namespace missy

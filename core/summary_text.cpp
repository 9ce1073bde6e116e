#include "core/summary_text.h"

#include <algorithm>
#include <array>

#include "core/utf8.h"

namespace missy::extractive {

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
std::string CapChars(std::string_view s, size_t max_chars, bool* was_cut) {
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

void AppendOneLine(std::string& out, std::string_view s, size_t max_chars) {
  const size_t start = out.size();
  const std::string_view t = Trim(s);
  const size_t n = t.size();
  bool non_ascii = false, cut = false;
  size_t chars = 0, i = 0;
  // Runs of non-space bytes are copied whole; a run of spaces becomes one space.
  auto blank = [&](size_t k) { return static_cast<unsigned char>(t[k]) <= ' '; };
  while (i < n) {
    // A code point is at most 4 bytes: a run is not read further than the cap can reach.
    const size_t limit = std::min(n, i + 4 * (max_chars - chars) + 4);
    size_t j = i, run_chars = 0;
    unsigned char high = 0;
    for (; j < limit && !blank(j); ++j) {
      const unsigned char c = static_cast<unsigned char>(t[j]);
      run_chars += (c & 0xC0) != 0x80;
      high |= c;
    }
    non_ascii |= high >= 0x80;
    if (chars + run_chars > max_chars) {  // the cap falls inside this run
      for (; i < j; ++i) {
        if ((static_cast<unsigned char>(t[i]) & 0xC0) != 0x80 && chars++ == max_chars) break;
        out.push_back(t[i]);
      }
      cut = true;
      break;
    }
    out.append(t.data() + i, j - i);
    chars += run_chars;
    if (j < n && !blank(j)) {  // stopped at `limit`: the same run goes on
      i = j;
      continue;
    }
    for (i = j; i < n && blank(i);) ++i;
    if (i < n) {
      if (chars == max_chars) {
        cut = true;
        break;
      }
      out.push_back(' ');
      ++chars;
    }
  }
  if (non_ascii) {
    const std::string_view added = std::string_view(out).substr(start);
    if (InvalidUtf8At(added) != std::string_view::npos) {
      std::string valid = ToValidUtf8(added);
      out.resize(start);
      out += valid;
    }
  }
  if (cut) out += "…";
}

std::string ErrorItem(std::string_view line, size_t max_chars) {
  std::string out;
  for (const char c : Trim(line))
    out += c == '\t' || static_cast<unsigned char>(c) >= ' ' ? c : ' ';
  bool cut = false;
  out = CapChars(out, max_chars, &cut);
  if (InvalidUtf8At(out) != std::string_view::npos) out = ToValidUtf8(out);
  if (cut) out += "…";
  return out;
}

std::string OneLine(std::string_view s, size_t max_chars) {
  std::string out;
  out.reserve(std::min(s.size(), max_chars) + 4);
  AppendOneLine(out, s, max_chars);
  return out;
}

size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// ---------------------------------------------------------------------------------------
// Lines of interest.

// Missy's MemoryConsolidator markers.
bool KeyMarkerColon(std::string_view line, size_t colon) {
  static constexpr std::array<std::string_view, 10> kMarkers = {
      "result",  "decided", "found",   "error",     "success",
      "created", "updated", "deleted", "confirmed", "output"};
  size_t b = colon;
  while (b > 0 && colon - b <= 9 && IsAlpha(static_cast<unsigned char>(line[b - 1]))) --b;
  const size_t len = colon - b;
  if (len < 5 || len > 9) return false;  // a longer word ends in a marker: not a marker
  for (std::string_view m : kMarkers) {
    if (m.size() == len && HasAt(line, b, m)) return true;
  }
  return false;
}

bool HasKeyMarker(std::string_view line) {
  size_t colon = line.find(':');
  while (colon != std::string_view::npos) {
    if (KeyMarkerColon(line, colon)) return true;
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

namespace {

bool WordEndsAt(std::string_view s, size_t end) {
  return end >= s.size() || !IsWordChar(static_cast<unsigned char>(s[end]));
}

// Whether a phrase of ReportsError with no error word in it holds s[i], i being where
// its trigram (PhraseTrigram, core/candidate_scan.cpp) starts: peRMIssion denied,
// teRMInate called after throwing, SEGmentation fault, core DUMped), undefined rEFErence
// to, connection reFUSed, is iNVAlid: .
bool PhraseAt(std::string_view s, size_t i) {
  auto at = [&](size_t back, std::string_view phrase) {
    return i >= back && HasAt(s, i - back, phrase);
  };
  switch (Lower(static_cast<unsigned char>(s[i]))) {
    case 'r':
      return at(2, "permission denied") || at(2, "terminate called after throwing");
    case 's':
      return at(0, "segmentation fault");
    case 'd':
      return at(5, "core dumped)");
    case 'e':
      return at(11, "undefined reference to");
    case 'f':
      return at(13, "connection refused");
    case 'n':
      return at(5, " is invalid: ");
    default:
      return false;
  }
}

// Only blanks between the line's start and s[i].
bool OpensLine(std::string_view s, size_t i) {
  while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) --i;
  return i == 0 || s[i - 1] == '\n';
}

}  // namespace

// error/Error/ERROR (a word, or an "XxxError:"/"XxxException:" name), "exception:",
// Traceback, failed/FAILED/FAILURE, fatal, panic(ked), "No such file", npm's "ERR!",
// pnpm's "ERR_PNPM_" and TAP's "not ok N" opening a line, and ReportsError's phrases.
bool ErrorWordAt(std::string_view s, size_t i) {
  const size_t n = s.size();
  const unsigned char c = Lower(static_cast<unsigned char>(s[i]));
  const bool word_start = i == 0 || !IsWordChar(static_cast<unsigned char>(s[i - 1]));
  const bool camel = i > 0 && s[i] == 'E' && s[i - 1] >= 'a' && s[i - 1] <= 'z';
  if (PhraseAt(s, i)) return true;  // ReportsError's phrases, found by their trigrams
  switch (c) {
    case 'e':
      // npm's "ERR!"; pnpm's "ERR_PNPM_..." codes opening a line (in code, such a constant
      // is only named)
      if (s[i] == 'E' && word_start &&
          (s.substr(i).starts_with("ERR!") ||
           (s.substr(i).starts_with("ERR_PNPM_") && OpensLine(s, i)))) {
        return true;
      }
      if (HasAt(s, i, "error")) {
        const size_t e = i + 5;
        if (word_start && (WordEndsAt(s, e) || (e < n && s[e] == 's' && WordEndsAt(s, e + 1))))
          return true;
        // "KeyError:", Node's "AssertionError [ERR_ASSERTION]:", and Ruby's class in
        // parentheses that ends its line: "... for nil:NilClass (NoMethodError)".
        if (camel && e < n &&
            (s[e] == ':' || (s[e] == ' ' && e + 1 < n && s[e + 1] == '[') ||
             (s[e] == ')' && (e + 1 == n || s[e + 1] == '\n' || s[e + 1] == '\r')))) {
          return true;
        }
      } else if (HasAt(s, i, "exception") && i + 9 < n && s[i + 9] == ':' &&
                 (word_start || camel)) {
        return true;
      }
      return false;
    case 'f':  // failed, fatal (any case), a runner's FAIL ("--- FAIL:", "FAIL<tab>pkg"),
               // Gradle's "FAILURE:"
      return word_start && ((HasAt(s, i, "failed") && WordEndsAt(s, i + 6)) ||
                            (HasAt(s, i, "fatal") && WordEndsAt(s, i + 5)) ||
                            (s.substr(i).starts_with("FAIL") && WordEndsAt(s, i + 4)) ||
                            (s.substr(i).starts_with("FAILURE") && WordEndsAt(s, i + 7)));
    case 't':
      return s[i] == 'T' && s.substr(i).starts_with("Traceback");
    case 'p':
      return word_start && HasAt(s, i, "panic");
    case 'n':
      if (s[i] == 'N') return s.substr(i).starts_with("No such file");
      // TAP's failed test: "not ok 3 - ..."
      if (OpensLine(s, i) && s.substr(i).starts_with("not ok ") && i + 7 < n && s[i + 7] >= '0' &&
          s[i + 7] <= '9') {
        return true;
      }
      // A shell's "foo: command not found" (bash, zsh: "command not found: foo").
      return s.substr(i).starts_with("not found") && i >= 8 && s.substr(i - 8, 8) == "command ";
    case '*':  // Elixir's "** (SomeError) ...", "** (Mix) ..."
      return (i == 0 || s[i - 1] == ' ') && s.substr(i).starts_with("** (");
    default:
      return false;
  }
}

bool IsErrorLine(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    static const std::array<bool, 256> kFirst = [] {
      std::array<bool, 256> t{};
      for (unsigned char c : std::string_view("eEfFtTpPnN*rRsSdD")) t[c] = true;
      return t;
    }();
    if (kFirst[static_cast<unsigned char>(s[i])] && ErrorWordAt(s, i)) return true;
  }
  return false;
}

namespace {

// Cline's and Roo Code's header of a tool's result sent as a user message: a first line
// "[execute_command for 'npm test'] Result:" (or "[read_file for 'a.py'] Result:"). Not
// when what follows is the user's own words, which those agents return the same way (an
// answer to the agent's question, feedback on its result: "<user_message>", "<answer>",
// "<feedback>").
bool ResultHeader(std::string_view text) {
  const size_t nl = text.find('\n');
  const std::string_view first = text.substr(0, nl);
  if (!(first.size() > 10 && first.front() == '[' && first.ends_with("] Result:"))) return false;
  const std::string_view body = nl == std::string_view::npos ? "" : Trim(text.substr(nl + 1));
  for (std::string_view words : {"<user_message>", "<answer>", "<feedback>"}) {
    if (body.starts_with(words)) return false;
  }
  return true;
}

}  // namespace

std::string_view ObservationBody(std::string_view text) {
  text = Trim(text);
  if (ResultHeader(text)) {
    const size_t nl = text.find('\n');
    text = nl == std::string_view::npos ? std::string_view() : Trim(text.substr(nl + 1));
    // The editor's state the agent appends last to every message is not the tool's
    // output (a file read may hold the tag too: the last one), nor the lines before a
    // command's ("Command executed." and Roo's "Command executed in terminal ...", then
    // "Output:").
    if (const size_t env = text.rfind("<environment_details>"); env != std::string_view::npos) {
      text = Trim(text.substr(0, env));
    }
    if (text.starts_with("Command executed")) {
      const size_t output = text.find("Output:");
      const size_t first_nl = text.find('\n');
      if (output != std::string_view::npos &&
          (first_nl == std::string_view::npos || text.find('\n', first_nl + 1) >= output)) {
        text = Trim(text.substr(output + 7));  // "Output:" within the next two lines
      } else {
        text = Trim(text.substr(std::min(first_nl, text.size())));
      }
    }
  }
  if (text.starts_with("<returncode>")) {
    const size_t end = text.find("</returncode>");
    if (end != std::string_view::npos) text = Trim(text.substr(end + 13));
  }
  for (std::string_view frame : {"<output>", "OBSERVATION:", "Observation:"}) {
    if (text.starts_with(frame)) {
      text = Trim(text.substr(frame.size()));
      break;
    }
  }
  if (text.starts_with("EXECUTION RESULT")) {  // "EXECUTION RESULT of [execute_bash]:"
    const size_t nl = text.find('\n');
    text = nl == std::string_view::npos ? std::string_view() : Trim(text.substr(nl + 1));
  }
  if (text.ends_with("</output>")) text = Trim(text.substr(0, text.size() - 9));
  return text;
}

bool ToolOutputInUserMessage(std::string_view text) {
  text = Trim(text);
  for (std::string_view frame :
       {"<returncode>", "<output>", "OBSERVATION:", "Observation:", "EXECUTION RESULT"}) {
    if (text.starts_with(frame)) return true;
  }
  return ResultHeader(text);
}

namespace {

bool IsExceptionName(std::string_view name) {
  return name.ends_with("Error") || name.ends_with("Exception");
}

// The length of a time stamp token that starts `line` ("2026-11-27", "09:01:02,123",
// "[12:00:01]", "2026-11-27T09:01:02Z"): a digit first (after '['), two digits or more, a
// date's or a time's separator, and more of the line after it; else 0.
size_t StampLength(std::string_view line) {
  const size_t end = line.find_first_of(" \t");
  if (end == std::string_view::npos) return 0;
  const std::string_view token = line.substr(0, end);
  const size_t first = token.starts_with('[') ? 1 : 0;
  if (first >= token.size() || token[first] < '0' || token[first] > '9') return 0;
  int digits = 0;
  for (char c : token) digits += c >= '0' && c <= '9';
  if (digits < 2 || token.find_first_of(":-") == std::string_view::npos) return 0;
  return end;
}

}  // namespace

std::string_view WithoutStamps(std::string_view line) {
  line = Trim(line);
  while (const size_t stamp = StampLength(line)) line = Trim(line.substr(stamp));
  return line;
}

namespace {

// The part of a line after what only frames the report: pytest's "E   " marker, a
// terraform box's "│ ", Java's "Caused by: ", a sanitizer's "==4211==". (Not a logger's
// time stamp: a log's ERROR lines are as often a service's noise as the report.)
std::string_view AfterReportFrame(std::string_view line) {
  for (;;) {
    line = Trim(line);
    if (line.size() > 2 && line[0] == 'E' && (line[1] == ' ' || line[1] == '\t')) {
      line.remove_prefix(2);
    } else if (line.starts_with("\u2502 ")) {
      line.remove_prefix(4);
    } else if (line.starts_with("Caused by: ")) {
      line.remove_prefix(11);
    } else if (line.starts_with("Stdout: ") || line.starts_with("Stderr: ")) {
      line.remove_prefix(8);  // a shell tool's framed output (Gemini CLI's)
    } else if (line.starts_with("==") && line.size() > 4) {
      const size_t end = line.find("==", 2);
      if (end == std::string_view::npos || end > 12 ||
          line.substr(2, end - 2).find_first_not_of("0123456789") != std::string_view::npos) {
        return line;
      }
      line.remove_prefix(end + 2);
    } else {
      return line;
    }
  }
}

size_t DigitsAt(std::string_view s, size_t pos) {
  size_t n = 0;
  while (pos + n < s.size() && s[pos + n] >= '0' && s[pos + n] <= '9') ++n;
  return n;
}

// A field that says there was none: a shell tool's "Error: (none)", "errors: 0",
// "Error: null".
bool SaysNone(std::string_view line) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  // A field named for errors, not an exception's name ("KeyError: 0" reports one).
  const std::string_view head = line.substr(0, colon);
  bool field = false;
  for (std::string_view name : {"error", "errors", "err", "stderr", "failures"}) {
    field = field || (head.size() == name.size() && HasAt(head, 0, name));
  }
  if (!field) return false;
  const std::string_view value = Trim(line.substr(colon + 1));
  for (std::string_view none : {"(none)", "none", "null", "nil", "0", "[]", "{}", "n/a", "-"}) {
    if (value.size() == none.size() && HasAt(value, 0, none)) return true;
  }
  return false;
}

// "error" before a code and a colon, with no location before it or after one (tsc's
// "error TS5083: ...", C#'s "error CS0103: ...", MSBuild's "MSBUILD : error MSB1009: ...",
// MSVC's "error C2065: ..."). A count of errors ("Found 2 errors in 2 files.", "1 error
// generated.") is not one: it sums up the reports above it, and a new count each run
// would crowd them out.
bool ErrorCodeReport(std::string_view line) {
  for (size_t at = line.find("error "); at != std::string_view::npos;
       at = line.find("error ", at + 1)) {
    if (at > 0 && line[at - 1] != ' ') continue;
    const std::string_view code = line.substr(at + 6, line.find(':', at) - (at + 6));
    size_t letters = 0;
    while (letters < code.size() && code[letters] >= 'A' && code[letters] <= 'Z') ++letters;
    if (letters > 0 && letters < code.size() && DigitsAt(code, letters) == code.size() - letters &&
        at + 6 + code.size() < line.size()) {
      return true;
    }
  }
  return false;
}

// A verdict in a line of its own: TAP's "not ok 3 - parses dates" (node --test, prove,
// bats), MSBuild's "Build FAILED.", Gradle's and Ant's "BUILD FAILED in 2s", dotnet test's
// "Failed Api.Tests.Rounds [12 ms]", npm 10's "npm error ...", pnpm's "ERR_PNPM_... ",
// yarn's "error Command failed ...", .NET's "Unhandled exception. System.X: ...".
bool VerdictLine(std::string_view line) {
  if (line.starts_with("not ok ")) {  // but not a test marked TODO or SKIP
    const size_t directive = line.find(" # ");
    return DigitsAt(line, 7) > 0 &&
           (directive == std::string_view::npos ||
            !(HasAt(line, directive + 3, "todo") || HasAt(line, directive + 3, "skip")));
  }
  if (line.starts_with("npm error ") || line.starts_with("error Command failed") ||
      line.starts_with("Unhandled exception. ")) {
    return true;
  }
  const size_t space = std::min(line.find(' '), line.size());
  const std::string_view first = line.substr(0, space);
  if (first.size() > 9 && first.starts_with("ERR_PNPM_") &&
      first.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == first.npos) {
    return true;
  }
  const std::string_view second = line.substr(std::min(space + 1, line.size()));
  const std::string_view after = second.substr(std::min<size_t>(6, second.size()));
  if (second.starts_with("FAILED") &&
      (after.empty() || after == "." || after.starts_with(" in ")) &&
      first.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") ==
          first.npos) {
    return true;
  }
  return first == "Failed" && line.ends_with("]") && line.find(" [") != std::string_view::npos;
}

}  // namespace

bool ReportsError(std::string_view line) {
  line = AfterReportFrame(line);
  if (SaysNone(line)) return false;
  if (line.starts_with("Traceback") || line.starts_with("** (") || line.starts_with("npm ERR! ") ||
      line.starts_with("--- FAIL:") || line.starts_with("Exception in thread ") ||
      line.starts_with("Failed to ")) {
    // a traceback's head, Elixir's exception, npm's report, go test's failure, Java's
    // uncaught exception, systemd's and Maven's "Failed to ..."
    return true;
  }
  if (VerdictLine(line) || ErrorCodeReport(line)) return true;
  // What only a failure prints: the phrases with no error word, where the candidate scan
  // finds their trigrams (PhraseAt), and two more.
  for (size_t i = 0; (i = NextCandidate(line, i, kErrorWords)) < line.size(); ++i) {
    if (PhraseAt(line, i)) return true;
  }
  if (line.find("***Exception: ") != std::string_view::npos ||
      line.find(" failed because ") != std::string_view::npos) {
    return true;
  }
  // A runner's verdict after the test's name: JUnit under Gradle's "Test > case() FAILED",
  // pytest -v's "tests/t.py::test_x FAILED [ 50%]".
  if (line.ends_with(" FAILED") || line.find(" FAILED [") != std::string_view::npos) return true;
  // Ruby's "app/x.rb:12:in `m': undefined method ... (NoMethodError)": the class last.
  if (const size_t open = line.rfind('(');
      line.ends_with(")") && open != std::string_view::npos && line.find(": ") < open) {
    const std::string_view name = line.substr(open + 1, line.size() - open - 2);
    if (name.find_first_of(" ,") == std::string_view::npos && IsExceptionName(name)) return true;
  }
  // A compiler's "file:line: error:", "file(4,7): error TS2322:", "file:12:5 - error TS...",
  // and a Rust thread's "thread 'main' panicked at src/main.rs:5:9:".
  for (std::string_view report :
       {": error:", ": fatal error:", "): error ", " - error ", "' panicked at "}) {
    if (line.find(report) != std::string_view::npos) return true;
  }
  const std::string_view first = line.substr(0, std::min(line.find_first_of(" \t"), line.size()));
  if (first.size() < 2) return false;
  const bool colon = first.back() == ':';
  std::string_view name = colon ? first.substr(0, first.size() - 1) : first;
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);  // a level in brackets: Maven's "[ERROR] ..."
    if (name.empty() || name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != name.npos) {
      return false;
    }
  }
  if (name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") == std::string_view::npos) {
    return ErrorWordAt(name, 0);  // ERROR, FAILED, FATAL, PANIC: a runner's or logger's verdict
  }
  const std::string_view rest = Trim(line.substr(first.size()));
  // A name and a code in brackets: Node's "AssertionError [ERR_ASSERTION]: ...".
  if (!colon && rest.starts_with('[') && rest.find("]: ") != std::string_view::npos &&
      rest.find("]: ") < rest.find(' ')) {
    return IsExceptionName(name);
  }
  // "Error" as the first or second word, and a message after a colon: kubectl's "Error from
  // server (NotFound): ...", docker's "Error response from daemon: ...", "CMake Error at
  // CMakeLists.txt:23 (find_package):".
  if (line.find(':') != std::string_view::npos &&
      (name == "Error" || rest.starts_with("Error ") || rest.starts_with("error "))) {
    return true;
  }
  if (!colon) return false;  // "error ->", ":error", "Caught ValidationError: ..."
  // "TypeError:", "pkg.OperationalError:", "error:", "Exception:", "fatal:", "panic:",
  // rustc's "error[E0382]:".
  if (IsExceptionName(name) || ErrorWordAt(first, 0)) {
    return true;
  }
  // A program's "name:" prefix ("cat:", "bash:"): the report follows it.
  return IsErrorLine(line.substr(first.size()));
}

bool NumberedListingLine(std::string_view line) {
  line = Trim(line);
  size_t digits = 0;
  while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
  if (digits == 0 || digits == line.size()) return false;
  const std::string_view rest = line.substr(digits);
  if (rest.front() == ':') {  // "12:code", but not a time ("10:42:01 ERROR ...")
    return rest.size() == 1 || rest[1] < '0' || rest[1] > '9';
  }
  return rest.front() == '\t' || rest.starts_with("\u2192") || rest.starts_with("| ") ||
         rest.starts_with(" | ");
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

}  // namespace missy::extractive

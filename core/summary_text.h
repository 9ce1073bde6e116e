// Line-level text helpers shared by the artifact extraction and the extractive summarizer.
// Pure; every function returning a string returns valid UTF-8 when given any bytes
// (CapChars, OneLine); the classifiers read only the line they are given.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "core/candidate_scan.h"

namespace missy::extractive {

inline bool IsAlpha(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
inline bool IsAlnum(unsigned char c) { return IsAlpha(c) || (c >= '0' && c <= '9'); }
inline bool IsWordChar(unsigned char c) { return IsAlnum(c) || c == '_'; }
inline unsigned char Lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
// Case-insensitive: does `s` hold lowercase `word` at `pos`?
bool HasAt(std::string_view s, size_t pos, std::string_view word);
// `s` without leading and trailing bytes <= ' '.
std::string_view Trim(std::string_view s);
// At most `max_chars` code points of `s`, cut on a boundary, as valid UTF-8.
std::string CapChars(std::string_view s, size_t max_chars, bool* was_cut = nullptr);
// One line: control characters and runs of whitespace become one space; capped at
// `max_chars` code points, "…" appended when cut.
std::string OneLine(std::string_view s, size_t max_chars);
void AppendOneLine(std::string& out, std::string_view s, size_t max_chars);
// An error line as a tool printed it, so that it can be found again: trimmed, its blanks
// kept (pytest's "E       KeyError", tabs of "FAIL<tab>pkg"), other control characters
// made spaces, capped at `max_chars` code points ("…" appended when cut), valid UTF-8.
std::string ErrorItem(std::string_view line, size_t max_chars);
size_t CodePoints(std::string_view s);

// Missy's MemoryConsolidator markers: "result:", "decided:", "found:", "error:", ...
bool HasKeyMarker(std::string_view line);
// "decided:", "decision:", "decided to " (any case, at a word start).
bool IsDecisionLine(std::string_view line);
// error/Error/ERROR (a word, or an "XxxError:"/"XxxException:" name), "exception:",
// Traceback, failed/FAILED/FAIL, fatal, panic(ked), "No such file", "command not found", npm's
// "ERR!", Elixir's "** (".
bool IsErrorLine(std::string_view line);
// Whether an error word of IsErrorLine starts at s[i] (s: the line, or the text around it).
bool ErrorWordAt(std::string_view s, size_t i);
// Whether an error line reports an error rather than mentions one: its first word names it
// and ends with ':' ("TypeError: ...", "error: ...", "error[E0382]: ...", "fatal: ..."), or
// is a verdict in capitals ("FAILED ...", "FAIL<tab>pkg", "ERROR ..."), or the line is a
// traceback's head, a compiler's "file:line: error:" (tsc's "file(4,7): error TS..." and
// "file:4:7 - error TS..."), a Rust thread's "... panicked at", go test's "--- FAIL:",
// Elixir's "** (SomeError) ...", npm's "npm ERR! ...", pytest's "E   SomeError: ..." (the
// exception after the marker), or an error after a program's "name:" prefix ("cat: x: No
// such file ...", "bash: x: command not found"). Source code that uses an error value ("error =
// ...", "logger.error(", "error ->", ":error") only mentions one.
// Also: a frame before the report (terraform's "│ ", Java's "Caused by: ", a sanitizer's
// "==123=="), a level in brackets ("[ERROR] ..."), Java's "Exception in thread ...",
// "Failed to ...", a test's name before its verdict ("... FAILED"), Ruby's exception class
// in parentheses at the end, Node's "SomeError [ERR_CODE]: ...", "Error" as the first or
// second word before a colon ("Error from server (NotFound): ...", "CMake Error at ..."),
// and a line holding what an OS, a linker, a crash or a service manager prints only when
// something failed, with no error word to find it by ("Permission denied", "Connection
// refused", "Segmentation fault", "core dumped)", "undefined reference to", "terminate
// called after throwing", " is invalid: ", "***Exception: ", " failed because ").
// And: verdicts in a line of their own (TAP's "not ok 3 - ...", "Build FAILED.", "BUILD
// FAILED in 2s", dotnet test's "Failed Name [12 ms]", npm 10's "npm error ...", pnpm's
// "ERR_PNPM_...", yarn's "error Command failed", .NET's "Unhandled exception. ..."), "error"
// before a code ("error TS5083: ...", "error CS0103: "), after a shell tool's "Stdout: " or
// "Stderr: " frame. Not a field that says there was none ("Error: (none)", "errors: 0"),
// nor a count of errors ("Found 2 errors in 2 files.": it sums up the reports above it).
bool ReportsError(std::string_view line);
// The line without the time stamps a logger starts it with ("2026-11-27 09:01:02,123",
// "[12:00:01]"): what stays the same when a log repeats one error.
std::string_view WithoutStamps(std::string_view line);
// Whether a user message is a command's output that an agent sends back as a user message
// rather than a tool result: it opens with such an agent's frame (mini-swe-agent's
// "<returncode>"/"<output>", SWE-agent's "OBSERVATION:", a ReAct loop's "Observation:",
// OpenHands' "EXECUTION RESULT", Cline's and Roo Code's "[execute_command for '...']
// Result:").
bool ToolOutputInUserMessage(std::string_view text);
// Such a message without its frame: the command's output alone (without the editor state
// Cline appends, "<environment_details>...").
std::string_view ObservationBody(std::string_view text);
// A line of a numbered file listing ("12→ code" from an editor's view, "12\tcode" from
// cat -n, "12:code", "00012| code" from OpenCode's read, "12 | code" from Cline's and from
// a compiler's source excerpt; not a time such as "10:42:01"): source code, whose words
// name no error a tool printed.
bool NumberedListingLine(std::string_view line);

// Whether the ':' at s[colon] ends one of Missy's key markers (the word before it).
bool KeyMarkerColon(std::string_view s, size_t colon);

// Calls fn(line) for each line of `text` as it is: split on '\n', nothing trimmed or left
// out (a summary's layout is read this way: its indentation has a meaning).
template <typename Fn>
void ForEachRawLine(std::string_view text, Fn fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    fn(text.substr(pos, end - pos));
    pos = end + 1;
  }
}

// Calls fn(line) for each non-blank line of `text`, trimmed.
template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  ForEachRawLine(text, [&](std::string_view raw) {
    const std::string_view line = Trim(raw);
    if (!line.empty()) fn(line);
  });
}

// Calls fn(line) for each line of `text` where an error word of ErrorWordAt starts (once a
// line, in order, the line trimmed as LineAround gives it) while fn returns true.
template <typename Fn>
void ForEachErrorWordLine(std::string_view text, Fn fn) {
  size_t pos = 0;
  while ((pos = NextCandidate(text, pos, kErrorWords)) < text.size()) {
    if (!ErrorWordAt(text, pos)) {
      ++pos;
      continue;
    }
    if (!fn(LineAround(text, pos, &pos))) return;
  }
}

// Head and tail of a long text (each about `window` bytes, on line boundaries); the whole
// text and an empty tail when it is at most 2 * window bytes.
std::pair<std::string_view, std::string_view> HeadAndTail(std::string_view s, size_t window);

}  // namespace missy::extractive

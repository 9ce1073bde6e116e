// Reading a tool call's JSON arguments for the artifact trail, without building a document:
// the whole text is checked for structure (objects, arrays, strings, literals; nesting up to
// 32 as Boost.JSON), keys and the string values the trail needs are decoded, every other
// string value (file contents, old/new strings) is skipped with memchr. Pure; never throws.
// Leniency: skipped strings and numbers are not validated (UTF-8, control characters, number
// syntax), so a few texts Boost.JSON rejects are read as objects here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace missy {

struct ArgumentItem {
  enum class Kind {
    kPath,          // the value of a path key ("path", "file_path", ...), decoded, untrimmed
    kPathKey,       // an object key holding '/' ({"changes": {"src/a.rs": {...}}})
    kCommand,       // a command key's value ("command", "cmd", ...; argv joined) of a shell tool
    kOtherCommand,  // the same of another tool (an editor's "view"): only its paths matter
    kPatch,         // a patch key's value ("patch", "diff", "input", ...)
    kUrl,           // a URL key's value ("url", "uri", "href", ...): a page fetched
    kText,          // the agent's words ("prompt", "description", "query", ...): text that
                    // may name files and URLs
  };
  Kind kind;
  std::string text;
};

// True when `json` is one JSON object; `items` then holds what it names, in document order
// (appended; values deeper than 6 levels are not reported). False when it is not a JSON
// object (the caller treats the text as raw); `items` may then hold a partial read.
// `shell_tool`: whether command keys are shell commands (IsShellTool of the tool's name).
bool ReadToolArguments(std::string_view json, bool shell_tool, std::vector<ArgumentItem>& items);

// Tools whose "command"-like arguments are shell command lines. Editors such as
// str_replace_editor also take a "command" (view, create, str_replace): not a shell command.
bool IsShellTool(std::string_view name);

}  // namespace missy

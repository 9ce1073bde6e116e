// ConfigReferenceMarkdown: the key reference of docs/CONFIG.md, generated from the key
// table and a default-constructed DaemonConfig (tests/config/config_reference_test.cpp
// checks that the document holds exactly this text).
#include <cctype>
#include <string>
#include <string_view>
#include <variant>

#include "config/config.h"
#include "config/key_table.h"

namespace missy {
namespace {

// `text` in a Markdown table cell: pipes escaped, newlines as spaces.
std::string Cell(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|') {
      out += "\\|";
    } else if (ch == '\n') {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out;
}

// `again`: the keys directly under context: continue after a group.
std::string GroupHeading(std::string_view group, bool again) {
  if (group.empty()) return again ? "### `context:` (continued)\n\n" : "### `context:`\n\n";
  std::string out = "### `context." + std::string(group) + "`\n\n";
  if (const ConfigGroup* g = FindContextGroup(group); g != nullptr && !g->doc.empty()) {
    std::string doc = Cell(g->doc);
    doc[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(doc[0])));
    out += doc + ".\n\n";
  }
  return out;
}

}  // namespace

std::string AcceptedText(const ConfigKey& key) {
  return std::visit(
      RuleVisitor{
          [](const IntRule& r) { return "integer, " + RangeText(r); },
          [](const NumberRule& r) { return "number " + RangeText(r); },
          [](const BoolRule&) { return std::string("true | false"); },
          [](const PathRule& r) {
            return std::string(r.may_be_empty ? "path (\"\" = not set)" : "path");
          },
          [](const StringRule& r) {
            if (r.check != nullptr) return std::string(r.accepts.empty() ? "string" : r.accepts);
            return std::string("string (\"\" = not set)");
          },
          [](const ChoiceRule& r) {
            std::string out;
            for (size_t i = 0; i < r.choices.size(); ++i) {
              out += (i == 0 ? "" : " | ") + std::string(r.choices[i]);
            }
            return out;
          },
          [](const ModelRowsRule&) {
            return std::string(
                "list of {pattern, context_window, max_output_tokens, encoding, factor}");
          },
          [](const StringListRule& r) {
            return std::string(r.accepts.empty() ? "string" : r.accepts) + ", or a list of them";
          },
          [](const ProxyRoutesRule&) { return std::string("list of {model, provider}"); },
      },
      key.rule);
}

std::string ConfigReferenceMarkdown() {
  const DaemonConfig defaults;
  std::string out;
  bool first = true;
  std::string_view group;
  for (const ConfigKey& key : ContextKeys()) {
    const size_t dot = key.path.rfind('.');  // a nested group has a table of its own
    const std::string_view key_group = dot == std::string_view::npos ? "" : key.path.substr(0, dot);
    if (first || key_group != group) {
      if (!first) out += "\n";
      out += GroupHeading(key_group, /*again=*/!first);
      out += "| key | default | accepts | meaning |\n|---|---|---|---|\n";
      group = key_group;
      first = false;
    }
    std::string meaning = Cell(key.doc);
    if (!key.note.empty()) meaning += ". " + Cell(key.note);
    out += "| `" + ContextKeyPath(key.path) + "` | `" + Cell(KeyValueYaml(key, defaults)) +
           "` | " + Cell(AcceptedText(key)) + " | " + meaning + " |\n";
  }
  return out;
}

}  // namespace missy

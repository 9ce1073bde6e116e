// DefaultConfigYaml: the commented default config file, generated from the key table and
// a default-constructed DaemonConfig, so a default changed in a struct changes the file.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <variant>

#include "config/config.h"
#include "config/key_table.h"

namespace missy {
namespace {

constexpr size_t kCommentColumn = 32;  // where a key's "# doc" starts, when the line allows

// `text` as a YAML scalar that reads back as the same string: plain when it is a simple
// word or path, double-quoted otherwise ("" and words YAML would read as bool or null).
std::string YamlString(std::string_view text) {
  bool plain = !text.empty() && (std::isalpha(static_cast<unsigned char>(text[0])) ||
                                 text[0] == '.' || text[0] == '/' || text[0] == '_');
  for (char ch : text) {
    plain = plain && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '/' ||
                      ch == '_' || ch == '-');
  }
  std::string lower(text);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (std::string_view word : {"true", "false", "yes", "no", "on", "off", "y", "n", "null"}) {
    plain = plain && lower != word;
  }
  if (plain) return std::string(text);
  std::string quoted = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    quoted += ch;
  }
  return quoted + "\"";
}

}  // namespace

std::string KeyValueYaml(const ConfigKey& key, const DaemonConfig& c) {
  return std::visit(
      RuleVisitor{
          [&](const IntRule& r) { return std::to_string(r.field.get(c)); },
          [&](const NumberRule& r) { return FormatNumber(r.field.get(c)); },
          [&](const BoolRule& r) { return std::string(r.field.get(c) ? "true" : "false"); },
          [&](const PathRule& r) { return YamlString(r.field.get(c)); },
          [&](const StringRule& r) { return YamlString(r.field.get(c)); },
          [&](const ChoiceRule& r) { return YamlString(r.get(c)); },
          [&](const ModelRowsRule&) { return std::string("[]"); },  // rows beyond built-ins
          [&](const StringListRule& r) {
            std::string out;
            for (const std::string& item : r.field.get(c)) {
              out += (out.empty() ? "[" : ", ") + YamlString(item);
            }
            return out.empty() ? std::string("[]") : out + "]";
          },
          [&](const ProxyRoutesRule& r) {
            std::string out;
            for (const ProxyRoute& route : r.field.get(c)) {
              out += (out.empty() ? "[" : ", ") + std::string("{model: ") +
                     YamlString(route.model) + ", provider: " + YamlString(route.provider) + "}";
            }
            return out.empty() ? std::string("[]") : out + "]";
          },
      },
      key.rule);
}

namespace {

// The key's comment: its doc, then what it accepts when that says more than the type.
std::string CommentText(const ConfigKey& key) {
  std::string text(key.doc);
  if (const auto* r = std::get_if<IntRule>(&key.rule); r != nullptr && r->min != 0) {
    text += ", " + RangeText(*r);
  } else if (const auto* r = std::get_if<NumberRule>(&key.rule)) {
    text += ", " + RangeText(*r);
  } else if (const auto* r = std::get_if<ChoiceRule>(&key.rule)) {
    text += ":";
    for (size_t i = 0; i < r->choices.size(); ++i) {
      text += (i == 0 ? " " : " | ") + std::string(r->choices[i]);
    }
  }
  return text;
}

void AppendLine(std::string* out, std::string text, std::string_view comment) {
  if (!comment.empty()) {
    text.append(text.size() + 2 > kCommentColumn ? 2 : kCommentColumn - text.size(), ' ');
    text += "# ";
    text += comment;
  }
  *out += text + "\n";
}

std::string Header() {
  const ProviderConfig provider;
  return "# ~/.missy/config.yaml — shared by the Missy agent framework and missyd.\n"
         "# missyd reads `default_provider`, `providers` and its own `context:` section "
         "below, and\n"
         "# ignores every other top-level key. Inside `context:` unknown keys are errors.\n"
         "#\n"
         "# default_provider: openai\n"
         "# providers:\n"
         "#   openai:\n"
         "#     model: gpt-4o\n"
         "#     base_url: https://api.openai.com/v1\n"
         "#     api_key: sk-...          # shown as \"***\" by missyd's /v1/config\n"
         "#     timeout: " +
         std::to_string(provider.timeout_s) +
         "              # seconds (the default)\n"
         "#   ollama:\n"
         "#     model: llama3.1:8b\n"
         "#     base_url: http://localhost:11434/v1\n"
         "\n";
}

// The first component of a group path ("proxy" of "proxy.upstreams"; "" for "").
std::string_view TopGroup(std::string_view group) { return group.substr(0, group.find('.')); }

// The indentation of a key or group line inside `group`: two spaces per level.
std::string Indent(std::string_view group) {
  if (group.empty()) return "  ";
  return std::string(2 * (2 + std::count(group.begin(), group.end(), '.')), ' ');
}

// Writes the lines of the groups that hold `group` ("proxy", then "proxy.upstreams") and
// are not already open in `open` (the previous key's group).
void OpenGroups(std::string* out, std::string_view open, std::string_view group) {
  for (size_t end = group.find('.');; end = group.find('.', end + 1)) {
    const std::string_view prefix = group.substr(0, end);
    const bool already =
        open.starts_with(prefix) && (open.size() == prefix.size() || open[prefix.size()] == '.');
    if (!already) {
      const size_t dot = prefix.rfind('.');
      const std::string_view parent = dot == std::string_view::npos ? "" : prefix.substr(0, dot);
      const ConfigGroup* g = FindContextGroup(prefix);
      AppendLine(out, Indent(parent) + std::string(prefix.substr(dot + 1)) + ":",
                 g != nullptr ? g->doc : "");
    }
    if (end == std::string_view::npos) return;
  }
}

}  // namespace

std::string DefaultConfigYaml() {
  const DaemonConfig defaults;
  std::string out = Header() + "context:\n";
  std::string_view group;  // of the previous key; "" = directly under context
  bool first = true;
  for (const ConfigKey& key : ContextKeys()) {
    const size_t dot = key.path.rfind('.');
    const std::string_view key_group = dot == std::string_view::npos ? "" : key.path.substr(0, dot);
    const std::string_view leaf = key.path.substr(dot == std::string_view::npos ? 0 : dot + 1);
    if (key_group != group || first) {
      // A blank line between top-level groups; nested groups follow their parent's keys.
      const bool same_top = !first && TopGroup(key_group) == TopGroup(group) && !group.empty();
      if (!first && !same_top) out += "\n";
      if (!key_group.empty()) OpenGroups(&out, same_top ? group : "", key_group);
      group = key_group;
      first = false;
    }
    const std::string indent = Indent(key_group);
    for (std::string_view note = key.note; !note.empty();) {
      const size_t eol = note.find('\n');
      out += indent + "# " + std::string(note.substr(0, eol)) + "\n";
      note = eol == std::string_view::npos ? "" : note.substr(eol + 1);
    }
    AppendLine(&out, indent + std::string(leaf) + ": " + KeyValueYaml(key, defaults),
               CommentText(key));
  }
  return out;
}

}  // namespace missy

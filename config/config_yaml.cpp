// ParseConfig: YAML text -> DaemonConfig. The `context:` section is read strictly through
// the key table (config/key_table.h); Missy's default_provider and providers are read
// leniently; every other top-level key is ignored.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "config/config.h"
#include "config/key_table.h"
#include "config/paths.h"
#include "core/utf8.h"

namespace missy {
namespace {

// A model row's encoding when the row does not name one.
constexpr char kDefaultModelEncoding[] = "o200k_base";

bool IsQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

// How a node looks, for "expected X, got Y" messages.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

Status KeyError(const std::string& path, const std::string& reason) {
  return Status::InvalidArgument(path + ": " + reason, path);
}

Status ParseInt(const YAML::Node& node, const std::string& path, int64_t* out) {
  if (!node.IsScalar() || IsQuoted(node)) {
    return KeyError(path, "expected an integer, got " + Describe(node));
  }
  std::string_view text = node.Scalar();
  if (text.size() > 1 && text[0] == '+') text.remove_prefix(1);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return KeyError(path, "integer out of range, got " + Describe(node));
  }
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    return KeyError(path, "expected an integer, got " + Describe(node));
  }
  *out = v;
  return Status::Ok();
}

Status ParseDouble(const YAML::Node& node, const std::string& path, double* out) {
  if (!node.IsScalar() || IsQuoted(node)) {
    return KeyError(path, "expected a number, got " + Describe(node));
  }
  std::string_view text = node.Scalar();
  if (text.size() > 1 && text[0] == '+') text.remove_prefix(1);
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || !std::isfinite(v)) {
    return KeyError(path, "expected a number, got " + Describe(node));
  }
  *out = v;
  return Status::Ok();
}

Status ParseBool(const YAML::Node& node, const std::string& path, bool* out) {
  if (node.IsScalar() && !IsQuoted(node)) {
    std::string t = node.Scalar();
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (t == "true" || t == "yes" || t == "on") {
      *out = true;
      return Status::Ok();
    }
    if (t == "false" || t == "no" || t == "off") {
      *out = false;
      return Status::Ok();
    }
  }
  return KeyError(path, "expected true or false, got " + Describe(node));
}

Status ParseString(const YAML::Node& node, const std::string& path, std::string* out) {
  if (!node.IsScalar()) return KeyError(path, "expected a string, got " + Describe(node));
  *out = node.Scalar();
  return Status::Ok();
}

// Checks the keys of `node` (a mapping; null counts as empty): each must be a string for
// which known(key) holds, and appear once. `path_of(key)` names a key in errors.
template <typename IsKnown, typename PathOf>
Status CheckKeys(const YAML::Node& node, const std::string& path, IsKnown known, PathOf path_of) {
  if (node.IsNull()) return Status::Ok();
  if (!node.IsMap()) return KeyError(path, "expected a mapping, got " + Describe(node));
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      return KeyError(path, "keys must be strings, got " + Describe(kv.first));
    }
    const std::string& key = kv.first.Scalar();
    if (!known(key)) return KeyError(path_of(key), "unknown key");
    if (!seen.insert(key).second) return KeyError(path_of(key), "duplicate key");
  }
  return Status::Ok();
}

// One row of context.models, at `path` ("context.models[2]").
Status ParseModelRow(const YAML::Node& node, const std::string& path, ModelSpec* spec) {
  const auto path_of = [&](const std::string& key) { return path + "." + key; };
  if (!node.IsMap()) return KeyError(path, "expected a mapping, got " + Describe(node));
  static const std::set<std::string, std::less<>> kRowKeys = {
      "pattern", "context_window", "max_output_tokens", "encoding", "factor"};
  MISSY_RETURN_IF_ERROR(CheckKeys(
      node, path, [](const std::string& k) { return kRowKeys.contains(k); }, path_of));
  for (const char* required : {"pattern", "context_window", "max_output_tokens"}) {
    if (!node[required].IsDefined()) return KeyError(path_of(required), "required");
  }
  spec->encoding = kDefaultModelEncoding;
  for (const auto& kv : node) {
    const std::string& key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "pattern") MISSY_RETURN_IF_ERROR(ParseString(v, path_of(key), &spec->pattern));
    if (key == "encoding") MISSY_RETURN_IF_ERROR(ParseString(v, path_of(key), &spec->encoding));
    if (key == "context_window") {
      MISSY_RETURN_IF_ERROR(ParseInt(v, path_of(key), &spec->context_window));
    }
    if (key == "max_output_tokens") {
      MISSY_RETURN_IF_ERROR(ParseInt(v, path_of(key), &spec->max_output_tokens));
    }
    if (key == "factor") MISSY_RETURN_IF_ERROR(ParseDouble(v, path_of(key), &spec->factor));
  }
  return Status::Ok();  // ranges: ModelSpec::Validate()
}

Status ParseModelRows(const YAML::Node& node, const std::string& path, ModelTable* table) {
  if (node.IsNull()) return Status::Ok();
  if (!node.IsSequence()) return KeyError(path, "expected a list, got " + Describe(node));
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string row_path = path + "[" + std::to_string(i) + "]";
    ModelSpec spec;
    MISSY_RETURN_IF_ERROR(ParseModelRow(node[i], row_path, &spec));
    Status v = spec.Validate();
    if (!v.ok()) return KeyError(row_path + "." + v.field(), v.message());
    table->Upsert(std::move(spec));
  }
  return table->Validate();
}

// A StringListRule's value at `path`: one string, or a list of them, each checked by the
// rule's `item` and named by its index ("context.proxy.listen[1]"); none twice.
Status ParseStringList(const YAML::Node& node, const std::string& path, const StringListRule& rule,
                       const std::string& missy_home, std::vector<std::string>* out) {
  std::vector<std::pair<std::string, YAML::Node>> items;  // (path, node)
  if (node.IsScalar()) {
    items.emplace_back(path, node);
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      items.emplace_back(path + "[" + std::to_string(i) + "]", node[i]);
    }
  } else {
    return KeyError(path, "expected a string or a list of strings, got " + Describe(node));
  }
  if (items.empty() && !rule.may_be_empty) return KeyError(path, "must list at least one entry");
  std::vector<std::string> values;
  for (const auto& [item_path, item] : items) {
    std::string text;
    MISSY_RETURN_IF_ERROR(ParseString(item, item_path, &text));
    if (rule.item != nullptr) {
      Result<std::string> checked = rule.item(text, missy_home);
      if (!checked.ok()) return KeyError(item_path, checked.status().message());
      text = std::move(checked).value();
    }
    if (std::find(values.begin(), values.end(), text) != values.end()) {
      return KeyError(item_path, "'" + text + "' is listed twice");
    }
    values.push_back(std::move(text));
  }
  *out = std::move(values);
  return Status::Ok();
}

// context.proxy.routes: a list of {model, provider}, both required and not empty. The
// list replaces the previous one (null: no routes).
Status ParseProxyRoutes(const YAML::Node& node, const std::string& path,
                        std::vector<ProxyRoute>* routes) {
  if (node.IsNull()) {
    routes->clear();
    return Status::Ok();
  }
  if (!node.IsSequence()) return KeyError(path, "expected a list, got " + Describe(node));
  std::vector<ProxyRoute> out;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string row_path = path + "[" + std::to_string(i) + "]";
    const auto path_of = [&](const std::string& key) { return row_path + "." + key; };
    const YAML::Node& row = node[i];
    if (!row.IsMap()) return KeyError(row_path, "expected a mapping, got " + Describe(row));
    MISSY_RETURN_IF_ERROR(CheckKeys(
        row, row_path, [](const std::string& k) { return k == "model" || k == "provider"; },
        path_of));
    ProxyRoute route;
    for (const auto& [key, value] : {std::pair<const char*, std::string*>{"model", &route.model},
                                     {"provider", &route.provider}}) {
      const YAML::Node v = row[key];
      if (!v.IsDefined()) return KeyError(path_of(key), "required");
      MISSY_RETURN_IF_ERROR(ParseString(v, path_of(key), value));
      if (value->empty()) return KeyError(path_of(key), "must not be empty");
    }
    out.push_back(std::move(route));
  }
  *routes = std::move(out);
  return Status::Ok();
}

// Reads one leaf of the context section into `c` (paths are resolved later).
Status ReadKey(const ConfigKey& key, const YAML::Node& node, DaemonConfig* c) {
  const std::string path = ContextKeyPath(key.path);
  return std::visit(
      RuleVisitor{
          [&](const IntRule& rule) -> Status {
            int64_t v = 0;
            MISSY_RETURN_IF_ERROR(ParseInt(node, path, &v));
            if (v < rule.min) {
              const std::string reason =
                  rule.min == 0 ? "must not be negative" : "must be " + RangeText(rule);
              return KeyError(path, reason + ", got " + std::to_string(v));
            }
            rule.field.ref(*c) = v;
            return Status::Ok();
          },
          [&](const NumberRule& rule) -> Status {
            double v = 0;
            MISSY_RETURN_IF_ERROR(ParseDouble(node, path, &v));
            if ((rule.lo_open ? v <= rule.lo : v < rule.lo) || v > rule.hi) {
              return KeyError(path, "must be " + RangeText(rule) + ", got " + node.Scalar());
            }
            rule.field.ref(*c) = v;
            return Status::Ok();
          },
          [&](const BoolRule& rule) -> Status {
            return ParseBool(node, path, &rule.field.ref(*c));
          },
          [&](const PathRule& rule) -> Status {
            std::string v;
            MISSY_RETURN_IF_ERROR(ParseString(node, path, &v));
            if (v.empty() && !rule.may_be_empty) return KeyError(path, "must not be empty");
            rule.field.ref(*c) = std::move(v);
            return Status::Ok();
          },
          [&](const StringRule& rule) -> Status {
            std::string v;
            MISSY_RETURN_IF_ERROR(ParseString(node, path, &v));
            if (rule.check != nullptr) {
              if (Status s = rule.check(v); !s.ok()) return KeyError(path, s.message());
            }
            rule.field.ref(*c) = std::move(v);
            return Status::Ok();
          },
          [&](const ChoiceRule& rule) -> Status {
            std::string v;
            MISSY_RETURN_IF_ERROR(ParseString(node, path, &v));
            std::string list;
            for (std::string_view choice : rule.choices) {
              if (choice == v) {
                rule.set(*c, choice);
                return Status::Ok();
              }
              list += list.empty() ? "" : ", ";
              list += choice;
            }
            return KeyError(path, "expected one of " + list + "; got '" + v + "'");
          },
          [&](const ModelRowsRule& rule) -> Status {
            return ParseModelRows(node, path, &rule.field.ref(*c));
          },
          [&](const StringListRule& rule) -> Status {
            return ParseStringList(node, path, rule, c->missy_home, &rule.field.ref(*c));
          },
          [&](const ProxyRoutesRule& rule) -> Status {
            return ParseProxyRoutes(node, path, &rule.field.ref(*c));
          },
      },
      key.rule);
}

// Reads the mapping of the context section whose keys are below `prefix` ("" for the
// section itself, "budget" for context.budget): keys first (unknown, duplicate), then
// values in document order.
Status ReadContextMapping(const YAML::Node& node, const std::string& prefix, DaemonConfig* c) {
  const auto path_of = [&](const std::string& key) {
    return prefix.empty() ? key : prefix + "." + key;
  };
  const auto known = [&](const std::string& key) {
    const std::string path = path_of(key);
    return FindContextKey(path) != nullptr || FindContextGroup(path) != nullptr;
  };
  const std::string here = prefix.empty() ? "context" : ContextKeyPath(prefix);
  MISSY_RETURN_IF_ERROR(CheckKeys(
      node, here, known, [&](const std::string& key) { return ContextKeyPath(path_of(key)); }));
  if (node.IsNull()) return Status::Ok();
  for (const auto& kv : node) {
    const std::string path = path_of(kv.first.Scalar());
    if (const ConfigKey* key = FindContextKey(path)) {
      MISSY_RETURN_IF_ERROR(ReadKey(*key, kv.second, c));
    } else {
      MISSY_RETURN_IF_ERROR(ReadContextMapping(kv.second, path, c));
    }
  }
  return Status::Ok();
}

Status ParseContext(const YAML::Node& node, const std::string& missy_home, DaemonConfig* c) {
  MISSY_RETURN_IF_ERROR(ReadContextMapping(node, "", c));
  if (Status s = CheckCrossFieldRules(*c); !s.ok()) {
    return KeyError(ContextKeyPath(s.field()), s.message());
  }
  for (const ConfigKey& key : ContextKeys()) {
    const PathRule* rule = std::get_if<PathRule>(&key.rule);
    if (rule == nullptr) continue;
    std::string& value = rule->field.ref(*c);
    if (value.empty() && rule->may_be_empty) continue;
    Result<std::string> resolved = ResolveConfigPath(value, missy_home, ContextKeyPath(key.path));
    if (!resolved.ok()) return resolved.status();
    value = std::move(resolved).value();
  }
  return Status::Ok();
}

// Missy's keys: lenient about what the daemon does not use, typed where it does.
Status ParseProviders(const YAML::Node& node, DaemonConfig* c) {
  if (node.IsNull()) return Status::Ok();
  if (!node.IsMap()) return KeyError("providers", "expected a mapping, got " + Describe(node));
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return KeyError("providers", "keys must be strings");
    const std::string name = kv.first.Scalar();
    const std::string path = "providers." + name;
    const YAML::Node& p = kv.second;
    ProviderConfig pc;
    if (p.IsNull()) {
      c->providers[name] = std::move(pc);
      continue;
    }
    if (!p.IsMap()) return KeyError(path, "expected a mapping, got " + Describe(p));
    const std::pair<const char*, std::string*> string_keys[] = {
        {"model", &pc.model}, {"base_url", &pc.base_url}, {"api_key", &pc.api_key}};
    for (const auto& [key, out] : string_keys) {
      const YAML::Node v = p[key];
      if (!v.IsDefined() || v.IsNull()) continue;
      MISSY_RETURN_IF_ERROR(ParseString(v, path + "." + key, out));
    }
    const YAML::Node timeout = p["timeout"];
    if (timeout.IsDefined() && !timeout.IsNull()) {
      double seconds = 0;
      MISSY_RETURN_IF_ERROR(ParseDouble(timeout, path + ".timeout", &seconds));
      if (seconds <= 0) {
        return KeyError(path + ".timeout", "must be > 0, got " + timeout.Scalar());
      }
      pc.timeout_s = static_cast<int64_t>(std::ceil(seconds));
    }
    c->providers[name] = std::move(pc);
  }
  return Status::Ok();
}

Result<DaemonConfig> ParseConfigImpl(std::string_view yaml_text, const std::string& missy_home) {
  // YAML is UTF-8; anything else would reach /v1/config as invalid JSON.
  if (size_t bad = InvalidUtf8At(yaml_text); bad != std::string_view::npos) {
    const size_t line =
        1 + static_cast<size_t>(std::count(yaml_text.begin(), yaml_text.begin() + bad, '\n'));
    return Status::InvalidArgument("line " + std::to_string(line) +
                                   ": the config is not valid UTF-8 (byte " + std::to_string(bad) +
                                   ")");
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    std::string where;
    if (!e.mark.is_null()) {
      where = "line " + std::to_string(e.mark.line + 1) + ", column " +
              std::to_string(e.mark.column + 1) + ": ";
    }
    return Status::InvalidArgument(where + "YAML syntax error: " + e.msg);
  }
  if (!root.IsNull() && !root.IsMap()) {
    return Status::InvalidArgument("expected a mapping at the top level, got " + Describe(root));
  }

  DaemonConfig c;
  c.missy_home = missy_home;
  // A missing key is yaml-cpp's undefined ("zombie") node, which throws on use.
  const auto get = [&root](const char* key) {
    const YAML::Node& r = root;
    return root.IsMap() ? r[key] : YAML::Node(YAML::NodeType::Undefined);
  };
  const YAML::Node default_provider = get("default_provider");
  if (default_provider.IsDefined() && !default_provider.IsNull()) {
    MISSY_RETURN_IF_ERROR(ParseString(default_provider, "default_provider", &c.default_provider));
  }
  const YAML::Node providers = get("providers");
  if (providers.IsDefined()) MISSY_RETURN_IF_ERROR(ParseProviders(providers, &c));
  const YAML::Node context = get("context");
  MISSY_RETURN_IF_ERROR(ParseContext(context.IsDefined() ? context : YAML::Node(), missy_home, &c));
  return c;
}

}  // namespace

Result<DaemonConfig> ParseConfig(std::string_view yaml_text, const std::string& missy_home) {
  try {
    return ParseConfigImpl(yaml_text, missy_home);
  } catch (const std::exception& e) {  // yaml-cpp throws on some malformed input
    return Status::InvalidArgument(std::string("cannot parse config: ") + e.what());
  }
}

}  // namespace missy

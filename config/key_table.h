// The `context:` section of config.yaml as one table. Each row is a key path below
// `context:`, a one-line doc and a rule: which DaemonConfig member the key sets and which
// values it accepts. Parsing (config_yaml.cpp), the default file (default_config_yaml.cpp)
// and /v1/config (effective_config.cpp) are derived from it, so a key is added, renamed
// or documented in one row, and its default stays the member's in-class initializer.
// The table is immutable static data, safe to read from any thread.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.h"
#include "core/model_table.h"
#include "core/status.h"

namespace missy {

// One member of a DaemonConfig (possibly inside an embedded struct).
template <typename T>
struct Field {
  T& (*ref)(DaemonConfig&);
  const T& (*get)(const DaemonConfig&);
};

inline constexpr double kNoUpperBound = std::numeric_limits<double>::infinity();

// An integer >= min.
struct IntRule {
  Field<int64_t> field;
  int64_t min = 0;
};

// A number in [lo, hi], or in (lo, hi] when lo_open; hi may be kNoUpperBound.
struct NumberRule {
  Field<double> field;
  double lo = 0;
  double hi = kNoUpperBound;
  bool lo_open = false;
};

// true/yes/on or false/no/off, unquoted.
struct BoolRule {
  Field<bool> field;
};

// A path: "~" and "~/x" are under $HOME, a relative path is under missy_home. Empty is an
// error unless may_be_empty (then it means "not set" and stays empty).
struct PathRule {
  Field<std::string> field;
  bool may_be_empty = false;
};

// Any string, kept as written ("" allowed: it means "not set"), unless `check` is set:
// then only the strings it accepts ("" included only if it says so), and `accepts` says
// which in words. check's message is the reason; the key path is prepended to it.
struct StringRule {
  Field<std::string> field;
  bool secret = false;  // shown as "***" (when set) by /v1/config, never logged
  Status (*check)(std::string_view value) = nullptr;
  std::string_view accepts = {};  // with check: "http:// or https:// URL"
};

// A non-empty list of distinct strings; a single string is a list of one. `item` checks
// one entry and returns it as stored (canonical form, paths resolved against missy_home);
// its message is the reason, the entry's path ("context.proxy.listen[1]") is prepended.
// The default file and /v1/config show the list as a flow sequence / array.
struct StringListRule {
  Field<std::vector<std::string>> field;
  Result<std::string> (*item)(std::string_view text, const std::string& missy_home) = nullptr;
  std::string_view accepts = {};  // one entry, in words: "127.0.0.1:PORT | [::1]:PORT | ..."
  bool may_be_empty = false;      // [] is a value (else: at least one entry)
};

// A list of proxy routes {model, provider}, both non-empty strings (that the provider is
// among `providers` is a cross-key rule). The key's value in a default file is [].
struct ProxyRoutesRule {
  Field<std::vector<ProxyRoute>> field;
};

// One of `choices`, a string. set() is only ever called with one of them.
struct ChoiceRule {
  std::span<const std::string_view> choices;
  std::string_view (*get)(const DaemonConfig&);
  void (*set)(DaemonConfig&, std::string_view);
};

// A list of model rows {pattern, context_window, max_output_tokens, encoding, factor}
// upserted in order into the table (built-in rows stay unless a row's pattern replaces
// them). The key's value in a default file is an empty list.
struct ModelRowsRule {
  Field<ModelTable> field;
};

using KeyRule = std::variant<IntRule, NumberRule, BoolRule, PathRule, StringRule, ChoiceRule,
                             ModelRowsRule, StringListRule, ProxyRoutesRule>;

// One lambda per rule type for std::visit over a KeyRule:
// std::visit(RuleVisitor{[](const IntRule&) {...}, ...}, key.rule).
template <class... Lambdas>
struct RuleVisitor : Lambdas... {
  using Lambdas::operator()...;
};
template <class... Lambdas>
RuleVisitor(Lambdas...) -> RuleVisitor<Lambdas...>;  // clang 14 needs the guide

struct ConfigKey {
  std::string_view path;  // below `context:`, dot-separated: "budget.total"
  std::string_view doc;   // one line: the key's comment in the default file
  KeyRule rule;
  std::string_view note = {};  // comment lines written above the key ('\n'-separated)
};

// A mapping of keys: the group "budget" holds the rows whose path starts with "budget.".
// Groups may nest: "proxy.upstreams" is a group inside "proxy".
struct ConfigGroup {
  std::string_view path;
  std::string_view doc;  // one line: the group's comment in the default file
};

// Every key of the context section, in the default file's order (a group's keys, those
// of its subgroups included, are contiguous; a subgroup's keys come after its group's own).
std::span<const ConfigKey> ContextKeys();
std::span<const ConfigGroup> ContextGroups();

// The row or group with this path below `context:`, or nullptr.
const ConfigKey* FindContextKey(std::string_view path);
const ConfigGroup* FindContextGroup(std::string_view path);

// "context." + path: how errors and docs name a key.
std::string ContextKeyPath(std::string_view path);

// The rules between keys, checked once every key is read (reserves within total,
// memory + learnings fractions within 1, calibration bounds, the llm summarizer backend's
// provider among `providers` with a model, each proxy route's provider among `providers`,
// field "proxy.routes[2].provider"): Ok, or InvalidArgument
// whose message is the reason and whose field() is the key to blame, below `context:`
// ("budget.system_reserve").
Status CheckCrossFieldRules(const DaemonConfig& config);

// The key's value in `config`, as YAML ("20800", "0.8", "\"\"", "[]" for model rows,
// "[\"127.0.0.1:8788\"]" for a string list, "[{model: \"llama*\", provider: ollama}]").
std::string KeyValueYaml(const ConfigKey& key, const DaemonConfig& config);

// What the key accepts, in words: "integer, at least 16", "true | false",
// "exact | heuristic", "path (\"\" = not set)".
std::string AcceptedText(const ConfigKey& key);

// docs/CONFIG.md's generated reference: one Markdown table per group of keys (key,
// default, accepted values, meaning), from the table and a default DaemonConfig.
std::string ConfigReferenceMarkdown();

// The shortest text that reads back as the same double ("0.15", "1", "1e+30").
std::string FormatNumber(double v);

// What a rule accepts, in words: "at least 16", "in (0, 1]", "at least 1"; for an
// IntRule with min 0, "not negative".
std::string RangeText(const IntRule& rule);
std::string RangeText(const NumberRule& rule);

}  // namespace missy

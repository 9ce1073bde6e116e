#include "config/key_table.h"

#include <gtest/gtest.h>

#include <functional>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "config/config.h"
#include "config_test_util.h"

namespace missy {
namespace {

using ::missy::testing::DifferingMembers;
using ::missy::testing::kHome;
using ::missy::testing::ParseOrDie;
using ::missy::testing::ResolvedDefaults;

// The DaemonConfig member each YAML key sets, written independently of the table (the
// YAML names users have are kept; the members are the core structs' names).
const std::map<std::string, std::string>& ExpectedMembers() {
  static const auto* members = new std::map<std::string, std::string>{
      {"socket", "socket_path"},
      {"audit_socket", "audit_socket_path"},
      {"database", "database_path"},
      {"data_dir", "data_dir"},
      {"log_level", "log_level"},
      {"budget.total", "budget.total"},
      {"budget.system_reserve", "budget.system_reserve"},
      {"budget.tool_definitions_reserve", "budget.tool_definitions_reserve"},
      {"budget.memory_fraction", "budget.memory_fraction"},
      {"budget.learnings_fraction", "budget.learnings_fraction"},
      {"budget.fresh_tail_count", "budget.fresh_tail_count"},
      {"threshold_pct", "context.threshold_pct"},
      {"message_threshold", "context.message_threshold"},
      {"tool_output_max_tokens", "context.tool_output_max_tokens"},
      {"task_max_tokens", "context.task_max_tokens"},
      {"summarize_evicted", "context.summarize_evicted"},
      {"squeeze_at_move", "context.squeeze_at_move"},
      {"strict", "strict"},
      {"pruning.protect_turns", "pruning.protect_user_turns"},
      {"pruning.protect_tokens", "pruning.protect_tool_tokens"},
      {"pruning.minimum_freed", "pruning.minimum_freed_tokens"},
      {"summarizer.leaf_chunk_tokens", "summarizer.leaf_chunk_tokens"},
      {"summarizer.condensed_fanout", "summarizer.condensed_fanout"},
      {"summarizer.leaf_target_tokens", "summarizer.leaf_target_tokens"},
      {"summarizer.condensed_target_tokens", "summarizer.condensed_target_tokens"},
      {"summarizer.backend", "summarizer_backend.backend"},
      {"summarizer.provider", "summarizer_backend.provider"},
      {"tokenizer", "tokenizer"},
      {"image_tokens", "image_tokens"},
      {"calibration.min_ratio", "calibration.min_ratio"},
      {"calibration.max_ratio", "calibration.max_ratio"},
      {"calibration.alpha", "calibration.alpha"},
      {"limits.max_body_bytes", "limits.max_body_bytes"},
      {"limits.read_timeout_ms", "limits.read_timeout_ms"},
      {"limits.audit_client_buffer_bytes", "limits.audit_client_buffer_bytes"},
      {"limits.memory_mb", "limits.memory_mb"},
      {"limits.cache_idle_seconds", "limits.cache_idle_seconds"},
      {"audit.retention_days", "audit.retention_days"},
      {"audit.retention_events", "audit.retention_events"},
      {"audit.mirror", "audit.mirror"},
      {"audit.mirror_max_bytes", "audit.mirror_max_bytes"},
      {"audit.mirror_files", "audit.mirror_files"},
      {"broker.url", "broker.url"},
      {"broker.user", "broker.user"},
      {"broker.password", "broker.password"},
      {"broker.token", "broker.token"},
      {"broker.subject_prefix", "broker.subject_prefix"},
      {"broker.daemon_id", "broker.daemon_id"},
      {"broker.creds_file", "broker.creds_file"},
      {"broker.ca_file", "broker.ca_file"},
      {"broker.audit", "broker.audit"},
      {"broker.jobs", "broker.jobs"},
      {"broker.job_timeout_ms", "broker.job_timeout_ms"},
      {"broker.job_ack_wait_ms", "broker.job_ack_wait_ms"},
      {"broker.job_max_deliver", "broker.job_max_deliver"},
      {"broker.jobs_in_flight", "broker.jobs_in_flight"},
      {"proxy.enabled", "proxy.enabled"},
      {"proxy.listen", "proxy.listen"},
      {"proxy.memory", "proxy.memory"},
      {"proxy.token_file", "proxy.token_file"},
      {"proxy.timeout_ms", "proxy.timeout_ms"},
      {"proxy.max_body_bytes", "proxy.max_body_bytes"},
      {"proxy.routes", "proxy.routes"},
      {"proxy.upstreams.anthropic", "proxy.anthropic_upstream"},
      {"proxy.upstreams.openai", "proxy.openai_upstream"},
      {"ui.enabled", "ui.enabled"},
      {"ui.listen", "ui.listen"},
      {"models", "models"},
  };
  return *members;
}

std::string Number(double v) {
  std::ostringstream ss;
  ss << std::setprecision(17) << v;
  return ss.str();
}

// The YAML document that sets only `path` ("budget.total", "proxy.upstreams.openai") to
// `value`.
std::string SetKeyYaml(std::string_view path, const std::string& value) {
  std::string yaml = "context:";
  std::string indent = "\n  ";
  for (size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.')) {
    yaml += indent + std::string(path.substr(0, dot)) + ":";
    indent += "  ";
    path.remove_prefix(dot + 1);
  }
  return yaml + indent + std::string(path) + ": " + value;
}

TEST(KeyTableTest, EveryKeyHasAnExpectedMemberAndViceVersa) {
  std::set<std::string> table;
  for (const ConfigKey& key : ContextKeys()) {
    EXPECT_TRUE(table.insert(std::string(key.path)).second) << "duplicate " << key.path;
    EXPECT_TRUE(ExpectedMembers().contains(std::string(key.path))) << key.path;
    EXPECT_FALSE(key.doc.empty()) << key.path;
    EXPECT_EQ(key.doc.find('\n'), std::string_view::npos) << key.path;
  }
  EXPECT_EQ(table.size(), ExpectedMembers().size());
}

// Setting one key to a value other than its default changes exactly the member it names,
// to that value.
TEST(KeyTableTest, EachKeySetsExactlyItsMember) {
  const DaemonConfig defaults;
  for (const ConfigKey& key : ContextKeys()) {
    SCOPED_TRACE(std::string(key.path));
    std::string yaml_value;
    std::function<void(const DaemonConfig&)> check;
    std::visit(
        [&](const auto& rule) {
          using Rule = std::decay_t<decltype(rule)>;
          if constexpr (std::is_same_v<Rule, IntRule>) {
            const int64_t v = rule.field.get(defaults) + 1;
            yaml_value = std::to_string(v);
            check = [rule, v](const DaemonConfig& c) { EXPECT_EQ(rule.field.get(c), v); };
          } else if constexpr (std::is_same_v<Rule, NumberRule>) {
            const double d = rule.field.get(defaults);
            const double v = rule.hi == kNoUpperBound ? d + 1
                             : d < rule.hi            ? (d + rule.hi) / 2
                                                      : (rule.lo + d) / 2;
            yaml_value = Number(v);
            check = [rule, v](const DaemonConfig& c) { EXPECT_DOUBLE_EQ(rule.field.get(c), v); };
          } else if constexpr (std::is_same_v<Rule, BoolRule>) {
            const bool v = !rule.field.get(defaults);
            yaml_value = v ? "true" : "false";
            check = [rule, v](const DaemonConfig& c) { EXPECT_EQ(rule.field.get(c), v); };
          } else if constexpr (std::is_same_v<Rule, PathRule>) {
            const std::string leaf = "elsewhere/" + std::string(key.path) + ".x";
            yaml_value = leaf;
            check = [rule, leaf](const DaemonConfig& c) {
              EXPECT_EQ(rule.field.get(c), std::string(kHome) + "/" + leaf);
            };
          } else if constexpr (std::is_same_v<Rule, StringRule>) {
            const std::string v = rule.field.get(defaults) + "other";
            yaml_value = v;
            check = [rule, v](const DaemonConfig& c) { EXPECT_EQ(rule.field.get(c), v); };
          } else if constexpr (std::is_same_v<Rule, ChoiceRule>) {
            std::string_view v;
            for (std::string_view choice : rule.choices) {
              if (choice != rule.get(defaults)) v = choice;
            }
            ASSERT_FALSE(v.empty());
            yaml_value = std::string(v);
            check = [rule, v](const DaemonConfig& c) { EXPECT_EQ(rule.get(c), v); };
          } else if constexpr (std::is_same_v<Rule, StringListRule>) {
            if (key.path == "ui.listen") {  // loopback TCP only
              yaml_value = "[localhost:9, \"[::1]:10\"]";
              check = [rule](const DaemonConfig& c) {
                EXPECT_EQ(rule.field.get(c),
                          (std::vector<std::string>{"127.0.0.1:9", "[::1]:10"}));
              };
              return;
            }
            ASSERT_EQ(key.path, "proxy.listen") << "a new list key: give it a value here";
            yaml_value = "[localhost:9, \"unix:x.sock\"]";
            check = [rule](const DaemonConfig& c) {
              EXPECT_EQ(rule.field.get(c),
                        (std::vector<std::string>{"127.0.0.1:9",
                                                  "unix:" + std::string(kHome) + "/x.sock"}));
            };
          } else if constexpr (std::is_same_v<Rule, ProxyRoutesRule>) {
            yaml_value = "[{model: \"zz*\", provider: p}]";
            check = [rule](const DaemonConfig& c) {
              EXPECT_EQ(rule.field.get(c), (std::vector<ProxyRoute>{{"zz*", "p"}}));
            };
          } else {
            static_assert(std::is_same_v<Rule, ModelRowsRule>);
            yaml_value = "[{pattern: zz-key-table, context_window: 1000, max_output_tokens: 10}]";
            check = [rule](const DaemonConfig& c) {
              const ModelTable& t = rule.field.get(c);
              EXPECT_EQ(t.rows().size(), ModelTable::Builtin().rows().size() + 1);
              ASSERT_TRUE(t.Lookup("zz-key-table").has_value());
              EXPECT_EQ(t.Lookup("zz-key-table")->context_window, 1000);
            };
          }
        },
        key.rule);
    // The llm summarizer backend needs a provider: both configs get one.
    DaemonConfig base = ResolvedDefaults();
    std::string prerequisites;
    if (key.path == "summarizer.backend") {
      prerequisites = "default_provider: p\nproviders:\n  p: {model: m}\n";
      base.default_provider = "p";
      base.providers["p"].model = "m";
    }
    if (key.path == "proxy.routes") {  // a route's provider must exist
      prerequisites = "providers:\n  p: {model: m}\n";
      base.providers["p"].model = "m";
    }
    if (key.path == "broker.jobs") {  // jobs need a broker: without a url, refused by name
      Result<DaemonConfig> refused = ParseConfig(SetKeyYaml(key.path, yaml_value), kHome);
      ASSERT_FALSE(refused.ok());
      EXPECT_NE(refused.status().message().find("context.broker.jobs"), std::string::npos)
          << refused.status().message();
      continue;
    }
    const std::string yaml = prerequisites + SetKeyYaml(key.path, yaml_value);
    Result<DaemonConfig> parsed = ParseConfig(yaml, kHome);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << yaml;
    check(*parsed);
    const std::vector<std::string> changed = DifferingMembers(base, *parsed);
    ASSERT_EQ(changed.size(), 1u) << yaml << "\n" << ::testing::PrintToString(changed);
    const std::string& member = ExpectedMembers().at(std::string(key.path));
    EXPECT_EQ(changed[0].substr(0, member.size() + 1), member + ":") << changed[0];
  }
}

// Groups nest ("proxy.upstreams" inside "proxy"): every group holding a key is documented,
// a group's keys (its subgroups' included) are contiguous, and a subgroup's keys come
// after its group's own.
TEST(KeyTableTest, GroupsAreContiguousAndDocumented) {
  std::set<std::string_view> closed;   // groups whose keys have ended
  std::set<std::string_view> current;  // groups holding the previous key
  std::string_view previous_group;
  std::set<std::string_view> used;
  for (const ConfigKey& key : ContextKeys()) {
    std::set<std::string_view> holding;
    for (size_t dot = key.path.find('.'); dot != std::string_view::npos;
         dot = key.path.find('.', dot + 1)) {
      holding.insert(key.path.substr(0, dot));
    }
    for (std::string_view g : current) {
      if (!holding.contains(g)) closed.insert(g);
    }
    for (std::string_view g : holding) {
      EXPECT_FALSE(closed.contains(g)) << key.path << ": group " << g << " split in two";
      EXPECT_NE(FindContextGroup(g), nullptr) << key.path << ": group " << g;
      used.insert(g);
    }
    const size_t last = key.path.rfind('.');
    const std::string_view group = last == std::string_view::npos ? "" : key.path.substr(0, last);
    EXPECT_FALSE(previous_group.starts_with(std::string(group) + ".") && !group.empty())
        << key.path << ": after a key of its subgroup " << previous_group;
    previous_group = group;
    current = std::move(holding);
    EXPECT_EQ(FindContextKey(key.path), &key);
  }
  for (const ConfigGroup& g : ContextGroups()) {
    EXPECT_TRUE(used.contains(g.path)) << g.path << " has no key";
    EXPECT_FALSE(g.doc.empty()) << g.path;
    EXPECT_EQ(FindContextKey(g.path), nullptr) << g.path;
  }
  EXPECT_EQ(FindContextKey("budget"), nullptr);
  EXPECT_EQ(FindContextKey("nope"), nullptr);
  EXPECT_EQ(ContextKeyPath("budget.total"), "context.budget.total");
}

TEST(KeyTableTest, CrossFieldRulesNameTheKeyBelowContext) {
  DaemonConfig c;
  EXPECT_TRUE(CheckCrossFieldRules(c).ok());
  c.budget.total = 1000;
  Status s = CheckCrossFieldRules(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "budget.system_reserve");
  EXPECT_EQ(s.message(), "system_reserve + tool_definitions_reserve (4000) exceed total (1000)");

  c = DaemonConfig{};
  c.calibration.max_ratio = 0.5;
  s = CheckCrossFieldRules(c);
  EXPECT_EQ(s.field(), "calibration.max_ratio");
}

// The llm summarizer backend needs an existing provider with a model; the error names the
// key to fix.
TEST(KeyTableTest, TheLlmSummarizerBackendNeedsAProvider) {
  DaemonConfig c;
  c.summarizer_backend.backend = "llm";
  Status s = CheckCrossFieldRules(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "summarizer.backend");
  c.summarizer_backend.provider = "local";
  s = CheckCrossFieldRules(c);
  EXPECT_EQ(s.field(), "summarizer.provider");
  EXPECT_NE(s.message().find("'local'"), std::string::npos) << s.message();
  c.providers["local"].base_url = "http://127.0.0.1:1";
  EXPECT_NE(CheckCrossFieldRules(c).message().find("no model"), std::string::npos);
  c.providers["local"].model = "m";
  EXPECT_TRUE(CheckCrossFieldRules(c).ok());
  c.summarizer_backend.provider.clear();
  c.default_provider = "local";
  EXPECT_TRUE(CheckCrossFieldRules(c).ok());
  // An extractive backend ignores the provider.
  c = DaemonConfig{};
  c.summarizer_backend.provider = "nowhere";
  EXPECT_TRUE(CheckCrossFieldRules(c).ok());
}

TEST(KeyTableTest, SummarizerBackendKeysParseAndAreChecked) {
  Result<DaemonConfig> r = ParseConfig("context:\n  summarizer:\n    backend: gpt\n", kHome);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "context.summarizer.backend");
  EXPECT_NE(r.status().message().find("extractive, llm"), std::string::npos)
      << r.status().message();
  r = ParseConfig("context:\n  summarizer:\n    backend: llm\n    provider: nope\n", kHome);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "context.summarizer.provider");
  const DaemonConfig c = ParseOrDie(
      "providers:\n  local: {model: qwen, base_url: 'http://127.0.0.1:8080/v1'}\n"
      "context:\n  summarizer: {backend: llm, provider: local}\n");
  EXPECT_EQ(c.summarizer_backend.backend, "llm");
  EXPECT_EQ(c.summarizer_backend.provider, "local");
}

// Each proxy route names an existing provider; the error names the row.
TEST(KeyTableTest, ProxyRoutesNeedAnExistingProvider) {
  DaemonConfig c;
  c.proxy.routes = {{"gpt*", "openai"}, {"llama*", "ollama"}};
  c.providers["openai"].model = "gpt-4o";
  Status s = CheckCrossFieldRules(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "proxy.routes[1].provider");
  EXPECT_EQ(s.message(), "the route's provider 'ollama' is not among providers");
  c.providers["ollama"];
  EXPECT_TRUE(CheckCrossFieldRules(c).ok());
}

TEST(KeyTableTest, NumbersAndRangesInWords) {
  EXPECT_EQ(FormatNumber(0.15), "0.15");
  EXPECT_EQ(FormatNumber(1), "1");
  EXPECT_EQ(FormatNumber(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatNumber(-0.5), "-0.5");
  EXPECT_EQ(RangeText(IntRule{{}, 0}), "not negative");
  EXPECT_EQ(RangeText(IntRule{{}, 16}), "at least 16");
  EXPECT_EQ(RangeText(NumberRule{{}, 0, 1}), "in [0, 1]");
  EXPECT_EQ(RangeText(NumberRule{{}, 0, 1, true}), "in (0, 1]");
  EXPECT_EQ(RangeText(NumberRule{{}, 1}), "at least 1");
}

TEST(KeyTableTest, TokenizerModeNames) {
  EXPECT_EQ(TokenizerModeName(TokenizerMode::kExact), "exact");
  EXPECT_EQ(TokenizerModeName(TokenizerMode::kHeuristic), "heuristic");
  EXPECT_EQ(ParseOrDie("context: {tokenizer: exact}").tokenizer, TokenizerMode::kExact);
  EXPECT_EQ(ParseOrDie("context: {tokenizer: heuristic}").tokenizer, TokenizerMode::kHeuristic);
}

}  // namespace
}  // namespace missy

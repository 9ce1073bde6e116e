#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "config/config.h"
#include "config/key_table.h"
#include "config_test_util.h"

namespace missy {
namespace {

using ::missy::testing::DifferingMembers;
using ::missy::testing::ExpectDefaults;
using ::missy::testing::kHome;
using ::missy::testing::ParseOrDie;
using ::missy::testing::ResolvedDefaults;

// The line of the default file that sets the context key `path` ("budget.total",
// "proxy.upstreams.openai"), found under its groups' lines, each indented two more spaces;
// "" when absent.
std::string KeyLine(const std::string& yaml, std::string_view path) {
  size_t from = yaml.find("\ncontext:\n");
  if (from == std::string::npos) return "";
  std::string indent = "\n  ";
  for (size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.')) {
    from = yaml.find(indent + std::string(path.substr(0, dot)) + ":", from);
    if (from == std::string::npos) return "";
    indent += "  ";
    path.remove_prefix(dot + 1);
  }
  const size_t at = yaml.find(indent + std::string(path) + ": ", from);
  if (at == std::string::npos) return "";
  return yaml.substr(at + 1, yaml.find('\n', at + 1) - at - 1);
}

TEST(DefaultConfigYamlTest, DefaultYamlParsesToDefaults) {
  const std::string yaml = DefaultConfigYaml();
  DaemonConfig from_default = ParseOrDie(yaml);
  ExpectDefaults(from_default);
  EXPECT_EQ(EffectiveConfigJson(from_default), EffectiveConfigJson(ParseOrDie("")));
}

TEST(DefaultConfigYamlTest, DefaultYamlListsEveryContextKeyWithComment) {
  const std::string yaml = DefaultConfigYaml();
  const char* keys[] = {"socket",
                        "audit_socket",
                        "database",
                        "data_dir",
                        "log_level",
                        "total",
                        "system_reserve",
                        "tool_definitions_reserve",
                        "memory_fraction",
                        "learnings_fraction",
                        "fresh_tail_count",
                        "threshold_pct",
                        "message_threshold",
                        "tool_output_max_tokens",
                        "task_max_tokens",
                        "strict",
                        "protect_turns",
                        "protect_tokens",
                        "minimum_freed",
                        "leaf_chunk_tokens",
                        "condensed_fanout",
                        "leaf_target_tokens",
                        "condensed_target_tokens",
                        "backend",
                        "provider",
                        "tokenizer",
                        "image_tokens",
                        "min_ratio",
                        "max_ratio",
                        "alpha",
                        "max_body_bytes",
                        "read_timeout_ms",
                        "audit_client_buffer_bytes",
                        "memory_mb",
                        "cache_idle_seconds",
                        "retention_days",
                        "retention_events",
                        "models"};
  for (const char* key : keys) {
    SCOPED_TRACE(key);
    const size_t at = yaml.find(std::string("\n  ") + key + ":");
    const size_t nested = yaml.find(std::string("\n    ") + key + ":");
    const size_t pos = at != std::string::npos ? at : nested;
    ASSERT_NE(pos, std::string::npos);
    const size_t eol = yaml.find('\n', pos + 1);
    if (std::string(key) != "models") {
      EXPECT_NE(yaml.substr(pos, eol - pos).find('#'), std::string::npos)
          << yaml.substr(pos, eol - pos);
    }
  }
  EXPECT_NE(yaml.find("# default_provider:"), std::string::npos);
  EXPECT_NE(yaml.find("#     api_key:"), std::string::npos);
}

TEST(DefaultConfigYamlTest, EveryTableKeyHasItsDocAndDefaultValue) {
  const std::string yaml = DefaultConfigYaml();
  const DaemonConfig defaults;
  for (const ConfigKey& key : ContextKeys()) {
    SCOPED_TRACE(std::string(key.path));
    const std::string line = KeyLine(yaml, key.path);
    ASSERT_FALSE(line.empty()) << yaml;
    const size_t colon = line.find(": ");
    const size_t hash = line.find("  # ");
    ASSERT_NE(hash, std::string::npos) << line;
    EXPECT_EQ(line.substr(hash + 4, key.doc.size()), key.doc) << line;
    const std::string value = line.substr(colon + 2, line.find_last_not_of(' ', hash) - colon - 1);
    std::visit(
        [&](const auto& rule) {
          using Rule = std::decay_t<decltype(rule)>;
          if constexpr (std::is_same_v<Rule, IntRule>) {
            EXPECT_EQ(value, std::to_string(rule.field.get(defaults)));
          } else if constexpr (std::is_same_v<Rule, NumberRule>) {
            EXPECT_EQ(std::strtod(value.c_str(), nullptr), rule.field.get(defaults)) << value;
          } else if constexpr (std::is_same_v<Rule, BoolRule>) {
            EXPECT_EQ(value, rule.field.get(defaults) ? "true" : "false");
          } else if constexpr (std::is_same_v<Rule, PathRule>) {
            const std::string& v = rule.field.get(defaults);
            EXPECT_EQ(value, v.empty() ? std::string("\"\"") : v);
          } else if constexpr (std::is_same_v<Rule, StringRule>) {
            const std::string& v = rule.field.get(defaults);  // a URL is double-quoted
            const bool quoted = value.size() >= 2 && value.front() == '"' && value.back() == '"';
            EXPECT_EQ(quoted ? value.substr(1, value.size() - 2) : value, v);
          } else if constexpr (std::is_same_v<Rule, ChoiceRule>) {
            EXPECT_EQ(value, rule.get(defaults));
          } else if constexpr (std::is_same_v<Rule, StringListRule>) {
            std::string list;
            for (const std::string& item : rule.field.get(defaults)) {
              list += (list.empty() ? "[\"" : ", \"") + item + "\"";
            }
            EXPECT_EQ(value, list.empty() ? std::string("[]") : list + "]");
          } else {
            EXPECT_EQ(value, "[]");  // the model rows beyond the built-in ones; no routes
          }
        },
        key.rule);
  }
}

TEST(DefaultConfigYamlTest, ConcreteLinesOfTheGeneratedFile) {
  const std::string yaml = DefaultConfigYaml();
  EXPECT_EQ(KeyLine(yaml, "budget.total"),
            "    total: 30000                # tokens of context when the model is unknown");
  EXPECT_EQ(KeyLine(yaml, "threshold_pct"),
            "  threshold_pct: 0.75           # history share where the warning zone starts, "
            "in (0, 1]");
  EXPECT_EQ(KeyLine(yaml, "limits.memory_mb"),
            "    memory_mb: 256              # the daemon keeps its memory footprint under this "
            "many MiB, at least 16");
  EXPECT_EQ(KeyLine(yaml, "log_level"),
            "  log_level: info               # log verbosity: trace | debug | info | warn | error "
            "| critical | off");
  EXPECT_EQ(KeyLine(yaml, "data_dir"),
            "  data_dir: \"\"                  # tokenizer rank files; \"\" = the built-in data "
            "directory");
  EXPECT_EQ(KeyLine(yaml, "pruning.protect_turns"),
            "    protect_turns: 2            # tool results in the last N user turns are kept");
  EXPECT_NE(yaml.find("\n  pruning:                      # clearing of old tool output\n"),
            std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("#     timeout: 60 "), std::string::npos) << yaml;
}

TEST(DefaultConfigYamlTest, EveryGroupLineCarriesItsDoc) {
  const std::string yaml = DefaultConfigYaml();
  for (const ConfigGroup& group : ContextGroups()) {
    SCOPED_TRACE(std::string(group.path));
    const size_t dot = group.path.rfind('.');  // a nested group: under its parent's line
    const std::string indent(2 + 2 * std::count(group.path.begin(), group.path.end(), '.'), ' ');
    const size_t parent =
        dot == std::string_view::npos
            ? 0
            : yaml.find("\n" + indent.substr(2) + std::string(group.path.substr(0, dot)) + ":");
    ASSERT_NE(parent, std::string::npos);
    const size_t at =
        yaml.find("\n" + indent + std::string(group.path.substr(dot + 1)) + ":", parent);
    ASSERT_NE(at, std::string::npos);
    const std::string line = yaml.substr(at + 1, yaml.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find("# " + std::string(group.doc)), std::string::npos) << line;
  }
}

// The generated file carries the in-class defaults of every struct (core ones included):
// parsing it gives a default-constructed DaemonConfig, member by member.
TEST(DefaultConfigYamlTest, ParsesToADefaultConstructedConfigMemberByMember) {
  const DaemonConfig parsed = ParseOrDie(DefaultConfigYaml());
  EXPECT_EQ(DifferingMembers(ResolvedDefaults(), parsed), std::vector<std::string>{});
  EXPECT_EQ(DifferingMembers(ResolvedDefaults(), ParseOrDie("")), std::vector<std::string>{});
  EXPECT_EQ(DifferingMembers(ResolvedDefaults("/srv/m"), ParseOrDie(DefaultConfigYaml(), "/srv/m")),
            std::vector<std::string>{});
}

TEST(DefaultConfigYamlTest, ModelRowExampleInTheNoteIsAValidRow) {
  const std::string yaml = DefaultConfigYaml();
  const size_t at = yaml.find("\n  # - {pattern:");
  ASSERT_NE(at, std::string::npos) << yaml;
  const std::string row = yaml.substr(at + 5, yaml.find('\n', at + 1) - at - 5);
  const DaemonConfig c = ParseOrDie("context:\n  models:\n    " + row + "\n");
  std::optional<ModelSpec> spec = c.models.Lookup("my-model-7b");
  ASSERT_TRUE(spec.has_value()) << row;
  EXPECT_EQ(spec->encoding, "heuristic");
  EXPECT_EQ(spec->context_window, 32768);
}

}  // namespace
}  // namespace missy

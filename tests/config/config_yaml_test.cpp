#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <optional>
#include <string>

#include "config/config.h"
#include "config_test_util.h"

namespace missy {
namespace {

namespace json = boost::json;
using ::missy::testing::ExpectDefaults;
using ::missy::testing::kHome;
using ::missy::testing::ParseOrDie;
using ::missy::testing::ScopedEnv;

TEST(ConfigYamlTest, EmptyDocumentGivesDefaults) {
  ExpectDefaults(ParseOrDie(""));
  ExpectDefaults(ParseOrDie("# only a comment\n"));
  ExpectDefaults(ParseOrDie("context:\n"));
  ExpectDefaults(ParseOrDie("context:\n  budget:\n  limits: {}\n"));
}

TEST(ConfigYamlTest, EveryKeyOverridden) {
  DaemonConfig c = ParseOrDie(R"(
context:
  socket: /run/user/1000/m.sock
  audit_socket: sub/a.sock
  database: /var/lib/m.db
  data_dir: /usr/share/missyd
  log_level: debug
  budget:
    total: 50000
    system_reserve: 1000
    tool_definitions_reserve: 3000
    memory_fraction: 0.2
    learnings_fraction: 0.1
    fresh_tail_count: 8
  threshold_pct: 1
  message_threshold: 50
  tool_output_max_tokens: 1000
  strict: true
  pruning: {protect_turns: 3, protect_tokens: 10000, minimum_freed: 0}
  tokenizer: heuristic
  image_tokens: 0
  calibration: {min_ratio: 0.5, max_ratio: 2, alpha: 1}
  limits: {max_body_bytes: 1024, read_timeout_ms: 500, audit_client_buffer_bytes: 65536,
           memory_mb: 64}
  audit: {retention_days: 0, retention_events: 10}
)");
  EXPECT_EQ(c.socket_path, "/run/user/1000/m.sock");
  EXPECT_EQ(c.audit_socket_path, "/home/u/.missy/sub/a.sock");
  EXPECT_EQ(c.database_path, "/var/lib/m.db");
  EXPECT_EQ(c.data_dir, "/usr/share/missyd");
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.budget.total, 50000);
  EXPECT_EQ(c.budget.system_reserve, 1000);
  EXPECT_EQ(c.budget.tool_definitions_reserve, 3000);
  EXPECT_DOUBLE_EQ(c.budget.memory_fraction, 0.2);
  EXPECT_DOUBLE_EQ(c.budget.learnings_fraction, 0.1);
  EXPECT_EQ(c.budget.fresh_tail_count, 8);
  EXPECT_DOUBLE_EQ(c.context.threshold_pct, 1.0);
  EXPECT_EQ(c.context.message_threshold, 50);
  EXPECT_EQ(c.context.tool_output_max_tokens, 1000);
  EXPECT_TRUE(c.strict);
  EXPECT_EQ(c.pruning.protect_user_turns, 3);
  EXPECT_EQ(c.pruning.protect_tool_tokens, 10000);
  EXPECT_EQ(c.pruning.minimum_freed_tokens, 0);
  EXPECT_EQ(c.tokenizer, TokenizerMode::kHeuristic);
  EXPECT_EQ(c.image_tokens, 0);
  EXPECT_DOUBLE_EQ(c.calibration.min_ratio, 0.5);
  EXPECT_DOUBLE_EQ(c.calibration.max_ratio, 2.0);
  EXPECT_DOUBLE_EQ(c.calibration.alpha, 1.0);
  EXPECT_EQ(c.limits.max_body_bytes, 1024);
  EXPECT_EQ(c.limits.read_timeout_ms, 500);
  EXPECT_EQ(c.limits.audit_client_buffer_bytes, 65536);
  EXPECT_EQ(c.limits.memory_mb, 64);
  EXPECT_EQ(c.audit.retention_days, 0);
  EXPECT_EQ(c.audit.retention_events, 10);
}

struct ErrorCase {
  const char* yaml;
  const char* field;    // expected Status::field()
  const char* message;  // expected message (exact)
};

TEST(ConfigYamlTest, InvalidContextValuesNameTheKeyPath) {
  const ErrorCase cases[] = {
      {"context: {budget: {memroy_fraction: 0.1}}", "context.budget.memroy_fraction",
       "context.budget.memroy_fraction: unknown key"},
      {"context: {sockett: x}", "context.sockett", "context.sockett: unknown key"},
      {"context: {pruning: {protect: 1}}", "context.pruning.protect",
       "context.pruning.protect: unknown key"},
      {"context:\n  strict: true\n  strict: false\n", "context.strict",
       "context.strict: duplicate key"},
      {"context: {budget: {total: abc}}", "context.budget.total",
       "context.budget.total: expected an integer, got 'abc'"},
      {"context: {budget: {total: '30000'}}", "context.budget.total",
       "context.budget.total: expected an integer, got '30000'"},
      {"context: {budget: {total: 3.5}}", "context.budget.total",
       "context.budget.total: expected an integer, got '3.5'"},
      {"context: {budget: {total: [1]}}", "context.budget.total",
       "context.budget.total: expected an integer, got a list"},
      {"context: {budget: {total: }}", "context.budget.total",
       "context.budget.total: expected an integer, got null"},
      {"context: {budget: {total: 99999999999999999999}}", "context.budget.total",
       "context.budget.total: integer out of range, got '99999999999999999999'"},
      {"context: {budget: {total: -5}}", "context.budget.total",
       "context.budget.total: must not be negative, got -5"},
      {"context: {budget: {system_reserve: -1}}", "context.budget.system_reserve",
       "context.budget.system_reserve: must not be negative, got -1"},
      {"context: {budget: {fresh_tail_count: -1}}", "context.budget.fresh_tail_count",
       "context.budget.fresh_tail_count: must not be negative, got -1"},
      {"context: {budget: {memory_fraction: 1.5}}", "context.budget.memory_fraction",
       "context.budget.memory_fraction: must be in [0, 1], got 1.5"},
      {"context: {budget: {learnings_fraction: -0.1}}", "context.budget.learnings_fraction",
       "context.budget.learnings_fraction: must be in [0, 1], got -0.1"},
      {"context: {budget: {memory_fraction: x}}", "context.budget.memory_fraction",
       "context.budget.memory_fraction: expected a number, got 'x'"},
      {"context: {budget: {total: 3000, system_reserve: 2000, tool_definitions_reserve: 1500}}",
       "context.budget.system_reserve",
       "context.budget.system_reserve: system_reserve + tool_definitions_reserve (3500) exceed "
       "total (3000)"},
      {"context: {budget: {memory_fraction: 0.6, learnings_fraction: 0.5}}",
       "context.budget.learnings_fraction",
       "context.budget.learnings_fraction: memory_fraction + learnings_fraction must not exceed "
       "1"},
      {"context: {budget: 5}", "context.budget", "context.budget: expected a mapping, got '5'"},
      {"context: [1, 2]", "context", "context: expected a mapping, got a list"},
      {"context: {log_level: verbose}", "context.log_level",
       "context.log_level: expected one of trace, debug, info, warn, error, critical, off; "
       "got 'verbose'"},
      {"context: {socket: ''}", "context.socket", "context.socket: must not be empty"},
      {"context: {database: {a: 1}}", "context.database",
       "context.database: expected a string, got a mapping"},
      {"context: {socket: '~bob/m.sock'}", "context.socket",
       "context.socket: '~user' paths are not supported, got '~bob/m.sock'"},
      {"context: {limits: {max_body_bytes: 0}}", "context.limits.max_body_bytes",
       "context.limits.max_body_bytes: must be at least 1, got 0"},
      {"context: {limits: {read_timeout_ms: -10}}", "context.limits.read_timeout_ms",
       "context.limits.read_timeout_ms: must be at least 1, got -10"},
      {"context: {limits: {memory_mb: 15}}", "context.limits.memory_mb",
       "context.limits.memory_mb: must be at least 16, got 15"},
      {"context: {limits: {memory_mb: 256MiB}}", "context.limits.memory_mb",
       "context.limits.memory_mb: expected an integer, got '256MiB'"},
      {"context: {limits: {handler_threads: 4}}", "context.limits.handler_threads",
       "context.limits.handler_threads: unknown key"},
      {"context: {limits: {timeout: 1}}", "context.limits.timeout",
       "context.limits.timeout: unknown key"},
      {"context: {audit: {retention_days: -1}}", "context.audit.retention_days",
       "context.audit.retention_days: must not be negative, got -1"},
      {"context: {threshold_pct: 0}", "context.threshold_pct",
       "context.threshold_pct: must be in (0, 1], got 0"},
      {"context: {threshold_pct: 1.01}", "context.threshold_pct",
       "context.threshold_pct: must be in (0, 1], got 1.01"},
      {"context: {message_threshold: 0}", "context.message_threshold",
       "context.message_threshold: must be at least 1, got 0"},
      {"context: {tool_output_max_tokens: 0}", "context.tool_output_max_tokens",
       "context.tool_output_max_tokens: must be at least 1, got 0"},
      {"context: {strict: maybe}", "context.strict",
       "context.strict: expected true or false, got 'maybe'"},
      {"context: {strict: 'true'}", "context.strict",
       "context.strict: expected true or false, got 'true'"},
      {"context: {pruning: {minimum_freed: -1}}", "context.pruning.minimum_freed",
       "context.pruning.minimum_freed: must not be negative, got -1"},
      {"context: {tokenizer: bpe}", "context.tokenizer",
       "context.tokenizer: expected one of exact, heuristic; got 'bpe'"},
      {"context: {image_tokens: -1}", "context.image_tokens",
       "context.image_tokens: must not be negative, got -1"},
      {"context: {calibration: {min_ratio: 0}}", "context.calibration.min_ratio",
       "context.calibration.min_ratio: must be in (0, 1], got 0"},
      {"context: {calibration: {max_ratio: 0.9}}", "context.calibration.max_ratio",
       "context.calibration.max_ratio: must be at least 1, got 0.9"},
      {"context: {calibration: {alpha: 1.5}}", "context.calibration.alpha",
       "context.calibration.alpha: must be in (0, 1], got 1.5"},
      {"context: {models: {a: 1}}", "context.models",
       "context.models: expected a list, got a mapping"},
      {"context: {models: [x]}", "context.models[0]",
       "context.models[0]: expected a mapping, got 'x'"},
      {"context:\n  models:\n    - {pattern: a, context_window: 1000, max_output_tokens: 10}\n"
       "    - {pattern: b, context_window: 1000, max_output_tokens: 10}\n"
       "    - {pattern: c, context_window: 8192, max_output_tokens: 16384}\n",
       "context.models[2].max_output_tokens",
       "context.models[2].max_output_tokens: must be less than context_window (8192), got "
       "16384"},
      {"context: {models: [{pattern: a, context_window: 1000}]}",
       "context.models[0].max_output_tokens", "context.models[0].max_output_tokens: required"},
      {"context: {models: [{context_window: 1000, max_output_tokens: 10}]}",
       "context.models[0].pattern", "context.models[0].pattern: required"},
      {"context: {models: [{pattern: a, context_window: 1000, max_output_tokens: 10, "
       "windw: 5}]}",
       "context.models[0].windw", "context.models[0].windw: unknown key"},
      {"context: {models: [{pattern: a, context_window: 1000, max_output_tokens: 10, "
       "encoding: p50k}]}",
       "context.models[0].encoding",
       "context.models[0].encoding: expected one of o200k_base, cl100k_base, heuristic; got "
       "'p50k'"},
      {"context: {models: [{pattern: a, context_window: 1000, max_output_tokens: 10, "
       "factor: 5}]}",
       "context.models[0].factor", "context.models[0].factor: must be in (0, 4], got 5"},
      {"context: {models: [{pattern: a, context_window: big, max_output_tokens: 10}]}",
       "context.models[0].context_window",
       "context.models[0].context_window: expected an integer, got 'big'"},
      {"providers: {openai: {timeout: soon}}", "providers.openai.timeout",
       "providers.openai.timeout: expected a number, got 'soon'"},
      {"providers: [openai]", "providers", "providers: expected a mapping, got a list"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.yaml);
    Result<DaemonConfig> r = ParseConfig(c.yaml, kHome);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().field(), c.field);
    EXPECT_EQ(r.status().message(), c.message);
  }
}

TEST(ConfigYamlTest, BoundaryValuesAreAccepted) {
  DaemonConfig c = ParseOrDie(
      "context:\n  budget: {total: 4000, system_reserve: 2000, tool_definitions_reserve: 2000,"
      " memory_fraction: 0, learnings_fraction: 1, fresh_tail_count: 0}\n"
      "  threshold_pct: 1.0\n  calibration: {min_ratio: 1, max_ratio: 1}\n");
  EXPECT_EQ(c.budget.total, 4000);
  EXPECT_DOUBLE_EQ(c.budget.learnings_fraction, 1.0);
  EXPECT_EQ(c.budget.fresh_tail_count, 0);
  EXPECT_DOUBLE_EQ(c.calibration.min_ratio, 1.0);
  EXPECT_TRUE(ParseOrDie("context: {strict: yes}").strict);
  EXPECT_EQ(ParseOrDie("context: {limits: {memory_mb: 16}}").limits.memory_mb, 16);
  EXPECT_EQ(ParseOrDie("context: {budget: {total: +42, system_reserve: 0, "
                       "tool_definitions_reserve: 0}}")
                .budget.total,
            42);
}

TEST(ConfigYamlTest, YamlSyntaxErrorNamesLineAndColumn) {
  Result<DaemonConfig> r = ParseConfig("context:\n  budget:\n    total: [1, 2\n", kHome);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("YAML syntax error"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("line 4, column 1"), std::string::npos)
      << r.status().message();

  r = ParseConfig("context:\n  socket: a\n   bad: : b\n", kHome);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 3, column"), std::string::npos) << r.status().message();
}

TEST(ConfigYamlTest, TopLevelMustBeAMapping) {
  Result<DaemonConfig> r = ParseConfig("- a\n- b\n", kHome);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "expected a mapping at the top level, got a list");
}

TEST(ConfigYamlTest, MissyKeysOutsideContextAreIgnored) {
  DaemonConfig c = ParseOrDie(R"(
workspace: ~/work
memory:
  backend: sqlite
  whatever: [1, 2, {x: y}]
tools: [shell, web]
channels: {discord: {token: abc}}
max_spend_usd: 12.5
context:
  budget: {total: 40000}
)");
  EXPECT_EQ(c.budget.total, 40000);
  EXPECT_EQ(c.socket_path, "/home/u/.missy/missyd.sock");
}

TEST(ConfigYamlTest, ProvidersParsedAndRedacted) {
  DaemonConfig c = ParseOrDie(R"(
default_provider: anthropic
providers:
  anthropic:
    model: claude-sonnet-4-5
    base_url: https://api.anthropic.com
    api_key: sk-ant-SECRET123
    timeout: 90
    fast_model: claude-haiku-4-5   # Missy-only key: ignored
  ollama:
    model: llama3.1:8b
    base_url: http://localhost:11434/v1
    api_key: null
    timeout: 2.5
  bare:
)");
  EXPECT_EQ(c.default_provider, "anthropic");
  ASSERT_EQ(c.providers.size(), 3u);
  const ProviderConfig& a = c.providers.at("anthropic");
  EXPECT_EQ(a.model, "claude-sonnet-4-5");
  EXPECT_EQ(a.base_url, "https://api.anthropic.com");
  EXPECT_EQ(a.api_key, "sk-ant-SECRET123");
  EXPECT_EQ(a.timeout_s, 90);
  const ProviderConfig& o = c.providers.at("ollama");
  EXPECT_EQ(o.api_key, "");
  EXPECT_EQ(o.timeout_s, 3);  // rounded up
  EXPECT_EQ(c.providers.at("bare").timeout_s, 60);

  const std::string text = EffectiveConfigJson(c);
  EXPECT_EQ(text.find("SECRET123"), std::string::npos) << text;
  json::value v = json::parse(text);
  EXPECT_EQ(v.at("default_provider").as_string(), "anthropic");
  EXPECT_EQ(v.at("providers").at("anthropic").at("api_key").as_string(), "***");
  EXPECT_EQ(v.at("providers").at("anthropic").at("model").as_string(), "claude-sonnet-4-5");
  EXPECT_EQ(v.at("providers").at("anthropic").at("timeout").as_int64(), 90);
  EXPECT_EQ(v.at("providers").at("ollama").at("api_key").as_string(), "");
}

TEST(ConfigYamlTest, ModelRowsMergeWithBuiltins) {
  DaemonConfig c = ParseOrDie(R"(
context:
  models:
    - {pattern: "my-model*", context_window: 32768, max_output_tokens: 4096, encoding: heuristic, factor: 1.0}
    - {pattern: gpt-4o, context_window: 64000, max_output_tokens: 8000}
)");
  EXPECT_EQ(c.models.rows().size(), ModelTable::Builtin().rows().size() + 1);
  std::optional<ModelSpec> mine = c.models.Lookup("my-model-7b");
  ASSERT_TRUE(mine.has_value());
  EXPECT_EQ(mine->context_window, 32768);
  EXPECT_EQ(mine->max_output_tokens, 4096);
  EXPECT_EQ(mine->encoding, "heuristic");
  std::optional<ModelSpec> gpt = c.models.Lookup("gpt-4o");
  ASSERT_TRUE(gpt.has_value());
  EXPECT_EQ(gpt->context_window, 64000);
  EXPECT_EQ(gpt->encoding, "o200k_base");  // default encoding
  EXPECT_DOUBLE_EQ(gpt->factor, 1.0);
  EXPECT_EQ(c.models.Lookup("claude-sonnet-4-5")->context_window, 200000);
}

TEST(ConfigYamlTest, TildeAndRelativePaths) {
  ScopedEnv home("HOME", "/tmp/fakehome");
  DaemonConfig c = ParseOrDie(
      "context:\n  socket: ~/run/m.sock\n  audit_socket: ./x/../a.sock\n  database: \"~\"\n"
      "  data_dir: ranks/\n",
      "/srv/missy");
  EXPECT_EQ(c.socket_path, "/tmp/fakehome/run/m.sock");
  EXPECT_EQ(c.audit_socket_path, "/srv/missy/a.sock");
  EXPECT_EQ(c.database_path, "/tmp/fakehome");
  EXPECT_EQ(c.data_dir, "/srv/missy/ranks");
}

}  // namespace
}  // namespace missy

namespace missy {
namespace {

// Found by fuzz_config: a non-UTF-8 value used to be accepted and then made /v1/config
// invalid JSON (fuzz/regressions/fuzz_config/effective-json-invalid-utf8).
TEST(ConfigYamlTest, RejectsTextThatIsNotUtf8NamingTheLine) {
  for (const std::string bad : {std::string("context:\n database: \x86"),
                                std::string("# ok\ncontext:\n  log_level: \xC0\xAF"),
                                std::string("context:\n  data_dir: \xED\xA0\x80")}) {
    Result<DaemonConfig> r = ParseConfig(bad, "/tmp/missy-home");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("not valid UTF-8"), std::string::npos);
  }
  Result<DaemonConfig> r = ParseConfig("context:\n database: \x86", "/tmp/missy-home");
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();
  EXPECT_TRUE(ParseConfig("context:\n  data_dir: /tmp/d\xC3\xA9j\xC3\xA0\n", "/h").ok());
}

}  // namespace
}  // namespace missy

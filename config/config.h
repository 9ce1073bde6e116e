// Daemon configuration from ~/.missy/config.yaml (DESIGN.md §7).
// Missy's own keys are read where the daemon needs them (default_provider,
// providers.<name>) and otherwise ignored; the daemon's `context:` section is strict:
// an unknown key, a wrong type or an out-of-range value is an error naming the key
// path ("context.budget.memory_fraction") and the reason.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/budget.h"
#include "core/model_table.h"
#include "core/status.h"

namespace missy {

struct ProviderConfig {
  std::string model;
  std::string base_url;
  std::string api_key;  // never logged or returned unredacted
  int64_t timeout_s = 60;
};

// Old tool output pruning (DESIGN.md §4 rule 5): context.pruning.*
struct PruningConfig {
  int64_t protect_turns = 2;       // tool results in the last N user turns are never pruned
  int64_t protect_tokens = 40000;  // the newest N tokens of tool output are never pruned
  int64_t minimum_freed = 20000;   // prune only when at least this many tokens are freed
};

// Calibration from reported usage (issue 3): context.calibration.*
struct CalibrationConfig {
  double min_ratio = 0.7;  // actual/estimated ratio is clamped to [min_ratio, max_ratio]
  double max_ratio = 1.6;
  double alpha = 0.2;  // weight of a new observation in the moving ratio, in (0, 1]
};

// context.tokenizer: exact BPE (rank files required) or the heuristic fallback.
enum class TokenizerMode { kExact, kHeuristic };
std::string_view TokenizerModeName(TokenizerMode mode);  // "exact" | "heuristic"

struct DaemonConfig {
  std::string missy_home;                               // resolved ~/.missy (or $MISSY_HOME)
  std::string socket_path;                              // default <home>/missyd.sock
  std::string audit_socket_path;                        // default <home>/audit.sock
  std::string database_path;                            // default <home>/missyd.db
  std::string log_level = "info";                       // trace|debug|info|warn|error|critical|off
  TokenBudget budget;                                   // context.budget.*
  int64_t max_body_bytes = 8 * 1024 * 1024;             // context.limits.max_body_bytes
  int64_t read_timeout_ms = 30000;                      // context.limits.read_timeout_ms
  int64_t audit_client_buffer_bytes = 4 * 1024 * 1024;  // context.limits.audit_client_buffer_bytes
  std::string data_dir;  // context.data_dir: tokenizer rank files; empty = built-in data dir
  int64_t audit_retention_days = 30;         // context.audit.retention_days (0 = no age limit)
  int64_t audit_retention_events = 1000000;  // context.audit.retention_events (0 = no limit)
  double threshold_pct = 0.75;               // context.threshold_pct, in (0, 1]: warning zone
  int64_t message_threshold = 200;           // context.message_threshold (> 0): summarize trigger
  int64_t tool_output_max_tokens = 2500;     // context.tool_output_max_tokens (> 0)
  bool strict = false;                       // context.strict: 422 instead of flagging appends
  PruningConfig pruning;                     // context.pruning.*
  TokenizerMode tokenizer = TokenizerMode::kExact;  // context.tokenizer
  int64_t image_tokens = 765;                 // context.image_tokens: fixed cost per image part
  CalibrationConfig calibration;              // context.calibration.*
  ModelTable models = ModelTable::Builtin();  // built-ins + context.models rows (upserted)
  std::string default_provider;               // top-level default_provider
  std::map<std::string, ProviderConfig> providers;  // top-level providers
};

// $MISSY_HOME if set and non-empty, else $HOME/.missy.
std::string ResolveMissyHome();

// Errors: the Status message is self-contained ("context.budget.total: expected an
// integer, got 'abc'", prefixed by the file name when read from a file) and field() is the
// key path ("context.budget.total"); print message(), not ToString(). A YAML syntax error
// names the line and column.

// Parses YAML text. Relative paths and "~" in the context section are resolved
// against missy_home / $HOME. An empty document gives the defaults.
Result<DaemonConfig> ParseConfig(std::string_view yaml_text, const std::string& missy_home);

// Reads and parses a file (kNotFound if absent, kInvalidArgument with the key path on
// bad content; the message names the file).
Result<DaemonConfig> LoadConfigFile(const std::string& path, const std::string& missy_home);

// The default config file: every key of the context section with its default value,
// commented. ParseConfig(DefaultConfigYaml()) yields the defaults.
std::string DefaultConfigYaml();

// Loads `path`, first writing DefaultConfigYaml() there (mode 0600, creating the
// directory 0700) if it does not exist. `created` tells whether it was written.
Result<DaemonConfig> LoadOrCreateConfig(const std::string& path, const std::string& missy_home,
                                        bool* created = nullptr);

// The config as JSON text with secrets (api_key) redacted, for /v1/config.
std::string EffectiveConfigJson(const DaemonConfig& config);

}  // namespace missy

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
#include "core/status.h"

namespace missy {

struct ProviderConfig {
  std::string model;
  std::string base_url;
  std::string api_key;  // never logged or returned unredacted
  int64_t timeout_s = 60;
};

struct DaemonConfig {
  std::string missy_home;          // resolved ~/.missy (or $MISSY_HOME)
  std::string socket_path;         // default <home>/missyd.sock
  std::string audit_socket_path;   // default <home>/audit.sock
  std::string database_path;       // default <home>/missyd.db
  std::string log_level = "info";  // trace|debug|info|warn|error|critical|off
  TokenBudget budget;              // context.budget.*
  int64_t max_body_bytes = 8 * 1024 * 1024;  // context.limits.max_body_bytes
  int64_t read_timeout_ms = 30000;           // context.limits.read_timeout_ms
  int64_t audit_client_buffer_bytes = 4 * 1024 * 1024;  // context.limits.audit_client_buffer_bytes
  std::string default_provider;                     // top-level default_provider
  std::map<std::string, ProviderConfig> providers;  // top-level providers
};

// $MISSY_HOME if set and non-empty, else $HOME/.missy.
std::string ResolveMissyHome();

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

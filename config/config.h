// Daemon configuration from ~/.missy/config.yaml (DESIGN.md §7).
// Missy's own keys are read where the daemon needs them (default_provider,
// providers.<name>) and otherwise ignored; the daemon's `context:` section is strict:
// an unknown key, a duplicate key, a wrong type or an out-of-range value is an error
// naming the key path ("context.budget.memory_fraction") and the reason.
//
// Every default is the in-class initializer of a struct below or of the core option
// struct it embeds; the `context:` keys, their docs and their ranges are listed once in
// config/key_table.h, from which parsing, DefaultConfigYaml() and EffectiveConfigJson()
// are derived. A DaemonConfig is a plain value: copy it, swap it, read it from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/budget.h"
#include "core/calibration.h"
#include "core/context_options.h"
#include "core/model_table.h"
#include "core/pruning.h"
#include "core/status.h"
#include "core/summary_plan.h"

namespace missy {

// providers.<name> (Missy's keys; lenient, only these are read).
struct ProviderConfig {
  std::string model;
  std::string base_url;
  std::string api_key;     // never logged or returned unredacted
  int64_t timeout_s = 60;  // `timeout` in seconds, fractions rounded up
};

// context.tokenizer: exact BPE (rank files required) or the heuristic fallback.
enum class TokenizerMode { kExact, kHeuristic };
std::string_view TokenizerModeName(TokenizerMode mode);  // "exact" | "heuristic"

// context.limits.*: resource limits of the daemon's sockets and process.
struct LimitsConfig {
  int64_t max_body_bytes = 8 * 1024 * 1024;  // largest request body (413 above)
  int64_t read_timeout_ms = 30000;           // time allowed to read one request
  // Audit stream backlog (bytes) before a slow audit client is cut off.
  int64_t audit_client_buffer_bytes = 4 * 1024 * 1024;
  int64_t memory_mb = 256;  // the daemon keeps its memory footprint under this many MiB
  // A session's cached history is released after this long unused (0 = only when the
  // cache is full); the next request reloads its window from the database.
  int64_t cache_idle_seconds = 60;
};

// context.summarizer.backend / .provider: which backend writes summaries (DESIGN.md §5).
struct SummarizerBackendConfig {
  std::string backend = "extractive";  // "extractive" (offline) | "llm"
  std::string provider;                // providers.<name> the llm backend calls; "" = default
};

// context.audit.*: retention of the audit log, and its optional JSONL mirror file.
struct AuditConfig {
  int64_t retention_days = 30;         // events older than this are deleted (0 = no age limit)
  int64_t retention_events = 1000000;  // newest events kept (0 = no count limit)
  std::string mirror;                  // JSONL copy of every event ("" = none); read at start
  int64_t mirror_max_bytes = 64 << 20;  // the mirror is rotated before it grows past this
  int64_t mirror_files = 5;             // rotated mirror files kept (<mirror>.1 ... .N)
};

// context.broker.*: the NATS JetStream bridge (off while url is empty).
struct BrokerConfig {
  std::string url;                      // nats://host:4222 (comma-separated for several)
  std::string user;                     // with password: user/password authentication
  std::string password;                 // never logged or returned unredacted
  std::string token;                    // token authentication; never logged or returned
  std::string subject_prefix = "missy";  // subjects <prefix>.audit.<daemon_id>.<category>.<type>
  std::string daemon_id;                // "" = <machine id>-<user>
  std::string creds_file;               // a NATS .creds file (JWT + nkey seed); "" = none
  std::string ca_file;                  // PEM CA bundle to verify a tls:// server ("" = system)
  bool audit = true;                    // publish every audit event to the MISSY_AUDIT stream
  bool jobs = false;                    // summarization jobs to workers over MISSY_JOBS
  int64_t job_timeout_ms = 120000;      // no result by then: the job's step runs locally
  int64_t job_ack_wait_ms = 30000;      // a worker silent this long loses the job (redelivery)
  int64_t job_max_deliver = 3;          // deliveries of one job to workers at most
  int64_t jobs_in_flight = 8;           // summarization jobs run at once with jobs on
};

// context.proxy.routes[]: a request whose model matches `model` goes to a provider
// instead of the API's upstream. The first matching row wins.
struct ProxyRoute {
  std::string model;     // glob over the request's model: '*' any run, '?' one character
  std::string provider;  // providers.<name>: its base_url and api_key serve the request
  bool operator==(const ProxyRoute&) const = default;
};

// context.proxy.*: missyd as ANTHROPIC_BASE_URL / OPENAI_BASE_URL (off unless enabled).
// Every listen entry passed ParseListenAddress (loopback or unix: only), in its canonical
// form ("localhost:1" is "127.0.0.1:1"); a unix: path is absolute, resolved like a path key.
struct ProxyConfig {
  bool enabled = false;                                  // context.proxy.enabled
  std::vector<std::string> listen = {"127.0.0.1:8788"};  // context.proxy.listen: one or a list
  std::string token_file;  // context.proxy.token_file: "" = no token check; else absolute
  std::string anthropic_upstream = "https://api.anthropic.com";  // .upstreams.anthropic
  std::string openai_upstream = "https://api.openai.com/v1";     // .upstreams.openai
  int64_t timeout_ms = 600000;         // context.proxy.timeout_ms: one upstream call, whole
  int64_t max_body_bytes = 256 << 20;  // context.proxy.max_body_bytes (413 above)
  // Memory hits and past learnings in proxied contexts (as a message before the history;
  // the agent's system prompt is never changed).
  bool memory = true;
  std::vector<ProxyRoute> routes;      // context.proxy.routes; providers exist (checked)
};

// The inspector web page (docs/INSPECTOR.md).
struct UiConfig {
  bool enabled = true;  // context.ui.enabled: /ui/ on the proxy's listeners and ui.listen
  // context.ui.listen: loopback TCP addresses of listeners serving only the page; empty:
  // the page is on the proxy's listeners alone.
  std::vector<std::string> listen;
};

struct DaemonConfig {
  std::string missy_home;  // resolved ~/.missy (or $MISSY_HOME), set by ParseConfig
  // Paths: relative to missy_home here; ParseConfig returns them absolute and normal.
  std::string socket_path = "missyd.sock";       // context.socket
  std::string audit_socket_path = "audit.sock";  // context.audit_socket
  std::string database_path = "missyd.db";       // context.database
  std::string data_dir;            // context.data_dir: tokenizer rank files; empty = built-in
  std::string log_level = "info";  // context.log_level: trace|debug|info|warn|error|critical|off
  TokenBudget budget;              // context.budget.*
  // context.threshold_pct, .message_threshold, .tool_output_max_tokens; the other members
  // are not keys and keep their core defaults.
  ContextOptions context;
  bool strict = false;           // context.strict: 422 instead of flagging invalid appends
  PruningOptions pruning;        // context.pruning.* (protect_turns, protect_tokens, minimum_freed)
  SummarizerOptions summarizer;  // context.summarizer.* (chunk, fanout, target sizes)
  SummarizerBackendConfig summarizer_backend;       // context.summarizer.backend, .provider
  TokenizerMode tokenizer = TokenizerMode::kExact;  // context.tokenizer
  int64_t image_tokens = 765;                       // context.image_tokens: cost of one image
  CalibrationOptions calibration;                   // context.calibration.*
  LimitsConfig limits;                              // context.limits.*
  AuditConfig audit;                                // context.audit.*
  BrokerConfig broker;                              // context.broker.*
  ProxyConfig proxy;                                // context.proxy.*
  UiConfig ui;                                      // context.ui.*
  ModelTable models = ModelTable::Builtin();        // built-ins + context.models rows (upserted)
  std::string default_provider;                     // top-level default_provider
  std::map<std::string, ProviderConfig> providers;  // top-level providers
};

// $MISSY_HOME if set and non-empty, else $HOME/.missy; absolute, without a trailing '/'.
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

// The default config file, generated from the key table and a default-constructed
// DaemonConfig: every key of the context section with its default value and its doc as
// a comment. ParseConfig(DefaultConfigYaml()) yields the defaults.
std::string DefaultConfigYaml();

// Loads `path`, first writing DefaultConfigYaml() there (mode 0600, creating the
// directory 0700) if it does not exist. `created` tells whether it was written.
Result<DaemonConfig> LoadOrCreateConfig(const std::string& path, const std::string& missy_home,
                                        bool* created = nullptr);

// The config as JSON text for /v1/config: {"missy_home", "default_provider",
// "providers": {name: {"model","base_url","api_key","timeout"}}, "context": {every key of
// the table, nested by its path}}. A provider's api_key is "***" when set, "" when not:
// its value never appears.
std::string EffectiveConfigJson(const DaemonConfig& config);

}  // namespace missy

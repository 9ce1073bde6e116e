#include "config/key_table.h"

#include <array>
#include <charconv>
#include <type_traits>
#include <utility>

#include "config/paths.h"
#include "core/listen_address.h"

namespace missy {
namespace {

// object.*First.*Rest..., const when `object` is.
template <auto First, auto... Rest, typename Object>
constexpr auto& Walk(Object& object) {
  if constexpr (sizeof...(Rest) == 0) {
    return object.*First;
  } else {
    return Walk<Rest...>(object.*First);
  }
}

// The member reached by following `Members` from a DaemonConfig:
// At<&DaemonConfig::budget, &TokenBudget::total>().
template <auto... Members>
constexpr auto At() {
  using T = std::remove_cvref_t<decltype(Walk<Members...>(std::declval<DaemonConfig&>()))>;
  return Field<T>{[](DaemonConfig& c) -> T& { return Walk<Members...>(c); },
                  [](const DaemonConfig& c) -> const T& { return Walk<Members...>(c); }};
}

constexpr std::array<std::string_view, 7> kLogLevels = {"trace", "debug",    "info", "warn",
                                                        "error", "critical", "off"};

// Indexed by TokenizerMode.
constexpr std::array<std::string_view, 2> kTokenizerModes = {"exact", "heuristic"};

const ChoiceRule kLogLevelRule{
    kLogLevels, [](const DaemonConfig& c) -> std::string_view { return c.log_level; },
    [](DaemonConfig& c, std::string_view v) { c.log_level = std::string(v); }};

const ChoiceRule kTokenizerRule{
    kTokenizerModes, [](const DaemonConfig& c) { return TokenizerModeName(c.tokenizer); },
    [](DaemonConfig& c, std::string_view v) {
      c.tokenizer = v == kTokenizerModes[static_cast<size_t>(TokenizerMode::kHeuristic)]
                        ? TokenizerMode::kHeuristic
                        : TokenizerMode::kExact;
    }};

constexpr std::array<std::string_view, 2> kSummarizerBackends = {"extractive", "llm"};

const ChoiceRule kSummarizerBackendRule{
    kSummarizerBackends,
    [](const DaemonConfig& c) -> std::string_view { return c.summarizer_backend.backend; },
    [](DaemonConfig& c, std::string_view v) { c.summarizer_backend.backend = std::string(v); }};

// context.proxy.upstreams.*: an http(s) URL with a host, nothing blank in it.
Status CheckHttpUrl(std::string_view url) {
  const size_t scheme = url.starts_with("https://") ? 8 : url.starts_with("http://") ? 7 : 0;
  if (scheme == 0 || scheme == url.size() || url[scheme] == '/' ||
      url.find_first_of(" \t\r\n") != std::string_view::npos) {
    return Status::InvalidArgument("expected an http:// or https:// URL without spaces, got '" +
                                   std::string(url) + "'");
  }
  return Status::Ok();
}

// One context.proxy.listen entry: ParseListenAddress's canonical form; a unix: path is
// resolved like a path key ("~", "~/x", relative to missy_home).
Result<std::string> ListenEntry(std::string_view text, const std::string& missy_home) {
  Result<ListenAddress> address = ParseListenAddress(text);
  if (!address.ok()) return address.status();
  if (address->kind != ListenAddress::Kind::kUnix) return address->ToString();
  const std::string& path = address->path;
  if (path.starts_with("~") && path != "~" && !path.starts_with("~/")) {
    return Status::InvalidArgument("'~user' paths are not supported, got '" + std::string(text) +
                                   "'");
  }
  Result<std::string> resolved = ResolveConfigPath(path, missy_home, "");
  if (!resolved.ok()) return resolved.status();
  return "unix:" + *resolved;
}

// One context.ui.listen entry: a loopback TCP address (a browser does not speak unix:).
Result<std::string> UiListenEntry(std::string_view text, const std::string&) {
  Result<ListenAddress> address = ParseListenAddress(text);
  if (!address.ok()) return address.status();
  if (address->kind == ListenAddress::Kind::kUnix) {
    return Status::InvalidArgument("the inspector is opened by a browser: a loopback TCP "
                                   "address (127.0.0.1:PORT), not '" + std::string(text) + "'");
  }
  return address->ToString();
}

using D = DaemonConfig;

const ConfigKey kKeys[] = {
    {"socket", "API socket (HTTP/1.1 + JSON)", PathRule{At<&D::socket_path>()},
     "Relative paths are under the Missy home (~/.missy, or $MISSY_HOME); \"~\" is $HOME."},
    {"audit_socket", "audit event stream (NDJSON)", PathRule{At<&D::audit_socket_path>()}},
    {"database", "SQLite database", PathRule{At<&D::database_path>()}},
    {"data_dir", "tokenizer rank files; \"\" = the built-in data directory",
     PathRule{At<&D::data_dir>(), /*may_be_empty=*/true}},
    {"log_level", "log verbosity", kLogLevelRule},

    {"budget.total", "tokens of context when the model is unknown",
     IntRule{At<&D::budget, &TokenBudget::total>()}},
    {"budget.system_reserve", "assumed system prompt size when not measured",
     IntRule{At<&D::budget, &TokenBudget::system_reserve>()}},
    {"budget.tool_definitions_reserve", "assumed tool schema size when not measured",
     IntRule{At<&D::budget, &TokenBudget::tool_definitions_reserve>()}},
    {"budget.memory_fraction", "share of the available budget for ## Relevant Memory",
     NumberRule{At<&D::budget, &TokenBudget::memory_fraction>(), 0, 1}},
    {"budget.learnings_fraction", "share of the available budget for ## Past Learnings",
     NumberRule{At<&D::budget, &TokenBudget::learnings_fraction>(), 0, 1}},
    {"budget.fresh_tail_count", "newest messages always kept",
     IntRule{At<&D::budget, &TokenBudget::fresh_tail_count>()}},

    {"threshold_pct", "history share where the warning zone starts",
     NumberRule{At<&D::context, &ContextOptions::threshold_pct>(), 0, 1, /*lo_open=*/true}},
    {"message_threshold", "message count that triggers summarization",
     IntRule{At<&D::context, &ContextOptions::message_threshold>(), 1}},
    {"tool_output_max_tokens", "longer tool outputs are middle-out truncated in context",
     IntRule{At<&D::context, &ContextOptions::tool_output_max_tokens>(), 1}},
    {"task_max_tokens", "the session's task is always sent, cut middle-out beyond this",
     IntRule{At<&D::context, &ContextOptions::task_max_tokens>(), 64}},
    {"summarize_evicted",
     "a moved anchor that evicts unsummarized history writes the due leaves first (extractive)",
     BoolRule{At<&D::context, &ContextOptions::summarize_evicted>()}},
    {"squeeze_at_move",
     "a moved anchor cuts every kept tool output but the newest two to a quarter of "
     "tool_output_max_tokens until it moves again",
     BoolRule{At<&D::context, &ContextOptions::squeeze_at_move>()}},
    {"strict", "true: reject invalid tool-call sequences with 422", BoolRule{At<&D::strict>()}},

    {"pruning.protect_turns", "tool results in the last N user turns are kept",
     IntRule{At<&D::pruning, &PruningOptions::protect_user_turns>()}},
    {"pruning.protect_tokens", "the newest N tokens of tool output are kept",
     IntRule{At<&D::pruning, &PruningOptions::protect_tool_tokens>()}},
    {"pruning.minimum_freed", "prune only if at least this many tokens are freed",
     IntRule{At<&D::pruning, &PruningOptions::minimum_freed_tokens>()}},

    {"summarizer.leaf_chunk_tokens", "a leaf summary covers at most this much history",
     IntRule{At<&D::summarizer, &SummarizerOptions::leaf_chunk_tokens>(), 500}},
    {"summarizer.condensed_fanout", "summaries condensed into one at the next depth",
     IntRule{At<&D::summarizer, &SummarizerOptions::condensed_fanout>(), 2}},
    {"summarizer.leaf_target_tokens", "size a leaf summary is cut to",
     IntRule{At<&D::summarizer, &SummarizerOptions::leaf_target_tokens>(), 64}},
    {"summarizer.condensed_target_tokens", "size a condensed summary is cut to",
     IntRule{At<&D::summarizer, &SummarizerOptions::condensed_target_tokens>(), 64}},
    {"summarizer.backend", "who writes summaries", kSummarizerBackendRule},
    {"summarizer.provider", "providers.<name> the llm backend calls; \"\" = default_provider",
     StringRule{At<&D::summarizer_backend, &SummarizerBackendConfig::provider>()}},

    {"tokenizer", "token counting (exact needs the BPE rank files)", kTokenizerRule},
    {"image_tokens", "cost of an image whose size cannot be read", IntRule{At<&D::image_tokens>()}},

    {"calibration.min_ratio", "lowest accepted actual/estimated ratio",
     NumberRule{At<&D::calibration, &CalibrationOptions::min_ratio>(), 0, 1, /*lo_open=*/true}},
    {"calibration.max_ratio", "highest accepted actual/estimated ratio",
     NumberRule{At<&D::calibration, &CalibrationOptions::max_ratio>(), 1}},
    {"calibration.alpha", "weight of a new report in the moving ratio",
     NumberRule{At<&D::calibration, &CalibrationOptions::alpha>(), 0, 1, /*lo_open=*/true}},

    {"limits.max_body_bytes", "largest request body (413 above)",
     IntRule{At<&D::limits, &LimitsConfig::max_body_bytes>(), 1}},
    {"limits.read_timeout_ms", "time allowed to read one request",
     IntRule{At<&D::limits, &LimitsConfig::read_timeout_ms>(), 1}},
    {"limits.audit_client_buffer_bytes", "backlog before a slow audit client is cut off",
     IntRule{At<&D::limits, &LimitsConfig::audit_client_buffer_bytes>(), 1}},
    {"limits.memory_mb", "the daemon keeps its memory footprint under this many MiB",
     IntRule{At<&D::limits, &LimitsConfig::memory_mb>(), 16}},
    {"limits.cache_idle_seconds",
     "a session's cached history is released after this long unused (0 = never)",
     IntRule{At<&D::limits, &LimitsConfig::cache_idle_seconds>()}},

    {"audit.retention_days", "events older than this are deleted (0 = no age limit)",
     IntRule{At<&D::audit, &AuditConfig::retention_days>()}},
    {"audit.retention_events", "newest events kept (0 = no count limit)",
     IntRule{At<&D::audit, &AuditConfig::retention_events>()}},
    {"audit.mirror", "JSONL copy of every audit event, mode 0600 (\"\" = none)",
     PathRule{At<&D::audit, &AuditConfig::mirror>(), /*may_be_empty=*/true},
     "Read at start (restart to change). Rotated by size: <mirror>.1 is the newest old file."},
    {"audit.mirror_max_bytes", "the mirror is rotated before it grows past this",
     IntRule{At<&D::audit, &AuditConfig::mirror_max_bytes>(), 4096}},
    {"audit.mirror_files", "rotated mirror files kept",
     IntRule{At<&D::audit, &AuditConfig::mirror_files>(), 1}},

    {"broker.url", "NATS server(s), nats://host:4222 (\"\" = no broker)",
     StringRule{At<&D::broker, &BrokerConfig::url>()},
     "Off by default: with no url nothing changes and no broker is needed (docs/BROKER.md)."},
    {"broker.user", "user for user/password authentication",
     StringRule{At<&D::broker, &BrokerConfig::user>()}},
    {"broker.password", "password (shown as *** by /v1/config)",
     StringRule{At<&D::broker, &BrokerConfig::password>(), /*secret=*/true}},
    {"broker.token", "token authentication (shown as *** by /v1/config)",
     StringRule{At<&D::broker, &BrokerConfig::token>(), /*secret=*/true}},
    {"broker.subject_prefix", "first token of every subject",
     StringRule{At<&D::broker, &BrokerConfig::subject_prefix>()}},
    {"broker.daemon_id", "this daemon's name in subjects and message ids (\"\" = machine id-user)",
     StringRule{At<&D::broker, &BrokerConfig::daemon_id>()}},
    {"broker.creds_file", "NATS credentials file (.creds: user JWT and nkey seed)",
     PathRule{At<&D::broker, &BrokerConfig::creds_file>(), /*may_be_empty=*/true}},
    {"broker.ca_file", "PEM CA bundle that verifies a tls:// server (\"\" = system store)",
     PathRule{At<&D::broker, &BrokerConfig::ca_file>(), /*may_be_empty=*/true},
     "A tls:// url, or a ca_file, turns TLS on; the server's certificate is always verified."},
    {"broker.audit", "publish every audit event to the MISSY_AUDIT stream",
     BoolRule{At<&D::broker, &BrokerConfig::audit>()}},
    {"broker.jobs", "send summarization steps to `missyd worker` processes over MISSY_JOBS",
     BoolRule{At<&D::broker, &BrokerConfig::jobs>()},
     "Each leaf or condensed summary becomes one self-contained job message; a job without\n"
     "a result within job_timeout_ms (no worker, deliveries exhausted, broker down) is\n"
     "summarized by the daemon itself."},
    {"broker.job_timeout_ms", "a job without a result by then is summarized locally",
     IntRule{At<&D::broker, &BrokerConfig::job_timeout_ms>(), 100}},
    {"broker.job_ack_wait_ms",
     "a worker that neither acks nor reports progress this long loses the job",
     IntRule{At<&D::broker, &BrokerConfig::job_ack_wait_ms>(), 100}},
    {"broker.job_max_deliver", "deliveries of one job to workers at most",
     IntRule{At<&D::broker, &BrokerConfig::job_max_deliver>(), 1}},
    {"broker.jobs_in_flight", "summarization jobs run at once when jobs go to workers",
     IntRule{At<&D::broker, &BrokerConfig::jobs_in_flight>(), 1}},

    {"proxy.enabled", "serve the Anthropic and OpenAI APIs on `listen` for agents",
     BoolRule{At<&D::proxy, &ProxyConfig::enabled>()},
     "Off by default; read at start (restart to change). `missyctl proxy` prints the lines\n"
     "that point an agent at it, `missyctl run` runs one with them (docs/PROXY.md)."},
    {"proxy.listen", "loopback address(es) to listen on: one, or a list",
     StringListRule{At<&D::proxy, &ProxyConfig::listen>(), ListenEntry,
                    "127.0.0.1:PORT | [::1]:PORT | localhost:PORT | unix:PATH"},
     "127.0.0.1:PORT, \"[::1]:PORT\" (quoted), localhost:PORT or unix:PATH; never an address\n"
     "another machine can reach: requests carry your API keys."},
    {"proxy.memory", "memory hits and past learnings in proxied contexts",
     BoolRule{At<&D::proxy, &ProxyConfig::memory>()},
     "Sent as one message before the history (the agent's system prompt is never changed)."},
    {"proxy.token_file", "file holding the token every proxy request must carry (\"\" = none)",
     PathRule{At<&D::proxy, &ProxyConfig::token_file>(), /*may_be_empty=*/true}},
    {"proxy.timeout_ms", "longest time of one upstream call, streamed answer included",
     IntRule{At<&D::proxy, &ProxyConfig::timeout_ms>(), 1000}},
    {"proxy.max_body_bytes", "largest request body the proxy accepts (413 above)",
     IntRule{At<&D::proxy, &ProxyConfig::max_body_bytes>(), 4096}},
    {"proxy.routes", "requests for a matching model go to providers.<name> instead",
     ProxyRoutesRule{At<&D::proxy, &ProxyConfig::routes>()},
     "model is a glob (* any run, ? one character); the first matching row wins. For example:\n"
     "- {model: \"llama*\", provider: ollama}"},
    {"proxy.upstreams.anthropic", "where Anthropic Messages requests go",
     StringRule{At<&D::proxy, &ProxyConfig::anthropic_upstream>(), /*secret=*/false, CheckHttpUrl,
                "http:// or https:// URL"}},
    {"proxy.upstreams.openai", "where OpenAI Chat Completions and Responses requests go",
     StringRule{At<&D::proxy, &ProxyConfig::openai_upstream>(), /*secret=*/false, CheckHttpUrl,
                "http:// or https:// URL"}},

    {"ui.enabled", "serve the inspector page at /ui/ (docs/INSPECTOR.md)",
     BoolRule{At<&D::ui, &UiConfig::enabled>()},
     "On the proxy's listeners (http://127.0.0.1:8788/ui/) and on ui.listen; read per\n"
     "request. The page shows sessions, contexts, summaries and the audit trail."},
    {"ui.listen", "loopback address(es) of listeners serving only the page ([] = none)",
     StringListRule{At<&D::ui, &UiConfig::listen>(), UiListenEntry,
                    "127.0.0.1:PORT | [::1]:PORT | localhost:PORT", /*may_be_empty=*/true},
     "For the page without proxy mode. Read at start (restart to change); same uid check\n"
     "and token as the proxy's listeners."},

    {"models", "rows added to or replacing the built-in model table",
     ModelRowsRule{At<&D::models>()},
     "Built-ins cover OpenAI, Claude, Gemini, Llama, Qwen and Mistral. pattern: exact name,\n"
     "prefix or glob with *; encoding: o200k_base | cl100k_base | heuristic; factor\n"
     "multiplies counts (models without an offline tokenizer). For example:\n"
     "- {pattern: \"my-model*\", context_window: 32768, max_output_tokens: 4096, "
     "encoding: heuristic, factor: 1.2}"},
};

const ConfigGroup kGroups[] = {
    {"budget", "token budget of one assembled context"},
    {"pruning", "clearing of old tool output"},
    {"summarizer", "background summarization of older history"},
    {"calibration", "correction from provider-reported usage"},
    {"limits", "resource limits"},
    {"audit", "audit log retention and mirror file"},
    {"broker", "NATS JetStream bridge (audit events, summarization jobs for workers)"},
    {"proxy", "the proxy mode: missyd as an agent's ANTHROPIC_BASE_URL / OPENAI_BASE_URL"},
    {"proxy.upstreams", "where requests go when no route matches"},
    {"ui", "the inspector web page (docs/INSPECTOR.md)"},
};

}  // namespace

std::string_view TokenizerModeName(TokenizerMode mode) {
  return kTokenizerModes[static_cast<size_t>(mode)];
}

std::span<const ConfigKey> ContextKeys() { return kKeys; }

std::span<const ConfigGroup> ContextGroups() { return kGroups; }

const ConfigKey* FindContextKey(std::string_view path) {
  for (const ConfigKey& key : kKeys) {
    if (key.path == path) return &key;
  }
  return nullptr;
}

const ConfigGroup* FindContextGroup(std::string_view path) {
  for (const ConfigGroup& group : kGroups) {
    if (group.path == path) return &group;
  }
  return nullptr;
}

std::string ContextKeyPath(std::string_view path) { return "context." + std::string(path); }

Status CheckCrossFieldRules(const DaemonConfig& config) {
  // Each core struct validates itself; its field() names the member below its group.
  const std::pair<std::string_view, Status> checks[] = {
      {"budget.", config.budget.Validate()},
      {"", ValidateCalibrationOptions(config.calibration)},  // field() is "calibration.x"
  };
  for (const auto& [group, status] : checks) {
    if (!status.ok()) {
      return Status::InvalidArgument(status.message(), std::string(group) + status.field());
    }
  }
  // A subject token must not hold separators or wildcards.
  for (const auto& [key, value] : {std::pair<std::string_view, const std::string*>{
                                       "broker.subject_prefix", &config.broker.subject_prefix},
                                   {"broker.daemon_id", &config.broker.daemon_id}}) {
    if (value->find_first_of(" \t.*>") != std::string::npos ||
        (key == "broker.subject_prefix" && value->empty())) {
      return Status::InvalidArgument(
          "must be one subject token: not empty, without spaces, '.', '*' or '>'",
          std::string(key));
    }
  }
  if (config.broker.jobs && config.broker.url.empty()) {
    return Status::InvalidArgument("summarization jobs over the broker need broker.url",
                                   "broker.jobs");
  }
  // A proxy route names a provider that exists.
  for (size_t i = 0; i < config.proxy.routes.size(); ++i) {
    const std::string& name = config.proxy.routes[i].provider;
    if (!config.providers.contains(name)) {
      return Status::InvalidArgument("the route's provider '" + name + "' is not among providers",
                                     "proxy.routes[" + std::to_string(i) + "].provider");
    }
  }
  // The llm backend needs a provider it can call.
  const SummarizerBackendConfig& sb = config.summarizer_backend;
  if (sb.backend == "llm") {
    const std::string& name = sb.provider.empty() ? config.default_provider : sb.provider;
    const std::string key = sb.provider.empty() ? "summarizer.backend" : "summarizer.provider";
    if (name.empty()) {
      return Status::InvalidArgument(
          "the llm backend needs a provider: set summarizer.provider or default_provider", key);
    }
    auto it = config.providers.find(name);
    if (it == config.providers.end()) {
      return Status::InvalidArgument(
          "the llm backend's provider '" + name + "' is not among providers", key);
    }
    if (it->second.model.empty()) {
      return Status::InvalidArgument("the llm backend's provider '" + name + "' has no model", key);
    }
  }
  return Status::Ok();
}

std::string FormatNumber(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("nan");
}

std::string RangeText(const IntRule& rule) {
  return rule.min == 0 ? "not negative" : "at least " + std::to_string(rule.min);
}

std::string RangeText(const NumberRule& rule) {
  if (rule.hi == kNoUpperBound) {
    return (rule.lo_open ? "more than " : "at least ") + FormatNumber(rule.lo);
  }
  return std::string("in ") + (rule.lo_open ? "(" : "[") + FormatNumber(rule.lo) + ", " +
         FormatNumber(rule.hi) + "]";
}

}  // namespace missy

#include "config/config.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

namespace missy {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

constexpr double kInf = std::numeric_limits<double>::infinity();

// $HOME, or the passwd entry's home directory when $HOME is unset.
std::string HomeDir() {
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return home;
  struct passwd pw;
  struct passwd* result = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &result) == 0 && result != nullptr) {
    return result->pw_dir;
  }
  return "/";
}

std::string FormatDouble(double v) {
  std::ostringstream ss;
  ss << v;
  return ss.str();
}

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

// A mapping section of the strict context: null counts as empty; unknown and duplicate
// keys are errors naming their full path.
class Section {
 public:
  // A missing key (yaml-cpp's "zombie" node, which throws on use) is an empty section.
  Section(const YAML::Node& node, std::string path)
      : node_(node.IsDefined() ? node : YAML::Node()), path_(std::move(path)) {}

  Status Check(std::initializer_list<std::string_view> known) const {
    if (node_.IsNull()) return Status::Ok();
    if (!node_.IsMap()) return KeyError(path_, "expected a mapping, got " + Describe(node_));
    std::set<std::string> seen;
    for (const auto& kv : node_) {
      if (!kv.first.IsScalar()) {
        return KeyError(path_, "keys must be strings, got " + Describe(kv.first));
      }
      const std::string& key = kv.first.Scalar();
      bool ok = false;
      for (std::string_view k : known) ok = ok || k == key;
      if (!ok) return KeyError(Path(key), "unknown key");
      if (!seen.insert(key).second) return KeyError(Path(key), "duplicate key");
    }
    return Status::Ok();
  }

  std::string Path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  YAML::Node Get(const std::string& key) const {
    if (!node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& n = node_;
    return n[key];
  }
  bool Has(const std::string& key) const { return Get(key).IsDefined(); }
  Section Sub(const std::string& key) const { return Section(Get(key), Path(key)); }

  // Integer >= min (min == 0: "must not be negative").
  Status Int(const std::string& key, int64_t* out, int64_t min) const {
    if (!Has(key)) return Status::Ok();
    int64_t v = 0;
    MISSY_RETURN_IF_ERROR(ParseInt(Get(key), Path(key), &v));
    if (v < min) {
      return KeyError(Path(key), (min == 0 ? std::string("must not be negative")
                                           : "must be at least " + std::to_string(min)) +
                                     ", got " + std::to_string(v));
    }
    *out = v;
    return Status::Ok();
  }

  // Number in [lo, hi], or (lo, hi] when lo_open.
  Status Double(const std::string& key, double* out, double lo, double hi,
                bool lo_open = false) const {
    if (!Has(key)) return Status::Ok();
    double v = 0;
    MISSY_RETURN_IF_ERROR(ParseDouble(Get(key), Path(key), &v));
    if ((lo_open ? v <= lo : v < lo) || v > hi) {
      std::string range = hi == kInf ? "must be at least " + FormatDouble(lo)
                                     : std::string("must be in ") + (lo_open ? "(" : "[") +
                                           FormatDouble(lo) + ", " + FormatDouble(hi) + "]";
      return KeyError(Path(key), range + ", got " + Get(key).Scalar());
    }
    *out = v;
    return Status::Ok();
  }

  Status Bool(const std::string& key, bool* out) const {
    if (!Has(key)) return Status::Ok();
    return ParseBool(Get(key), Path(key), out);
  }

  Status String(const std::string& key, std::string* out) const {
    if (!Has(key)) return Status::Ok();
    return ParseString(Get(key), Path(key), out);
  }

  Status NonEmptyString(const std::string& key, std::string* out) const {
    if (!Has(key)) return Status::Ok();
    std::string v;
    MISSY_RETURN_IF_ERROR(ParseString(Get(key), Path(key), &v));
    if (v.empty()) return KeyError(Path(key), "must not be empty");
    *out = std::move(v);
    return Status::Ok();
  }

  Status OneOf(const std::string& key, std::string* out,
               std::initializer_list<std::string_view> allowed) const {
    if (!Has(key)) return Status::Ok();
    std::string v;
    MISSY_RETURN_IF_ERROR(ParseString(Get(key), Path(key), &v));
    std::string list;
    for (std::string_view a : allowed) {
      if (a == v) {
        *out = std::move(v);
        return Status::Ok();
      }
      list += list.empty() ? "" : ", ";
      list += a;
    }
    return KeyError(Path(key), "expected one of " + list + "; got '" + v + "'");
  }

 private:
  YAML::Node node_;
  std::string path_;
};

// "~" and "~/x" → $HOME; relative → under missy_home; the result is lexically normal.
Result<std::string> ResolvePath(const std::string& value, const std::string& missy_home,
                                const std::string& key_path) {
  fs::path p;
  if (value == "~" || value.starts_with("~/")) {
    p = fs::path(HomeDir()) / value.substr(value.size() > 1 ? 2 : 1);
  } else if (value.starts_with("~")) {
    return KeyError(key_path, "'~user' paths are not supported, got '" + value + "'");
  } else if (fs::path(value).is_absolute()) {
    p = value;
  } else {
    p = fs::path(missy_home) / value;
  }
  std::string out = p.lexically_normal().string();
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

Status ParseBudget(const Section& s, TokenBudget* b) {
  MISSY_RETURN_IF_ERROR(s.Check({"total", "system_reserve", "tool_definitions_reserve",
                                 "memory_fraction", "learnings_fraction", "fresh_tail_count"}));
  MISSY_RETURN_IF_ERROR(s.Int("total", &b->total, 0));
  MISSY_RETURN_IF_ERROR(s.Int("system_reserve", &b->system_reserve, 0));
  MISSY_RETURN_IF_ERROR(s.Int("tool_definitions_reserve", &b->tool_definitions_reserve, 0));
  MISSY_RETURN_IF_ERROR(s.Double("memory_fraction", &b->memory_fraction, 0, 1));
  MISSY_RETURN_IF_ERROR(s.Double("learnings_fraction", &b->learnings_fraction, 0, 1));
  MISSY_RETURN_IF_ERROR(s.Int("fresh_tail_count", &b->fresh_tail_count, 0));
  Status v = b->Validate();
  if (!v.ok()) {
    std::string field = v.field().empty() ? s.Path("total") : s.Path(v.field());
    return KeyError(field, v.message());
  }
  return Status::Ok();
}

Status ParseModels(const YAML::Node& node, const std::string& path, ModelTable* table) {
  if (node.IsNull()) return Status::Ok();
  if (!node.IsSequence()) return KeyError(path, "expected a list, got " + Describe(node));
  for (size_t i = 0; i < node.size(); ++i) {
    const Section row(node[i], path + "[" + std::to_string(i) + "]");
    if (!node[i].IsMap()) {
      return KeyError(path + "[" + std::to_string(i) + "]",
                      "expected a mapping, got " + Describe(node[i]));
    }
    MISSY_RETURN_IF_ERROR(
        row.Check({"pattern", "context_window", "max_output_tokens", "encoding", "factor"}));
    for (const char* required : {"pattern", "context_window", "max_output_tokens"}) {
      if (!row.Has(required)) return KeyError(row.Path(required), "required");
    }
    ModelSpec spec;
    spec.encoding = "o200k_base";
    MISSY_RETURN_IF_ERROR(row.String("pattern", &spec.pattern));
    MISSY_RETURN_IF_ERROR(
        row.Int("context_window", &spec.context_window, std::numeric_limits<int64_t>::min()));
    MISSY_RETURN_IF_ERROR(
        row.Int("max_output_tokens", &spec.max_output_tokens, std::numeric_limits<int64_t>::min()));
    MISSY_RETURN_IF_ERROR(row.String("encoding", &spec.encoding));
    MISSY_RETURN_IF_ERROR(row.Double("factor", &spec.factor, -kInf, kInf));
    Status v = spec.Validate();
    if (!v.ok()) return KeyError(row.Path(v.field()), v.message());
    table->Upsert(std::move(spec));
  }
  return table->Validate();
}

struct PathKey {
  const char* key;
  std::string* out;
};

Status ParseContext(const Section& ctx, const std::string& home, DaemonConfig* c) {
  MISSY_RETURN_IF_ERROR(
      ctx.Check({"socket", "audit_socket", "database", "data_dir", "log_level", "budget", "limits",
                 "audit", "threshold_pct", "message_threshold", "tool_output_max_tokens", "strict",
                 "pruning", "tokenizer", "image_tokens", "calibration", "models"}));

  const PathKey path_keys[] = {{"socket", &c->socket_path},
                               {"audit_socket", &c->audit_socket_path},
                               {"database", &c->database_path}};
  for (const PathKey& pk : path_keys) MISSY_RETURN_IF_ERROR(ctx.NonEmptyString(pk.key, pk.out));
  MISSY_RETURN_IF_ERROR(ctx.String("data_dir", &c->data_dir));
  MISSY_RETURN_IF_ERROR(ctx.OneOf("log_level", &c->log_level,
                                  {"trace", "debug", "info", "warn", "error", "critical", "off"}));

  MISSY_RETURN_IF_ERROR(ParseBudget(ctx.Sub("budget"), &c->budget));

  const Section limits = ctx.Sub("limits");
  MISSY_RETURN_IF_ERROR(
      limits.Check({"max_body_bytes", "read_timeout_ms", "audit_client_buffer_bytes"}));
  MISSY_RETURN_IF_ERROR(limits.Int("max_body_bytes", &c->max_body_bytes, 1));
  MISSY_RETURN_IF_ERROR(limits.Int("read_timeout_ms", &c->read_timeout_ms, 1));
  MISSY_RETURN_IF_ERROR(limits.Int("audit_client_buffer_bytes", &c->audit_client_buffer_bytes, 1));

  const Section audit = ctx.Sub("audit");
  MISSY_RETURN_IF_ERROR(audit.Check({"retention_days", "retention_events"}));
  MISSY_RETURN_IF_ERROR(audit.Int("retention_days", &c->audit_retention_days, 0));
  MISSY_RETURN_IF_ERROR(audit.Int("retention_events", &c->audit_retention_events, 0));

  MISSY_RETURN_IF_ERROR(ctx.Double("threshold_pct", &c->threshold_pct, 0, 1, /*lo_open=*/true));
  MISSY_RETURN_IF_ERROR(ctx.Int("message_threshold", &c->message_threshold, 1));
  MISSY_RETURN_IF_ERROR(ctx.Int("tool_output_max_tokens", &c->tool_output_max_tokens, 1));
  MISSY_RETURN_IF_ERROR(ctx.Bool("strict", &c->strict));

  const Section pruning = ctx.Sub("pruning");
  MISSY_RETURN_IF_ERROR(pruning.Check({"protect_turns", "protect_tokens", "minimum_freed"}));
  MISSY_RETURN_IF_ERROR(pruning.Int("protect_turns", &c->pruning.protect_turns, 0));
  MISSY_RETURN_IF_ERROR(pruning.Int("protect_tokens", &c->pruning.protect_tokens, 0));
  MISSY_RETURN_IF_ERROR(pruning.Int("minimum_freed", &c->pruning.minimum_freed, 0));

  std::string tokenizer(TokenizerModeName(c->tokenizer));
  MISSY_RETURN_IF_ERROR(ctx.OneOf("tokenizer", &tokenizer, {"exact", "heuristic"}));
  c->tokenizer = tokenizer == "heuristic" ? TokenizerMode::kHeuristic : TokenizerMode::kExact;
  MISSY_RETURN_IF_ERROR(ctx.Int("image_tokens", &c->image_tokens, 0));

  const Section cal = ctx.Sub("calibration");
  MISSY_RETURN_IF_ERROR(cal.Check({"min_ratio", "max_ratio", "alpha"}));
  MISSY_RETURN_IF_ERROR(cal.Double("min_ratio", &c->calibration.min_ratio, 0, 1, true));
  MISSY_RETURN_IF_ERROR(cal.Double("max_ratio", &c->calibration.max_ratio, 1, kInf));
  MISSY_RETURN_IF_ERROR(cal.Double("alpha", &c->calibration.alpha, 0, 1, true));

  if (ctx.Has("models")) {
    MISSY_RETURN_IF_ERROR(ParseModels(ctx.Get("models"), ctx.Path("models"), &c->models));
  }

  for (const PathKey& pk : path_keys) {
    Result<std::string> r = ResolvePath(*pk.out, home, ctx.Path(pk.key));
    if (!r.ok()) return r.status();
    *pk.out = std::move(r).value();
  }
  if (!c->data_dir.empty()) {
    Result<std::string> r = ResolvePath(c->data_dir, home, ctx.Path("data_dir"));
    if (!r.ok()) return r.status();
    c->data_dir = std::move(r).value();
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
    if (p.IsNull()) {
      c->providers[name] = ProviderConfig{};
      continue;
    }
    if (!p.IsMap()) return KeyError(path, "expected a mapping, got " + Describe(p));
    ProviderConfig pc;
    const PathKey string_keys[] = {
        {"model", &pc.model}, {"base_url", &pc.base_url}, {"api_key", &pc.api_key}};
    for (const PathKey& pk : string_keys) {
      const YAML::Node v = p[pk.key];
      if (!v.IsDefined() || v.IsNull()) continue;
      MISSY_RETURN_IF_ERROR(ParseString(v, path + "." + pk.key, pk.out));
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

  DaemonConfig c;
  c.missy_home = missy_home;
  c.socket_path = "missyd.sock";
  c.audit_socket_path = "audit.sock";
  c.database_path = "missyd.db";

  if (!root.IsNull() && !root.IsMap()) {
    return Status::InvalidArgument("expected a mapping at the top level, got " + Describe(root));
  }
  const Section top(root, "");
  if (top.Has("default_provider") && !top.Get("default_provider").IsNull()) {
    MISSY_RETURN_IF_ERROR(top.String("default_provider", &c.default_provider));
  }
  if (top.Has("providers")) MISSY_RETURN_IF_ERROR(ParseProviders(top.Get("providers"), &c));
  MISSY_RETURN_IF_ERROR(ParseContext(top.Sub("context"), missy_home, &c));
  return c;
}

Status WithFile(const std::string& path, const Status& s) {
  return Status(s.code(), path + ": " + s.message(), s.field());
}

Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  return Status::Unavailable(path + ": cannot " + what + ": " + std::strerror(err));
}

}  // namespace

std::string_view TokenizerModeName(TokenizerMode mode) {
  return mode == TokenizerMode::kHeuristic ? "heuristic" : "exact";
}

std::string ResolveMissyHome() {
  const char* env = std::getenv("MISSY_HOME");
  std::string home = (env != nullptr && *env != '\0') ? env : HomeDir() + "/.missy";
  if (home == "~" || home.starts_with("~/")) home = HomeDir() + home.substr(1);
  std::error_code ec;
  fs::path abs = fs::absolute(home, ec);
  std::string out = (ec ? fs::path(home) : abs).lexically_normal().string();
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

Result<DaemonConfig> ParseConfig(std::string_view yaml_text, const std::string& missy_home) {
  try {
    return ParseConfigImpl(yaml_text, missy_home);
  } catch (const std::exception& e) {  // yaml-cpp throws on some malformed input
    return Status::InvalidArgument(std::string("cannot parse config: ") + e.what());
  }
}

Result<DaemonConfig> LoadConfigFile(const std::string& path, const std::string& missy_home) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(path + ": not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(path + ": no such file");
    return ErrnoStatus("read", path, err);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ErrnoStatus("read", path, errno);
  Result<DaemonConfig> r = ParseConfig(ss.str(), missy_home);
  if (!r.ok()) return WithFile(path, r.status());
  return r;
}

std::string DefaultConfigYaml() {
  return R"yaml(# ~/.missy/config.yaml — shared by the Missy agent framework and missyd.
# missyd reads `default_provider`, `providers` and its own `context:` section below, and
# ignores every other top-level key. Inside `context:` unknown keys are errors.
#
# default_provider: openai
# providers:
#   openai:
#     model: gpt-4o
#     base_url: https://api.openai.com/v1
#     api_key: sk-...          # shown as "***" by missyd's /v1/config
#     timeout: 60              # seconds
#   ollama:
#     model: llama3.1:8b
#     base_url: http://localhost:11434/v1

context:
  # Relative paths are under the Missy home (~/.missy, or $MISSY_HOME); "~" is $HOME.
  socket: missyd.sock          # API socket (HTTP/1.1 + JSON)
  audit_socket: audit.sock     # audit event stream (NDJSON)
  database: missyd.db          # SQLite database
  data_dir: ""                 # tokenizer rank files; "" = the built-in data directory
  log_level: info              # trace | debug | info | warn | error | critical | off

  budget:
    total: 30000               # tokens of context when the model is unknown
    system_reserve: 2000       # assumed system prompt size when not measured
    tool_definitions_reserve: 2000  # assumed tool schema size when not measured
    memory_fraction: 0.15      # share of the available budget for ## Relevant Memory
    learnings_fraction: 0.05   # share of the available budget for ## Past Learnings
    fresh_tail_count: 16       # newest messages always kept

  threshold_pct: 0.75          # history share where the warning zone starts, in (0, 1]
  message_threshold: 200       # message count that triggers summarization
  tool_output_max_tokens: 2500  # longer tool outputs are middle-out truncated in context
  strict: false                # true: reject invalid tool-call sequences with 422

  pruning:                     # clearing of old tool output
    protect_turns: 2           # tool results in the last N user turns are kept
    protect_tokens: 40000      # the newest N tokens of tool output are kept
    minimum_freed: 20000       # prune only if at least this many tokens are freed

  tokenizer: exact             # exact (BPE rank files required) | heuristic
  image_tokens: 765            # fixed token cost of one image part

  calibration:                 # correction from provider-reported usage
    min_ratio: 0.7             # lowest accepted actual/estimated ratio
    max_ratio: 1.6             # highest accepted actual/estimated ratio
    alpha: 0.2                 # weight of a new report in the moving ratio

  limits:
    max_body_bytes: 8388608    # largest request body (413 above)
    read_timeout_ms: 30000     # time allowed to read one request
    audit_client_buffer_bytes: 4194304  # backlog before a slow audit client is cut off

  audit:
    retention_days: 30         # events older than this are deleted (0 = no age limit)
    retention_events: 1000000  # newest events kept (0 = no count limit)

  # Extra or overriding model rows (built-ins cover OpenAI, Claude, Gemini, Llama, Qwen,
  # Mistral). pattern: exact name, prefix or glob with *; encoding: o200k_base |
  # cl100k_base | heuristic; factor multiplies counts (models without a tokenizer).
  # - {pattern: "my-model*", context_window: 32768, max_output_tokens: 4096, encoding: heuristic, factor: 1.0}
  models: []
)yaml";
}

Result<DaemonConfig> LoadOrCreateConfig(const std::string& path, const std::string& missy_home,
                                        bool* created) {
  if (created != nullptr) *created = false;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return LoadConfigFile(path, missy_home);
  if (errno != ENOENT) return ErrnoStatus("stat", path, errno);

  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
      fs::create_directories(dir, ec);
      if (ec) return ErrnoStatus("create directory", dir.string(), ec.value());
      if (::chmod(dir.c_str(), 0700) != 0) return ErrnoStatus("chmod", dir.string(), errno);
    }
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return LoadConfigFile(path, missy_home);  // lost a race: fine
    return ErrnoStatus("create", path, errno);
  }
  const std::string text = DefaultConfigYaml();
  size_t done = 0;
  int err = 0;
  if (::fchmod(fd, 0600) != 0) err = errno;
  while (err == 0 && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(path.c_str());
    return ErrnoStatus("write", path, err);
  }
  if (created != nullptr) *created = true;
  return LoadConfigFile(path, missy_home);
}

std::string EffectiveConfigJson(const DaemonConfig& c) {
  json::object budget{{"total", c.budget.total},
                      {"system_reserve", c.budget.system_reserve},
                      {"tool_definitions_reserve", c.budget.tool_definitions_reserve},
                      {"memory_fraction", c.budget.memory_fraction},
                      {"learnings_fraction", c.budget.learnings_fraction},
                      {"fresh_tail_count", c.budget.fresh_tail_count}};
  json::array models;
  for (const ModelSpec& m : c.models.rows()) {
    models.push_back(json::object{{"pattern", m.pattern},
                                  {"context_window", m.context_window},
                                  {"max_output_tokens", m.max_output_tokens},
                                  {"encoding", m.encoding},
                                  {"factor", m.factor}});
  }
  json::object context{
      {"socket", c.socket_path},
      {"audit_socket", c.audit_socket_path},
      {"database", c.database_path},
      {"data_dir", c.data_dir},
      {"log_level", c.log_level},
      {"budget", std::move(budget)},
      {"threshold_pct", c.threshold_pct},
      {"message_threshold", c.message_threshold},
      {"tool_output_max_tokens", c.tool_output_max_tokens},
      {"strict", c.strict},
      {"pruning", json::object{{"protect_turns", c.pruning.protect_turns},
                               {"protect_tokens", c.pruning.protect_tokens},
                               {"minimum_freed", c.pruning.minimum_freed}}},
      {"tokenizer", TokenizerModeName(c.tokenizer)},
      {"image_tokens", c.image_tokens},
      {"calibration", json::object{{"min_ratio", c.calibration.min_ratio},
                                   {"max_ratio", c.calibration.max_ratio},
                                   {"alpha", c.calibration.alpha}}},
      {"limits", json::object{{"max_body_bytes", c.max_body_bytes},
                              {"read_timeout_ms", c.read_timeout_ms},
                              {"audit_client_buffer_bytes", c.audit_client_buffer_bytes}}},
      {"audit", json::object{{"retention_days", c.audit_retention_days},
                             {"retention_events", c.audit_retention_events}}},
      {"models", std::move(models)}};
  json::object providers;
  for (const auto& [name, p] : c.providers) {
    providers[name] = json::object{{"model", p.model},
                                   {"base_url", p.base_url},
                                   {"api_key", p.api_key.empty() ? "" : "***"},
                                   {"timeout", p.timeout_s}};
  }
  json::object root{{"missy_home", c.missy_home},
                    {"default_provider", c.default_provider},
                    {"providers", std::move(providers)},
                    {"context", std::move(context)}};
  return json::serialize(root);
}

}  // namespace missy

// config (check, show, reload), audit (tail, verify, list), jobs.
#include <boost/json.hpp>
#include <chrono>
#include <deque>
#include <set>

#include "cli/commands.h"
#include "cli/http_client.h"
#include "cli/render.h"
#include "config/config.h"

namespace missy::cli {
namespace {

namespace json = boost::json;

const OptionSpec kJson{"--json", false, ""};

// --- config ------------------------------------------------------------------------------

int Config(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  const std::string sub = args.Arg(0).empty() ? "show" : args.Arg(0);
  int rc = 0;
  if (sub == "check") {
    // Local: the same parser and rules as `missyd --check-config` (config/ is shared).
    if (!NeedArgs(env, self, args, 1, 2, &rc)) return rc;
    const std::string path = args.Arg(1).empty() ? env.config_path : args.Arg(1);
    Result<DaemonConfig> cfg = LoadConfigFile(path, env.home);
    if (!cfg.ok()) {
      return Fail(env, ApiError{0, std::string(ApiCodeOf(cfg.status().code())),
                                cfg.status().message(), cfg.status().field()});
    }
    Print(env, "config " + path + " is valid\n");
    return kExitOk;
  }
  if (!NeedArgs(env, self, args, 0, 1, &rc)) return rc;
  if (sub == "show") {
    ApiReply r = env.Api().Get("/v1/config");
    if (!r.ok()) return Fail(env, *r.error);
    Print(env, args.Has("--json") ? PrettyJson(r.body) : FlattenJson(r.body));
    return kExitOk;
  }
  if (sub == "reload") {
    ApiReply r = env.Api().Call("POST", "/v1/config/reload", "{}");
    if (!r.ok()) return Fail(env, *r.error);
    if (args.Has("--json")) {
      Print(env, PrettyJson(r.body));
      return kExitOk;
    }
    auto list = [&](const char* key) {
      std::string out;
      if (const json::value* a = At(r.body, {key}); a != nullptr && a->is_array()) {
        for (const json::value& k : a->get_array()) {
          out += (out.empty() ? "" : ", ") + std::string(k.is_string() ? k.get_string() : "");
        }
      }
      return out;
    };
    const std::string changed = list("changed"), restart = list("restart_required");
    std::string text = changed.empty() ? "config reloaded: nothing changed\n"
                                       : "config reloaded; changed: " + changed + "\n";
    if (!restart.empty()) text += "needs a restart to apply: " + restart + "\n";
    Print(env, text);
    return kExitOk;
  }
  return UsageError(env, self, "unknown subcommand '" + sub + "' (check, show or reload)");
}

// --- audit -------------------------------------------------------------------------------

struct AuditQuery {
  std::vector<std::string> types;
  bool raw = false;

  bool Wants(const json::value& e) const {
    if (types.empty()) return true;
    const std::string type = StrAt(e, {"event_type"});
    for (const std::string& t : types) {
      if (t == type) return true;
    }
    return false;
  }
  std::string Line(const json::value& e) const {
    return (raw ? json::serialize(e) : AuditLine(e)) + "\n";
  }
};

// Events with seq > since, oldest first, `limit` per request (the type filter goes to
// the daemon when there is exactly one type).
ApiReply AuditPage(const ApiClient& api, const AuditQuery& q, int64_t since, int64_t limit) {
  std::string target =
      "/v1/audit?since=" + std::to_string(since) + "&limit=" + std::to_string(limit);
  if (q.types.size() == 1) target += "&type=" + UrlEncode(q.types[0]);
  return api.Get(target);
}

const json::array& Events(const ApiReply& r) {
  static const json::array kEmpty;
  const json::value* a = At(r.body, {"events"});
  return a != nullptr && a->is_array() ? a->get_array() : kEmpty;
}

// The newest seq in the log (0 when empty): /v1/audit pages forward only, so probe.
std::optional<int64_t> AuditHead(const ApiClient& api, ApiError* error) {
  auto any_after = [&](int64_t seq) -> std::optional<bool> {
    ApiReply r = api.Get("/v1/audit?limit=1&since=" + std::to_string(seq));
    if (!r.ok()) {
      *error = *r.error;
      return std::nullopt;
    }
    return !Events(r).empty();
  };
  int64_t lo = 0, hi = 1;  // invariant once set: events after lo, none after hi
  for (;;) {
    std::optional<bool> more = any_after(hi);
    if (!more) return std::nullopt;
    if (!*more) break;
    lo = hi;
    hi *= 2;
  }
  std::optional<bool> any = any_after(lo);
  if (!any) return std::nullopt;
  if (!*any) return lo;  // only possible for lo == 0: an empty log
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    std::optional<bool> more = any_after(mid);
    if (!more) return std::nullopt;
    (*more ? lo : hi) = mid;
  }
  return hi;
}

// Prints the matching events after `since` up to the end; returns the last seq seen.
std::optional<int64_t> PrintAfter(Env& env, const ApiClient& api, const AuditQuery& q,
                                  int64_t since, ApiError* error) {
  for (;;) {
    ApiReply r = AuditPage(api, q, since, 1000);
    if (!r.ok()) {
      *error = *r.error;
      return std::nullopt;
    }
    const json::array& events = Events(r);
    for (const json::value& e : events) {
      if (q.Wants(e)) Print(env, q.Line(e));
      since = std::max(since, IntAt(e, {"seq"}));
    }
    if (events.size() < 1000) return since;
  }
}

// Prints the last `n` matching events; returns the head seq.
std::optional<int64_t> PrintLast(Env& env, const ApiClient& api, const AuditQuery& q, int64_t n,
                                 ApiError* error) {
  std::optional<int64_t> head = AuditHead(api, error);
  if (!head) return std::nullopt;
  std::deque<json::value> last;
  for (int64_t span = std::max<int64_t>(n, 16);; span *= 4) {
    const int64_t start = std::max<int64_t>(0, *head - span);
    last.clear();
    int64_t since = start;
    while (since < *head) {
      ApiReply r = AuditPage(api, q, since, 1000);
      if (!r.ok()) {
        *error = *r.error;
        return std::nullopt;
      }
      const json::array& events = Events(r);
      for (const json::value& e : events) {
        if (IntAt(e, {"seq"}) > *head) break;
        if (!q.Wants(e)) continue;
        last.push_back(e);
        if (static_cast<int64_t>(last.size()) > n) last.pop_front();
      }
      if (events.size() < 1000) break;
      since = IntAt(events.back(), {"seq"});
    }
    if (static_cast<int64_t>(last.size()) >= n || start == 0) break;
  }
  for (const json::value& e : last) Print(env, q.Line(e));
  return *head;
}

int Follow(Env& env, const AuditQuery& q, int64_t since) {
  json::object first{{"since", since}};
  if (!q.types.empty()) {
    json::array types;
    for (const std::string& t : q.types) types.emplace_back(t);
    first["types"] = std::move(types);
  }
  LineSubscriber sub;
  missy::Status st = sub.Connect(env.audit_socket, json::serialize(first));
  if (!st.ok()) {
    return Fail(
        env,
        ApiError{0, "unavailable",
                 "cannot reach the audit socket " + env.audit_socket + ": " + st.message(), ""});
  }
  for (;;) {
    Result<std::string> line = sub.ReadLine(std::chrono::hours(24));
    if (!line.ok()) {
      if (sub.timed_out()) continue;
      return Fail(env, ApiError{0, "unavailable", "the audit stream closed", ""});
    }
    boost::system::error_code ec;
    json::value e = json::parse(*line, ec);
    if (ec) continue;
    if (StrAt(e, {"event_type"}) == "audit.gap") {
      std::fprintf(env.err, "missyctl: audit stream gap: %s\n", line->c_str());
      continue;
    }
    if (q.Wants(e)) Print(env, q.raw ? *line + "\n" : AuditLine(e) + "\n");
  }
}

int Audit(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  const std::string sub = args.Arg(0);
  int rc = 0;
  if (!NeedArgs(env, self, args, 1, 1, &rc)) return rc;
  ApiClient api = env.Api();
  AuditQuery q{args.All("--type"), args.Has("--json")};
  if (sub == "verify") {
    ApiReply r = api.Get("/v1/audit/verify");
    if (!r.ok()) return Fail(env, *r.error);
    if (q.raw) Print(env, PrettyJson(r.body));
    if (BoolAt(r.body, {"ok"})) {
      if (!q.raw) {
        Print(env, "audit chain ok: " + Count(IntAt(r.body, {"checked"}), "event") + " (seq " +
                       std::to_string(IntAt(r.body, {"first_seq"})) + ".." +
                       std::to_string(IntAt(r.body, {"last_seq"})) + ")\n");
      }
      return kExitOk;
    }
    std::fprintf(env.err, "missyctl: corruption: audit chain broken at seq %lld: %s\n",
                 static_cast<long long>(IntAt(r.body, {"broken_seq"})),
                 StrAt(r.body, {"reason"}).c_str());
    return kExitFailure;
  }
  Result<int64_t> since = IntOption(args, "--since", 0, int64_t{1} << 62, -1);
  if (!since.ok()) return UsageError(env, self, since.status().message());
  if (sub == "list") {
    Result<int64_t> limit = IntOption(args, "--limit", 1, 10000, 100);
    if (!limit.ok()) return UsageError(env, self, limit.status().message());
    ApiReply r = AuditPage(api, q, std::max<int64_t>(*since, 0), *limit);
    if (!r.ok()) return Fail(env, *r.error);
    for (const json::value& e : Events(r)) {
      if (q.Wants(e)) Print(env, q.Line(e));
    }
    return kExitOk;
  }
  if (sub == "tail") {
    Result<int64_t> lines = IntOption(args, "--lines", 0, 100000, 10);
    if (!lines.ok()) return UsageError(env, self, lines.status().message());
    ApiError error;
    std::optional<int64_t> last = *since >= 0 ? PrintAfter(env, api, q, *since, &error)
                                              : PrintLast(env, api, q, *lines, &error);
    if (!last) return Fail(env, error);
    return args.Has("--follow") ? Follow(env, q, *last) : kExitOk;
  }
  return UsageError(env, self, "unknown subcommand '" + sub + "' (tail, verify or list)");
}

// --- jobs ----------------------------------------------------------------------------------

int Jobs(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (!NeedArgs(env, self, args, 0, 0, &rc)) return rc;
  Result<int64_t> limit = IntOption(args, "--limit", 1, 1000, 100);
  if (!limit.ok()) return UsageError(env, self, limit.status().message());
  std::string target = "/v1/jobs?limit=" + std::to_string(*limit);
  if (args.Has("--state")) target += "&state=" + UrlEncode(args.Get("--state"));
  ApiReply r = env.Api().Get(target);
  if (!r.ok()) return Fail(env, *r.error);
  Print(env, args.Has("--json") ? PrettyJson(r.body) : RenderJobs(r.body));
  return kExitOk;
}

}  // namespace

void AddAdminCommands(std::vector<CommandSpec>& out) {
  out.push_back({"config",
                 "config check|show|reload\tvalidate, show or reload the config",
                 "usage: missyctl config check [PATH]\n"
                 "       missyctl config show [--json]\n"
                 "       missyctl config reload [--json]\n"
                 "\n"
                 "check validates a config file locally, with the daemon's own parser and rules\n"
                 "(the same as 'missyd --check-config'; default: --config, else\n"
                 "$MISSY_HOME/config.yaml); the daemon need not run. show prints the daemon's\n"
                 "effective config (secrets as ***), one 'key = value' per line. reload asks the\n"
                 "daemon to reload its config file (POST /v1/config/reload, as SIGHUP does):\n"
                 "a config that does not validate is refused and the old one stays.\n",
                 {kJson},
                 Config});
  out.push_back({"audit",
                 "audit tail|verify|list\tthe audit trail",
                 "usage: missyctl audit tail [-f] [--since SEQ | -n N] [--type T]... [--json]\n"
                 "       missyctl audit verify [--json]\n"
                 "       missyctl audit list [--since SEQ] [--limit N] [--type T]... [--json]\n"
                 "\n"
                 "tail prints the last N events (-n, default 10), or every event after SEQ, one\n"
                 "line each: time (UTC), seq, type, session and the detail; --type keeps only\n"
                 "those types (repeatable); --json prints the events as stored (NDJSON).\n"
                 "-f/--follow then follows the audit socket for new events (Ctrl-C to stop).\n"
                 "verify checks the hash chain of the log (exit 1 when broken). list prints up\n"
                 "to N events after SEQ (default 0, 100).\n",
                 {kJson,
                  {"--follow", false, "-f"},
                  {"--since", true, ""},
                  {"--lines", true, "-n"},
                  {"--limit", true, ""},
                  {"--type", true, ""}},
                 Audit});
  out.push_back({"jobs",
                 "jobs [--state S]\tbackground jobs (summarization)",
                 "usage: missyctl jobs [--state queued|running|done|failed] [--limit N] [--json]\n"
                 "\n"
                 "Jobs newest first: id, kind, session, state, attempts, update, last error.\n",
                 {kJson, {"--state", true, ""}, {"--limit", true, "-n"}},
                 Jobs});
}

}  // namespace missy::cli

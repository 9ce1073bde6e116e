// status, sessions (ls, show, rm), messages, context, compact, summaries.
#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/render.h"
#include "config/config.h"
#include "core/model_table.h"

namespace missy::cli {
namespace {

namespace json = boost::json;

const OptionSpec kJson{"--json", false, ""};

std::string SessionPath(const std::string& id) { return "/v1/sessions/" + UrlEncode(id); }

// --- status ------------------------------------------------------------------------------

int StatusCommand(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (!NeedArgs(env, self, args, 0, 0, &rc)) return rc;
  ApiClient api = env.Api();
  ApiReply health = api.Get("/v1/health");
  if (!health.ok()) return Fail(env, *health.error);
  if (args.Has("--json")) {
    Print(env, PrettyJson(health.body));
    return kExitOk;
  }
  StatusExtras extras;
  // Sessions: counted by pages of 1,000, at most 10 pages.
  int64_t counted = 0;
  bool counted_ok = true;
  for (int page = 0; page < 10; ++page) {
    ApiReply r = api.Get("/v1/sessions?limit=1000&offset=" + std::to_string(page * 1000));
    if (!r.ok()) {
      counted_ok = false;
      break;
    }
    const json::value* list = At(r.body, {"sessions"});
    const size_t n = list != nullptr && list->is_array() ? list->get_array().size() : 0;
    counted += static_cast<int64_t>(n);
    if (n < 1000) break;
    if (page == 9) extras.more_sessions = true;
  }
  if (counted_ok) extras.sessions = counted;
  if (ApiReply cfg = api.Get("/v1/config"); cfg.ok()) {
    extras.tokenizer = StrAt(cfg.body, {"context", "tokenizer"});
  }
  auto jobs = [&](const char* state) -> std::optional<int64_t> {
    ApiReply r = api.Get(std::string("/v1/jobs?limit=1000&state=") + state);
    const json::value* list = r.ok() ? At(r.body, {"jobs"}) : nullptr;
    if (list == nullptr || !list->is_array()) return std::nullopt;
    return static_cast<int64_t>(list->get_array().size());
  };
  extras.jobs_queued = jobs("queued");
  extras.jobs_running = jobs("running");
  extras.jobs_failed = jobs("failed");
  Print(env, RenderStatus(health.body, extras));
  return kExitOk;
}

// --- sessions ----------------------------------------------------------------------------

int SessionsList(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  Result<int64_t> limit = IntOption(args, "--limit", 1, 1000, 100);
  if (!limit.ok()) return UsageError(env, self, limit.status().message());
  Result<int64_t> offset = IntOption(args, "--offset", 0, int64_t{1} << 40, 0);
  if (!offset.ok()) return UsageError(env, self, offset.status().message());
  ApiReply r = env.Api().Get("/v1/sessions?limit=" + std::to_string(*limit) +
                             "&offset=" + std::to_string(*offset));
  if (!r.ok()) return Fail(env, *r.error);
  Print(env, args.Has("--json") ? PrettyJson(r.body) : RenderSessions(r.body));
  return kExitOk;
}

int SessionShow(const ParsedArgs& args, Env& env, const std::string& id) {
  ApiReply r = env.Api().Get(SessionPath(id));
  if (!r.ok()) return Fail(env, *r.error);
  Print(env, args.Has("--json") ? PrettyJson(r.body) : RenderSession(r.body));
  return kExitOk;
}

int Sessions(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  const std::string sub = args.Arg(0).empty() ? "ls" : args.Arg(0);
  int rc = 0;
  if (sub == "ls" || sub == "list") {
    if (!NeedArgs(env, self, args, 0, 1, &rc)) return rc;
    return SessionsList(self, args, env);
  }
  if (sub == "show" || sub == "rm") {
    if (!NeedArgs(env, self, args, 2, 2, &rc)) return rc;
    const std::string id = args.Arg(1);
    if (sub == "show") return SessionShow(args, env, id);
    ApiReply r = env.Api().Call("DELETE", SessionPath(id));
    if (!r.ok()) return Fail(env, *r.error);
    if (args.Has("--json")) {
      Print(env, PrettyJson(r.body));
    } else {
      Print(env, "deleted session " + StrAt(r.body, {"deleted"}) + ": " +
                     Count(IntAt(r.body, {"messages"}), "message") + ", " +
                     Count(IntAt(r.body, {"summaries"}), "summary", "summaries") + ", " +
                     Count(IntAt(r.body, {"memory_items"}), "memory item") + ", " +
                     Count(IntAt(r.body, {"jobs"}), "job") + "\n");
    }
    return kExitOk;
  }
  return UsageError(env, self, "unknown subcommand '" + sub + "' (ls, show or rm)");
}

// `session ID`: the old spelling of `sessions show ID`.
int SessionAlias(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (!NeedArgs(env, self, args, 1, 1, &rc)) return rc;
  return SessionShow(args, env, args.Arg(0));
}

// --- messages ----------------------------------------------------------------------------

int Messages(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (!NeedArgs(env, self, args, 1, 1, &rc)) return rc;
  Result<int64_t> after = IntOption(args, "--after", 0, int64_t{1} << 62, 0);
  if (!after.ok()) return UsageError(env, self, after.status().message());
  Result<int64_t> limit = IntOption(args, "--limit", 1, 10000, 1000);
  if (!limit.ok()) return UsageError(env, self, limit.status().message());
  ApiReply r =
      env.Api().Get(SessionPath(args.Arg(0)) + "/messages?after=" + std::to_string(*after) +
                    "&limit=" + std::to_string(*limit));
  if (!r.ok()) return Fail(env, *r.error);
  if (args.Has("--json")) {
    Print(env, PrettyJson(r.body));
    return kExitOk;
  }
  const json::value* list = At(r.body, {"messages"});
  if (list == nullptr || !list->is_array() || list->get_array().empty()) {
    Print(env, "(no messages)\n");
    return kExitOk;
  }
  Table t({{"SEQ", Align::kRight},
           {"ROLE", Align::kLeft},
           {"TOKENS", Align::kRight},
           {"FLAGS", Align::kLeft, true, 5},
           {"CONTENT", Align::kLeft, true, 12}});
  for (const json::value& m : list->get_array()) {
    std::string flags;
    if (const json::value* f = At(m, {"flags"}); f != nullptr && f->is_array()) {
      for (const json::value& x : f->get_array()) {
        flags += (flags.empty() ? "" : ",") + std::string(x.is_string() ? x.get_string() : "");
      }
    }
    std::string content;
    if (const json::value* c = At(m, {"content"}); c != nullptr) {
      content = c->is_string() ? std::string(c->get_string())
                : c->is_null() ? ""
                               : json::serialize(*c);
    }
    if (const json::value* calls = At(m, {"tool_calls"}); calls != nullptr && calls->is_array()) {
      for (const json::value& call : calls->get_array()) {
        content += (content.empty() ? "" : " ") + std::string("-> ") +
                   StrAt(call, {"function", "name"}) + "(" +
                   StrAt(call, {"function", "arguments"}) + ")";
      }
    }
    t.AddRow({std::to_string(IntAt(m, {"seq"})), StrAt(m, {"role"}),
              Thousands(IntAt(m, {"tokens"})), flags.empty() ? "-" : flags, content});
  }
  Print(env, t.Render());
  return kExitOk;
}

// --- context, compact, summaries ---------------------------------------------------------

// Adds context_window / max_output_tokens from --model, --window, --max-output.
// Returns a usage message, or "".
std::string WindowOptions(const ParsedArgs& args, const Env& env, json::object& body) {
  if (args.Has("--model")) {
    const std::string model = args.Get("--model");
    Result<DaemonConfig> cfg = LoadConfigFile(env.config_path, env.home);
    const ModelTable table = cfg.ok() ? cfg->models : ModelTable::Builtin();
    std::optional<ModelSpec> spec = table.Lookup(model);
    if (!spec || spec->context_window <= 0) {
      return "--model: unknown model '" + model + "' (not in the model table; give --window)";
    }
    body["context_window"] = spec->context_window;
    body["max_output_tokens"] = spec->max_output_tokens;
  }
  Result<int64_t> window = IntOption(args, "--window", 1, int64_t{1} << 40, 0);
  if (!window.ok()) return window.status().message();
  if (*window > 0) body["context_window"] = *window;
  Result<int64_t> output = IntOption(args, "--max-output", 0, int64_t{1} << 40, -1);
  if (!output.ok()) return output.status().message();
  if (*output >= 0) body["max_output_tokens"] = *output;
  return "";
}

int Context(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  // Past contexts (commands_inspect.cpp): "show CONTEXT_ID", "ls SESSION".
  if (args.positional.size() == 2 && args.Arg(0) == "show") return ContextShow(self, args, env);
  if (args.positional.size() == 2 && args.Arg(0) == "ls") return ContextList(self, args, env);
  int rc = 0;
  if (!NeedArgs(env, self, args, 1, 1, &rc)) return rc;
  json::object body;
  if (std::string bad = WindowOptions(args, env, body); !bad.empty()) {
    return UsageError(env, self, bad);
  }
  if (args.Has("--message")) {
    body["message"] = json::object{{"role", "user"}, {"content", args.Get("--message")}};
  }
  if (args.Has("--query")) body["query"] = args.Get("--query");
  ApiReply r = env.Api().Call("POST", SessionPath(args.Arg(0)) + "/context", json::serialize(body));
  if (!r.ok()) return Fail(env, *r.error);
  Print(env, args.Has("--json") ? PrettyJson(r.body) : RenderContext(r.body));
  return kExitOk;
}

int Compact(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (!NeedArgs(env, self, args, 1, 1, &rc)) return rc;
  json::object body;
  if (std::string bad = WindowOptions(args, env, body); !bad.empty()) {
    return UsageError(env, self, bad);
  }
  body["reason"] = args.Get("--reason", "missyctl");
  ApiClient api = env.Api();
  api.set_timeout(std::chrono::minutes(10));  // summarizes every chunk now
  ApiReply r = api.Call("POST", SessionPath(args.Arg(0)) + "/compact", json::serialize(body));
  if (!r.ok()) return Fail(env, *r.error);
  Print(env, args.Has("--json") ? PrettyJson(r.body) : RenderContext(r.body));
  return kExitOk;
}

int Summaries(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (!NeedArgs(env, self, args, 1, 1, &rc)) return rc;
  ApiReply r = env.Api().Get(SessionPath(args.Arg(0)) + "/summaries");
  if (!r.ok()) return Fail(env, *r.error);
  Print(env, args.Has("--json") ? PrettyJson(r.body) : RenderSummaries(r.body));
  return kExitOk;
}

}  // namespace

void AddSessionCommands(std::vector<CommandSpec>& out) {
  const OptionSpec model{"--model", true, ""}, window{"--window", true, ""},
      max_output{"--max-output", true, ""};
  out.push_back({"status",
                 "status\tdaemon health: version, uptime, sessions, jobs",
                 "usage: missyctl status [--json]\n"
                 "\n"
                 "The daemon's health (GET /v1/health) with the number of sessions, the tokenizer\n"
                 "mode and the queued, running and failed jobs. --json prints /v1/health as is.\n",
                 {kJson},
                 StatusCommand});
  out.push_back({"health",
                 "",
                 "usage: missyctl health [--json]\n\nThe same as 'missyctl status'.\n",
                 {kJson},
                 StatusCommand,
                 false});
  out.push_back({"sessions",
                 "sessions [ls|show|rm ID]\tlist, show or delete sessions",
                 "usage: missyctl sessions [ls] [--limit N] [--offset N] [--json]\n"
                 "       missyctl sessions show ID [--json]\n"
                 "       missyctl sessions rm ID [--json]\n"
                 "\n"
                 "ls (the default) lists sessions oldest first: id, model, messages, tokens and\n"
                 "last update (--limit 1-1000, default 100; --offset pages). show prints one\n"
                 "session. rm deletes a session with its messages, summaries, session memory\n"
                 "items and jobs (DELETE /v1/sessions/ID; audited as session.deleted).\n",
                 {kJson, {"--limit", true, "-n"}, {"--offset", true, ""}},
                 Sessions});
  out.push_back(
      {"session",
       "",
       "usage: missyctl session ID [--json]\n\nThe same as 'missyctl sessions show ID'.\n",
       {kJson},
       SessionAlias,
       false});
  out.push_back({"messages",
                 "messages ID [--after SEQ]\tstored messages of a session",
                 "usage: missyctl messages ID [--after SEQ] [--limit N] [--json]\n"
                 "\n"
                 "The stored messages with seq > SEQ (default 0), at most N (1-10000, default\n"
                 "1000): seq, role, tokens, flags and content on one line each.\n",
                 {kJson, {"--after", true, ""}, {"--limit", true, "-n"}},
                 Messages});
  out.push_back({"context",
                 "context ID | show CTX | ls ID\tnext context's budget; past contexts",
                 "usage: missyctl context ID [--model M | --window N [--max-output N]]\n"
                 "                          [--message TEXT] [--query TEXT] [--json]\n"
                 "       missyctl context show CONTEXT_ID [--full] [--json]\n"
                 "       missyctl context ls ID [--limit N] [--before SEQ] [--json]\n"
                 "\n"
                 "show prints a past context (GET /v1/contexts/CONTEXT_ID) message by message as\n"
                 "it was sent, rebuilt from what is stored: each entry kept, pruned, truncated,\n"
                 "summary (id, depth, covered seqs, short or full), task, new, or the system\n"
                 "message with its memory items and learnings; '!' marks an entry whose source is\n"
                 "gone. --full prints each message whole. ls lists a session's contexts, newest\n"
                 "first (GET /v1/sessions/ID/contexts; --limit 1-1000, default 20; --before\n"
                 "pages with the seq it prints).\n"
                 "\n"
                 "Builds the session's next context (POST /v1/sessions/ID/context) and shows its\n"
                 "budget: tokens per section (system, tools, memory, learnings, summaries, task,\n"
                 "history, new message), the zone, and what was evicted, pruned, truncated,\n"
                 "sanitized or is due for summarization. The build is a real one: it is audited\n"
                 "(context.built) and pruning or a moved anchor are persisted as for an agent.\n"
                 "  --model M        budget for model M's window and output reserve (from the\n"
                 "                   model table of the config file, else the built-in one)\n"
                 "  --window N       context window override; --max-output N output reserve\n"
                 "  --message TEXT   a new user message (not stored)\n"
                 "  --query TEXT     memory search text\n"
                 "  --json           the daemon's answer as is\n",
                 {kJson,
                  model,
                  window,
                  max_output,
                  {"--message", true, ""},
                  {"--query", true, ""},
                  {"--full", false, ""},
                  {"--limit", true, "-n"},
                  {"--before", true, ""}},
                 Context});
  out.push_back({"compact",
                 "compact ID\tsummarize a session's history now",
                 "usage: missyctl compact ID [--reason TEXT] [--json]\n"
                 "                          [--model M | --window N [--max-output N]]\n"
                 "\n"
                 "Forced compaction (POST /v1/sessions/ID/compact): the uncovered history outside\n"
                 "the fresh tail is summarized now, then the next context's report is shown with\n"
                 "what the compaction did. --reason is recorded in the audit event\n"
                 "(default 'missyctl').\n",
                 {kJson, model, window, max_output, {"--reason", true, ""}},
                 Compact});
  out.push_back({"summaries",
                 "summaries ID\ta session's summaries",
                 "usage: missyctl summaries ID [--json]\n"
                 "\n"
                 "The session's summaries, oldest first: id, depth, covered seqs, messages,\n"
                 "tokens and the summary that condensed it.\n",
                 {kJson},
                 Summaries});
}

}  // namespace missy::cli

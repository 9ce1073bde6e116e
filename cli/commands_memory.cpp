// memory (add, search, ls, rm), learnings (add, ls), tokens count, import-missy.
#include <boost/json.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "cli/render.h"
#include "config/tokenizers.h"

namespace missy::cli {
namespace {

namespace json = boost::json;

const OptionSpec kJson{"--json", false, ""};

std::string Joined(const std::vector<std::string>& words, size_t from) {
  std::string out;
  for (size_t i = from; i < words.size(); ++i) out += (i > from ? " " : "") + words[i];
  return out;
}

json::array Strings(const std::vector<std::string>& values) {
  json::array out;
  for (const std::string& v : values) out.emplace_back(v);
  return out;
}

int Memory(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  const std::string sub = args.Arg(0).empty() ? "ls" : args.Arg(0);
  ApiClient api = env.Api();
  const bool raw = args.Has("--json");
  int rc = 0;
  if (sub == "add") {
    if (!NeedArgs(env, self, args, 2, 1 << 20, &rc)) return rc;
    json::object body{{"text", Joined(args.positional, 1)}, {"tags", Strings(args.All("--tag"))}};
    if (args.Has("--session")) body["session_id"] = args.Get("--session");
    if (args.Has("--pin")) body["pinned"] = true;
    ApiReply r = api.Call("POST", "/v1/memory", json::serialize(body));
    return Show(env, r, raw, [&] { return "added " + StrAt(r.body, {"id"}) + "\n"; });
  }
  if (sub == "search") {
    if (!NeedArgs(env, self, args, 2, 1 << 20, &rc)) return rc;
    Result<int64_t> limit = IntOption(args, "--limit", 1, 100, 10);
    if (!limit.ok()) return UsageError(env, self, limit.status().message());
    std::string target = "/v1/memory/search?q=" + UrlEncode(Joined(args.positional, 1)) +
                         "&limit=" + std::to_string(*limit);
    if (args.Has("--session")) target += "&session_id=" + UrlEncode(args.Get("--session"));
    ApiReply r = api.Get(target);
    return Show(env, r, raw, [&] { return RenderSearch(r.body); });
  }
  if (sub == "ls" || sub == "list") {
    if (!NeedArgs(env, self, args, 0, 1, &rc)) return rc;
    Result<int64_t> limit = IntOption(args, "--limit", 1, 1000, 100);
    if (!limit.ok()) return UsageError(env, self, limit.status().message());
    std::string target = "/v1/memory?limit=" + std::to_string(*limit);
    if (args.Has("--session")) target += "&session_id=" + UrlEncode(args.Get("--session"));
    ApiReply r = api.Get(target);
    return Show(env, r, raw, [&] { return RenderMemoryList(r.body); });
  }
  if (sub == "rm" || sub == "delete") {
    if (!NeedArgs(env, self, args, 2, 2, &rc)) return rc;
    ApiReply r = api.Call("DELETE", "/v1/memory/" + UrlEncode(args.Arg(1)));
    return Show(env, r, raw, [&] { return "deleted " + StrAt(r.body, {"deleted"}) + "\n"; });
  }
  return UsageError(env, self, "unknown subcommand '" + sub + "' (add, search, ls or rm)");
}

int Learnings(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  const std::string sub = args.Arg(0).empty() ? "ls" : args.Arg(0);
  ApiClient api = env.Api();
  const bool raw = args.Has("--json");
  int rc = 0;
  if (sub == "add") {
    if (!NeedArgs(env, self, args, 2, 1 << 20, &rc)) return rc;
    json::object body{{"lesson", Joined(args.positional, 1)},
                      {"task_type", args.Get("--task-type")},
                      {"outcome", args.Get("--outcome")},
                      {"approach", Strings(args.All("--approach"))}};
    if (args.Has("--session")) body["session_id"] = args.Get("--session");
    ApiReply r = api.Call("POST", "/v1/learnings", json::serialize(body));
    return Show(env, r, raw, [&] { return "added " + StrAt(r.body, {"id"}) + "\n"; });
  }
  if (sub == "ls" || sub == "list") {
    if (!NeedArgs(env, self, args, 0, 1, &rc)) return rc;
    Result<int64_t> limit = IntOption(args, "--limit", 1, 1000, 100);
    if (!limit.ok()) return UsageError(env, self, limit.status().message());
    std::string target = "/v1/learnings?limit=" + std::to_string(*limit);
    if (args.Has("--task-type")) target += "&task_type=" + UrlEncode(args.Get("--task-type"));
    ApiReply r = api.Get(target);
    return Show(env, r, raw, [&] { return RenderLearnings(r.body); });
  }
  return UsageError(env, self, "unknown subcommand '" + sub + "' (add or ls)");
}

// Offline: counts with the rank files, as the daemon would for that encoding.
int Tokens(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (args.Arg(0) != "count") {
    return UsageError(env, self,
                      args.Arg(0).empty() ? "missing subcommand 'count'"
                                          : "unknown subcommand '" + args.Arg(0) + "' (count)");
  }
  if (!NeedArgs(env, self, args, 1, 1 << 20, &rc)) return rc;
  std::string text;
  const bool from_file = args.Has("--file");
  if (from_file && args.positional.size() > 1) {
    return UsageError(env, self, "give the text or --file, not both");
  }
  if (from_file || args.positional.size() == 1 || args.Arg(1) == "-") {
    const std::string file = from_file ? args.Get("--file") : "-";
    std::FILE* in = file == "-" ? stdin : std::fopen(file.c_str(), "rb");
    if (in == nullptr) {
      return Fail(env, ApiError{0, "not_found", "cannot read " + file, "--file"});
    }
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) text.append(buf, n);
    if (in != stdin) std::fclose(in);
  } else {
    text = Joined(args.positional, 1);
  }
  const std::string encoding = args.Get("--encoding", "o200k_base");
  TokenizerRegistry registry(args.Get("--data-dir"));
  Result<std::shared_ptr<const TokenCounter>> counter = registry.Get(encoding);
  if (!counter.ok()) {
    return Fail(env, ApiError{0, std::string(ApiCodeOf(counter.status().code())),
                              counter.status().message(), "--encoding"});
  }
  Print(env, std::to_string((*counter)->Count(text)) + "\n");
  return kExitOk;
}

int ImportMissy(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (!NeedArgs(env, self, args, 0, 1, &rc)) return rc;
  json::object body;
  if (!args.Arg(0).empty()) body["path"] = args.Arg(0);
  ApiClient api = env.Api();
  api.set_timeout(std::chrono::minutes(10));
  ApiReply r = api.Call("POST", "/v1/import/missy", json::serialize(body));
  if (!r.ok()) return Fail(env, *r.error);
  if (args.Has("--json")) {
    Print(env, PrettyJson(r.body));
    return kExitOk;
  }
  Print(env, "imported from " + StrAt(r.body, {"path"}) + ": " +
                 std::to_string(IntAt(r.body, {"sessions"})) + " sessions, " +
                 std::to_string(IntAt(r.body, {"messages"})) + " messages, " +
                 std::to_string(IntAt(r.body, {"summaries"})) + " summaries, " +
                 std::to_string(IntAt(r.body, {"learnings"})) + " learnings (" +
                 std::to_string(IntAt(r.body, {"skipped"})) + " already present)\n");
  return kExitOk;
}

}  // namespace

void AddMemoryCommands(std::vector<CommandSpec>& out) {
  const OptionSpec session{"--session", true, ""}, limit{"--limit", true, "-n"};
  out.push_back({"memory",
                 "memory add|search|ls|rm\tlong-term memory items",
                 "usage: missyctl memory add TEXT... [--tag T]... [--session ID] [--pin] [--json]\n"
                 "       missyctl memory search TEXT... [--limit N] [--session ID] [--json]\n"
                 "       missyctl memory ls [--session ID] [--limit N] [--json]\n"
                 "       missyctl memory rm ID [--json]\n"
                 "\n"
                 "add stores a memory item (global, or scoped to --session) and prints its id;\n"
                 "search runs the full-text search over memory, summaries and messages (bm25,\n"
                 "best first); ls lists items newest first; rm deletes one.\n",
                 {kJson, session, limit, {"--tag", true, ""}, {"--pin", false, ""}},
                 Memory});
  out.push_back({"learnings",
                 "learnings add|ls\tlessons injected into contexts",
                 "usage: missyctl learnings add LESSON... [--task-type T] [--outcome O]\n"
                 "                                [--approach A]... [--session ID] [--json]\n"
                 "       missyctl learnings ls [--task-type T] [--limit N] [--json]\n"
                 "\n"
                 "Contexts get the newest five learnings as '## Past Learnings'.\n",
                 {kJson,
                  session,
                  limit,
                  {"--task-type", true, ""},
                  {"--outcome", true, ""},
                  {"--approach", true, ""}},
                 Learnings});
  out.push_back({"tokens",
                 "tokens count [TEXT...]\tcount tokens offline",
                 "usage: missyctl tokens count [--encoding E] [--data-dir DIR]\n"
                 "                             [TEXT... | --file F | -]\n"
                 "\n"
                 "Counts the tokens of TEXT (the arguments joined by spaces), of file F, or of\n"
                 "standard input (no text, or '-'), locally with the BPE rank files, as the\n"
                 "daemon counts: --encoding o200k_base (default), cl100k_base or heuristic.\n",
                 {{"--encoding", true, ""}, {"--data-dir", true, ""}, {"--file", true, ""}},
                 Tokens});
  out.push_back({"import-missy",
                 "import-missy [PATH]\timport Missy's memory.db",
                 "usage: missyctl import-missy [PATH] [--json]\n"
                 "\n"
                 "Imports Missy's sessions, turns, summaries and learnings from PATH (default\n"
                 "$MISSY_HOME/memory.db, as the daemon resolves it). Idempotent.\n",
                 {kJson},
                 ImportMissy});
}

}  // namespace missy::cli

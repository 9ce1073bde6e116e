// proxy (the proxy mode's listeners and the lines that point an agent at it), run (one
// command with those base URLs set). Both read the config file, not the daemon.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/proxy_command.h"
#include "config/config.h"

namespace missy::cli {
namespace {

const OptionSpec kSession{"--session", true, "-s"};

// The config as missyd reads it; an absent file is the defaults (missyd writes it then).
Result<DaemonConfig> LoadProxyConfig(const Env& env) {
  Result<DaemonConfig> cfg = LoadConfigFile(env.config_path, env.home);
  if (!cfg.ok() && cfg.status().code() == StatusCode::kNotFound) {
    return ParseConfig("", env.home);
  }
  return cfg;
}

int ConfigFail(Env& env, const Status& s) {
  return Fail(env, ApiError{0, std::string(ApiCodeOf(s.code())), s.message(), s.field()});
}

// The enabled proxy section, or the exit code after saying why not.
const ProxyConfig* EnabledProxy(Env& env, const Result<DaemonConfig>& cfg, int* exit_code) {
  if (!cfg.ok()) {
    *exit_code = ConfigFail(env, cfg.status());
    return nullptr;
  }
  if (!cfg->proxy.enabled) {
    std::fputs(ProxyDisabledText(env.config_path).c_str(), env.err);
    *exit_code = kExitFailure;
    return nullptr;
  }
  return &cfg->proxy;
}

// --session NAME, checked; "" when not given. False after a usage error.
bool SessionOption(Env& env, const CommandSpec& self, const ParsedArgs& args, std::string* out,
                   int* exit_code) {
  if (!args.Has("--session")) return true;
  *out = args.Get("--session");
  if (Status s = CheckProxySessionName(*out); !s.ok()) {
    *exit_code = UsageError(env, self, "--session: " + s.message());
    return false;
  }
  return true;
}

int NoTcpListener(Env& env) {
  std::fprintf(env.err,
               "missyctl: context.proxy.listen has no TCP address, and agents and the SDKs "
               "need one (add 127.0.0.1:8788)\n");
  return kExitFailure;
}

int Proxy(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  std::string session;
  if (!NeedArgs(env, self, args, 0, 0, &rc)) return rc;
  if (!SessionOption(env, self, args, &session, &rc)) return rc;
  const Result<DaemonConfig> cfg = LoadProxyConfig(env);
  const ProxyConfig* proxy = EnabledProxy(env, cfg, &rc);
  if (proxy == nullptr) return rc;
  if (args.Has("--env")) {
    const std::string lines = ProxyExportLines(*proxy, session);
    if (lines.empty()) return NoTcpListener(env);
    Print(env, lines);
    return kExitOk;
  }
  std::vector<ListenerState> states;
  for (const std::string& entry : proxy->listen) {
    Result<ListenAddress> address = ParseListenAddress(entry);
    states.push_back(address.ok() ? ProbeListener(*address) : ListenerState::kUnknown);
  }
  Print(env, ProxyReport(*proxy, states, session));
  return kExitOk;
}

// The token for the base URL path, or the exit code after saying why there is none.
bool ReadToken(Env& env, const ProxyConfig& proxy, std::string* token, int* exit_code) {
  if (proxy.token_file.empty()) return true;
  std::ifstream in(proxy.token_file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    std::fprintf(env.err, "missyctl: cannot read context.proxy.token_file %s\n",
                 proxy.token_file.c_str());
    *exit_code = kExitFailure;
    return false;
  }
  Result<std::string> t = ProxyTokenForPath(text.str());
  if (!t.ok()) {
    std::fprintf(env.err, "missyctl: %s: %s\n", proxy.token_file.c_str(),
                 t.status().message().c_str());
    *exit_code = kExitFailure;
    return false;
  }
  *token = std::move(t).value();
  return true;
}

int RunCommand(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  std::string session;
  if (args.positional.empty()) return UsageError(env, self, "missing the command to run");
  if (!SessionOption(env, self, args, &session, &rc)) return rc;
  const Result<DaemonConfig> cfg = LoadProxyConfig(env);
  const ProxyConfig* proxy = EnabledProxy(env, cfg, &rc);
  if (proxy == nullptr) return rc;
  const std::string base = ProxyHttpBase(*proxy);
  if (base.empty()) return NoTcpListener(env);
  std::string token;
  if (!ReadToken(env, *proxy, &token, &rc)) return rc;
  for (const std::string& entry : proxy->listen) {
    Result<ListenAddress> address = ParseListenAddress(entry);
    if (!address.ok() || address->HttpBase() != base) continue;
    if (ProbeListener(*address) == ListenerState::kNotListening) {
      std::fprintf(env.err,
                   "missyctl: warning: nothing listens on %s (is missyd running, and restarted "
                   "since the proxy was enabled?)\n",
                   entry.c_str());
    }
    break;
  }
  return ExecWithProxyEnv(ProxyUrls(base, session, token), args.positional, env.err);
}

}  // namespace

void AddProxyCommands(std::vector<CommandSpec>& out) {
  out.push_back(
      {"proxy",
       "proxy [--session NAME]\tthe proxy mode: its listeners, how to point an agent at it",
       "usage: missyctl proxy [--session NAME] [--env]\n"
       "\n"
       "Reads the proxy mode's section of the config file (--config, else\n"
       "$MISSY_HOME/config.yaml) and prints whether it is enabled, each listen address and\n"
       "whether missyd answers there, then the exact lines that point an agent at it: the\n"
       "ANTHROPIC_BASE_URL and OPENAI_BASE_URL exports (for the first TCP address; a unix:\n"
       "listener is listed, but the SDKs need a TCP address) and a Codex CLI config.toml\n"
       "block. A session is named with a path prefix: http://127.0.0.1:8788/s/NAME\n"
       "(Anthropic), http://127.0.0.1:8788/s/NAME/v1 (OpenAI); --session NAME writes it\n"
       "into the lines. --env prints only the export lines: eval \"$(missyctl proxy --env)\".\n"
       "Exits 1 when context.proxy.enabled is false (saying how to enable it) or the\n"
       "config does not validate. See docs/PROXY.md.\n",
       {kSession, {"--env", false, ""}},
       Proxy});
  out.push_back(
      {"run",
       "run [-s NAME] -- CMD ARGS\trun an agent with the proxy's base URLs set",
       "usage: missyctl run [--session NAME] -- COMMAND [ARGS...]\n"
       "\n"
       "Runs COMMAND (looked up in PATH) in place of missyctl, with ANTHROPIC_BASE_URL and\n"
       "OPENAI_BASE_URL (the same plus /v1) set to the proxy's first TCP address. With\n"
       "--session NAME (or -s NAME) both carry the path prefix /s/NAME, so the agent's\n"
       "requests continue the session NAME (1 to 100 characters of A-Z a-z 0-9 . _ : -).\n"
       "When context.proxy.token_file is set, its token goes in as /t/TOKEN. Everything\n"
       "after -- is COMMAND's own. The exit status is COMMAND's; 1 when the proxy is\n"
       "disabled or the config does not validate, 2 on a usage error, 127 when COMMAND\n"
       "cannot be run.\n"
       "\n"
       "  missyctl run -- claude\n"
       "  missyctl run --session fix-ci -- python3 agent.py\n",
       {kSession},
       RunCommand});
}

}  // namespace missy::cli

// missyctl: command-line client of missyd over its Unix sockets (docs/API.md).
// This file resolves the sockets, dispatches to the commands (cli/commands_*.cpp) and
// owns the overview help; the commands print and return the exit code.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/render.h"
#include "config/config.h"

namespace missy::cli {

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec> kCommands = [] {
    std::vector<CommandSpec> out;
    AddSessionCommands(out);
    AddMemoryCommands(out);
    AddAdminCommands(out);
    AddProxyCommands(out);
    AddTopCommands(out);
    return out;
  }();
  return kCommands;
}

const CommandSpec* FindCommand(const std::string& name) {
  for (const CommandSpec& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const std::vector<OptionSpec>& GlobalOptions() {
  static const std::vector<OptionSpec> kGlobal = {
      {"--socket", true, ""}, {"--audit-socket", true, ""}, {"--config", true, ""}};
  return kGlobal;
}

std::string OverviewHelp() {
  std::string out =
      "usage: missyctl [--socket PATH] [--audit-socket PATH] [--config PATH]\n"
      "                COMMAND [ARGS]\n"
      "\n"
      "Operates missyd, the context-window daemon, over its Unix socket.\n"
      "\n"
      "commands:\n";
  for (const CommandSpec& c : Commands()) {
    if (!c.listed) continue;
    const size_t tab = c.summary.find('\t');
    std::string synopsis = c.summary.substr(0, tab);
    synopsis.resize(std::max<size_t>(synopsis.size() + 1, 27), ' ');
    out += "  " + synopsis + (tab == std::string::npos ? "" : c.summary.substr(tab + 1)) + "\n";
  }
  out +=
      "  help [COMMAND]             this text, or a command's help (or COMMAND --help)\n"
      "\n"
      "global options (before or after the command):\n"
      "  --socket PATH        the API socket (default: context.socket of the config\n"
      "                       file, else $MISSY_HOME/missyd.sock; MISSY_HOME\n"
      "                       defaults to ~/.missy; when that socket is absent,\n"
      "                       $XDG_RUNTIME_DIR/missy/missyd.sock of systemd)\n"
      "  --audit-socket PATH  the audit socket (default: context.audit_socket, else\n"
      "                       $MISSY_HOME/audit.sock; the same systemd fallback)\n"
      "  --config PATH        the config file (default: $MISSY_HOME/config.yaml)\n"
      "\n"
      "exit codes:\n"
      "  0  success\n"
      "  1  failure: the daemon answered an error, shown as one line\n"
      "     'missyctl: CODE: MESSAGE (field F)', or could not be reached, or a local\n"
      "     check failed (config check, audit verify)\n"
      "  2  usage error (unknown command or option, missing or bad argument): nothing\n"
      "     was sent\n";
  return out;
}

void Print(Env& env, const std::string& text) {
  std::fputs(text.c_str(), env.out);
  std::fflush(env.out);
}

int Fail(Env& env, const ApiError& error) {
  std::fprintf(env.err, "%s\n", FormatError(error).c_str());
  return kExitFailure;
}

int Show(Env& env, const ApiReply& reply, bool raw, const std::function<std::string()>& render) {
  if (!reply.ok()) return Fail(env, *reply.error);
  Print(env, raw ? PrettyJson(reply.body) : render());
  return kExitOk;
}

int UsageError(Env& env, const CommandSpec& command, const std::string& message) {
  std::string usage = command.help.substr(0, command.help.find("\n\n"));
  std::fprintf(env.err, "missyctl: %s\n%s\n(see 'missyctl help %s')\n", message.c_str(),
               usage.c_str(), command.name.c_str());
  return kExitUsage;
}

bool NeedArgs(Env& env, const CommandSpec& command, const ParsedArgs& args, size_t min, size_t max,
              int* exit_code) {
  if (args.positional.size() < min) {
    *exit_code = UsageError(env, command, "missing argument");
    return false;
  }
  if (args.positional.size() > max) {
    *exit_code = UsageError(env, command, "unexpected argument '" + args.positional[max] + "'");
    return false;
  }
  return true;
}

namespace {

bool IsGlobal(const std::string& arg) {
  for (const OptionSpec& o : GlobalOptions()) {
    if (arg == o.name || arg.rfind(o.name + "=", 0) == 0) return true;
  }
  return false;
}

bool IsSocket(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// `configured` unless it is absent and systemd's socket-activated one
// ($XDG_RUNTIME_DIR/missy/NAME, systemd/missyd.socket) exists.
std::string OrActivated(const std::string& configured, const char* name) {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (IsSocket(configured) || runtime == nullptr || *runtime == '\0') return configured;
  const std::string activated = std::string(runtime) + "/missy/" + name;
  return IsSocket(activated) ? activated : configured;
}

// Fills the socket paths the command line left open from the config file, if it loads.
void ResolveSockets(Env& env) {
  if (!env.socket.empty() && !env.audit_socket.empty()) return;
  Result<DaemonConfig> cfg = LoadConfigFile(env.config_path, env.home);
  if (env.socket.empty()) {
    env.socket =
        OrActivated(cfg.ok() ? cfg->socket_path : env.home + "/missyd.sock", "missyd.sock");
  }
  if (env.audit_socket.empty()) {
    env.audit_socket =
        OrActivated(cfg.ok() ? cfg->audit_socket_path : env.home + "/audit.sock", "audit.sock");
  }
}

int Run(int argc, char** argv) {
  Env env;
  env.home = ResolveMissyHome();
  std::vector<std::string> args(argv + 1, argv + argc);
  // Global options before the command word.
  size_t i = 0;
  std::vector<std::string> global_args;
  while (i < args.size() && IsGlobal(args[i])) {
    global_args.push_back(args[i]);
    if (args[i].find('=') == std::string::npos && i + 1 < args.size()) {
      global_args.push_back(args[++i]);
    }
    ++i;
  }
  if (i >= args.size()) {
    std::fputs(OverviewHelp().c_str(), stderr);
    return kExitUsage;
  }
  const std::string name = args[i];
  if (name == "-h" || name == "--help") {
    std::fputs(OverviewHelp().c_str(), stdout);
    return kExitOk;
  }
  if (name == "help") {
    if (i + 1 >= args.size()) {
      std::fputs(OverviewHelp().c_str(), stdout);
      return kExitOk;
    }
    const CommandSpec* c = FindCommand(args[i + 1]);
    if (c == nullptr) {
      std::fprintf(stderr, "missyctl: unknown command '%s' (see 'missyctl --help')\n",
                   args[i + 1].c_str());
      return kExitUsage;
    }
    std::fputs(c->help.c_str(), stdout);
    return kExitOk;
  }
  const CommandSpec* command = FindCommand(name);
  if (command == nullptr) {
    std::fprintf(stderr, "missyctl: unknown command '%s' (see 'missyctl --help')\n", name.c_str());
    return kExitUsage;
  }
  std::vector<OptionSpec> options = command->options;
  options.insert(options.end(), GlobalOptions().begin(), GlobalOptions().end());
  std::vector<std::string> rest = global_args;
  rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  Result<ParsedArgs> parsed = ParseArgs(rest, options);
  if (!parsed.ok()) return UsageError(env, *command, parsed.status().message());
  if (parsed->help) {
    std::fputs(command->help.c_str(), stdout);
    return kExitOk;
  }
  env.config_path = parsed->Get("--config", env.home + "/config.yaml");
  env.socket = parsed->Get("--socket");
  env.audit_socket = parsed->Get("--audit-socket");
  ResolveSockets(env);
  return command->run(*command, *parsed, env);
}

}  // namespace
}  // namespace missy::cli

int main(int argc, char** argv) {
  try {
    return missy::cli::Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "missyctl: internal: %s\n", e.what());
    return missy::cli::kExitFailure;
  }
}

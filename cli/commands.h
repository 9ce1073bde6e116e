// missyctl's commands: each one a name, its help and options, and a function that talks
// to the daemon (ApiClient) or works locally (config check, tokens count, proxy, run) and
// returns the exit code (args.h: 0 ok, 1 failure, 2 usage). Output goes to Env::out,
// errors as one line to Env::err.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "cli/api_client.h"
#include "cli/args.h"

namespace missy::cli {

// Where to reach the daemon and its config, resolved once by main.
struct Env {
  std::string home;          // $MISSY_HOME or ~/.missy
  std::string config_path;   // --config, else <home>/config.yaml
  std::string socket;        // --socket, else context.socket of the config, else <home>/missyd.sock
  std::string audit_socket;  // --audit-socket, else context.audit_socket, else <home>/audit.sock
  std::FILE* out = stdout;
  std::FILE* err = stderr;

  ApiClient Api() const { return ApiClient(socket); }
};

struct CommandSpec;
using CommandFn = int (*)(const CommandSpec& self, const ParsedArgs& args, Env& env);

struct CommandSpec {
  std::string name;
  std::string summary;  // one line for `missyctl --help` ("sessions [ls|show|rm]  ...")
  std::string help;     // the whole text of `missyctl help NAME`, starting with "usage: "
  std::vector<OptionSpec> options;
  CommandFn run = nullptr;
  bool listed = true;  // false: an alias kept for old scripts, not in the overview
};

// Every command, in the order of the overview.
const std::vector<CommandSpec>& Commands();
const CommandSpec* FindCommand(const std::string& name);
// The options every command accepts (--socket, --audit-socket, --config).
const std::vector<OptionSpec>& GlobalOptions();
// `missyctl --help`: the overview with the global options and the exit codes.
std::string OverviewHelp();

// Shared by the command files.
void Print(Env& env, const std::string& text);
// Prints the daemon's error as one line; returns kExitFailure.
int Fail(Env& env, const ApiError& error);
// A reply as the user asked for it: the error line (kExitFailure), else the body as
// indented JSON when `raw` (--json) or what `render` makes of it (kExitOk).
int Show(Env& env, const ApiReply& reply, bool raw, const std::function<std::string()>& render);
// Prints "missyctl: MESSAGE" and the command's usage line(s); returns kExitUsage.
int UsageError(Env& env, const CommandSpec& command, const std::string& message);
// Checks the positional count (the subcommand word included); prints the usage error.
bool NeedArgs(Env& env, const CommandSpec& command, const ParsedArgs& args, size_t min, size_t max,
              int* exit_code);

// The command tables of each file.
void AddSessionCommands(std::vector<CommandSpec>& out);  // status, sessions, context, ...
void AddMemoryCommands(std::vector<CommandSpec>& out);   // memory, learnings, tokens, import
void AddAdminCommands(std::vector<CommandSpec>& out);    // config, audit, jobs
void AddProxyCommands(std::vector<CommandSpec>& out);    // proxy, run
void AddTopCommands(std::vector<CommandSpec>& out);      // top (commands_top.cpp)

// `context show CONTEXT_ID` and `context ls SESSION` (commands_inspect.cpp), reached
// through the `context` command.
int ContextShow(const CommandSpec& self, const ParsedArgs& args, Env& env);
int ContextList(const CommandSpec& self, const ParsedArgs& args, Env& env);

}  // namespace missy::cli

// Command-line parsing for missyctl: options declared per command, parsed into
// positionals and values; every mistake is a usage error (exit code 2) with a message
// naming the option. Pure; no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace missy::cli {

// Exit codes of missyctl (documented in `missyctl --help`).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the daemon refused or failed, or was unreachable
inline constexpr int kExitUsage = 2;    // bad command line: nothing was sent

struct OptionSpec {
  std::string name;          // "--limit"; a one-letter alias may follow in `alias` ("-n")
  bool takes_value = false;  // --limit N, --limit=N; else a switch (--json)
  std::string alias;
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> values;  // by option name, in order given
  std::set<std::string> switches;
  bool help = false;  // -h or --help anywhere

  bool Has(const std::string& name) const {
    return switches.count(name) > 0 || values.count(name) > 0;
  }
  // The last value given, or `fallback`.
  std::string Get(const std::string& name, const std::string& fallback = {}) const;
  std::vector<std::string> All(const std::string& name) const;
  // Positional `i`, or "".
  std::string Arg(size_t i) const { return i < positional.size() ? positional[i] : ""; }
};

// Parses `args` (without the program and command names). "--" ends options; a lone "-"
// is a positional (stdin). kInvalidArgument: "unknown option '--x'", "option --limit
// needs a value", "option --json takes no value".
Result<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                             const std::vector<OptionSpec>& options);

// An integer option in [min, max]: kInvalidArgument "--limit: expected an integer from 1
// to 1000, got 'x'". Unset: `fallback`.
Result<int64_t> IntOption(const ParsedArgs& args, const std::string& name, int64_t min, int64_t max,
                          int64_t fallback);

// Percent-encodes everything but [A-Za-z0-9-_.~] (a path segment or query value).
std::string UrlEncode(const std::string& s);

}  // namespace missy::cli

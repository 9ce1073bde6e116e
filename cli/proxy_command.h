// What `missyctl proxy` prints and what `missyctl run` gives the command it runs, derived
// from the config's context.proxy section: the base URLs an agent is pointed at
// (docs/PROXY.md). Everything here is pure except ProbeListener (a connect) and
// ExecWithProxyEnv (replaces the process).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "core/listen_address.h"
#include "core/status.h"

namespace missy::cli {

// The first TCP entry of proxy.listen as a base URL ("http://127.0.0.1:8788"), or "" when
// every entry is a unix: socket (SDKs need a TCP address).
std::string ProxyHttpBase(const ProxyConfig& proxy);

// The base URLs one agent is given. A session adds "/s/NAME", a token then "/t/TOKEN"
// (the proxy's path prefixes, in that order); OpenAI's URL ends in "/v1".
struct ProxyBaseUrls {
  std::string anthropic;  // ANTHROPIC_BASE_URL: "http://127.0.0.1:8788/s/fix-ci"
  std::string openai;     // OPENAI_BASE_URL: "http://127.0.0.1:8788/s/fix-ci/v1"
};
ProxyBaseUrls ProxyUrls(const std::string& http_base, const std::string& session = {},
                        const std::string& token = {});

// "export ANTHROPIC_BASE_URL=...\nexport OPENAI_BASE_URL=...\n" for the first TCP listener
// (`session` "" = none); "" when there is no TCP listener.
std::string ProxyExportLines(const ProxyConfig& proxy, const std::string& session = {});

// The Codex CLI block for ~/.codex/config.toml (the provider "missy", Responses wire API,
// the key from OPENAI_API_KEY); "" when there is no TCP listener.
std::string CodexConfigBlock(const ProxyConfig& proxy, const std::string& session = {});

// Whether a listener answers: "listening" or "not listening".
enum class ListenerState { kUnknown, kListening, kNotListening };

// The whole text of `missyctl proxy` for an enabled proxy: each listen address (with its
// state when known, `states` parallel to proxy.listen or empty), the export lines, the
// Codex block and how to name a session. `session` fills the lines with that name.
std::string ProxyReport(const ProxyConfig& proxy, const std::vector<ListenerState>& states,
                        const std::string& session = {});

// What `missyctl proxy` says when context.proxy.enabled is false in `config_path`.
std::string ProxyDisabledText(const std::string& config_path);

// Ok, or InvalidArgument saying why `name` cannot name a proxy session in a URL path:
// 1 to 100 characters of A-Z a-z 0-9 . _ : - (what the proxy keeps unchanged).
Status CheckProxySessionName(std::string_view name);

// The token of context.proxy.token_file, trimmed as the proxy trims it, from the file's
// `content`; InvalidArgument when it is empty or holds a character a URL path segment
// cannot carry as is (anything but A-Z a-z 0-9 . _ ~ -).
Result<std::string> ProxyTokenForPath(std::string_view content);

// Connects to the listener once (a loopback TCP port or a unix socket): kListening when it
// accepts, kNotListening when refused or absent.
ListenerState ProbeListener(const ListenAddress& address);

// Sets ANTHROPIC_BASE_URL and OPENAI_BASE_URL to `urls` and executes argv (argv[0] looked
// up in PATH). Returns only when the exec failed: prints "missyctl: cannot run 'X': REASON"
// to `err` and returns 127.
int ExecWithProxyEnv(const ProxyBaseUrls& urls, const std::vector<std::string>& argv,
                     std::FILE* err);

}  // namespace missy::cli

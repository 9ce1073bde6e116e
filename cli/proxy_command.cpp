#include "cli/proxy_command.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace missy::cli {
namespace {

constexpr size_t kMaxSessionName = 100;  // what the proxy keeps of a name

bool IsUnreserved(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '~' ||
         c == '-';
}

// The first TCP entry of proxy.listen, parsed into `out`; false when there is none.
bool FirstTcp(const ProxyConfig& proxy, ListenAddress* out) {
  for (const std::string& entry : proxy.listen) {
    Result<ListenAddress> a = ParseListenAddress(entry);
    if (a.ok() && a->kind != ListenAddress::Kind::kUnix) {
      *out = std::move(a).value();
      return true;
    }
  }
  return false;
}

std::string SessionHint(const std::string& base) {
  return "# A session can be named with a path prefix:\n"
         "#   Anthropic: " +
         base + "/s/NAME\n" + "#   OpenAI:    " + base +
         "/s/NAME/v1\n"
         "# or for one command: missyctl run --session NAME -- COMMAND [ARGS...]\n";
}

std::string TokenHint(const ProxyConfig& proxy, const std::string& base) {
  return "# context.proxy.token_file is set (" + proxy.token_file +
         "): each request must also carry\n"
         "# its token, as an X-Missy-Token header or a path prefix after the address and "
         "/s/NAME:\n"
         "#   " +
         base + "/t/TOKEN   (missyctl run adds it)\n";
}

}  // namespace

std::string ProxyHttpBase(const ProxyConfig& proxy) {
  ListenAddress tcp;
  return FirstTcp(proxy, &tcp) ? tcp.HttpBase() : std::string();
}

ProxyBaseUrls ProxyUrls(const std::string& http_base, const std::string& session,
                        const std::string& token) {
  std::string base = http_base;
  if (!session.empty()) base += "/s/" + session;
  if (!token.empty()) base += "/t/" + token;
  return ProxyBaseUrls{base, base + "/v1"};
}

std::string ProxyExportLines(const ProxyConfig& proxy, const std::string& session) {
  const std::string base = ProxyHttpBase(proxy);
  if (base.empty()) return {};
  const ProxyBaseUrls urls = ProxyUrls(base, session);
  return "export ANTHROPIC_BASE_URL=" + urls.anthropic + "\nexport OPENAI_BASE_URL=" + urls.openai +
         "\n";
}

std::string CodexConfigBlock(const ProxyConfig& proxy, const std::string& session) {
  const std::string base = ProxyHttpBase(proxy);
  if (base.empty()) return {};
  return "[model_providers.missy]\n"
         "name = \"missy\"\n"
         "base_url = \"" +
         ProxyUrls(base, session).openai +
         "\"\n"
         "wire_api = \"responses\"\n"
         "env_key = \"OPENAI_API_KEY\"\n";
}

std::string ProxyReport(const ProxyConfig& proxy, const std::vector<ListenerState>& states,
                        const std::string& session) {
  std::string out = "proxy: enabled\n";
  bool silent = false;
  for (size_t i = 0; i < proxy.listen.size(); ++i) {
    Result<ListenAddress> a = ParseListenAddress(proxy.listen[i]);
    std::string notes;
    const ListenerState state = i < states.size() ? states[i] : ListenerState::kUnknown;
    if (state == ListenerState::kListening) notes = "listening";
    if (state == ListenerState::kNotListening) notes = "not listening";
    silent = silent || state == ListenerState::kNotListening;
    if (a.ok() && a->kind == ListenAddress::Kind::kUnix) {
      notes += (notes.empty() ? "" : "; ") + std::string("the SDKs need a TCP address");
    }
    out += "listen: " + proxy.listen[i] + (notes.empty() ? "" : " (" + notes + ")") + "\n";
  }
  if (silent) {
    out += "not listening: is missyd running, and was it restarted since the proxy was enabled?\n";
  }
  const std::string base = ProxyHttpBase(proxy);
  if (base.empty()) {
    return out +
           "\nNo TCP listener: agents and the SDKs need a TCP address; add one such as "
           "127.0.0.1:8788 to context.proxy.listen.\n";
  }
  out += "inspector: " + base + "/ui/ (what the model saw on each call; docs/INSPECTOR.md)\n";
  out += "\n# Claude Code, and scripts on the Anthropic or OpenAI SDKs:\n" +
         ProxyExportLines(proxy, session);
  out +=
      "\n# Codex CLI, in ~/.codex/config.toml (with model_provider = \"missy\" at the top,\n"
      "# or: codex -c model_provider=missy):\n" +
      CodexConfigBlock(proxy, session);
  if (session.empty()) out += "\n" + SessionHint(base);
  if (!proxy.token_file.empty()) out += "\n" + TokenHint(proxy, base);
  return out;
}

std::string ProxyDisabledText(const std::string& config_path) {
  return "proxy: disabled (context.proxy.enabled is false in " + config_path +
         ")\n"
         "To enable it, set in that file:\n"
         "  context:\n"
         "    proxy:\n"
         "      enabled: true\n"
         "then restart missyd (systemctl --user restart missyd): the proxy's listeners are\n"
         "bound at start, a reload (missyctl config reload) does not open them.\n";
}

Status CheckProxySessionName(std::string_view name) {
  if (name.empty() || name.size() > kMaxSessionName) {
    return Status::InvalidArgument("a session name has 1 to 100 characters, got " +
                                   std::to_string(name.size()));
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != ':' &&
        c != '-') {
      return Status::InvalidArgument("session name '" + std::string(name) +
                                     "': use only A-Z a-z 0-9 . _ : -");
    }
  }
  if (name.find_first_not_of('.') == std::string_view::npos) {
    return Status::InvalidArgument("session name '" + std::string(name) + "' is only dots");
  }
  return Status::Ok();
}

Result<std::string> ProxyTokenForPath(std::string_view content) {
  while (!content.empty() &&
         (content.back() == '\n' || content.back() == '\r' || content.back() == ' ')) {
    content.remove_suffix(1);
  }
  while (!content.empty() && (content.front() == ' ' || content.front() == '\t')) {
    content.remove_prefix(1);
  }
  if (content.empty()) return Status::InvalidArgument("the token file is empty");
  for (char c : content) {
    if (!IsUnreserved(c)) {
      return Status::InvalidArgument(
          "the token holds characters a URL path cannot carry as they are (use A-Z a-z 0-9 "
          ". _ ~ -), so it cannot go in the base URL: send it as an X-Missy-Token header");
    }
  }
  return std::string(content);
}

ListenerState ProbeListener(const ListenAddress& address) {
  sockaddr_storage storage{};
  socklen_t len = 0;
  int family = AF_INET;
  if (address.kind == ListenAddress::Kind::kUnix) {
    auto* un = reinterpret_cast<sockaddr_un*>(&storage);
    if (address.path.size() >= sizeof un->sun_path) return ListenerState::kUnknown;
    family = un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, address.path.c_str(), address.path.size() + 1);
    len = sizeof(sockaddr_un);
  } else if (address.kind == ListenAddress::Kind::kTcp6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    family = in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(address.port);
    if (inet_pton(AF_INET6, address.host.c_str(), &in6->sin6_addr) != 1) {
      return ListenerState::kUnknown;
    }
    len = sizeof(sockaddr_in6);
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&storage);
    in4->sin_family = AF_INET;
    in4->sin_port = htons(address.port);
    if (inet_pton(AF_INET, address.host.c_str(), &in4->sin_addr) != 1) {
      return ListenerState::kUnknown;
    }
    len = sizeof(sockaddr_in);
  }
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ListenerState::kUnknown;
  const timeval timeout{1, 0};  // connect() honours SO_SNDTIMEO
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&storage), len);
  const int error = errno;
  ::close(fd);
  if (rc == 0) return ListenerState::kListening;
  return error == ECONNREFUSED || error == ENOENT ? ListenerState::kNotListening
                                                  : ListenerState::kUnknown;
}

int ExecWithProxyEnv(const ProxyBaseUrls& urls, const std::vector<std::string>& argv,
                     std::FILE* err) {
  if (argv.empty()) {
    std::fprintf(err, "missyctl: nothing to run\n");
    return 127;
  }
  ::setenv("ANTHROPIC_BASE_URL", urls.anthropic.c_str(), 1);
  ::setenv("OPENAI_BASE_URL", urls.openai.c_str(), 1);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(args[0], args.data());
  std::fprintf(err, "missyctl: cannot run '%s': %s\n", argv[0].c_str(), std::strerror(errno));
  return 127;
}

}  // namespace missy::cli

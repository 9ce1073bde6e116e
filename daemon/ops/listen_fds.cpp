// Socket activation. See listen_fds.h.
#include "daemon/ops/listen_fds.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifdef MISSY_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace missy::ops {
namespace {

constexpr int kFirstFd = 3;  // SD_LISTEN_FDS_START

struct Passed {
  int fd;
  std::string name;
};

#ifdef MISSY_HAVE_SYSTEMD
std::vector<Passed> ListenFds() {
  char** names = nullptr;
  const int n = sd_listen_fds_with_names(/*unset_environment=*/1, &names);
  std::vector<Passed> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({kFirstFd + i, names != nullptr && names[i] != nullptr ? names[i] : "unknown"});
  }
  if (names != nullptr) {
    for (char** p = names; *p != nullptr; ++p) free(*p);
    free(names);
  }
  if (n < 0) spdlog::warn("socket activation: {}", std::strerror(-n));
  return out;
}
#else
// The protocol without libsystemd: LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES (':'-separated).
std::vector<Passed> ListenFds() {
  std::vector<Passed> out;
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  const char* names = std::getenv("LISTEN_FDNAMES");
  const bool ours = pid != nullptr && fds != nullptr && std::strtoll(pid, nullptr, 10) == getpid();
  int n = 0;
  if (ours) {
    char* end = nullptr;
    long v = std::strtol(fds, &end, 10);
    if (end != fds && *end == '\0' && v > 0 && v < 1024) n = static_cast<int>(v);
  }
  std::vector<std::string> name_list;
  if (names != nullptr) {
    std::string all = names;
    size_t start = 0;
    for (;;) {
      size_t colon = all.find(':', start);
      name_list.push_back(all.substr(start, colon - start));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  for (int i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    out.push_back(
        {kFirstFd + i, k < name_list.size() && !name_list[k].empty() ? name_list[k] : "unknown"});
  }
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  return out;
}
#endif

// The bound path of a listening AF_UNIX stream socket, or an error naming `name`.
Result<std::string> ListeningUnixPath(int fd, const std::string& name) {
  int type = 0, listening = 0;
  socklen_t len = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
    return Status::InvalidArgument("socket activation: descriptor " + std::to_string(fd) + " ('" +
                                   name + "') is not a stream socket");
  }
  len = sizeof(listening);
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0) {
    return Status::InvalidArgument("socket activation: descriptor " + std::to_string(fd) + " ('" +
                                   name + "') is not listening");
  }
  sockaddr_un addr{};
  len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      addr.sun_family != AF_UNIX) {
    return Status::InvalidArgument("socket activation: descriptor " + std::to_string(fd) + " ('" +
                                   name + "') is not a Unix socket");
  }
  const size_t path_len = len > offsetof(sockaddr_un, sun_path)
                              ? static_cast<size_t>(len) - offsetof(sockaddr_un, sun_path)
                              : 0;
  if (path_len == 0) return std::string("(unnamed)");
  if (addr.sun_path[0] == '\0') return "@" + std::string(addr.sun_path + 1, path_len - 1);
  return std::string(addr.sun_path, strnlen(addr.sun_path, path_len));
}

// "socket activation: descriptor 5 ('proxy') <what>".
Status Refused(int fd, const std::string& name, const std::string& what) {
  return Status::InvalidArgument("socket activation: descriptor " + std::to_string(fd) + " ('" +
                                 name + "') " + what);
}

// The bound address ("127.0.0.1:8788", "[::1]:8788") of a listening TCP socket bound to a
// loopback address (127.0.0.0/8, ::1, or 127.0.0.0/8 IPv4-mapped on an AF_INET6 socket),
// or an error naming `name`. Anything else is refused: a proxy listener receives the
// agents' API keys, so it must not be reachable from another machine.
Result<std::string> ListeningLoopbackTcp(int fd, const std::string& name) {
  int type = 0, protocol = 0, listening = 0;
  socklen_t len = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
    return Refused(fd, name, "is not a stream socket");
  }
  sockaddr_storage addr{};
  len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      (addr.ss_family != AF_INET && addr.ss_family != AF_INET6)) {
    return Refused(fd, name, "is not a TCP socket (AF_INET or AF_INET6)");
  }
  socklen_t plen = sizeof(protocol);
  if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &plen) != 0 || protocol != IPPROTO_TCP) {
    return Refused(fd, name, "is not a TCP socket");
  }
  len = sizeof(listening);
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0) {
    return Refused(fd, name, "is not listening");
  }
  char host[INET6_ADDRSTRLEN] = {};
  bool loopback = false;
  std::string address;
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    address = std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  } else {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
               (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    address = "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  if (!loopback) {
    return Refused(fd, name,
                   "is bound to " + address +
                       ", not a loopback address (127.0.0.0/8, ::1): refusing to serve it "
                       "(proxied requests carry API keys)");
  }
  return address;
}

}  // namespace

Result<ActivatedSockets> TakeActivatedSockets() {
  std::vector<Passed> passed = ListenFds();
  for (const Passed& p : passed) (void)fcntl(p.fd, F_SETFD, FD_CLOEXEC);
  // Named sockets take their role ("proxy": any number of them); the others fill the
  // roles api and audit left, in order.
  std::vector<std::string> roles(passed.size());
  bool named_api = false, named_audit = false;
  for (size_t i = 0; i < passed.size(); ++i) {
    if (passed[i].name == "proxy") {
      roles[i] = "proxy";
    } else if (passed[i].name == "api" && !named_api) {
      roles[i] = "api";
      named_api = true;
    } else if (passed[i].name == "audit" && !named_audit) {
      roles[i] = "audit";
      named_audit = true;
    }
  }
  for (size_t i = 0; i < passed.size(); ++i) {
    if (!roles[i].empty() || passed[i].name == "api" || passed[i].name == "audit") continue;
    if (!named_api) {
      roles[i] = "api";
      named_api = true;
    } else if (!named_audit) {
      roles[i] = "audit";
      named_audit = true;
    }
  }

  ActivatedSockets out;
  Status error;
  for (size_t i = 0; i < passed.size(); ++i) {
    const Passed& p = passed[i];
    if (roles[i].empty()) {
      if (error.ok() && (p.name == "api" || p.name == "audit")) {
        error = Status::InvalidArgument("socket activation: two '" + p.name + "' sockets");
      }
      spdlog::warn("socket activation: closing descriptor {} ('{}'): no use for it", p.fd, p.name);
      close(p.fd);
      continue;
    }
    if (roles[i] == "proxy") {
      Result<std::string> address = ListeningLoopbackTcp(p.fd, roles[i]);
      if (!address.ok()) {
        if (error.ok()) error = address.status();
        close(p.fd);
        continue;
      }
      out.proxy_fds.push_back(p.fd);
      out.proxy_addresses.push_back(*address);
      continue;
    }
    Result<std::string> bound = ListeningUnixPath(p.fd, roles[i]);
    if (!bound.ok()) {
      if (error.ok()) error = bound.status();
      close(p.fd);
      continue;
    }
    if (roles[i] == "api") {
      out.api_fd = p.fd;
      out.api_path = *bound;
    } else {
      out.audit_fd = p.fd;
      out.audit_path = *bound;
    }
  }
  if (!error.ok()) {
    if (out.api_fd >= 0) close(out.api_fd);
    if (out.audit_fd >= 0) close(out.audit_fd);
    for (int fd : out.proxy_fds) close(fd);
    return error;
  }
  return out;
}

}  // namespace missy::ops

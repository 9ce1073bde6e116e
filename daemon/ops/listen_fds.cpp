// Socket activation. See listen_fds.h.
#include "daemon/ops/listen_fds.h"

#include <fcntl.h>
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

}  // namespace

Result<ActivatedSockets> TakeActivatedSockets() {
  std::vector<Passed> passed = ListenFds();
  for (const Passed& p : passed) (void)fcntl(p.fd, F_SETFD, FD_CLOEXEC);
  // Named sockets take their role; the others fill the roles left, in order.
  std::vector<std::string> roles(passed.size());
  bool named_api = false, named_audit = false;
  for (size_t i = 0; i < passed.size(); ++i) {
    if (passed[i].name == "api" && !named_api) {
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
    return error;
  }
  return out;
}

}  // namespace missy::ops

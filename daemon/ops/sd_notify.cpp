// sd_notify messages. See sd_notify.h.
#include "daemon/ops/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef MISSY_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace missy::ops {
namespace {

#ifndef MISSY_HAVE_SYSTEMD
// The protocol without libsystemd: one datagram to $NOTIFY_SOCKET.
bool SendDatagram(std::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || (path[0] != '/' && path[0] != '@')) return false;
  sockaddr_un addr{};
  const size_t len = std::strlen(path);
  if (len >= sizeof(addr.sun_path)) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path, len);
  if (path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const socklen_t addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  ssize_t n = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                     reinterpret_cast<const sockaddr*>(&addr), addr_len);
  close(fd);
  return n == static_cast<ssize_t>(state.size());
}
#endif

// A STATUS= value is one line: newlines would start new assignments.
std::string OneLine(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

std::string WithStatus(std::string head, std::string_view status) {
  if (!status.empty()) {
    head += "\nSTATUS=";
    head += OneLine(status);
  }
  return head;
}

}  // namespace

bool Notify(std::string_view state) {
#ifdef MISSY_HAVE_SYSTEMD
  const std::string text(state);
  return sd_notify(0, text.c_str()) > 0;
#else
  return SendDatagram(state);
#endif
}

uint64_t MonotonicUsec() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

bool NotifyReady(std::string_view status) { return Notify(WithStatus("READY=1", status)); }

bool NotifyReloading(std::string_view status) {
  return Notify(
      WithStatus("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(MonotonicUsec()), status));
}

bool NotifyStopping(std::string_view status) { return Notify(WithStatus("STOPPING=1", status)); }

bool NotifyStatus(std::string_view status) { return Notify("STATUS=" + OneLine(status)); }

bool NotifyWatchdog() { return Notify("WATCHDOG=1"); }

std::chrono::microseconds WatchdogTimeout() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (socket == nullptr || *socket == '\0') return std::chrono::microseconds(0);
#ifdef MISSY_HAVE_SYSTEMD
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0) return std::chrono::microseconds(usec);
  return std::chrono::microseconds(0);
#else
  const char* usec = std::getenv("WATCHDOG_USEC");
  if (usec == nullptr || *usec == '\0') return std::chrono::microseconds(0);
  const char* pid = std::getenv("WATCHDOG_PID");
  if (pid != nullptr && *pid != '\0' && std::strtoll(pid, nullptr, 10) != getpid()) {
    return std::chrono::microseconds(0);
  }
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(usec, &end, 10);
  if (errno != 0 || end == usec || *end != '\0' || v == 0) return std::chrono::microseconds(0);
  return std::chrono::microseconds(static_cast<int64_t>(v));
#endif
}

}  // namespace missy::ops

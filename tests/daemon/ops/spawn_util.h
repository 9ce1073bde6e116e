// Helpers for the systemd-integration tests: a missyd child spawned the way a service
// manager would (inherited listening sockets at fd 3, 4, ... with LISTEN_PID set to the
// child's own pid, NOTIFY_SOCKET, WATCHDOG_USEC/WATCHDOG_PID), and a datagram socket that
// collects the child's sd_notify messages. Header-only: the test glob takes *_test.cpp.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/http_client.h"
#include "core/status.h"
#include "daemon/daemon_process.h"

extern char** environ;

namespace missy::testing {

struct SpawnOptions {
  std::string binary = DaemonProcess::Binary();
  std::string home;  // MISSY_HOME
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to the environment
  std::vector<int> listen_fds;  // passed as fd 3, 4, ... with LISTEN_FDS and LISTEN_PID
  std::string listen_fdnames;   // LISTEN_FDNAMES when not empty
  bool watchdog_pid = false;    // WATCHDOG_PID = the child's pid
};

// A Unix listening socket bound at `path` (what systemd's socket unit does); -1 on error.
inline int BindListeningSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes the decimal `v` into `out` (async-signal-safe: used between fork and exec).
inline void FormatPid(char* out, long v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < 23);
  while (n > 0) *out++ = digits[--n];
  *out = '\0';
}

class SpawnedDaemon {
 public:
  SpawnedDaemon() = default;
  ~SpawnedDaemon() {
    if (pid_ > 0) Stop(SIGKILL);
  }
  SpawnedDaemon(const SpawnedDaemon&) = delete;
  SpawnedDaemon& operator=(const SpawnedDaemon&) = delete;

  // Forks and execs; returns at once (see WaitHealthy).
  Status Spawn(const SpawnOptions& o) {
    log_path_ = o.home + "/missyd.log";
    // Everything the child needs is built before fork(): it only calls async-signal-safe
    // functions until exec.
    static const char* kDropped[] = {
        "MISSY_HOME=",     "NOTIFY_SOCKET=", "LISTEN_PID=",   "LISTEN_FDS=",
        "LISTEN_FDNAMES=", "WATCHDOG_USEC=", "WATCHDOG_PID=", "JOURNAL_STREAM="};
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      bool drop = false;
      for (const char* d : kDropped) drop = drop || std::strncmp(*e, d, std::strlen(d)) == 0;
      if (!drop) env.emplace_back(*e);
    }
    env.push_back("MISSY_HOME=" + o.home);
    for (const auto& [k, v] : o.env) env.push_back(k + "=" + v);
    if (!o.listen_fds.empty()) {
      env.push_back("LISTEN_FDS=" + std::to_string(o.listen_fds.size()));
      if (!o.listen_fdnames.empty()) env.push_back("LISTEN_FDNAMES=" + o.listen_fdnames);
    }
    std::vector<char*> envp;
    for (std::string& s : env) envp.push_back(s.data());
    char listen_pid[64] = "LISTEN_PID=";
    char watchdog_pid[64] = "WATCHDOG_PID=";
    if (!o.listen_fds.empty()) envp.push_back(listen_pid);
    if (o.watchdog_pid) envp.push_back(watchdog_pid);
    envp.push_back(nullptr);
    std::vector<std::string> args = o.args;
    std::string binary = o.binary;
    std::vector<char*> argv{binary.data()};
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int log_fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd < 0) return Status::Internal("cannot open " + log_path_);
    std::vector<int> fds = o.listen_fds;

    pid_t pid = fork();
    if (pid < 0) {
      close(log_fd);
      return Status::Internal("fork failed");
    }
    if (pid == 0) {
      const long self = static_cast<long>(getpid());
      FormatPid(listen_pid + std::strlen("LISTEN_PID="), self);
      FormatPid(watchdog_pid + std::strlen("WATCHDOG_PID="), self);
      // Out of the way of 3, 4, ... first, then into place (dup2 clears close-on-exec).
      int high[16];
      const size_t n = fds.size() < 16 ? fds.size() : 16;
      for (size_t i = 0; i < n; ++i) high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 100);
      const int log_high = fcntl(log_fd, F_DUPFD_CLOEXEC, 100);
      dup2(log_high, 1);
      dup2(log_high, 2);
      for (size_t i = 0; i < n; ++i) dup2(high[i], static_cast<int>(3 + i));
      execve(binary.c_str(), argv.data(), envp.data());
      _exit(127);
    }
    close(log_fd);
    pid_ = pid;
    return Status::Ok();
  }

  // Polls GET /v1/health on `socket` until it answers 200 (or the child exits).
  Status WaitHealthy(const std::string& socket,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Exited()) return Status::Internal("missyd exited during start:\n" + log());
      Result<ClientResponse> r =
          UnixHttpCall(socket, "GET", "/v1/health", "", std::chrono::milliseconds(500));
      if (r.ok() && r->status == 200) return Status::Ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return Status::Unavailable("missyd did not answer:\n" + log());
  }

  // True once the child exited (its code is then exit_code()).
  bool Exited() {
    if (pid_ <= 0) return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
    pid_ = -1;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }

  // Sends `signal` and waits for the exit: the exit code, or -2 if it had to be killed.
  int Stop(int signal = SIGTERM, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    if (pid_ <= 0) return exit_code_;
    kill(pid_, signal);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Exited()) return exit_code_;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return -2;
  }

  void Signal(int signal) {
    if (pid_ > 0) kill(pid_, signal);
  }
  pid_t pid() const { return pid_; }
  int exit_code() const { return exit_code_; }
  std::string log() const { return ReadWholeFile(log_path_); }

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string log_path_;
};

// The service manager's end of NOTIFY_SOCKET: a datagram socket collecting messages.
class NotifyListener {
 public:
  explicit NotifyListener(std::string path) : path_(std::move(path)) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.data(), path_.size());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path_;
  }
  ~NotifyListener() {
    if (fd_ >= 0) close(fd_);
  }
  NotifyListener(const NotifyListener&) = delete;
  NotifyListener& operator=(const NotifyListener&) = delete;

  const std::string& path() const { return path_; }

  // The next message, or nullopt after `timeout`.
  std::optional<std::string> Next(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n < 0) return std::nullopt;
    std::string msg(buf, static_cast<size_t>(n));
    seen_.push_back(msg);
    return msg;
  }

  // The first message (received from now on) that contains `line` as one of its lines.
  std::optional<std::string> WaitFor(const std::string& line, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      std::optional<std::string> msg = Next(left);
      if (!msg) return std::nullopt;
      if (HasLine(*msg, line)) return msg;
    }
  }

  // How many messages containing `line` arrive during `window`.
  int CountFor(const std::string& line, std::chrono::milliseconds window) {
    int count = 0;
    const auto deadline = std::chrono::steady_clock::now() + window;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return count;
      std::optional<std::string> msg = Next(left);
      if (msg && HasLine(*msg, line)) ++count;
    }
  }

  // Every message received so far, in order.
  const std::vector<std::string>& seen() const { return seen_; }

  static bool HasLine(const std::string& msg, const std::string& line) {
    std::istringstream in(msg);
    std::string l;
    while (std::getline(in, l)) {
      if (l == line) return true;
    }
    return false;
  }
  // The value of `key=` in `msg`, or "".
  static std::string Value(const std::string& msg, const std::string& key) {
    std::istringstream in(msg);
    std::string l;
    while (std::getline(in, l)) {
      if (l.rfind(key + "=", 0) == 0) return l.substr(key.size() + 1);
    }
    return "";
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<std::string> seen_;
};

}  // namespace missy::testing

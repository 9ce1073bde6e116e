// Helpers shared by the benchmarks that drive a real missyd over its Unix socket
// (memory_bench, soak_bench): start the daemon on a temporary MISSY_HOME, read its
// memory from /proc, stop it (also when the benchmark fails), percentiles. Used by every
// socket benchmark (context_socket_bench, append_socket_bench, memory_bench, soak_bench).
// Header-only: every bench/*_bench.cpp is its own executable.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cli/http_client.h"

namespace missy::bench {

// Waits until no summarization job is queued or running (twice in a row, 50 ms apart: a
// finished job may queue the next). False on timeout or a failed call.
inline bool WaitForIdleJobs(UnixHttpConnection& conn, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int idle = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    bool busy = false;
    for (const char* state : {"queued", "running"}) {
      auto r = conn.Call("GET", std::string("/v1/jobs?state=") + state, "");
      if (!r.ok() || r->status != 200) return false;
      busy = busy || !boost::json::parse(r->body).at("jobs").as_array().empty();
    }
    idle = busy ? 0 : idle + 1;
    if (idle == 2) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// A field of /proc/PID/status in KiB (VmRSS, VmHWM, ...), or -1 when unreadable.
inline int64_t ProcStatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, field.size() + 1, field + ":") == 0) {
      return std::strtoll(line.c_str() + field.size() + 1, nullptr, 10);
    }
  }
  return -1;
}

inline double Mib(int64_t kib) { return static_cast<double>(kib) / 1024.0; }

// The p-th quantile (0..1) of `v` (nearest rank); 0 when empty.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// A missyd child process on its own temporary MISSY_HOME; the destructor stops it
// (SIGTERM, then SIGKILL after 20 s) and removes the home.
class BenchDaemon {
 public:
  BenchDaemon() = default;
  BenchDaemon(const BenchDaemon&) = delete;
  BenchDaemon& operator=(const BenchDaemon&) = delete;
  ~BenchDaemon() {
    Stop();
    if (!home_.empty() && getenv("MISSY_BENCH_KEEP_HOME") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(home_, ec);
    }
  }

  // Writes `config_yaml` to <home>/config.yaml (home: a new directory in `parent`),
  // starts `missyd` and waits (up to 20 s) until /v1/health answers 200. Prints why and
  // returns false otherwise.
  bool Start(const std::string& missyd, const std::string& config_yaml,
             const std::string& parent = "/tmp") {
    std::string tmpl = parent + "/missy-bench-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      return false;
    }
    home_ = tmpl;
    std::ofstream(home_ + "/config.yaml") << config_yaml;
    pid_ = fork();
    if (pid_ < 0) {
      std::perror("fork");
      return false;
    }
    if (pid_ == 0) {
      int fd = open((home_ + "/missyd.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      setenv("MISSY_HOME", home_.c_str(), 1);
      execl(missyd.c_str(), missyd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 400; ++i) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        std::fprintf(stderr, "missyd exited during start:\n%s\n", Log().c_str());
        return false;
      }
      Result<ClientResponse> r =
          UnixHttpCall(socket(), "GET", "/v1/health", "", std::chrono::milliseconds(500));
      if (r.ok() && r->status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::fprintf(stderr, "missyd did not answer within 20 s:\n%s\n", Log().c_str());
    return false;
  }

  // SIGTERM and wait (SIGKILL after 20 s). Returns the exit code, 128+signal, or -1.
  int Stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int st = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (waitpid(pid_, &st, WNOHANG) != pid_) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
  }

  // The daemon is still running (it did not exit or crash).
  bool alive() {
    if (pid_ <= 0) return false;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }

  // The end of the daemon's log (stdout and stderr), at most 4 KiB.
  std::string Log() const {
    std::ifstream in(home_ + "/missyd.log");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text.size() > 4096 ? text.substr(text.size() - 4096) : text;
  }

  pid_t pid() const { return pid_; }
  const std::string& home() const { return home_; }
  std::string socket() const { return home_ + "/missyd.sock"; }
  int64_t RssKb() const { return ProcStatusKb(pid_, "VmRSS"); }
  int64_t PeakRssKb() const { return ProcStatusKb(pid_, "VmHWM"); }

 private:
  std::string home_;
  pid_t pid_ = -1;
};

}  // namespace missy::bench

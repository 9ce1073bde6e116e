// Durable appends over the socket: starts a real missyd on a temporary MISSY_HOME (on
// disk, /var/tmp by default: the fsync must be real) and has N client threads (64 by
// default), each with its own session and keep-alive connection, POST one message per
// request to /v1/sessions/{id}/messages for a fixed time after a warm-up. Every counted
// append was answered 200, i.e. after its transaction committed (synchronous = FULL).
// Prints appends/s and the p50/p99 latency, checks that the sessions hold exactly the
// acknowledged messages, and stops the daemon.
// Usage: append_socket_bench PATH_TO_MISSYD [--clients N] [--seconds S] [--warmup S]
//                            [--dir DIR]
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench_daemon.h"
#include "cli/http_client.h"

namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// CPU seconds (user + system) of process `pid` so far, from /proc (0 if unreadable).
double ProcessCpuSeconds(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return 0;
  char buf[1024] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  if (p == nullptr || n == 0) return 0;
  unsigned long utime = 0, stime = 0;
  // Fields after the name: state (3) ... utime (14), stime (15).
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) !=
      2) {
    return 0;
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A chat-sized user message (~150 bytes), different for each append.
std::string AppendBody(int client, int64_t n) {
  std::string text = "Client " + std::to_string(client) + " step " + std::to_string(n) +
                     ": please run the deployment checks again and tell me which staging "
                     "hosts still fail the nginx configuration test.";
  return json::serialize(
      json::object{{"messages", json::array{json::object{{"role", "user"}, {"content", text}}}}});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s PATH_TO_MISSYD [--clients N] [--seconds S] [--warmup S] [--dir DIR]\n",
                 argv[0]);
    return 2;
  }
  const std::string missyd = argv[1];
  int clients = 64;
  double seconds = 5, warmup = 1;
  std::string parent = "/var/tmp";  // not tmpfs: durability costs must be real
  for (int i = 2; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--clients") && has_value) {
      clients = std::clamp(std::atoi(argv[++i]), 1, 1024);
    } else if (!std::strcmp(argv[i], "--seconds") && has_value) {
      seconds = std::clamp(std::atof(argv[++i]), 0.1, 600.0);
    } else if (!std::strcmp(argv[i], "--warmup") && has_value) {
      warmup = std::clamp(std::atof(argv[++i]), 0.0, 60.0);
    } else if (!std::strcmp(argv[i], "--dir") && has_value) {
      parent = argv[++i];
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  missy::bench::BenchDaemon daemon;
  const char* config = getenv("MISSY_BENCH_CONFIG");
  if (!daemon.Start(missyd, config ? config : "context:\n  log_level: warn\n", parent)) return 1;
  const std::string socket = daemon.socket();
  const pid_t pid = daemon.pid();

  // Each client: its own session and connection, one message per request.
  std::atomic<bool> measuring{false}, stop{false}, failed{false};
  std::atomic<int> ready{0};
  std::vector<int64_t> acked(static_cast<size_t>(clients), 0);     // all 200 answers
  std::vector<int64_t> measured(static_cast<size_t>(clients), 0);  // within the window
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      const std::string id = "append-bench-" + std::to_string(c);
      const std::string target = "/v1/sessions/" + id + "/messages";
      missy::UnixHttpConnection conn(socket);
      auto created = conn.Call("POST", "/v1/sessions", json::serialize(json::object{{"id", id}}));
      if (!created.ok() || created->status != 201) {
        std::fprintf(stderr, "create session %s: %s\n", id.c_str(),
                     created.ok() ? created->body.c_str() : created.status().ToString().c_str());
        failed = true;
      }
      ++ready;
      auto& lat = latencies[static_cast<size_t>(c)];
      lat.reserve(200000);
      for (int64_t n = 0; !stop.load(std::memory_order_relaxed) && !failed.load(); ++n) {
        const std::string body = AppendBody(c, n);
        const bool counted = measuring.load(std::memory_order_relaxed);
        const auto t0 = Clock::now();
        auto r = conn.Call("POST", target, body, std::chrono::seconds(30));
        const auto t1 = Clock::now();
        if (!r.ok() || r->status != 200) {
          std::fprintf(stderr, "append to %s: %s\n", id.c_str(),
                       r.ok() ? (std::to_string(r->status) + " " + r->body).c_str()
                              : r.status().ToString().c_str());
          failed = true;
          break;
        }
        ++acked[static_cast<size_t>(c)];
        // Counted only when the request both started and ended inside the window.
        if (counted && measuring.load(std::memory_order_relaxed)) {
          ++measured[static_cast<size_t>(c)];
          lat.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
      }
    });
  }
  while (ready.load() < clients) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup));
  const double daemon_cpu0 = ProcessCpuSeconds(pid);
  const double self_cpu0 = SelfCpuSeconds();
  const auto start = Clock::now();
  measuring = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  measuring = false;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const double daemon_cpu = ProcessCpuSeconds(pid) - daemon_cpu0;
  const double self_cpu = SelfCpuSeconds() - self_cpu0;
  stop = true;
  for (auto& t : threads) t.join();

  int status = failed.load() ? 1 : 0;
  // Every acknowledged append is stored: the session's message_count equals the 200s.
  int64_t total_acked = 0, total_measured = 0;
  for (int c = 0; c < clients && status == 0; ++c) {
    const std::string id = "append-bench-" + std::to_string(c);
    auto r = missy::UnixHttpCall(socket, "GET", "/v1/sessions/" + id);
    int64_t stored = -1;
    if (r.ok() && r->status == 200) {
      boost::system::error_code ec;
      json::value v = json::parse(r->body, ec);
      const json::object* o = ec ? nullptr : v.if_object();
      const json::value* count = o != nullptr ? o->if_contains("message_count") : nullptr;
      if (count != nullptr && count->is_int64()) stored = count->as_int64();
    }
    if (stored != acked[static_cast<size_t>(c)]) {
      std::fprintf(stderr, "session %s: %lld appends acknowledged, message_count %lld\n",
                   id.c_str(), static_cast<long long>(acked[static_cast<size_t>(c)]),
                   static_cast<long long>(stored));
      status = 1;
    }
    total_acked += acked[static_cast<size_t>(c)];
  }
  for (int64_t m : measured) total_measured += m;
  std::vector<double> all;
  for (auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  const double per_s = static_cast<double>(total_measured) / elapsed;
  std::printf(
      "Single-message appends over the socket (%d clients, one session and connection "
      "each, %.1f s after %.1f s warm-up, MISSY_HOME under %s)\n",
      clients, elapsed, warmup, parent.c_str());
  std::printf("  %12s %9s %9s %9s %16s %16s %10s\n", "appends/s", "p50 ms", "p99 ms", "max ms",
              "daemon cpu us/op", "client cpu us/op", "total ok");
  const double ops = std::max<double>(1, static_cast<double>(total_measured));
  std::vector<double> copy = all;
  std::printf("  %12.0f %9.2f %9.2f %9.2f %16.1f %16.1f %10lld\n", per_s, Percentile(copy, 0.5),
              Percentile(copy, 0.99), all.empty() ? 0 : *std::max_element(all.begin(), all.end()),
              daemon_cpu * 1e6 / ops, self_cpu * 1e6 / ops, static_cast<long long>(total_acked));
  if (status != 0) std::printf("FAILED (see above)\n");
  std::fflush(stdout);
  return status;  // the daemon stops with `daemon`
}

// Soak (issue 13): 32 concurrent clients replay the real recorded agent sessions through a
// real missyd (default config) as agents would: each client creates its own session (a new
// id per loop), appends the trajectory one message at a time and asks for a context
// before every assistant message, looping until the duration ends. Prints the daemon's
// RSS (VmRSS) after the first minute (or 10% of a shorter run) and at the end, their
// ratio, request counts and latencies, errors (any non-2xx answer or transport failure;
// the first few are shown), and PASS/FAIL against "RSS within 10%, 0 errors". Exits 0 on
// FAIL (it is a benchmark), 1 only when the daemon could not be started or crashed.
//
// Usage: soak_bench PATH_TO_MISSYD
// Env: MISSY_SOAK_SECONDS (600), MISSY_SOAK_CLIENTS (32), MISSY_TRAJECTORIES (default
//      MISSY_SOURCE_DIR/../shared/data/trajectories), MISSY_BENCH_CONFIG (config.yaml).
#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench_daemon.h"
#include "cli/http_client.h"

namespace {

namespace json = boost::json;
using missy::bench::Mib;
using missy::bench::Percentile;
using Clock = std::chrono::steady_clock;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

// A recorded session: the leading system message becomes the session's system prompt (as
// an agent hands it over, and as tests/daemon/replay_test.cpp does); the other messages
// are kept as their JSON text, appended as they are.
struct Trajectory {
  std::string name;
  std::string system_prompt;
  std::vector<std::string> messages;
  std::vector<bool> assistant;
};

std::vector<Trajectory> LoadTrajectories(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".jsonl") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Trajectory> out;
  for (const auto& path : files) {
    Trajectory t;
    t.name = path.stem().string();
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      json::value v = json::parse(line);
      const std::string role(v.at("role").as_string());
      if (t.messages.empty() && t.system_prompt.empty() && role == "system" &&
          v.at("content").is_string()) {
        t.system_prompt = std::string(v.at("content").as_string());
        continue;
      }
      t.messages.push_back(json::serialize(v));
      t.assistant.push_back(role == "assistant");
    }
    if (!t.messages.empty()) out.push_back(std::move(t));
  }
  return out;
}

// What the clients share: counters, the first errors, latencies (merged at the end).
struct Stats {
  std::atomic<int64_t> creates{0}, appends{0}, contexts{0}, errors{0}, loops{0};
  std::mutex mu;
  std::vector<std::string> first_errors;      // guarded by mu
  std::vector<double> append_ms, context_ms;  // guarded by mu

  void Error(const std::string& what) {
    ++errors;
    std::lock_guard<std::mutex> lock(mu);
    if (first_errors.size() < 8) first_errors.push_back(what);
  }
};

// One agent: replays trajectories (starting at `first`, then round-robin) until `stop`.
void Client(int index, const std::string& socket, const std::vector<Trajectory>& trajectories,
            const std::atomic<bool>& stop, Stats& stats) {
  missy::UnixHttpConnection conn(socket);
  std::vector<double> append_ms, context_ms;
  // Sends one request; returns whether it succeeded (2xx), counting an error otherwise.
  auto call = [&](const std::string& method, const std::string& target, const std::string& body,
                  std::vector<double>* ms) {
    const auto t = Clock::now();
    auto r = conn.Call(method, target, body, std::chrono::seconds(60));
    if (ms != nullptr) {
      ms->push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
    }
    if (r.ok() && r->status >= 200 && r->status < 300) return true;
    stats.Error(method + " " + target + ": " +
                (r.ok() ? std::to_string(r->status) + " " + r->body.substr(0, 300)
                        : r.status().ToString()));
    return false;
  };
  for (int loop = 0; !stop.load(); ++loop) {
    const Trajectory& t = trajectories[(index + loop) % trajectories.size()];
    const std::string id = "soak-" + std::to_string(index) + "-" + std::to_string(loop);
    json::object create{{"id", id}};
    if (!t.system_prompt.empty()) create["system_prompt"] = t.system_prompt;
    ++stats.creates;
    if (!call("POST", "/v1/sessions", json::serialize(create), nullptr)) continue;
    const std::string base = "/v1/sessions/" + id;
    size_t i = 0;
    for (; i < t.messages.size() && !stop.load(); ++i) {
      if (t.assistant[i] && i > 0) {
        ++stats.contexts;
        call("POST", base + "/context", "{}", &context_ms);
      }
      ++stats.appends;
      call("POST", base + "/messages", "{\"messages\":[" + t.messages[i] + "]}", &append_ms);
    }
    if (i == t.messages.size()) ++stats.loops;
  }
  std::lock_guard<std::mutex> lock(stats.mu);
  stats.append_ms.insert(stats.append_ms.end(), append_ms.begin(), append_ms.end());
  stats.context_ms.insert(stats.context_ms.end(), context_ms.begin(), context_ms.end());
}

std::string Health(const std::string& socket) {
  auto r = missy::UnixHttpCall(socket, "GET", "/v1/health");
  if (!r.ok() || r->status != 200) return "(health failed)";
  json::value v = json::parse(r->body);
  const json::value& c = v.at("memory").at("history_cache");
  char buf[200];
  std::snprintf(buf, sizeof(buf), "history cache %lld sessions, %lld messages, %.1f MiB",
                static_cast<long long>(c.at("sessions").to_number<int64_t>()),
                static_cast<long long>(c.at("messages").to_number<int64_t>()),
                static_cast<double>(c.at("bytes").to_number<int64_t>()) / (1 << 20));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PATH_TO_MISSYD\n", argv[0]);
    return 2;
  }
  const int seconds = EnvInt("MISSY_SOAK_SECONDS", 600);
  const int clients = EnvInt("MISSY_SOAK_CLIENTS", 32);
  const char* dir_env = std::getenv("MISSY_TRAJECTORIES");
  const std::filesystem::path dir =
      dir_env != nullptr
          ? std::filesystem::path(dir_env)
          : std::filesystem::path(MISSY_SOURCE_DIR) / ".." / "shared" / "data" / "trajectories";
  const std::vector<Trajectory> trajectories = LoadTrajectories(dir);
  if (trajectories.empty()) {
    std::fprintf(stderr, "no trajectories (*.jsonl) in %s (set MISSY_TRAJECTORIES)\n", dir.c_str());
    return 1;
  }
  const char* config = std::getenv("MISSY_BENCH_CONFIG");
  missy::bench::BenchDaemon daemon;
  if (!daemon.Start(argv[1], config != nullptr ? config : "context:\n  log_level: warn\n")) {
    return 1;
  }
  // The first sample: after one minute, or 10% of a shorter run.
  const int first_at = std::max(1, std::min(60, seconds / 10));
  std::printf("%d clients replaying %zu trajectories for %d s; idle RSS %.1f MiB\n", clients,
              trajectories.size(), seconds, Mib(daemon.RssKb()));
  std::printf("%-8s %10s %10s %10s %10s %8s\n", "time s", "RSS MiB", "peak MiB", "appends",
              "contexts", "errors");

  Stats stats;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back(Client, i, daemon.socket(), std::cref(trajectories), std::cref(stop),
                         std::ref(stats));
  }
  int64_t first_kb = -1, end_kb = -1;
  const int step = std::max(1, seconds / 10);
  bool crashed = false;
  std::set<int> samples{first_at, seconds};  // seconds after the start
  for (int t = step; t < seconds; t += step) samples.insert(t);
  for (int at : samples) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(at));
    if (!daemon.alive()) {
      crashed = true;
      break;
    }
    const int64_t rss = daemon.RssKb();
    if (at == first_at) first_kb = rss;
    if (at == seconds) end_kb = rss;
    std::printf(
        "%-8d %10.1f %10.1f %10lld %10lld %8lld%s\n", at, Mib(rss), Mib(daemon.PeakRssKb()),
        static_cast<long long>(stats.appends.load()), static_cast<long long>(stats.contexts.load()),
        static_cast<long long>(stats.errors.load()), at == first_at ? "  <- first sample" : "");
    std::fflush(stdout);
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!crashed && !daemon.alive()) crashed = true;

  const int64_t total = stats.appends + stats.contexts + stats.creates;
  std::printf(
      "\n%lld requests in %.0f s (%.0f/s): %lld sessions created, %lld appends, "
      "%lld contexts, %lld trajectories replayed to the end\n",
      static_cast<long long>(total), elapsed, static_cast<double>(total) / elapsed,
      static_cast<long long>(stats.creates.load()), static_cast<long long>(stats.appends.load()),
      static_cast<long long>(stats.contexts.load()), static_cast<long long>(stats.loops.load()));
  std::printf("append  p50 %7.1f ms  p99 %7.1f ms\ncontext p50 %7.1f ms  p99 %7.1f ms\n",
              Percentile(stats.append_ms, 0.5), Percentile(stats.append_ms, 0.99),
              Percentile(stats.context_ms, 0.5), Percentile(stats.context_ms, 0.99));
  if (!crashed) {
    std::printf("%s; peak RSS (VmHWM) %.1f MiB\n", Health(daemon.socket()).c_str(),
                Mib(daemon.PeakRssKb()));
  }
  for (const std::string& e : stats.first_errors) std::printf("error: %s\n", e.c_str());

  int status = 0;
  if (crashed) {
    std::printf("FAIL: missyd is no longer running (see its log)\n");
    status = 1;
  }
  const double ratio =
      first_kb > 0 && end_kb > 0 ? static_cast<double>(end_kb) / static_cast<double>(first_kb) : 0;
  const bool rss_ok = ratio >= 0.9 && ratio <= 1.1;
  std::printf("%s: RSS at the end within 10%% of RSS at %d s (%.1f MiB vs %.1f MiB, ratio %.3f)\n",
              rss_ok ? "PASS" : "FAIL", first_at, Mib(end_kb), Mib(first_kb), ratio);
  std::printf("%s: 0 errors (%lld)\n", stats.errors == 0 ? "PASS" : "FAIL",
              static_cast<long long>(stats.errors.load()));
  std::fflush(stdout);
  if (daemon.Stop() != 0 && !crashed) std::printf("note: missyd did not exit cleanly\n");
  return status;
}

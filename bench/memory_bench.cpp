// Bounded memory (issue 13): starts a real missyd with the default config (memory bound
// context.limits.memory_mb = 256), stores 20 sessions of 500 messages over the socket in
// realistic turns (about half of the messages are 40 KB tool results of varied log text),
// asks for one context after each session, then a second pass of one context per session.
// Prints the daemon's RSS (VmRSS of /proc/PID/status) against the bytes stored, context
// p50/p99 of both passes, and PASS/FAIL lines: RSS <= 256 MiB at every checkpoint and at
// the end, second-pass p50 <= 2x first-pass p50. Exits 0 on FAIL (it is a benchmark), 1
// only when the daemon could not be driven (start failure, transport error, crash).
//
// Usage: memory_bench PATH_TO_MISSYD
// Env: MISSY_MEMORY_BENCH_SESSIONS (20), MISSY_MEMORY_BENCH_MESSAGES (500 per session),
//      MISSY_MEMORY_BENCH_TOOL_KB (40), MISSY_MEMORY_BENCH_PASSES (2: passes over all
//      sessions, the first included), MISSY_BENCH_CONFIG (config.yaml text).
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_daemon.h"
#include "cli/http_client.h"

namespace {

namespace json = boost::json;
using missy::bench::Mib;
using missy::bench::Percentile;
using Clock = std::chrono::steady_clock;

constexpr int64_t kBoundMib = 256;              // the default context.limits.memory_mb
constexpr size_t kCheckpointBytes = 100000000;  // 100 MB (decimal, as printed)

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

// About `bytes` of tool output that tokenizes like real output: log lines, compiler
// diagnostics and test results with paths, identifiers, numbers and hashes, all drawn
// from `rng` (no long runs of one character, few exact repeats).
std::string ToolOutput(std::mt19937_64& rng, size_t bytes) {
  static const char* kDirs[] = {"src/core",   "src/net",    "lib/storage", "app/models",
                                "tests/unit", "pkg/server", "cmd/worker",  "internal/cache"};
  static const char* kFiles[] = {"handler", "session", "parser",  "budget", "index",
                                 "queue",   "router",  "tracing", "schema", "reader"};
  static const char* kExts[] = {"cc", "h", "py", "go", "rs", "ex", "ts"};
  static const char* kLevels[] = {"INFO", "DEBUG", "WARN", "ERROR", "TRACE"};
  static const char* kWords[] = {"processed", "flushed", "retrying", "skipped",   "loaded",
                                 "compacted", "evicted", "resolved", "timed out", "merged",
                                 "request",   "rows",    "bytes",    "segments",  "tokens"};
  static const char* kIdents[] = {"user_id",     "maxBatch",    "fetch_rows", "ctx",
                                  "on_commit",   "RetryPolicy", "parse_line", "kTimeout",
                                  "write_async", "TokenBudget", "shard",      "offset"};
  auto pick = [&rng](auto& arr) { return arr[rng() % std::size(arr)]; };
  auto num = [&rng](uint64_t mod) { return std::to_string(rng() % mod); };
  std::string out;
  out.reserve(bytes + 200);
  char hex[17];
  while (out.size() < bytes) {
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(rng()));
    const std::string path =
        std::string(pick(kDirs)) + "/" + pick(kFiles) + "_" + num(64) + "." + pick(kExts);
    switch (rng() % 4) {
      case 0:
        out += "2026-11-21T" + num(24) + ":" + num(60) + ":" + num(60) + "." + num(1000) + "Z " +
               pick(kLevels) + " [worker-" + num(16) + "] " + pick(kWords) + " " + num(100000) +
               " " + pick(kWords) + " in " + num(5000) + " ms (" + path + ")\n";
        break;
      case 1:
        out += path + ":" + num(4000) + ":" + num(120) + ": " +
               (rng() % 3 == 0 ? "error" : "warning") + ": unused variable '" + pick(kIdents) +
               "' [-W" + pick(kWords) + "]\n";
        break;
      case 2:
        out += "test_" + std::string(pick(kIdents)) + "_" + num(900) + " ... " +
               (rng() % 9 == 0 ? "FAILED" : "ok") + " (" + num(3000) + " ms)\n";
        break;
      default:
        out += "  at " + std::string(pick(kIdents)) + " (" + path + ":" + num(900) + ") sha " +
               hex + " size=" + num(1 << 20) + "\n";
    }
  }
  return out;
}

json::object ToolCall(const std::string& id, std::mt19937_64& rng) {
  static const char* kCommands[] = {"make test", "cat build.log",    "grep -rn TODO src",
                                    "pytest -x", "cargo test --all", "tail -n 2000 app.log"};
  const std::string args =
      json::serialize(json::object{{"command", kCommands[rng() % std::size(kCommands)]}});
  return json::object{{"id", id},
                      {"type", "function"},
                      {"function", json::object{{"name", "bash"}, {"arguments", args}}}};
}

// One turn of at most `remaining` messages. A full turn is 8 messages, 4 of them tool
// results: user, assistant with 3 parallel calls, 3 results, assistant with 1 call,
// 1 result, assistant reply. A short turn (4 messages, 1 result) fills up the end.
json::array Turn(int turn, int remaining, size_t tool_bytes, int& call, std::mt19937_64& rng) {
  json::array batch;
  auto user = [&] {
    batch.push_back(json::object{{"role", "user"},
                                 {"content", "Step " + std::to_string(turn) +
                                                 ": the build fails, find out why and fix it."}});
  };
  auto calls = [&](int n) {
    json::array tc;
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      ids.push_back("call_" + std::to_string(++call));
      tc.push_back(ToolCall(ids.back(), rng));
    }
    batch.push_back(json::object{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tc}});
    for (const std::string& id : ids) {
      batch.push_back(json::object{
          {"role", "tool"}, {"tool_call_id", id}, {"content", ToolOutput(rng, tool_bytes)}});
    }
  };
  auto reply = [&] {
    batch.push_back(json::object{
        {"role", "assistant"},
        {"content", "Fixed in step " + std::to_string(turn) + ": the handler now checks " +
                        std::to_string(rng() % 1000) + " rows before it commits."}});
  };
  if (remaining >= 8 && (remaining == 8 || remaining - 8 >= 4)) {
    user();
    calls(3);
    calls(1);
    reply();
  } else if (remaining >= 4) {
    user();
    calls(1);
    reply();
  } else {
    for (int i = 0; i < remaining; ++i) user();
  }
  return batch;
}

struct ContextResult {
  bool ok = false;
  double ms = 0;
  int64_t used = 0, total = 0, kept = 0;
  std::string error;
};

ContextResult Context(missy::UnixHttpConnection& conn, const std::string& id) {
  ContextResult c;
  const auto t = Clock::now();
  auto r = conn.Call("POST", "/v1/sessions/" + id + "/context", "{}", std::chrono::seconds(120));
  c.ms = std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  if (!r.ok() || r->status != 200) {
    c.error =
        r.ok() ? std::to_string(r->status) + " " + r->body.substr(0, 300) : r.status().ToString();
    return c;
  }
  json::value v = json::parse(r->body);
  const json::value& b = v.at("budget");
  c.used = b.at("used_tokens").to_number<int64_t>();
  c.total = b.at("total").to_number<int64_t>();
  c.kept = b.at("history").at("kept_messages").to_number<int64_t>();
  c.ok = true;
  return c;
}

// memory.history_cache.bytes of /v1/health, or -1.
int64_t CacheBytes(missy::UnixHttpConnection& conn) {
  auto r = conn.Call("GET", "/v1/health");
  if (!r.ok() || r->status != 200) return -1;
  json::value v = json::parse(r->body);
  return v.at("memory").at("history_cache").at("bytes").to_number<int64_t>();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PATH_TO_MISSYD\n", argv[0]);
    return 2;
  }
  const int sessions = EnvInt("MISSY_MEMORY_BENCH_SESSIONS", 20);
  const int per_session = EnvInt("MISSY_MEMORY_BENCH_MESSAGES", 500);
  const size_t tool_bytes = static_cast<size_t>(EnvInt("MISSY_MEMORY_BENCH_TOOL_KB", 40)) << 10;
  const int passes = std::max(2, EnvInt("MISSY_MEMORY_BENCH_PASSES", 2));
  const char* config = std::getenv("MISSY_BENCH_CONFIG");

  missy::bench::BenchDaemon daemon;
  if (!daemon.Start(argv[1], config != nullptr ? config : "context:\n  log_level: warn\n")) {
    return 1;
  }
  missy::UnixHttpConnection conn;
  if (!conn.Connect(daemon.socket()).ok()) return 1;
  const int64_t idle_kb = daemon.RssKb();
  std::printf(
      "%d sessions x %d messages, tool results of %zu KiB; bound %lld MiB; idle RSS %.1f MiB\n",
      sessions, per_session, tool_bytes >> 10, static_cast<long long>(kBoundMib), Mib(idle_kb));
  std::printf("%-8s %10s %10s %10s %10s %10s %8s %9s\n", "session", "stored MB", "RSS MiB",
              "peak MiB", "cache MiB", "ctx ms", "kept", "used");

  struct Checkpoint {
    double stored_mb;
    double rss_mib;
  };
  std::vector<Checkpoint> checkpoints;
  std::vector<double> first_ms, second_ms;  // context latencies of passes 1 and 2
  std::vector<std::string> errors;
  size_t stored = 0;
  size_t next_checkpoint = kCheckpointBytes;
  int64_t max_rss_kb = 0;
  std::mt19937_64 rng(20261121);
  const auto t_start = Clock::now();
  double append_s = 0;
  int status = 0;

  for (int s = 0; s < sessions && status == 0; ++s) {
    const std::string id = "mem" + std::to_string(s);
    auto created = conn.Call(
        "POST", "/v1/sessions",
        json::serialize(json::object{{"id", id}, {"system_prompt", "You are a coding agent."}}));
    if (!created.ok() || created->status != 201) {
      std::fprintf(stderr, "create %s failed\n", id.c_str());
      status = 1;
      break;
    }
    int call = 0;
    for (int sent = 0, turn = 0; sent < per_session; ++turn) {
      json::array batch = Turn(turn, per_session - sent, tool_bytes, call, rng);
      sent += static_cast<int>(batch.size());
      const std::string body = json::serialize(json::object{{"messages", std::move(batch)}});
      const auto t = Clock::now();
      auto r =
          conn.Call("POST", "/v1/sessions/" + id + "/messages", body, std::chrono::seconds(120));
      append_s += std::chrono::duration<double>(Clock::now() - t).count();
      if (!r.ok() || r->status != 200) {
        std::fprintf(stderr, "append to %s failed: %s\n", id.c_str(),
                     r.ok() ? r->body.substr(0, 300).c_str() : r.status().ToString().c_str());
        status = 1;
        break;
      }
      stored += body.size();
      while (stored >= next_checkpoint) {
        const int64_t rss = daemon.RssKb();
        max_rss_kb = std::max(max_rss_kb, rss);
        checkpoints.push_back({static_cast<double>(stored) / 1e6, Mib(rss)});
        next_checkpoint += kCheckpointBytes;
      }
    }
    if (status != 0) break;
    ContextResult c = Context(conn, id);
    if (c.ok) {
      first_ms.push_back(c.ms);
    } else {
      errors.push_back(id + " (first pass): " + c.error);
    }
    const int64_t rss = daemon.RssKb();
    max_rss_kb = std::max(max_rss_kb, rss);
    std::printf("%-8s %10.1f %10.1f %10.1f %10.1f %10.1f %8lld %9lld\n", id.c_str(),
                static_cast<double>(stored) / 1e6, Mib(rss), Mib(daemon.PeakRssKb()),
                static_cast<double>(CacheBytes(conn)) / (1 << 20), c.ms,
                static_cast<long long>(c.kept), static_cast<long long>(c.used));
    std::fflush(stdout);
  }
  const double store_s = std::chrono::duration<double>(Clock::now() - t_start).count();

  // The second pass (and, with MISSY_MEMORY_BENCH_PASSES > 2, more: RSS after each shows
  // whether reloading evicted histories keeps adding memory). The targets use pass 2.
  for (int pass = 2; pass <= passes && status == 0; ++pass) {
    std::vector<double> ms;
    for (int s = 0; s < sessions; ++s) {
      const std::string id = "mem" + std::to_string(s);
      ContextResult c = Context(conn, id);
      if (c.ok) {
        ms.push_back(c.ms);
      } else {
        errors.push_back(id + " (pass " + std::to_string(pass) + "): " + c.error);
      }
    }
    const int64_t rss = daemon.RssKb();
    max_rss_kb = std::max(max_rss_kb, rss);
    std::printf("pass %-3d contexts p50 %8.1f ms  p99 %8.1f ms; RSS %.1f MiB\n", pass,
                Percentile(ms, 0.5), Percentile(ms, 0.99), Mib(rss));
    if (pass == 2) second_ms = std::move(ms);
  }
  const int64_t final_kb = daemon.RssKb();
  max_rss_kb = std::max(max_rss_kb, final_kb);
  const int64_t peak_kb = daemon.PeakRssKb();
  const int64_t cache_bytes = CacheBytes(conn);
  const bool alive = daemon.alive();

  std::printf("\n%-12s %10s\n", "stored MB", "RSS MiB");
  for (const Checkpoint& c : checkpoints) std::printf("%-12.0f %10.1f\n", c.stored_mb, c.rss_mib);
  std::printf("%-12s %10.1f\n", "end", Mib(final_kb));
  std::printf(
      "\nstored %.1f MB in %.1f s (appends %.1f s: %.1f MB/s, counting included); "
      "peak RSS (VmHWM) %.1f MiB; history cache %.1f MiB\n",
      static_cast<double>(stored) / 1e6, store_s, append_s,
      static_cast<double>(stored) / 1e6 / std::max(append_s, 1e-9), Mib(peak_kb),
      static_cast<double>(cache_bytes) / (1 << 20));
  std::printf("context first pass:  p50 %8.1f ms  p99 %8.1f ms  (%zu)\n", Percentile(first_ms, 0.5),
              Percentile(first_ms, 0.99), first_ms.size());
  std::printf("context second pass: p50 %8.1f ms  p99 %8.1f ms  (%zu)\n",
              Percentile(second_ms, 0.5), Percentile(second_ms, 0.99), second_ms.size());
  for (size_t i = 0; i < errors.size() && i < 5; ++i) std::printf("error: %s\n", errors[i].c_str());
  if (!alive) {
    std::printf("FAIL: missyd is no longer running (see its log)\n");
    status = 1;
  }

  const bool rss_ok = Mib(max_rss_kb) <= kBoundMib;
  std::printf("%s: RSS <= %lld MiB at every checkpoint and at the end (max %.1f MiB)\n",
              rss_ok ? "PASS" : "FAIL", static_cast<long long>(kBoundMib), Mib(max_rss_kb));
  const double p1 = Percentile(first_ms, 0.5), p2 = Percentile(second_ms, 0.5);
  const bool p50_ok = !first_ms.empty() && !second_ms.empty() && p2 <= 2 * p1;
  std::printf("%s: second-pass context p50 <= 2x first-pass p50 (%.1f ms vs %.1f ms, %.2fx)\n",
              p50_ok ? "PASS" : "FAIL", p2, p1, p1 > 0 ? p2 / p1 : 0.0);
  std::printf("%s: every context answered 200 (%zu errors)\n", errors.empty() ? "PASS" : "FAIL",
              errors.size());
  std::fflush(stdout);
  if (daemon.Stop() != 0) std::printf("note: missyd did not exit cleanly\n");
  return status;
}

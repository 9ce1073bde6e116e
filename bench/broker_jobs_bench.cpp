// Distributed summarization benchmark (issue 12): summarization jobs completed per second
// with 1, 2 and 4 `missyd worker` processes on a fake instant LLM provider. Each round
// starts its own `nats-server -js` (fresh file store), the fake provider, the real missyd
// (context.broker.jobs: true, a small budget) and N workers (one job at a time each), then
// creates S sessions and appends 40 messages of ~120 tokens to each in one batch: each
// append queues one job of ~3 leaf steps. The time is from the first append to the last
// job done (GET /v1/jobs). Throughput should scale with workers until the daemon's commit
// rate is the limit. Every process started here is stopped here, also on failure.
//
// Usage: broker_jobs_bench [PATH_TO_MISSYD] [--sessions N] [--dir DIR]
//   PATH_TO_MISSYD defaults to ../bin/missyd beside this executable's directory.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_daemon.h"
#include "cli/http_client.h"
// The broker tests' nats-server launcher and the provider tests' fake LLM server (no
// test framework in either).
#include "tests/daemon/broker/nats_test_util.h"
#include "tests/provider/fake_provider_server.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kMessagesPerSession = 40;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string Tail(const std::string& text, size_t n = 3000) {
  return text.size() > n ? text.substr(text.size() - n) : text;
}

// `missyd worker` children writing to <dir>/worker-K.log; the destructor stops them
// (SIGTERM, SIGKILL after 10 s).
class Workers {
 public:
  Workers() = default;
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;
  ~Workers() { Stop(); }

  bool Start(const std::string& missyd, const std::string& home, const std::string& config,
             int n) {
    for (int k = 1; k <= n; ++k) {
      const std::string name = "w" + std::to_string(k);
      const std::string log = home + "/worker-" + name + ".log";
      const pid_t pid = fork();
      if (pid < 0) {
        std::perror("fork");
        return false;
      }
      if (pid == 0) {
        const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        setenv("MISSY_HOME", home.c_str(), 1);
        execl(missyd.c_str(), missyd.c_str(), "worker", "--config", config.c_str(), "--name",
              name.c_str(), "--log-level", "info", static_cast<char*>(nullptr));
        _exit(127);
      }
      pids_.push_back(pid);
      logs_.push_back(log);
    }
    // Ready once each has logged that it takes jobs (connected, queue and consumer there).
    const auto until = Clock::now() + 15s;
    for (size_t i = 0; i < pids_.size(); ++i) {
      while (ReadFile(logs_[i]).find("taking summarization jobs") == std::string::npos) {
        int st = 0;
        if (waitpid(pids_[i], &st, WNOHANG) == pids_[i]) {
          pids_[i] = -1;
          std::fprintf(stderr, "worker %zu exited during start:\n%s\n", i + 1,
                       Tail(ReadFile(logs_[i])).c_str());
          return false;
        }
        if (Clock::now() > until) {
          std::fprintf(stderr, "worker %zu not ready within 15 s:\n%s\n", i + 1,
                       Tail(ReadFile(logs_[i])).c_str());
          return false;
        }
        std::this_thread::sleep_for(20ms);
      }
    }
    return true;
  }

  void Stop() {
    for (pid_t pid : pids_) {
      if (pid > 0) kill(pid, SIGTERM);
    }
    const auto deadline = Clock::now() + 10s;
    for (pid_t& pid : pids_) {
      if (pid <= 0) continue;
      int st = 0;
      while (waitpid(pid, &st, WNOHANG) != pid) {
        if (Clock::now() > deadline) {
          kill(pid, SIGKILL);
          waitpid(pid, &st, 0);
          break;
        }
        std::this_thread::sleep_for(20ms);
      }
      pid = -1;
    }
  }

  // The lines of the workers' logs at warn level or above.
  std::string Problems() const {
    std::string out;
    for (const std::string& log : logs_) {
      std::istringstream in(ReadFile(log));
      for (std::string line; std::getline(in, line);) {
        if (line.find("warn") != std::string::npos || line.find("error") != std::string::npos) {
          out += fs::path(log).filename().string() + ": " + line + "\n";
        }
      }
    }
    return out;
  }

 private:
  std::vector<pid_t> pids_;
  std::vector<std::string> logs_;
};

// Message i of session s: ~120 tokens of plausible agent history (files, commands, errors).
std::string MessageJson(int s, int i) {
  std::string text;
  if (i % 2 == 0) {
    text = "Please look at src/module_" + std::to_string(s) + "_" + std::to_string(i) +
           ".cpp again: the build fails with error: no matching function for call to "
           "parse_header(const char*, size_t) after the refactor of the reader. Keep the old "
           "public API, add a test in tests/reader_test.cpp for the empty header case, and "
           "run make test before you report back. Also check whether the config loader in "
           "src/config_" + std::to_string(i) + ".cpp still accepts the legacy key names, "
           "since two users depend on them and we promised not to break them this release.";
  } else {
    text = "I edited src/module_" + std::to_string(s) + "_" + std::to_string(i - 1) +
           ".cpp: parse_header now takes a std::string_view and the old overload forwards to "
           "it, so the public API is unchanged. I added ReaderTest.EmptyHeader in "
           "tests/reader_test.cpp and ran make test: 214 tests passed, 0 failed. The config "
           "loader still maps the legacy keys through the alias table; I added a case for "
           "each of them. Decided: keep the alias table until the next major release and log "
           "a deprecation warning once per key at startup.";
  }
  return json::serialize(json::object{{"role", i % 2 == 0 ? "user" : "assistant"},
                                      {"content", text}});
}

struct Round {
  int workers = 0;
  int jobs = 0;       // summarize jobs done
  int64_t steps = 0;  // summaries written (GET /v1/sessions/{id}/summaries)
  int64_t remote = 0; // results from workers used by the daemon (health broker.jobs.completed)
  int64_t timeouts = 0, worker_errors = 0, failed_jobs = 0, provider_calls = 0;
  double append_s = 0, wall_s = 0;
  bool ok = false;
};

std::string Config(const std::string& provider_url, const std::string& nats_url) {
  return "providers:\n"
         "  fake:\n"
         "    model: gpt-test\n"
         "    base_url: " + provider_url + "\n"
         "    api_key: sk-bench\n"
         "context:\n"
         "  log_level: warn\n"
         "  budget:\n"
         "    total: 3000\n"
         "    system_reserve: 100\n"
         "    tool_definitions_reserve: 100\n"
         "    fresh_tail_count: 16\n"
         "  summarizer:\n"
         "    backend: llm\n"
         "    provider: fake\n"
         "  broker:\n"
         "    url: " + nats_url + "\n"
         "    daemon_id: bench\n"
         "    jobs: true\n";
}

missy::Result<json::value> GetJson(missy::UnixHttpConnection& conn, const std::string& target) {
  auto r = conn.Call("GET", target, "", 10s);
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    return missy::Status::Unavailable("GET " + target + ": " + std::to_string(r->status) + " " +
                                      r->body);
  }
  boost::system::error_code ec;
  json::value v = json::parse(r->body, ec);
  if (ec) return missy::Status::Corruption("GET " + target + ": not JSON");
  return v;
}

// Jobs of `state` (all pages).
int CountJobs(missy::UnixHttpConnection& conn, const std::string& state) {
  int n = 0;
  for (int offset = 0;; offset += 1000) {
    auto v = GetJson(conn, "/v1/jobs?state=" + state + "&limit=1000&offset=" +
                               std::to_string(offset));
    if (!v.ok()) return -1;
    const int page = static_cast<int>(v->at("jobs").as_array().size());
    n += page;
    if (page < 1000) return n;
  }
}

const json::object* JobsHealth(const json::value& health) {
  const json::value* broker = health.as_object().if_contains("broker");
  if (broker == nullptr || !broker->is_object()) return nullptr;
  const json::value* jobs = broker->as_object().if_contains("jobs");
  return jobs != nullptr && jobs->is_object() ? &jobs->as_object() : nullptr;
}

int64_t Field(const json::object* o, const char* key) {
  if (o == nullptr) return 0;
  const json::value* v = o->if_contains(key);
  return v != nullptr && v->is_int64() ? v->as_int64() : 0;
}

Round RunRound(const std::string& missyd, const std::string& dir, int workers, int sessions) {
  Round out;
  out.workers = workers;
  const std::string round_dir = dir + "/workers-" + std::to_string(workers);
  fs::create_directories(round_dir + "/nats");

  missy::testing::NatsServer nats(missy::testing::FreeLoopbackPort(), round_dir + "/nats");
  if (!nats.Start()) {
    std::fprintf(stderr, "nats-server did not start (is it installed? scripts/install-deps)\n");
    return out;
  }
  // Short answers, so each summary is smaller than its source; plenty of them.
  std::vector<missy::provider_test::Reply> script;
  for (int i = 0; i < sessions * 12 + 64; ++i) {
    script.push_back(missy::provider_test::Json(
        200, missy::provider_test::OpenAiAnswer(
                 "checkpoint: parse_header takes a string_view; tests pass; legacy keys kept")));
  }
  missy::provider_test::FakeProviderServer provider(std::move(script));

  missy::bench::BenchDaemon daemon;
  if (!daemon.Start(missyd, Config(provider.Url("/v1"), nats.url()), round_dir)) return out;
  const std::string config = daemon.home() + "/config.yaml";
  missy::UnixHttpConnection conn(daemon.socket());

  // The daemon's dispatcher connected to the broker.
  for (const auto until = Clock::now() + 15s;;) {
    auto h = GetJson(conn, "/v1/health");
    if (h.ok() && JobsHealth(*h) != nullptr) {
      const json::value* c = JobsHealth(*h)->if_contains("connected");
      if (c != nullptr && c->is_bool() && c->as_bool()) break;
    }
    if (Clock::now() > until) {
      std::fprintf(stderr, "the daemon's job dispatcher did not connect within 15 s:\n%s\n",
                   daemon.Log().c_str());
      return out;
    }
    std::this_thread::sleep_for(20ms);
  }
  Workers pool;
  if (!pool.Start(missyd, daemon.home(), config, workers)) return out;

  std::vector<std::string> bodies(sessions);
  for (int s = 0; s < sessions; ++s) {
    std::string body = "{\"messages\":[";
    for (int i = 0; i < kMessagesPerSession; ++i) body += (i ? "," : "") + MessageJson(s, i);
    bodies[s] = body + "]}";
    auto r = conn.Call("POST", "/v1/sessions",
                       "{\"id\":\"bench-" + std::to_string(s) + "\"}", 10s);
    if (!r.ok() || r->status != 201) {
      std::fprintf(stderr, "create session: %s\n",
                   r.ok() ? r->body.c_str() : r.status().message().c_str());
      return out;
    }
  }

  const auto t0 = Clock::now();
  for (int s = 0; s < sessions; ++s) {
    auto r = conn.Call("POST", "/v1/sessions/bench-" + std::to_string(s) + "/messages",
                       bodies[s], 30s);
    if (!r.ok() || r->status != 200) {
      std::fprintf(stderr, "append: %s\n",
                   r.ok() ? r->body.c_str() : r.status().message().c_str());
      return out;
    }
  }
  out.append_s = Seconds(Clock::now() - t0);

  // Every session's job done (or failed); 60 s at most.
  const auto until = t0 + 60s;
  for (;;) {
    out.jobs = CountJobs(conn, "done");
    out.failed_jobs = CountJobs(conn, "failed");
    if (out.jobs < 0 || out.failed_jobs < 0) {
      std::fprintf(stderr, "GET /v1/jobs failed; the daemon:\n%s\n", daemon.Log().c_str());
      return out;
    }
    if (out.jobs + out.failed_jobs >= sessions) break;
    if (Clock::now() > until || !daemon.alive()) {
      std::fprintf(stderr, "%d of %d jobs done after %.0f s (daemon %s):\n%s\n", out.jobs,
                   sessions, Seconds(Clock::now() - t0), daemon.alive() ? "running" : "gone",
                   daemon.Log().c_str());
      std::fprintf(stderr, "%s", pool.Problems().c_str());
      return out;
    }
    std::this_thread::sleep_for(10ms);
  }
  out.wall_s = Seconds(Clock::now() - t0);

  for (int s = 0; s < sessions; ++s) {
    auto v = GetJson(conn, "/v1/sessions/bench-" + std::to_string(s) + "/summaries");
    if (v.ok()) out.steps += static_cast<int64_t>(v->at("summaries").as_array().size());
  }
  if (auto h = GetJson(conn, "/v1/health"); h.ok()) {
    const json::object* j = JobsHealth(*h);
    out.remote = Field(j, "completed");
    out.timeouts = Field(j, "timeouts");
    out.worker_errors = Field(j, "worker_errors");
  }
  out.provider_calls = static_cast<int64_t>(provider.requests().size());
  out.ok = true;

  // Anything the daemon or the workers complained about.
  const std::string daemon_log = daemon.Log();
  const std::string worker_problems = pool.Problems();
  if (!daemon_log.empty() || !worker_problems.empty()) {
    std::fprintf(stderr, "[%d workers] logged warnings:\n%s%s", workers,
                 Tail(daemon_log, 1500).c_str(), Tail(worker_problems, 1500).c_str());
  }
  pool.Stop();
  if (const int rc = daemon.Stop(); rc != 0) {
    std::fprintf(stderr, "[%d workers] missyd exited with %d\n", workers, rc);
  }
  return out;
}

std::string DefaultMissyd() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "missyd" : (self.parent_path().parent_path() / "bin" / "missyd").string();
}

}  // namespace

int main(int argc, char** argv) {
  int sessions = 64;
  std::string dir, missyd;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--sessions") && i + 1 < argc) {
      sessions = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) {
      dir = argv[++i];
    } else if (argv[i][0] != '-' && missyd.empty()) {
      missyd = argv[i];
    } else {
      std::fprintf(stderr, "usage: broker_jobs_bench [PATH_TO_MISSYD] [--sessions N] [--dir DIR]\n");
      return 2;
    }
  }
  if (sessions < 1) sessions = 1;
  if (missyd.empty()) missyd = DefaultMissyd();
  if (access(missyd.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "no missyd at %s (pass its path)\n", missyd.c_str());
    return 1;
  }
  const bool own_dir = dir.empty();
  if (own_dir) {
    std::string tmpl = "/var/tmp/missy-broker-jobs-bench-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  fs::create_directories(dir);
  signal(SIGPIPE, SIG_IGN);

  std::printf("missyd distributed summarization: %d sessions x %d messages (~120 tokens) each "
              "queue one job; fake instant LLM provider; nats-server -js (file store) on "
              "loopback; jobs_in_flight 8; each worker takes one job at a time\n",
              sessions, kMessagesPerSession);
  std::vector<Round> rounds;
  int status = 0;
  for (int workers : {1, 2, 4}) {
    rounds.push_back(RunRound(missyd, dir, workers, sessions));
    if (!rounds.back().ok) {
      std::fprintf(stderr, "round with %d workers failed\n", workers);
      status = 1;
      break;
    }
    std::error_code ec;
    fs::remove_all(dir + "/workers-" + std::to_string(workers), ec);
  }
  std::printf("  %-7s %5s %6s %7s %8s %8s %8s %7s %6s %8s %7s %8s\n", "workers", "jobs",
              "steps", "wall s", "jobs/s", "steps/s", "vs 1", "remote", "local", "timeouts",
              "errors", "append s");
  const double base = rounds[0].ok ? rounds[0].jobs / rounds[0].wall_s : 0;
  for (const Round& r : rounds) {
    if (!r.ok) continue;
    const double jobs_rate = r.jobs / r.wall_s;
    std::printf("  %-7d %5d %6lld %7.2f %8.1f %8.1f %7.2fx %7lld %6lld %8lld %7lld %8.2f\n",
                r.workers, r.jobs, static_cast<long long>(r.steps), r.wall_s, jobs_rate,
                static_cast<double>(r.steps) / r.wall_s, base > 0 ? jobs_rate / base : 0,
                static_cast<long long>(r.remote), static_cast<long long>(r.steps - r.remote),
                static_cast<long long>(r.timeouts),
                static_cast<long long>(r.worker_errors + r.failed_jobs), r.append_s);
  }
  std::printf("  wall: first append to last job done (appends included: append s); steps: "
              "summaries written; remote: results from workers the daemon used; local: steps "
              "the daemon wrote itself; errors: worker errors + failed jobs\n");
  if (own_dir && getenv("MISSY_BENCH_KEEP_HOME") == nullptr) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return status;
}

// Distributed summarization benchmark (issue 12): summarization jobs completed per second
// with 1, 2 and 4 `missyd worker` processes on a fake instant LLM provider. Each round
// starts its own `nats-server -js` (fresh file store), the fake provider (in this process),
// the real missyd (context.broker.jobs: true, jobs_in_flight 8, a small budget) and N
// workers (one job at a time each). The workers are paused (SIGSTOP) once connected; S
// sessions get 40 messages of ~120 tokens each in one append, which queues one job of a
// few leaf steps per session; the workers are resumed and the clock runs until the last
// job is done (GET /v1/jobs), so it measures the backlog drained, not the appends.
// Throughput should scale with workers until the daemon (its commits) or the machine's
// CPU is the limit: the CPU each process used meanwhile is printed too. Every process
// started here is stopped here, also on failure.
//
// Usage: broker_jobs_bench [PATH_TO_MISSYD] [--sessions N] [--dir DIR]
//   PATH_TO_MISSYD defaults to ../bin/missyd beside this executable's directory.
//   MISSY_BENCH_KEEP_HOME=1 keeps the daemons' homes (database, logs) and the nats stores.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
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

// The lines of a missyd log ("<time> <level> <text>") at warning level or above, each
// after `prefix`.
std::string WarningLines(const std::string& log, const std::string& prefix) {
  std::string out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string time, level;
    words >> time >> level;
    if (level == "warning" || level == "error" || level == "critical") {
      out += prefix + line + "\n";
    }
  }
  return out;
}

// CPU time (user + system) a process used so far, in seconds; 0 when unreadable.
double CpuSeconds(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream in(stat.substr(paren + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; in >> field; ++i) {  // field 3 is the state; 14 utime, 15 stime
    if (i == 14) utime = std::atoll(field.c_str());
    if (i == 15) {
      stime = std::atoll(field.c_str());
      break;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// CPU seconds of each thread of `pid`, keyed by thread id, with the thread's name.
std::map<pid_t, std::pair<std::string, double>> ThreadCpu(pid_t pid) {
  std::map<pid_t, std::pair<std::string, double>> out;
  std::error_code ec;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const pid_t tid = std::atoi(e.path().filename().c_str());
    const std::string comm = ReadFile(e.path().string() + "/comm");
    const std::string stat = ReadFile(e.path().string() + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream in(stat.substr(paren + 2));
    std::string field;
    long long ticks = 0;
    for (int i = 3; in >> field && i <= 15; ++i) {
      if (i == 14 || i == 15) ticks += std::atoll(field.c_str());
    }
    out[tid] = {comm.substr(0, comm.find('\n')),
                static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK))};
  }
  return out;
}

// The nats-server this process started (its child), or -1.
pid_t NatsServerPid() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = ReadFile(e.path().string() + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || stat.find("(nats-server)") == std::string::npos) continue;
    std::istringstream in(stat.substr(paren + 2));
    std::string state;
    pid_t ppid = 0;
    if (in >> state >> ppid && ppid == getpid()) return std::atoi(name.c_str());
  }
  return -1;
}

// `missyd worker` children writing to <dir>/worker-K.log; the destructor stops them
// (SIGTERM, SIGKILL after 10 s).
class Workers {
 public:
  Workers() = default;
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;
  ~Workers() { Stop(); }

  bool Start(const std::string& missyd, const std::string& home, const std::string& config, int n) {
    for (int k = 1; k <= n; ++k) {
      std::string name = "w";  // not "w" + to_string(k): GCC 12's false -Wrestrict
      name += std::to_string(k);
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

  void Pause() { Signal(SIGSTOP); }
  void Resume() { Signal(SIGCONT); }

  void Stop() {
    Signal(SIGTERM);
    Signal(SIGCONT);  // a paused worker handles SIGTERM once resumed
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

  // The lines of the workers' logs at warning level or above.
  std::string Problems() const {
    std::string out;
    for (const std::string& log : logs_) {
      out += WarningLines(ReadFile(log), fs::path(log).filename().string() + ": ");
    }
    return out;
  }

  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  void Signal(int sig) {
    for (pid_t pid : pids_) {
      if (pid > 0) kill(pid, sig);
    }
  }

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
           "run make test before you report back. Also check whether "
           "the config loader still accepts the legacy key names in src/config.cpp, "
           "since two users depend on them and we promised not to break them this release. "
           "When that is done, update CHANGELOG.md with a short note for the packagers.";
  } else {
    text = "I edited src/module_" + std::to_string(s) + "_" + std::to_string(i - 1) +
           ".cpp: parse_header now takes a std::string_view and the old overload forwards to "
           "it, so the public API is unchanged. I added ReaderTest.EmptyHeader in "
           "tests/reader_test.cpp and ran make test: 214 tests passed, 0 failed. The config "
           "loader still maps the legacy keys through the alias table; I added a case for "
           "each of them. Decided: keep the alias table until the next major release and log "
           "a deprecation warning once per key at startup. Next: the CHANGELOG.md note and a "
           "last full run of make check on the release branch.";
  }
  return json::serialize(
      json::object{{"role", i % 2 == 0 ? "user" : "assistant"}, {"content", text}});
}

struct Round {
  int workers = 0;
  int jobs = 0;        // summarize jobs done
  int64_t steps = 0;   // summaries written (GET /v1/sessions/{id}/summaries)
  int64_t remote = 0;  // results of workers the daemon used (health broker.jobs.completed)
  int64_t timeouts = 0, worker_errors = 0, failed_jobs = 0;
  double tokens_per_message = 0;
  double wall_s = 0;
  // CPU seconds used while the backlog drained.
  double cpu_daemon = 0, cpu_workers = 0, cpu_nats = 0, cpu_bench = 0;
  // The daemon while the backlog drained: its write transactions and fsyncing commits
  // (health storage.*), the CPU of its writer thread and of its busiest thread.
  int64_t write_transactions = 0, commits_with_fsync = 0;
  double cpu_writer = 0, cpu_busiest = 0;
  std::string busiest;
  int64_t provider_calls = 0, provider_connections = 0;
  bool ok = false;
};

std::string Config(const std::string& provider_url, const std::string& nats_url) {
  std::string yaml = R"(providers:
  fake:
    model: gpt-test
    base_url: PROVIDER_URL
    api_key: sk-bench
context:
  log_level: warn
  budget:
    total: 3000
    system_reserve: 100
    tool_definitions_reserve: 100
    fresh_tail_count: 16
  summarizer:
    backend: llm
    provider: fake
  broker:
    url: NATS_URL
    daemon_id: bench
    jobs: true
)";
  yaml.replace(yaml.find("PROVIDER_URL"), 12, provider_url);
  yaml.replace(yaml.find("NATS_URL"), 8, nats_url);
  return yaml;
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

struct JobCounts {
  int queued = 0, running = 0, done = 0, failed = 0;
  int all() const { return queued + running + done + failed; }
};

// Every job by state (all pages of GET /v1/jobs); nullopt when the daemon did not answer.
std::optional<JobCounts> CountJobs(missy::UnixHttpConnection& conn) {
  JobCounts c;
  for (int offset = 0;; offset += 1000) {
    auto v = GetJson(conn, "/v1/jobs?limit=1000&offset=" + std::to_string(offset));
    if (!v.ok()) return std::nullopt;
    const json::array& jobs = v->at("jobs").as_array();
    for (const json::value& j : jobs) {
      const json::string& state = j.at("state").as_string();
      if (state == "queued") ++c.queued;
      if (state == "running") ++c.running;
      if (state == "done") ++c.done;
      if (state == "failed") ++c.failed;
    }
    if (jobs.size() < 1000) return c;
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

// Some job is queued or running: two one-row queries, light enough to poll often without
// loading the daemon (the full list is read only once they come back empty).
bool AnyUnfinished(missy::UnixHttpConnection& conn) {
  for (const char* state : {"queued", "running"}) {
    auto v = GetJson(conn, std::string("/v1/jobs?limit=1&state=") + state);
    if (!v.ok() || !v->at("jobs").as_array().empty()) return true;
  }
  return false;
}

// Polls the jobs every 10 ms until `done(counts)` or `timeout`; false (and says why) when
// the daemon stops answering, exits, or the time runs out. `until_finished`: counts only
// once no job is queued or running.
template <typename Pred>
bool WaitJobs(missy::UnixHttpConnection& conn, missy::bench::BenchDaemon& daemon, Pred done,
              bool until_finished, std::chrono::seconds timeout, const char* what,
              JobCounts* last) {
  for (const auto until = Clock::now() + timeout;;) {
    if (!until_finished || !AnyUnfinished(conn)) {
      std::optional<JobCounts> c = CountJobs(conn);
      if (!c) {
        std::fprintf(stderr, "GET /v1/jobs failed; the daemon:\n%s\n", daemon.Log().c_str());
        return false;
      }
      *last = *c;
      if (done(*c)) return true;
    }
    if (Clock::now() > until || !daemon.alive()) {
      if (std::optional<JobCounts> c = CountJobs(conn)) *last = *c;
      std::fprintf(stderr,
                   "%s: not after %lld s (daemon %s; jobs queued %d, running %d, done %d, "
                   "failed %d):\n%s\n",
                   what, static_cast<long long>(timeout.count()),
                   daemon.alive() ? "running" : "gone", last->queued, last->running, last->done,
                   last->failed, daemon.Log().c_str());
      return false;
    }
    std::this_thread::sleep_for(10ms);
  }
}

// health storage.write_transactions and .commits_with_fsync; {-1, -1} when unavailable.
std::pair<int64_t, int64_t> StorageFigures(missy::UnixHttpConnection& conn) {
  auto h = GetJson(conn, "/v1/health");
  if (!h.ok() || !h->is_object()) return {-1, -1};
  const json::value* st = h->as_object().if_contains("storage");
  if (st == nullptr || !st->is_object()) return {-1, -1};
  return {Field(&st->as_object(), "write_transactions"),
          Field(&st->as_object(), "commits_with_fsync")};
}

// Waits until the daemon committed nothing for 300 ms (the appended messages indexed, the
// jobs it can dispatch published), so that the drain is measured alone; false after 30 s.
bool WaitIdle(missy::UnixHttpConnection& conn) {
  const auto until = Clock::now() + 30s;
  int64_t last = StorageFigures(conn).second;
  for (auto quiet_since = Clock::now(); Clock::now() - quiet_since < 300ms;) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(50ms);
    const int64_t now = StorageFigures(conn).second;
    if (now != last) {
      last = now;
      quiet_since = Clock::now();
    }
  }
  return true;
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
  const pid_t nats_pid = NatsServerPid();
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

  // The daemon's dispatcher connected to the broker (it creates the streams).
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
  pool.Pause();

  // The backlog: one append per session, each queues one job.
  int64_t tokens = 0;
  for (int s = 0; s < sessions; ++s) {
    const std::string id = "bench-" + std::to_string(s);
    auto r = conn.Call("POST", "/v1/sessions", "{\"id\":\"" + id + "\"}", 10s);
    if (!r.ok() || r->status != 201) {
      std::fprintf(stderr, "create session: %s\n",
                   r.ok() ? r->body.c_str() : r.status().message().c_str());
      return out;
    }
    std::string body = "{\"messages\":[";
    for (int i = 0; i < kMessagesPerSession; ++i) body += (i ? "," : "") + MessageJson(s, i);
    body += "]}";
    r = conn.Call("POST", "/v1/sessions/" + id + "/messages", body, 30s);
    if (!r.ok() || r->status != 200) {
      std::fprintf(stderr, "append: %s\n", r.ok() ? r->body.c_str() : r.status().message().c_str());
      return out;
    }
    boost::system::error_code ec;
    json::value v = json::parse(r->body, ec);
    if (!ec && v.is_object() && v.as_object().contains("total_tokens")) {
      tokens += v.at("total_tokens").to_number<int64_t>();
    }
  }
  out.tokens_per_message = static_cast<double>(tokens) / (sessions * kMessagesPerSession);
  JobCounts counts;
  if (!WaitJobs(
          conn, daemon, [&](const JobCounts& c) { return c.all() >= sessions; }, false, 15s,
          "one job queued per session", &counts)) {
    return out;
  }

  if (!WaitIdle(conn)) {
    std::fprintf(stderr, "the daemon kept committing for 30 s with the workers paused\n");
    return out;
  }

  // Drain: resume the workers; the clock stops when every job is done (or failed).
  auto cpu = [&] {
    double w = 0;
    for (pid_t pid : pool.pids()) w += CpuSeconds(pid);
    return std::array<double, 4>{CpuSeconds(daemon.pid()), w,
                                 nats_pid > 0 ? CpuSeconds(nats_pid) : 0, CpuSeconds(getpid())};
  };
  const std::array<double, 4> cpu0 = cpu();
  const auto threads0 = ThreadCpu(daemon.pid());
  const auto storage0 = StorageFigures(conn);
  const auto t0 = Clock::now();
  pool.Resume();
  if (!WaitJobs(
          conn, daemon, [&](const JobCounts& c) { return c.done + c.failed >= sessions; }, true,
          60s, "every job done", &counts)) {
    std::fprintf(stderr, "%s", pool.Problems().c_str());
    return out;
  }
  out.wall_s = Seconds(Clock::now() - t0);
  const std::array<double, 4> cpu1 = cpu();
  for (const auto& [tid, now] : ThreadCpu(daemon.pid())) {
    auto before = threads0.find(tid);
    const double used = now.second - (before == threads0.end() ? 0 : before->second.second);
    if (now.first == "missy-writer") out.cpu_writer += used;
    if (used > out.cpu_busiest) {
      out.cpu_busiest = used;
      out.busiest = now.first;
    }
  }
  const auto storage1 = StorageFigures(conn);
  out.write_transactions = storage1.first - storage0.first;
  out.commits_with_fsync = storage1.second - storage0.second;
  out.cpu_daemon = cpu1[0] - cpu0[0];
  out.cpu_workers = cpu1[1] - cpu0[1];
  out.cpu_nats = cpu1[2] - cpu0[2];
  out.cpu_bench = cpu1[3] - cpu0[3];
  out.jobs = counts.done;
  out.failed_jobs = counts.failed;

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
  out.provider_connections = provider.connections();
  out.ok = true;

  const std::string problems = WarningLines(daemon.Log(), "missyd: ") + pool.Problems();
  if (!problems.empty()) {
    std::fprintf(stderr, "[%d workers] warnings logged:\n%s", workers, Tail(problems).c_str());
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
  int sessions = 256;
  std::string dir, missyd;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--sessions") && i + 1 < argc) {
      sessions = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) {
      dir = argv[++i];
    } else if (argv[i][0] != '-' && missyd.empty()) {
      missyd = argv[i];
    } else {
      std::fprintf(stderr,
                   "usage: broker_jobs_bench [PATH_TO_MISSYD] [--sessions N] [--dir DIR]\n");
      return 2;
    }
  }
  sessions = std::clamp(sessions, 1, 5000);
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

  std::vector<Round> rounds;
  int status = 0;
  for (int workers : {1, 2, 4}) {
    rounds.push_back(RunRound(missyd, dir, workers, sessions));
    if (!rounds.back().ok) {
      std::fprintf(stderr, "the round with %d workers failed\n", workers);
      rounds.pop_back();
      status = 1;
      break;
    }
    if (getenv("MISSY_BENCH_KEEP_HOME") == nullptr) {
      std::error_code ec;
      fs::remove_all(dir + "/workers-" + std::to_string(workers), ec);
    }
  }
  std::printf(
      "missyd distributed summarization: a backlog of %d jobs (sessions of %d messages, "
      "~%.0f tokens each) drained by N workers (one job at a time each); fake instant "
      "LLM provider; nats-server -js (file store) on loopback; jobs_in_flight 8; "
      "%ld CPUs\n",
      sessions, kMessagesPerSession, rounds.empty() ? 0.0 : rounds[0].tokens_per_message,
      sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("  %-7s %5s %6s %7s %8s %8s %7s %7s %6s %7s   %s\n", "", "", "", "", "", "", "", "",
              "", "", "CPU busy (cores)");
  std::printf("  %-7s %5s %6s %7s %8s %8s %7s %7s %6s %7s   %6s %7s %5s %5s\n", "workers", "jobs",
              "steps", "wall s", "jobs/s", "steps/s", "vs 1", "remote", "local", "errors", "daemon",
              "workers", "nats", "fake");
  const double base = rounds.empty() ? 0 : rounds[0].jobs / rounds[0].wall_s;
  for (const Round& r : rounds) {
    const double jobs_rate = r.jobs / r.wall_s;
    std::printf(
        "  %-7d %5d %6lld %7.2f %8.1f %8.1f %6.2fx %7lld %6lld %7lld   %6.2f %7.2f %5.2f %5.2f\n",
        r.workers, r.jobs, static_cast<long long>(r.steps), r.wall_s, jobs_rate,
        static_cast<double>(r.steps) / r.wall_s, base > 0 ? jobs_rate / base : 0,
        static_cast<long long>(r.remote), static_cast<long long>(r.steps - r.remote),
        static_cast<long long>(r.worker_errors + r.failed_jobs + r.timeouts),
        r.cpu_daemon / r.wall_s, r.cpu_workers / r.wall_s, r.cpu_nats / r.wall_s,
        r.cpu_bench / r.wall_s);
  }
  std::printf("  the daemon meanwhile, and the provider:\n  %-7s %12s %12s %12s %12s  %-20s %s\n",
              "workers", "write txn/s", "fsyncs/s", "steps/fsync", "writer busy", "busiest thread",
              "LLM calls/connections");
  for (const Round& r : rounds) {
    std::printf(
        "  %-7d %12.0f %12.0f %12.2f %12.2f  %-15s %4.2f %lld/%lld\n", r.workers,
        r.write_transactions / r.wall_s, r.commits_with_fsync / r.wall_s,
        r.commits_with_fsync > 0 ? static_cast<double>(r.steps) / r.commits_with_fsync : 0.0,
        r.cpu_writer / r.wall_s, r.busiest.empty() ? "-" : r.busiest.c_str(),
        r.cpu_busiest / r.wall_s, static_cast<long long>(r.provider_calls),
        static_cast<long long>(r.provider_connections));
  }
  std::printf(
      "  steps: summaries written; remote: results of workers the daemon used; local: "
      "steps the daemon wrote itself; errors: timeouts + worker errors + failed jobs; "
      "CPU busy: CPU seconds per second of wall time (fake: this process, the provider "
      "and the polling)\n");
  if (own_dir && getenv("MISSY_BENCH_KEEP_HOME") == nullptr) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return status;
}

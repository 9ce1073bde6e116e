// End-to-end forced compaction (issue 10): a real missyd, a 10,000-message session built
// from the real trajectories (repeated in order), then one POST /v1/sessions/{id}/compact
// timed from request to answer: planning, loading the chunks with their extracts, every
// leaf and condensed summary, each committed with its coverage and audit events, and the
// next context. Twice: with the extractive backend, and with the llm backend against a
// fake OpenAI-compatible provider on loopback that answers at once (what is left is the
// daemon's own cost: the transcript, the HTTP exchange, counting, the trail, commits).
// Against Missy's compact_session, about 100 ms on this data size (target ≤ 5 ms).
//
// Each backend three times. "none": the session is created with a huge context_window,
// so appending queues no background summarization and the compaction (asking for a
// 200,000-token window, leaf chunks of 20,000 tokens) summarizes all of it: the worst
// case, and the figure the target is about. With such a session window every leaf fits
// half the history budget, so nothing is condensed: the figure is the leaves'. "kept
// up": the session has the 200,000-token window itself, so the daemon summarizes in the
// background as the messages come (as it does for an agent); once that is done, the
// compaction covers only what is left. "kept up+100": the same, then 100 more messages
// (under the threshold: nothing is queued for them) appended just before the
// compaction, as the turns an agent made since the last job: the compaction summarizes
// those outside the fresh tail itself. In the kept-up rows the compaction follows a
// context request, as an agent's does (its provider refused that context); in the
// "none" rows that request would queue the background summarization they are without,
// so there the compaction finds nothing read or counted yet. The audit log's
// summarization.completed events (MISSY_BENCH_KEEP_HOME=1 keeps the home) give each
// summary's own duration, apart from its commit.
//
// Usage: compaction_bench PATH_TO_MISSYD [--messages N]
// MISSY_BENCH_PROFILE_PAUSE=N waits N seconds before each compaction and prints the
// daemon's pid (to attach `perf record -p PID` to the compaction alone).
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_daemon.h"
#include "provider/fake_provider_server.h"
#include "trajectory_files.h"

namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr double kMissyMs = 100.0;
constexpr double kTargetMs = 5.0;
// Appended after background summarization is done, in the "kept up+" rows: under the
// 0.75 threshold of a 200,000-token window's history budget.
constexpr size_t kLate = 100;
// The window every context and compaction asks for.
constexpr char kWindow[] = R"({"context_window":200000,"max_output_tokens":4000})";

// The trajectories' messages, in file order (system messages left out).
std::vector<json::value> LoadTrajectories() {
  const std::vector<std::filesystem::path> files = missy::bench::TrajectoryFiles();
  std::vector<json::value> out;
  for (const auto& f : files) {
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);) {
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      if (ec || !v.is_object()) continue;
      const json::string* role =
          v.as_object().if_contains("role") ? v.as_object().at("role").if_string() : nullptr;
      if (role == nullptr || *role == "system") continue;
      out.push_back(std::move(v));
    }
  }
  return out;
}

std::string Config(const std::string& provider_url) {
  std::string yaml = R"(providers:
  fake:
    model: gpt-4o-mini
    base_url: PROVIDER_URL
    api_key: sk-bench
context:
  log_level: warn
  message_threshold: 100000000
)";
  yaml.replace(yaml.find("PROVIDER_URL"), 12, provider_url);
  return yaml;
}

struct Outcome {
  bool ok = false;
  double ms = 0;
  int64_t leaves = 0, condensed = 0, covered = 0, before = 0, after = 0, used = 0;
  std::string backend, stopped;
};

Outcome Compact(missy::UnixHttpConnection& conn, const std::string& id) {
  Outcome out;
  const auto t0 = Clock::now();
  auto r =
      conn.Call("POST", "/v1/sessions/" + id + "/compact",
                R"({"reason":"bench","context_window":200000,"max_output_tokens":4000})", 300s);
  out.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!r.ok() || r->status != 200) {
    std::fprintf(stderr, "compact %s failed: %s\n", id.c_str(),
                 r.ok() ? r->body.c_str() : r.status().ToString().c_str());
    return out;
  }
  const json::value v = json::parse(r->body);
  const json::object& c = v.at("compaction").as_object();
  out.leaves = c.at("leaves").to_number<int64_t>();
  out.condensed = c.at("condensed").to_number<int64_t>();
  out.covered = c.at("messages_covered").to_number<int64_t>();
  out.before = c.at("tokens_before").to_number<int64_t>();
  out.after = c.at("tokens_after").to_number<int64_t>();
  out.backend = json::value_to<std::string>(c.at("backend"));
  out.stopped = json::value_to<std::string>(c.at("stopped"));
  out.used = v.at("budget").at("used_tokens").to_number<int64_t>();
  out.ok = true;
  return out;
}

// Appends source messages [from, to) (repeated in order) in batches of 1,000.
bool Append(missy::UnixHttpConnection& conn, const std::string& id,
            const std::vector<json::value>& source, size_t from, size_t to) {
  for (size_t appended = from; appended < to;) {
    json::array batch;
    while (appended < to && batch.size() < 1000) {
      batch.push_back(source[appended % source.size()]);
      ++appended;
    }
    auto r = conn.Call("POST", "/v1/sessions/" + id + "/messages",
                       json::serialize(json::object{{"messages", batch}}), 120s);
    if (!r.ok() || r->status != 200) {
      std::fprintf(stderr, "append failed: %s\n",
                   r.ok() ? r->body.c_str() : r.status().ToString().c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PATH_TO_MISSYD [--messages N]\n", argv[0]);
    return 2;
  }
  size_t messages = 10000;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--messages") == 0 && i + 1 < argc) messages = std::stoul(argv[++i]);
  }
  const std::vector<json::value> source = LoadTrajectories();
  if (source.empty()) {
    std::fprintf(stderr, "no trajectories under %s/../shared/data/trajectories\n",
                 MISSY_SOURCE_DIR);
    return 1;
  }
  // An instant provider: every request gets a short checkpoint at once.
  std::vector<missy::provider_test::Reply> script(
      4000, missy::provider_test::Json(
                200, missy::provider_test::OpenAiAnswer(
                         // Inserted into the JSON as it is: newlines escaped.
                         "## Goal\\nFix the failing tests.\\n## Progress\\nRead the sources, "
                         "ran the tests.\\n## Next\\nEdit the parser and run the tests again.")));
  missy::provider_test::FakeProviderServer provider(std::move(script));
  missy::bench::BenchDaemon daemon;
  if (!daemon.Start(argv[1], Config(provider.Url("/v1")), "/var/tmp")) return 1;
  missy::UnixHttpConnection conn;
  if (missy::Status st = conn.Connect(daemon.socket()); !st.ok()) {
    std::fprintf(stderr, "connect: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf(
      "Forced compaction of a %zu-message session over the socket (real missyd, disk "
      "under /var/tmp)\n",
      messages);
  std::printf("%-11s %-12s %9s %7s %9s %8s %11s %9s %9s %8s\n", "backend", "history", "ms",
              "leaves", "condensed", "covered", "tokens", "after", "next ctx", "vs 100ms");
  int status = 0;
  struct Scenario {
    const char* backend;
    bool kept_up;  // background summarization ran as the messages came
    size_t late;   // messages appended after it was done, before the compaction
  };
  for (const Scenario sc : {Scenario{"extractive", false, 0}, Scenario{"llm", false, 0},
                            Scenario{"extractive", true, 0}, Scenario{"llm", true, 0},
                            Scenario{"extractive", true, kLate}, Scenario{"llm", true, kLate}}) {
    const char* backend = sc.backend;
    const std::string id = std::string("compact-") + backend +
                           (sc.kept_up ? "-kept-up" : "-unsummarized") +
                           (sc.late > 0 ? "-late" : "");
    // Unsummarized: a window so large that nothing is queued while appending, so the
    // compaction summarizes all of it (the worst case). Kept up: the window the
    // compaction names, so the daemon summarizes in the background as the messages come,
    // as it does for an agent, and the compaction covers what is left.
    json::object session{{"id", id},
                         {"system_prompt", "You are a coding agent."},
                         {"context_window", sc.kept_up ? int64_t{200000} : int64_t{1} << 30},
                         {"summarizer", json::object{{"backend", backend}, {"provider", "fake"}}}};
    auto created = conn.Call("POST", "/v1/sessions", json::serialize(session));
    if (!created.ok() || created->status != 201) {
      std::fprintf(stderr, "create failed: %s\n",
                   created.ok() ? created->body.c_str() : created.status().ToString().c_str());
      return 1;
    }
    if (!Append(conn, id, source, 0, messages - sc.late)) return 1;
    // The appends' full-text indexing is deferred to the writer; a search catches it up,
    // so that the figure is the compaction's alone (a session compacts long after most of
    // its messages were appended), then the WAL checkpoint gets a moment.
    auto caught_up = conn.Call("POST", "/v1/sessions/" + id + "/recall",
                               R"({"query":"catch up the index","max_tokens":100})", 300s);
    if (!caught_up.ok() || caught_up->status != 200) {
      std::fprintf(
          stderr, "recall failed: %s\n",
          caught_up.ok() ? caught_up->body.c_str() : caught_up.status().ToString().c_str());
      return 1;
    }
    if (sc.kept_up && !missy::bench::WaitForIdleJobs(conn, std::chrono::seconds(300))) {
      std::fprintf(stderr, "background summarization still running after 300 s\n");
      return 1;
    }
    std::this_thread::sleep_for(1s);
    // The agent's turns since the last job: less than the threshold, so nothing queued;
    // the compaction summarizes those outside the fresh tail itself.
    if (sc.late > 0 && !Append(conn, id, source, messages - sc.late, messages)) return 1;
    // An agent compacts after its provider refused the context it was just given: that
    // context came first (in the kept-up rows; in the "none" rows such a context would
    // queue the background summarization the row is without).
    if (sc.kept_up) {
      auto ctx = conn.Call("POST", "/v1/sessions/" + id + "/context", kWindow, 60s);
      if (!ctx.ok() || ctx->status != 200) {
        std::fprintf(stderr, "context failed: %s\n",
                     ctx.ok() ? ctx->body.c_str() : ctx.status().ToString().c_str());
        return 1;
      }
    }
    if (const char* pause = std::getenv("MISSY_BENCH_PROFILE_PAUSE")) {
      // Time to attach a profiler to the daemon for the compaction alone.
      std::fprintf(stderr, "compacting %s in %s s: missyd pid %d\n", id.c_str(), pause,
                   static_cast<int>(daemon.pid()));
      std::this_thread::sleep_for(std::chrono::seconds(std::atoi(pause)));
    }
    const Outcome o = Compact(conn, id);
    if (!o.ok) {
      status = 1;
      continue;
    }
    const std::string history = !sc.kept_up   ? "none"
                                : sc.late > 0 ? "kept up+" + std::to_string(sc.late)
                                              : "kept up";
    std::printf("%-11s %-12s %9.1f %7lld %9lld %8lld %11lld %9lld %9lld %7.2fx%s%s\n", backend,
                history.c_str(), o.ms, static_cast<long long>(o.leaves),
                static_cast<long long>(o.condensed), static_cast<long long>(o.covered),
                static_cast<long long>(o.before), static_cast<long long>(o.after),
                static_cast<long long>(o.used), kMissyMs / o.ms,
                o.backend == backend ? "" : (" wrote: " + o.backend).c_str(),
                o.stopped.empty() ? "" : (" stopped: " + o.stopped).c_str());
    if (o.leaves == 0 && !sc.kept_up) status = 1;
  }
  std::printf("provider requests: %zu on %d connections\n", provider.requests().size(),
              provider.connections());
  std::printf("target: <= %.1f ms (Missy's compact_session about %.0f ms)\n", kTargetMs, kMissyMs);
  if (!daemon.alive()) {
    std::fprintf(stderr, "missyd died:\n%s\n", daemon.Log().c_str());
    return 1;
  }
  return status;
}

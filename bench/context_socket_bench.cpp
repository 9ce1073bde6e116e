// Context assembly over the socket: starts a real missyd on a temporary MISSY_HOME,
// builds sessions of 1k, 10k and 100k messages (a realistic mix of user turns, tool
// calls and tool outputs) and times POST /v1/sessions/{id}/context, p50 and p99.
// Usage: context_socket_bench PATH_TO_MISSYD
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench_daemon.h"
#include "cli/http_client.h"

namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

json::array Turn(int turn, int& call) {
  json::array batch;
  batch.push_back(json::object{
      {"role", "user"},
      {"content", "Step " + std::to_string(turn) + ": run the tests and fix what fails."}});
  const std::string id = "call_" + std::to_string(++call);
  batch.push_back(json::object{
      {"role", "assistant"},
      {"content", nullptr},
      {"tool_calls",
       json::array{json::object{
           {"id", id},
           {"type", "function"},
           {"function",
            json::object{{"name", "bash"}, {"arguments", R"({"command":"make test"})"}}}}}}});
  std::string out;
  for (int l = 0; l < 8 + turn % 40; ++l)
    out += "test_" + std::to_string(l) + " ... ok (" + std::to_string(l * 7 % 100) + " ms)\n";
  batch.push_back(json::object{{"role", "tool"}, {"tool_call_id", id}, {"content", out}});
  batch.push_back(json::object{
      {"role", "assistant"},
      {"content", "All tests pass after the fix in step " + std::to_string(turn) + "."}});
  return batch;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PATH_TO_MISSYD\n", argv[0]);
    return 2;
  }
  missy::bench::BenchDaemon daemon;
  const char* config = getenv("MISSY_BENCH_CONFIG");
  if (!daemon.Start(argv[1], config ? config : "context:\n  log_level: warn\n")) return 1;
  missy::UnixHttpConnection conn;
  if (missy::Status st = conn.Connect(daemon.socket()); !st.ok()) {
    std::fprintf(stderr, "connect: %s\n", st.ToString().c_str());
    return 1;
  }

  std::printf("%-10s %10s %10s %10s %8s %10s\n", "messages", "append/s", "ctx p50", "ctx p99",
              "kept", "used");
  int status = 0;
  for (int size : {1000, 10000, 100000}) {
    const std::string id = "bench" + std::to_string(size);
    (void)conn.Call(
        "POST", "/v1/sessions",
        json::serialize(json::object{{"id", id}, {"system_prompt", "You are a coding agent."}}));
    int call = 0;
    int appended = 0;
    const auto t0 = Clock::now();
    for (int turn = 0; appended < size; ++turn) {
      json::array batch;
      while (appended < size && batch.size() < 1000) {
        for (json::value& m : Turn(turn++, call)) batch.push_back(std::move(m));
        appended += 4;
      }
      auto r =
          conn.Call("POST", "/v1/sessions/" + id + "/messages",
                    json::serialize(json::object{{"messages", batch}}), std::chrono::seconds(120));
      if (!r.ok() || r->status != 200) {
        std::fprintf(stderr, "append failed: %s\n",
                     r.ok() ? r->body.c_str() : r.status().ToString().c_str());
        status = 1;
        break;
      }
    }
    const double append_s = std::chrono::duration<double>(Clock::now() - t0).count();
    // The message text is indexed for search in the background after each append is
    // acknowledged: a search waits for that backlog, so that the indexer does not share
    // the two cores with the requests measured below.
    if (auto r = conn.Call("GET", "/v1/memory/search?q=warmup", "", std::chrono::seconds(300));
        !r.ok() || r->status != 200) {
      std::fprintf(stderr, "search (index catch-up) failed\n");
    }
    // Likewise the appends queued background summarization of the history: measure the
    // contexts once it is done, not while a job shares the cores with them.
    if (!missy::bench::WaitForIdleJobs(conn, std::chrono::seconds(300))) {
      std::fprintf(stderr, "summarization jobs still running after 300 s\n");
    }
    const int runs =
        getenv("MISSY_BENCH_RUNS") ? std::max(1, atoi(getenv("MISSY_BENCH_RUNS"))) : 100;
    std::fprintf(stderr, "measuring %d\n", size);
    std::vector<double> ms;
    int64_t kept = 0, used = 0;
    for (int i = 0; i < runs + 3; ++i) {
      const auto t = Clock::now();
      auto r =
          conn.Call("POST", "/v1/sessions/" + id + "/context", "{}", std::chrono::seconds(120));
      const double elapsed = std::chrono::duration<double, std::milli>(Clock::now() - t).count();
      if (!r.ok() || r->status != 200) {
        std::fprintf(stderr, "context failed\n");
        status = 1;
        break;
      }
      if (i >= 3) ms.push_back(elapsed);  // the first requests load the history into the cache
      json::value v = json::parse(r->body);
      kept = v.at("budget").at("history").at("kept_messages").to_number<int64_t>();
      used = v.at("budget").at("used_tokens").to_number<int64_t>();
    }
    if (ms.empty()) break;
    std::printf("%-10d %10.0f %8.2fms %8.2fms %8lld %10lld\n", size, appended / append_s,
                missy::bench::Percentile(ms, 0.5), missy::bench::Percentile(ms, 0.99),
                static_cast<long long>(kept), static_cast<long long>(used));
    std::fflush(stdout);
  }
  return status;  // the daemon stops with `daemon`
}

// Bounded memory end to end (issue 13, label slow): a real missyd with
// context.limits.memory_mb = 64 stores far more than that over its socket (24 sessions x
// 300 messages, about half of them 40 KB tool results of varied log text), answers two
// rounds of contexts over every session, and its resident set (VmRSS of
// /proc/PID/status) stays under the bound plus a stated allowance; every context is 200
// and within its budget, and the history cache stays under its configured maximum.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "daemon/daemon_process.h"
#include "test_util.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

constexpr int64_t kBoundMib = 64;
constexpr int kSessions = 24;
constexpr int kMessagesPerSession = 300;
constexpr size_t kToolBytes = 40 << 10;
// The allowance above the bound, on top of the baseline RSS measured once the daemon has
// served a first small session (see BaselineRss): allocator slack (freed blocks glibc
// keeps in its arenas, one arena per thread), the request and response buffers of the
// appends in flight (a 160 KB body parsed into JSON and into messages) and SQLite's page
// cache growing with the database.
constexpr int64_t kSlackMib = 16;

int64_t VmRssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// About `bytes` of tool output that tokenizes like real output (paths, numbers, hashes).
std::string ToolOutput(std::mt19937_64& rng, size_t bytes) {
  static const char* kFiles[] = {"src/core/handler",  "lib/storage/index", "app/models/session",
                                 "tests/unit/parser", "pkg/server/router", "internal/cache"};
  static const char* kWords[] = {"processed", "flushed", "retrying", "evicted", "loaded",
                                 "compacted", "merged",  "skipped",  "resolved"};
  std::string out;
  out.reserve(bytes + 160);
  char line[160];
  while (out.size() < bytes) {
    std::snprintf(
        line, sizeof(line), "%02d:%02d:%02d.%03d [w%d] %s %llu rows from %s_%d.cc:%d (%016llx)\n",
        static_cast<int>(rng() % 24), static_cast<int>(rng() % 60), static_cast<int>(rng() % 60),
        static_cast<int>(rng() % 1000), static_cast<int>(rng() % 16),
        kWords[rng() % std::size(kWords)], static_cast<unsigned long long>(rng() % 100000),
        kFiles[rng() % std::size(kFiles)], static_cast<int>(rng() % 64),
        static_cast<int>(rng() % 4000), static_cast<unsigned long long>(rng()));
    out += line;
  }
  return out;
}

// One turn of at most `remaining` messages: 8 with 4 tool results (user, assistant with 3
// parallel calls, their results, assistant with 1 call, its result, reply), or a short one
// of 4 with 1 result at the end of a session.
json::array Turn(int turn, int remaining, int& call, std::mt19937_64& rng) {
  json::array batch;
  batch.push_back(json::object{{"role", "user"}, {"content", "step " + std::to_string(turn)}});
  auto calls = [&](int n) {
    json::array tc;
    const int first = call + 1;
    for (int i = 0; i < n; ++i) {
      tc.push_back(json::object{
          {"id", "call_" + std::to_string(++call)},
          {"type", "function"},
          {"function", json::object{{"name", "bash"}, {"arguments", R"({"command":"make"})"}}}});
    }
    batch.push_back(json::object{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tc}});
    for (int id = first; id <= call; ++id) {
      batch.push_back(json::object{{"role", "tool"},
                                   {"tool_call_id", "call_" + std::to_string(id)},
                                   {"content", ToolOutput(rng, kToolBytes)}});
    }
  };
  if (remaining >= 8 && (remaining == 8 || remaining - 8 >= 4)) {
    calls(3);
    calls(1);
  } else {
    calls(1);
  }
  batch.push_back(
      json::object{{"role", "assistant"}, {"content", "done with step " + std::to_string(turn)}});
  return batch;
}

class MemoryBoundTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<DaemonProcess>(
        dir_.path(), "context:\n  log_level: warn\n  limits:\n    memory_mb: " +
                         std::to_string(kBoundMib) + "\n");
    ASSERT_TRUE(daemon_->Start().ok()) << daemon_->log();
  }
  void TearDown() override {
    if (daemon_->running()) {
      EXPECT_EQ(daemon_->Stop(), 0) << daemon_->log();
    }
  }

  // Appends `messages` messages to a new session `id`; returns the bytes sent.
  size_t Store(const std::string& id, int messages, std::mt19937_64& rng) {
    Result<ClientResponse> r =
        daemon_->Call("POST", "/v1/sessions", json::serialize(json::object{{"id", id}}));
    EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().ToString());
    size_t sent_bytes = 0;
    int call = 0;
    for (int sent = 0, turn = 0; sent < messages; ++turn) {
      json::array batch = Turn(turn, messages - sent, call, rng);
      sent += static_cast<int>(batch.size());
      const std::string body = json::serialize(json::object{{"messages", std::move(batch)}});
      r = daemon_->Call("POST", "/v1/sessions/" + id + "/messages", body);
      EXPECT_TRUE(r.ok() && r->status == 200)
          << id << ": " << (r.ok() ? r->body.substr(0, 500) : r.status().ToString());
      if (::testing::Test::HasFailure()) return sent_bytes;
      sent_bytes += body.size();
    }
    return sent_bytes;
  }

  // One context of `id`: 200 and within its budget.
  void Context(const std::string& id) {
    Result<ClientResponse> r = daemon_->Call("POST", "/v1/sessions/" + id + "/context", "{}");
    ASSERT_TRUE(r.ok()) << id << ": " << r.status().ToString();
    ASSERT_EQ(r->status, 200) << id << ": " << r->body.substr(0, 500);
    json::value v = json::parse(r->body);
    EXPECT_LE(Int(v, {"budget", "used_tokens"}), Int(v, {"budget", "total"})) << id;
    ++contexts_;
  }

  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  int contexts_ = 0;
};

TEST_F(MemoryBoundTest, RssStaysUnderTheBoundWhileStoringFarMore) {
  std::mt19937_64 rng(13);
  // Baseline: the daemon after a first small session and context, so the binary, the
  // o200k rank table (loaded on first use, ~tens of MiB), SQLite's connections and the
  // threads' stacks are resident. That cost does not grow with the history, and at a
  // 64 MiB bound it is most of the budget, so the allowance is baseline + kSlackMib.
  Store("warmup", 8, rng);
  Context("warmup");
  ASSERT_FALSE(HasFailure());
  const int64_t baseline_kib = VmRssKib(daemon_->pid());
  ASSERT_GT(baseline_kib, 0);
  const int64_t limit_kib = (kBoundMib + kSlackMib) * 1024 + baseline_kib;
  std::printf(
      "[ memory   ] baseline RSS %.1f MiB, limit %.1f MiB (bound %lld + slack %lld + "
      "baseline)\n",
      baseline_kib / 1024.0, limit_kib / 1024.0, static_cast<long long>(kBoundMib),
      static_cast<long long>(kSlackMib));

  size_t stored = 0;
  int64_t max_kib = baseline_kib;
  auto sample = [&](const std::string& when) {
    const int64_t kib = VmRssKib(daemon_->pid());
    max_kib = std::max(max_kib, kib);
    std::printf("[ memory   ] %-22s stored %6.1f MB  RSS %6.1f MiB\n", when.c_str(),
                static_cast<double>(stored) / 1e6, kib / 1024.0);
    EXPECT_LE(kib, limit_kib) << when << ": RSS " << kib / 1024.0 << " MiB after "
                              << static_cast<double>(stored) / 1e6 << " MB stored";
  };
  for (int s = 0; s < kSessions; ++s) {
    const std::string id = "mem" + std::to_string(s);
    stored += Store(id, kMessagesPerSession, rng);
    ASSERT_FALSE(HasFailure());
    Context(id);
    sample("after session " + std::to_string(s));
  }
  for (int round = 0; round < 2; ++round) {
    for (int s = 0; s < kSessions; ++s) Context("mem" + std::to_string(s));
    sample("after context round " + std::to_string(round + 1));
  }
  EXPECT_EQ(contexts_, 1 + 3 * kSessions);
  EXPECT_GT(stored, static_cast<size_t>(kBoundMib) << 20) << "the test must store beyond the bound";

  json::value health = Body(daemon_->Call("GET", "/v1/health"));
  const int64_t cache_bytes = Int(health, {"memory", "history_cache", "bytes"});
  const int64_t cache_max = Int(health, {"memory", "history_cache", "max_bytes"});
  std::printf("[ memory   ] max RSS %.1f MiB; history cache %.1f of %.1f MiB\n", max_kib / 1024.0,
              cache_bytes / 1048576.0, cache_max / 1048576.0);
  EXPECT_EQ(Int(health, {"memory", "limit_mb"}), kBoundMib);
  EXPECT_GT(cache_max, 0);
  EXPECT_LE(cache_bytes, cache_max);
  EXPECT_LE(max_kib, limit_kib);
}

}  // namespace
}  // namespace missy::testing

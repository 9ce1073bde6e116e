// Distributed summarization end to end: the real missyd with context.broker.jobs, real
// `missyd worker` processes and a real nats-server -js on loopback. Two workers: every
// summary written once, none locally. A worker SIGKILLed while its LLM call runs: its
// in-progress acks kept the job from the other worker while it lived; once dead, the job
// is redelivered to the other. No worker: the daemon summarizes locally by the deadline.
// A broker refusing the credentials: the daemon serves and summarizes locally.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon/daemon_process.h"
#include "nats_test_util.h"
#include "provider/fake_provider_server.h"
#include "test_util.h"

namespace missy::testing {
namespace {

using namespace std::chrono_literals;
namespace json = boost::json;
using provider_test::FakeProviderServer;
using provider_test::Json;
using provider_test::OpenAiAnswer;
using provider_test::Reply;

// `missyd worker --config <config> --name <name>`, output in <dir>/<name>.log.
class WorkerProcess {
 public:
  WorkerProcess(std::string dir, std::string config, std::string name)
      : dir_(std::move(dir)), config_(std::move(config)), name_(std::move(name)) {}
  ~WorkerProcess() { Kill(SIGKILL); }
  bool Start() {
    const std::string binary = DaemonProcess::Binary();
    const std::string log = dir_ + "/" + name_ + ".log";
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      setenv("MISSY_HOME", dir_.c_str(), 1);
      execl(binary.c_str(), binary.c_str(), "worker", "--config", config_.c_str(), "--name",
            name_.c_str(), "--log-level", "debug", static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid_ > 0;
  }
  void Kill(int signal) {
    if (pid_ <= 0) return;
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  std::string log() const {
    std::ifstream in(dir_ + "/" + name_ + ".log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string dir_, config_, name_;
  pid_t pid_ = -1;
};

std::string Config(const std::string& nats_url, const std::string& broker_extra,
                   const std::string& provider_url = "") {
  std::string yaml;
  if (!provider_url.empty()) {
    yaml += "default_provider: fake\nproviders:\n  fake: {model: gpt-test, base_url: " +
            provider_url + ", api_key: sk-never-shown, timeout: 60}\n";
  }
  yaml += "context:\n  log_level: debug\n"
          "  budget: {total: 3000, system_reserve: 100, tool_definitions_reserve: 100, "
          "fresh_tail_count: 16}\n";
  if (!provider_url.empty()) yaml += "  summarizer: {backend: llm, provider: fake}\n";
  yaml += "  broker: {url: \"" + nats_url + "\", daemon_id: ws1, jobs: true" + broker_extra + "}\n";
  return yaml;
}

// 40 messages of ~120 tokens: one summarization job of a few leaves.
void Append40(DaemonProcess& d, const std::string& session) {
  ASSERT_EQ(d.Call("POST", "/v1/sessions", R"({"id":")" + session + R"("})")->status, 201);
  json::array messages;
  for (int i = 0; i < 40; ++i) {
    messages.push_back(json::object{
        {"role", i % 2 == 0 ? "user" : "assistant"},
        {"content", "step " + std::to_string(i) + ": editing src/mod_" + std::to_string(i) +
                        ".cpp to fix error E" + std::to_string(i) + ". " +
                        std::string(400, 'x') + " lorem ipsum dolor sit amet"}});
  }
  Result<ClientResponse> r =
      d.Call("POST", "/v1/sessions/" + session + "/messages",
             json::serialize(json::object{{"messages", std::move(messages)}}));
  ASSERT_EQ(r->status, 200) << r->body;
}

json::array Completed(DaemonProcess& d) {
  return Body(d.Call("GET", "/v1/audit?type=summarization.completed&limit=1000"))
      .at("events")
      .as_array();
}

// Every job done (none queued or running) and at least `min_jobs` of them.
bool JobsDone(DaemonProcess& d, size_t min_jobs) {
  const json::value all = Body(d.Call("GET", "/v1/jobs?limit=1000"));
  const json::array& jobs = all.at("jobs").as_array();
  if (jobs.size() < min_jobs) return false;
  for (const json::value& j : jobs) {
    if (j.at("state").as_string() != "done") return false;
  }
  return true;
}

class DistributedJobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.Join("nats"));
    std::filesystem::create_directories(dir_.Join("home"));
    nats_ = std::make_unique<NatsServer>(FreeLoopbackPort(), dir_.Join("nats"));
    ASSERT_TRUE(nats_->Start());
  }
  // The daemon's config file, which the workers read too (credentials, providers).
  std::string config_path() const { return dir_.Join("home") + "/config.yaml"; }

  TempDir dir_;
  std::unique_ptr<NatsServer> nats_;
};

TEST_F(DistributedJobsTest, TwoWorkersWriteEverySummaryOnceAndNoneRunsLocally) {
  DaemonProcess d(dir_.Join("home"), Config(nats_->url(), ", job_timeout_ms: 30000"));
  ASSERT_TRUE(d.Start().ok()) << d.log();
  WorkerProcess w1(dir_.path(), config_path(), "w1"), w2(dir_.path(), config_path(), "w2");
  ASSERT_TRUE(w1.Start());
  ASSERT_TRUE(w2.Start());
  const std::vector<std::string> sessions = {"a", "b", "c", "d"};
  for (const std::string& s : sessions) Append40(d, s);
  ASSERT_TRUE(WaitFor([&] { return JobsDone(d, sessions.size()); }, 30s))
      << d.log() << w1.log() << w2.log();

  // Each session's leaves cover its messages from seq 1 without overlap, each written
  // by a worker; nothing fell back to the daemon's own backend.
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> leaves;
  std::set<std::string> workers;
  for (const json::value& e : Completed(d)) {
    const json::value& detail = e.at("detail");
    EXPECT_FALSE(detail.as_object().contains("fallback_reason")) << json::serialize(e);
    ASSERT_TRUE(detail.as_object().contains("worker")) << json::serialize(e);
    workers.insert(std::string(detail.at("worker").as_string()));
    if (Int(detail, {"depth"}) == 0) {
      leaves[std::string(e.at("session_id").as_string())].push_back(
          {Int(detail, {"first_seq"}), Int(detail, {"last_seq"})});
    }
  }
  ASSERT_EQ(leaves.size(), sessions.size());
  for (auto& [session, ranges] : leaves) {
    std::sort(ranges.begin(), ranges.end());
    int64_t next = 1;
    for (const auto& [first, last] : ranges) {
      EXPECT_EQ(first, next) << session;
      EXPECT_GE(last, first) << session;
      next = last + 1;
    }
  }
  for (const std::string& w : workers) EXPECT_TRUE(w == "w1" || w == "w2") << w;
  const json::value jobs = Body(d.Call("GET", "/v1/health")).at("broker").at("jobs");
  EXPECT_TRUE(jobs.at("connected").as_bool());
  EXPECT_EQ(Int(jobs, {"timeouts"}), 0);
  EXPECT_EQ(Int(jobs, {"worker_errors"}), 0);
  EXPECT_EQ(Int(jobs, {"completed"}), Int(jobs, {"dispatched"}));
  EXPECT_EQ(Int(jobs, {"completed"}), static_cast<int64_t>(Completed(d).size()));
  EXPECT_EQ(Int(jobs, {"in_flight"}), 0);
  Result<ClientResponse> scrape = d.Call("GET", "/metrics");
  EXPECT_NE(scrape->body.find("missyd_broker_jobs_total{outcome=\"completed\"} " +
                              std::to_string(Int(jobs, {"completed"}))),
            std::string::npos);
  EXPECT_EQ(d.Stop(), 0);
}

TEST_F(DistributedJobsTest, AWorkerKilledMidJobLosesItToTheOther) {
  // The first completion request (worker A's) hangs; every later one answers at once.
  std::vector<Reply> script;
  Reply hang = Json(200, OpenAiAnswer("never delivered"));
  hang.delay = 60s;
  script.push_back(hang);
  for (int i = 0; i < 32; ++i) {
    script.push_back(Json(200, OpenAiAnswer("Goal: fix the modules. Done: edited them.")));
  }
  FakeProviderServer provider(script);
  DaemonProcess d(dir_.Join("home"),
                  Config(nats_->url(), ", job_timeout_ms: 30000, job_ack_wait_ms: 1000",
                         provider.Url("/v1")));
  ASSERT_TRUE(d.Start().ok()) << d.log();
  WorkerProcess a(dir_.path(), config_path(), "wA"), b(dir_.path(), config_path(), "wB");
  ASSERT_TRUE(a.Start());
  Append40(d, "k");
  ASSERT_TRUE(WaitFor([&] { return provider.requests().size() >= 1; }, 15s)) << a.log();
  // B idles beside A for more than twice the ack wait: A's in-progress acks keep the job.
  ASSERT_TRUE(b.Start());
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(provider.requests().size(), 1u) << b.log();
  a.Kill(SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return JobsDone(d, 1); }, 20s)) << d.log() << b.log();
  const json::array done = Completed(d);
  ASSERT_FALSE(done.empty());
  for (const json::value& e : done) {
    const json::value& detail = e.at("detail");
    EXPECT_EQ(detail.at("worker").as_string(), "wB") << json::serialize(e);
    EXPECT_EQ(detail.at("backend").as_string(), "llm") << json::serialize(e);
    EXPECT_FALSE(detail.as_object().contains("fallback_reason")) << json::serialize(e);
  }
  const json::value jobs = Body(d.Call("GET", "/v1/health")).at("broker").at("jobs");
  EXPECT_EQ(Int(jobs, {"timeouts"}), 0);
  EXPECT_EQ(d.Stop(), 0);
  // The provider's key stayed on the machines that hold it.
  for (const std::string& log : {d.log(), b.log()}) {
    EXPECT_EQ(log.find("sk-never-shown"), std::string::npos);
  }
}

TEST_F(DistributedJobsTest, WithoutAWorkerTheDaemonSummarizesLocallyByTheDeadline) {
  DaemonProcess d(dir_.Join("home"), Config(nats_->url(), ", job_timeout_ms: 1000"));
  ASSERT_TRUE(d.Start().ok()) << d.log();
  ASSERT_TRUE(WaitFor([&] {
    return Body(d.Call("GET", "/v1/health")).at("broker").at("jobs").at("connected").as_bool();
  }, 10s)) << d.log();
  const auto started = std::chrono::steady_clock::now();
  Append40(d, "solo");
  ASSERT_TRUE(WaitFor([&] { return JobsDone(d, 1); }, 15s)) << d.log();
  // One step waited for its deadline; the rest of the run did not wait again.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 6s);
  const json::array done = Completed(d);
  ASSERT_GE(done.size(), 2u);
  EXPECT_NE(std::string(done[0].at("detail").at("fallback_reason").as_string())
                .find("broker: no result from a worker within"),
            std::string::npos)
      << json::serialize(done[0]);
  EXPECT_NE(std::string(done[1].at("detail").at("fallback_reason").as_string())
                .find("earlier in this run"),
            std::string::npos)
      << json::serialize(done[1]);
  EXPECT_EQ(Int(Body(d.Call("GET", "/v1/health")).at("broker").at("jobs"), {"timeouts"}), 1);
  EXPECT_EQ(d.Stop(), 0);
}

TEST(DistributedJobsAuthTest, BadCredentialsAreLoggedAndSummarizationRunsLocally) {
  TempDir dir;
  std::filesystem::create_directories(dir.Join("nats"));
  NatsServer server(FreeLoopbackPort(), dir.Join("nats"), {"--user", "missy", "--pass", "right"});
  ASSERT_TRUE(server.Start());
  DaemonProcess d(dir.path(), Config(server.url(), ", user: missy, password: wrong-secret-77"));
  ASSERT_TRUE(d.Start().ok()) << d.log();
  ASSERT_TRUE(WaitFor([&] { return d.log().find("Authorization") != std::string::npos; }, 10s))
      << d.log();
  const json::value jobs = Body(d.Call("GET", "/v1/health")).at("broker").at("jobs");
  EXPECT_FALSE(jobs.at("connected").as_bool());
  EXPECT_NE(std::string(jobs.at("last_error").as_string()).find("Authorization"),
            std::string::npos);
  Append40(d, "offline");
  ASSERT_TRUE(WaitFor([&] { return JobsDone(d, 1); }, 10s)) << d.log();
  const json::array done = Completed(d);
  ASSERT_FALSE(done.empty());
  EXPECT_NE(std::string(done[0].at("detail").at("fallback_reason").as_string())
                .find("broker: not connected"),
            std::string::npos)
      << json::serialize(done[0]);
  EXPECT_EQ(d.Stop(), 0);
  EXPECT_EQ(d.log().find("wrong-secret-77"), std::string::npos);
}

}  // namespace
}  // namespace missy::testing

namespace missy::testing {
namespace {

// A worker scripted here that answers every job twice (a worker that crashed after
// publishing its result, then the redelivered job answered again): the daemon stores one
// summary per step and counts the second results as duplicates.
TEST_F(DistributedJobsTest, ResultsDeliveredTwiceGiveOneSummaryEach) {
  DaemonProcess d(dir_.Join("home"), Config(nats_->url(), ", job_timeout_ms: 20000"));
  ASSERT_TRUE(d.Start().ok()) << d.log();
  ASSERT_TRUE(WaitFor([&] {
    return Body(d.Call("GET", "/v1/health")).at("broker").at("jobs").at("connected").as_bool();
  }, 10s)) << d.log();
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::thread twice([&] {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    ASSERT_EQ(natsConnection_ConnectTo(&nc, nats_->url().c_str()), NATS_OK);
    ASSERT_EQ(natsConnection_JetStream(&js, nc, nullptr), NATS_OK);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "MISSY_JOBS";
    so.Consumer = "workers";
    natsSubscription* sub = nullptr;
    ASSERT_EQ(js_PullSubscribe(&sub, js, "missy.jobs.>", "workers", nullptr, &so, nullptr),
              NATS_OK);
    while (!stop.load()) {
      natsMsgList list{};
      if (natsSubscription_Fetch(&list, sub, 1, 200, nullptr) != NATS_OK) continue;
      for (int i = 0; i < list.Count; ++i) {
        const json::value job = json::parse(std::string_view(
            natsMsg_GetData(list.Msgs[i]), static_cast<size_t>(natsMsg_GetDataLength(list.Msgs[i]))));
        const std::string result = json::serialize(json::object{
            {"v", 1},
            {"task_id", job.at("task_id")},
            {"ok", true},
            {"worker", "twice"},
            {"text", "Edited the modules src/mod_*.cpp; fixed errors E0 to E39."},
            {"backend", "extractive"}});
        for (int copy = 0; copy < 2; ++copy) {
          ASSERT_EQ(js_Publish(nullptr, js, "missy.results.ws1", result.data(),
                               static_cast<int>(result.size()), nullptr, nullptr),
                    NATS_OK);
        }
        natsMsg_Ack(list.Msgs[i], nullptr);
        ++answered;
      }
      natsMsgList_Destroy(&list);
    }
    natsSubscription_Destroy(sub);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  });
  Append40(d, "dup");
  const bool done = WaitFor([&] { return JobsDone(d, 1); }, 20s);
  stop = true;
  twice.join();
  ASSERT_TRUE(done) << d.log();
  const int steps = answered.load();
  ASSERT_GE(steps, 2);
  const json::array completed = Completed(d);
  EXPECT_EQ(completed.size(), static_cast<size_t>(steps));
  for (const json::value& e : completed) {
    EXPECT_EQ(e.at("detail").at("worker").as_string(), "twice") << json::serialize(e);
  }
  const json::value summaries = Body(d.Call("GET", "/v1/sessions/dup/summaries"));
  ASSERT_TRUE(summaries.is_object()) << json::serialize(summaries);
  EXPECT_EQ(summaries.at("summaries").as_array().size(), static_cast<size_t>(steps));
  EXPECT_NE(json::serialize(summaries).find("fixed errors E0 to E39"), std::string::npos);
  json::value jobs;
  ASSERT_TRUE(WaitFor([&] {
    jobs = Body(d.Call("GET", "/v1/health")).at("broker").at("jobs");
    return Int(jobs, {"duplicates"}) == steps;
  }, 5s)) << json::serialize(jobs);
  EXPECT_EQ(Int(jobs, {"completed"}), steps);
  EXPECT_EQ(Int(jobs, {"timeouts"}), 0);
  EXPECT_EQ(d.Stop(), 0);
}

}  // namespace
}  // namespace missy::testing

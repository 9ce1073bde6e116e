// Distributed summarization in one process, against a real nats-server -js on loopback:
// the daemon's JobDispatcher and a worker (the real JobWorker, or a scripted one written
// here with nats.c). A result delivered twice is used once; a task without a worker comes
// back as a failure by its deadline; without a broker Run fails at once.
#include "daemon/broker/job_dispatcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "daemon/broker/job_wire.h"
#include "daemon/broker/job_worker.h"
#include "daemon/broker/nats_conn.h"
#include "nats_test_util.h"
#include "test_util.h"

namespace missy::testing {
namespace {

using namespace std::chrono_literals;

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

broker::Endpoint At(const std::string& url) {
  broker::Endpoint e;
  e.url = url;
  return e;
}

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds timeout = 10s) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

JobDispatcherOptions Options(const std::string& url) {
  JobDispatcherOptions o;
  o.endpoint.url = url;
  o.daemon_id = "ws1";
  o.timeout = 5s;
  o.ack_wait = 1s;
  return o;
}

SummaryTask Leaf(const std::string& id, std::chrono::milliseconds wait = 5s) {
  SummaryTask t;
  t.task_id = id;
  t.job_id = 1;
  t.session_id = "s1";
  t.target_tokens = 300;
  t.backend = "extractive";
  t.deadline_ms = UnixMs() + wait.count();
  for (int i = 1; i <= 6; ++i) {
    StoredMessage m;
    m.seq = i;
    m.tokens = 60;
    m.message = i % 2 == 1
                    ? Message::User("please fix the failing test in src/parser_" +
                                    std::to_string(i) + ".cpp, it prints error: bad token")
                    : Message::Assistant("I edited src/parser_" + std::to_string(i - 1) +
                                         ".cpp and ran make test; decided: keep the old API");
    t.messages.push_back(std::move(m));
  }
  return t;
}

// A worker scripted here: takes one job and answers it `copies` times.
void AnswerOneJob(const std::string& url, int copies, std::atomic<bool>* answered) {
  broker::Connection c;
  ASSERT_TRUE(broker::Connect(At(url), 5s, c).ok());
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = broker::kJobsStream;
  so.Consumer = broker::kWorkersConsumer;
  natsSubscription* sub = nullptr;
  ASSERT_EQ(js_PullSubscribe(&sub, c.js, "missy.jobs.>", broker::kWorkersConsumer, nullptr, &so,
                             nullptr),
            NATS_OK);
  natsMsgList list{};
  ASSERT_EQ(natsSubscription_Fetch(&list, sub, 1, 10000, nullptr), NATS_OK);
  ASSERT_EQ(list.Count, 1);
  EXPECT_STREQ(natsMsg_GetSubject(list.Msgs[0]), "missy.jobs.ws1");
  Result<SummaryTask> task = broker::TaskFromJson(std::string_view(
      natsMsg_GetData(list.Msgs[0]), static_cast<size_t>(natsMsg_GetDataLength(list.Msgs[0]))));
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  SummaryTaskResult r;
  r.task_id = task->task_id;
  r.ok = true;
  r.text = "fixed the parser";
  r.backend = "extractive";
  r.worker = "scripted";
  const std::string payload = broker::ResultToJson(r);
  for (int i = 0; i < copies; ++i) {
    ASSERT_EQ(js_Publish(nullptr, c.js, "missy.results.ws1", payload.data(),
                         static_cast<int>(payload.size()), nullptr, nullptr),
              NATS_OK);
  }
  natsMsg_Ack(list.Msgs[0], nullptr);
  natsMsgList_Destroy(&list);
  natsSubscription_Destroy(sub);
  answered->store(true);
}

// The real worker (extractive, heuristic counts) serving on its own thread until destroyed.
class RunningWorker {
 public:
  RunningWorker(const std::string& url, const std::string& name) {
    DaemonConfig config;
    config.broker.url = url;
    config.tokenizer = TokenizerMode::kHeuristic;
    JobWorkerOptions wo;
    wo.name = name;
    wo.fetch_wait = 200ms;
    worker_ = std::make_unique<JobWorker>(config, nullptr, wo);
    thread_ = std::thread([this] { worker_->Run(stop_); });
  }
  ~RunningWorker() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  JobWorkerStats Stats() const { return worker_->Stats(); }

 private:
  std::unique_ptr<JobWorker> worker_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class JobDispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.Join("nats"));
    server_ = std::make_unique<NatsServer>(FreeLoopbackPort(), dir_.Join("nats"));
    ASSERT_TRUE(server_->Start());
  }
  TempDir dir_;
  std::unique_ptr<NatsServer> server_;
};

TEST_F(JobDispatcherTest, AResultDeliveredTwiceIsUsedOnce) {
  JobDispatcher d(Options(server_->url()));
  d.Start();
  ASSERT_TRUE(WaitFor([&] { return d.Stats().connected; })) << d.Stats().last_error;
  std::atomic<bool> answered{false};
  std::thread worker(AnswerOneJob, server_->url(), 2, &answered);
  Result<SummaryTaskResult> r = d.Run(Leaf("1:run:1"));
  worker.join();
  ASSERT_TRUE(answered.load());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->task_id, "1:run:1");
  EXPECT_EQ(r->text, "fixed the parser");
  EXPECT_EQ(r->worker, "scripted");
  ASSERT_TRUE(WaitFor([&] { return d.Stats().duplicates == 1; }));
  DispatchStats s = d.Stats();
  EXPECT_EQ(s.dispatched, 1);
  EXPECT_EQ(s.completed, 1);
  EXPECT_EQ(s.timeouts, 0);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.stale, 0);
  // The work queue kept nothing: the job was acked once answered.
  EXPECT_TRUE(ReadStream(server_->url(), broker::kJobsStream).empty());
}

TEST_F(JobDispatcherTest, AResultNobodyWaitsForIsDroppedAsStale) {
  JobDispatcher d(Options(server_->url()));
  d.Start();
  ASSERT_TRUE(WaitFor([&] { return d.Stats().connected; }));
  broker::Connection c;
  ASSERT_TRUE(broker::Connect(At(server_->url()), 5s, c).ok());
  SummaryTaskResult r;
  r.task_id = "9:gone:1";
  r.ok = true;
  r.text = "late";
  const std::string payload = broker::ResultToJson(r);
  ASSERT_EQ(js_Publish(nullptr, c.js, "missy.results.ws1", payload.data(),
                       static_cast<int>(payload.size()), nullptr, nullptr),
            NATS_OK);
  ASSERT_TRUE(WaitFor([&] { return d.Stats().stale == 1; }));
  EXPECT_EQ(d.Stats().completed, 0);
}

TEST_F(JobDispatcherTest, WithoutAWorkerRunFailsByTheDeadline) {
  JobDispatcher d(Options(server_->url()));
  d.Start();
  ASSERT_TRUE(WaitFor([&] { return d.Stats().connected; }));
  const auto started = std::chrono::steady_clock::now();
  Result<SummaryTaskResult> r = d.Run(Leaf("1:run:1", 400ms));
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no result from a worker within"), std::string::npos)
      << r.status().message();
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 3s);
  EXPECT_EQ(d.Stats().timeouts, 1);
  EXPECT_EQ(d.Stats().in_flight, 0);
}

TEST(JobDispatcherNoBrokerTest, RunFailsAtOnceAndSaysWhy) {
  JobDispatcher d(Options("nats://127.0.0.1:" + std::to_string(FreeLoopbackPort())));
  d.Start();
  ASSERT_TRUE(WaitFor([&] { return !d.Stats().last_error.empty(); }));
  const auto started = std::chrono::steady_clock::now();
  Result<SummaryTaskResult> r = d.Run(Leaf("1:run:1"));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 500ms);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not connected"), std::string::npos)
      << r.status().message();
  EXPECT_NE(d.Stats().last_error.find("cannot connect"), std::string::npos)
      << d.Stats().last_error;
  EXPECT_FALSE(d.Stats().connected);
}

TEST_F(JobDispatcherTest, TheRealWorkerWritesTheSummaryAndRefusesAProviderItLacks) {
  JobDispatcher d(Options(server_->url()));
  d.Start();
  ASSERT_TRUE(WaitFor([&] { return d.Stats().connected; }));
  RunningWorker worker(server_->url(), "wt");

  Result<SummaryTaskResult> r = d.Run(Leaf("1:run:1"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->ok);
  EXPECT_EQ(r->worker, "wt");
  EXPECT_EQ(r->backend, "extractive");
  EXPECT_NE(r->text.find("src/parser_1.cpp"), std::string::npos) << r->text;
  EXPECT_NE(std::find(r->artifacts.files.begin(), r->artifacts.files.end(), "src/parser_1.cpp"),
            r->artifacts.files.end());

  // An llm job naming a provider this worker does not have: the daemon is told, and
  // summarizes by itself.
  SummaryTask llm = Leaf("1:run:2");
  llm.backend = "llm";
  llm.provider = "gpu-box";
  r = d.Run(llm);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("worker wt could not"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("llm"), std::string::npos) << r.status().message();
  EXPECT_EQ(d.Stats().worker_errors, 1);

  worker.Stop();
  EXPECT_EQ(worker.Stats().done, 1);
  EXPECT_EQ(worker.Stats().failed, 1);
}

TEST_F(JobDispatcherTest, AWorkerSkipsAJobWhoseDaemonStoppedWaiting) {
  JobDispatcher d(Options(server_->url()));
  d.Start();
  ASSERT_TRUE(WaitFor([&] { return d.Stats().connected; }));
  ASSERT_FALSE(d.Run(Leaf("1:run:1", 200ms)).ok());  // nobody took it in time
  RunningWorker worker(server_->url(), "late");
  EXPECT_TRUE(WaitFor([&] { return worker.Stats().expired == 1; }));
  worker.Stop();
  EXPECT_EQ(worker.Stats().done, 0);
  EXPECT_EQ(d.Stats().stale, 0);  // no result was written for it
}

}  // namespace
}  // namespace missy::testing

namespace missy::testing {
namespace {

TEST_F(JobDispatcherTest, AnUnreadableJobIsAnsweredWithAnErrorAndNotRedelivered) {
  JobDispatcher d(Options(server_->url()));
  d.Start();
  ASSERT_TRUE(WaitFor([&] { return d.Stats().connected; }));  // the queue exists
  broker::Connection c;
  ASSERT_TRUE(broker::Connect(At(server_->url()), 5s, c).ok());
  const std::string bad = R"({"v":1,"task_id":"3:bad:1","kind":"tree","target_tokens":5})";
  ASSERT_EQ(js_Publish(nullptr, c.js, "missy.jobs.ws1", bad.data(), static_cast<int>(bad.size()),
                       nullptr, nullptr),
            NATS_OK);
  RunningWorker worker(server_->url(), "wt");
  std::vector<StreamMessage> results;
  EXPECT_TRUE(WaitFor([&] {
    results = ReadStream(server_->url(), broker::kResultsStream);
    return !results.empty();
  }));
  worker.Stop();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].subject, "missy.results.ws1");
  Result<SummaryTaskResult> r = broker::ResultFromJson(results[0].data);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->task_id, "3:bad:1");
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->error.find("unreadable job: job.kind"), std::string::npos) << r->error;
  EXPECT_EQ(worker.Stats().failed, 1);
  EXPECT_TRUE(ReadStream(server_->url(), broker::kJobsStream).empty());  // terminated
  EXPECT_EQ(d.Stats().stale, 1);  // nobody waited for it here
}

}  // namespace
}  // namespace missy::testing

namespace missy::testing {
namespace {

// A job that every worker takes and never finishes (a worker crashing on it, again and
// again): once its deliveries run out, the daemon learns it from JetStream's advisory and
// summarizes locally without waiting for the deadline.
TEST_F(JobDispatcherTest, AJobWhoseDeliveriesRunOutFailsAtOnce) {
  JobDispatcherOptions o = Options(server_->url());
  o.ack_wait = 300ms;
  o.max_deliver = 2;
  JobDispatcher d(o);
  d.Start();
  ASSERT_TRUE(WaitFor([&] { return d.Stats().connected; }));
  std::atomic<bool> stop{false};
  std::atomic<int> taken{0};
  std::thread crasher([&] {  // takes each delivery and drops it
    broker::Connection c;
    ASSERT_TRUE(broker::Connect(At(server_->url()), 5s, c).ok());
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = broker::kJobsStream;
    so.Consumer = broker::kWorkersConsumer;
    natsSubscription* sub = nullptr;
    ASSERT_EQ(js_PullSubscribe(&sub, c.js, "missy.jobs.>", broker::kWorkersConsumer, nullptr,
                               &so, nullptr),
              NATS_OK);
    while (!stop.load()) {
      natsMsgList list{};
      if (natsSubscription_Fetch(&list, sub, 1, 200, nullptr) == NATS_OK) {
        taken += list.Count;
        natsMsgList_Destroy(&list);
      }
    }
    natsSubscription_Destroy(sub);
  });
  const auto started = std::chrono::steady_clock::now();
  Result<SummaryTaskResult> r = d.Run(Leaf("1:run:1", 20s));
  const auto took = std::chrono::steady_clock::now() - started;
  stop = true;
  crasher.join();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("deliveries to workers ran out (max_deliver 2)"),
            std::string::npos)
      << r.status().message();
  EXPECT_LT(took, 10s);  // well before the 20 s deadline
  EXPECT_EQ(taken.load(), 2);
  EXPECT_EQ(d.Stats().exhausted, 1);
  EXPECT_EQ(d.Stats().timeouts, 0);
}

}  // namespace
}  // namespace missy::testing

namespace missy::testing {
namespace {

// The broker goes away (SIGKILL) and comes back with its store: meanwhile steps fail at
// once (the daemon summarizes locally); afterwards the dispatcher and the worker are back
// by themselves and steps go to the worker again.
TEST_F(JobDispatcherTest, AfterABrokerRestartJobsFlowAgain) {
  JobDispatcher d(Options(server_->url()));
  d.Start();
  ASSERT_TRUE(WaitFor([&] { return d.Stats().connected; }));
  RunningWorker worker(server_->url(), "wr");
  Result<SummaryTaskResult> r = d.Run(Leaf("1:run:1"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  server_->Stop();
  ASSERT_TRUE(WaitFor([&] { return !d.Stats().connected; }));
  const auto started = std::chrono::steady_clock::now();
  r = d.Run(Leaf("1:run:2"));
  EXPECT_FALSE(r.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);
  EXPECT_EQ(d.Stats().not_sent, 1);

  ASSERT_TRUE(server_->Start());
  ASSERT_TRUE(WaitFor([&] { return d.Stats().connected; }, 20s)) << d.Stats().last_error;
  Result<SummaryTaskResult> again = Status::Unavailable("not tried");
  int attempt = 0;
  ASSERT_TRUE(WaitFor([&] {  // the worker reconnects with its own backoff
    again = d.Run(Leaf("1:run:" + std::to_string(3 + attempt++), 2s));
    return again.ok();
  }, 30s)) << again.status().ToString();
  EXPECT_EQ(again->worker, "wr");
}

}  // namespace
}  // namespace missy::testing

#include "daemon/broker/job_worker.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <future>
#include <thread>
#include <utility>
#include <vector>

#include "config/tokenizers.h"
#include "core/session.h"
#include "daemon/broker/job_wire.h"
#include "daemon/broker/nats_conn.h"
#include "daemon/service/counting.h"
#include "daemon/service/summary_backend.h"

namespace missy {

namespace {

int64_t UnixMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string_view Data(natsMsg* m) {
  return {natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m))};
}

// <prefix>.jobs.<daemon_id> → <prefix>.results.<daemon_id> ("" when it is not a job subject).
std::string ResultsSubjectOf(const std::string& prefix, std::string_view job_subject) {
  const std::string jobs = prefix + ".jobs.";
  if (job_subject.substr(0, jobs.size()) != jobs || job_subject.size() == jobs.size()) return "";
  return broker::ResultsSubject(prefix, std::string(job_subject.substr(jobs.size())));
}

}  // namespace

JobWorker::JobWorker(DaemonConfig config, const TokenizerRegistry* tokenizers,
                     JobWorkerOptions options)
    : config_(std::move(config)), tokenizers_(tokenizers), options_(std::move(options)) {}

JobWorker::~JobWorker() = default;

std::string JobWorker::DefaultName() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return broker::SubjectToken(std::string(host[0] != '\0' ? host : "worker") + "-" +
                              std::to_string(getpid()));
}

JobWorkerStats JobWorker::Stats() const { return {done_.load(), failed_.load(), expired_.load()}; }

SummaryTaskResult JobWorker::Summarize(const SummaryTask& task) const {
  SummaryTaskResult out;
  out.task_id = task.task_id;
  out.worker = options_.name;
  try {
    Session session;
    session.model = task.model;
    const MessageTokenCounter counter = CounterFor(config_, tokenizers_, session);
    auto deadline = std::chrono::steady_clock::time_point::max();
    provider::ProviderOptions provider_options = options_.provider;
    if (task.deadline_ms > 0) {
      const auto left = std::chrono::milliseconds(std::max<int64_t>(0, task.deadline_ms - UnixMs()));
      deadline = std::chrono::steady_clock::now() + left;
      provider_options.total_timeout = std::min(provider_options.total_timeout, left);
    }
    SelectedBackend selected = SelectSummaryBackend(config_, task.backend, task.provider,
                                                    provider_options, deadline, nullptr);
    if (!selected.fallback.empty()) {
      // The daemon may have the provider itself: it summarizes locally rather than get an
      // extractive text it did not ask for.
      out.error = "this worker cannot use the " + task.backend + " backend: " + selected.fallback;
      return out;
    }
    BackendSummary sum =
        task.condense ? selected.backend->Condense(task.children, task.target_tokens, counter)
                      : selected.backend->Leaf(task.messages, task.prior, task.target_tokens, counter);
    out.ok = true;
    out.text = std::move(sum.text);
    out.artifacts = std::move(sum.artifacts);
    out.backend = std::move(sum.backend);
    out.fallback = std::move(sum.fallback);
    out.llm_requests = sum.llm_requests;
  } catch (const std::exception& e) {
    out.ok = false;
    out.error = std::string("summarizing failed: ") + e.what();
  }
  return out;
}

void JobWorker::Run(const std::atomic<bool>& stop) {
  auto backoff = std::chrono::milliseconds(250);
  std::string last_error;
  while (!stop.load()) {
    const auto started = std::chrono::steady_clock::now();
    Serve(stop);
    if (stop.load()) break;
    // Serve returned early: the connection failed or was lost. Retry with backoff.
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(10)) {
      backoff = std::chrono::milliseconds(250);
    }
    for (auto waited = std::chrono::milliseconds(0); waited < backoff && !stop.load();
         waited += std::chrono::milliseconds(50)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
  }
}

void JobWorker::Serve(const std::atomic<bool>& stop) {
  const BrokerConfig& b = config_.broker;
  broker::Endpoint endpoint = broker::EndpointFrom(b);
  endpoint.name = "missyd worker " + options_.name;
  endpoint.connect_timeout = options_.connect_timeout;
  endpoint.reconnect = true;
  broker::Connection conn;
  Status st = broker::Connect(endpoint, std::chrono::milliseconds(5000), conn);
  broker::JobQueueOptions queue;
  queue.subject_prefix = b.subject_prefix;
  queue.ack_wait = std::chrono::milliseconds(b.job_ack_wait_ms);
  queue.max_deliver = b.job_max_deliver;
  if (st.ok()) st = broker::EnsureJobQueue(conn.js, queue);
  // The consumer's ack wait as the broker has it (whoever created the consumer chose it).
  auto ack_wait = queue.ack_wait;
  if (st.ok()) {
    jsConsumerInfo* ci = nullptr;
    if (js_GetConsumerInfo(&ci, conn.js, broker::kJobsStream, broker::kWorkersConsumer, nullptr,
                           nullptr) == NATS_OK &&
        ci != nullptr && ci->Config != nullptr && ci->Config->AckWait > 0) {
      ack_wait = std::chrono::milliseconds(ci->Config->AckWait / 1000000);
    }
    if (ci != nullptr) jsConsumerInfo_Destroy(ci);
  }
  if (!st.ok()) {
    spdlog::warn("worker {}: broker {}: {}", options_.name, broker::RedactUrl(b.url), st.message());
    return;
  }
  if (options_.on_connected) options_.on_connected();
  spdlog::info("worker {}: taking summarization jobs from {} on {} ({} at once, ack wait {} ms)",
               options_.name, broker::kJobsStream, broker::RedactUrl(b.url), options_.threads,
               ack_wait.count());
  const auto heartbeat = std::max(std::chrono::milliseconds(50), ack_wait / 3);
  std::atomic<bool> lost{false};

  auto serve_one = [&](natsMsg* m) {
    const std::string results = ResultsSubjectOf(b.subject_prefix, natsMsg_GetSubject(m));
    Result<SummaryTask> task = broker::TaskFromJson(Data(m));
    SummaryTaskResult result;
    if (!task.ok()) {
      spdlog::warn("worker {}: unreadable job on {}: {}", options_.name, natsMsg_GetSubject(m),
                   task.status().message());
      ++failed_;
      result.task_id = broker::TaskIdOf(Data(m));
      if (!result.task_id.empty() && !results.empty()) {  // its daemon need not wait
        result.worker = options_.name;
        result.error = "unreadable job: " + task.status().message();
        const std::string payload = broker::ResultToJson(result);
        js_Publish(nullptr, conn.js, results.c_str(), payload.data(),
                   static_cast<int>(payload.size()), nullptr, nullptr);
      }
      natsMsg_Term(m, nullptr);  // never readable: not redelivered
      return;
    }
    if (task->deadline_ms > 0 && UnixMs() > task->deadline_ms) {
      spdlog::info("worker {}: job {} expired before it was taken; skipped", options_.name,
                   task->task_id);
      ++expired_;
      natsMsg_Ack(m, nullptr);
      return;
    }
    const auto started = std::chrono::steady_clock::now();
    std::future<SummaryTaskResult> running =
        std::async(std::launch::async, [this, &task] { return Summarize(*task); });
    while (running.wait_for(heartbeat) != std::future_status::ready) {
      natsMsg_InProgress(m, nullptr);  // keeps the job while the summary is written
    }
    result = running.get();
    const std::string payload = broker::ResultToJson(result);
    const std::string msg_id = "result:" + result.task_id;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = msg_id.c_str();  // a redelivered job's second result is dropped by the stream
    jsPubAck* ack = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_Publish(&ack, conn.js, results.c_str(), payload.data(),
                                    static_cast<int>(payload.size()), &po, &jerr);
    if (ack != nullptr) jsPubAck_Destroy(ack);
    if (s != NATS_OK) {
      // Not acked: the job is redelivered (to this worker or another) after the ack wait.
      spdlog::warn("worker {}: publishing the result of {}: {}", options_.name, result.task_id,
                   broker::NatsError(s, jerr));
      lost = natsConnection_IsClosed(conn.conn);
      return;
    }
    natsMsg_AckSync(m, nullptr, nullptr);
    ++(result.ok ? done_ : failed_);
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - started;
    spdlog::info("worker {}: {} {} of session {} in {:.0f} ms{}", options_.name,
                 result.ok ? "wrote" : "could not write", task->condense ? "a condensed summary" : "a leaf",
                 task->session_id, took.count(), result.ok ? "" : ": " + result.error);
  };

  auto loop = [&] {
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = broker::kJobsStream;
    so.Consumer = broker::kWorkersConsumer;  // bind: all workers share it
    natsSubscription* sub = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const std::string filter = b.subject_prefix + ".jobs.>";
    natsStatus s = js_PullSubscribe(&sub, conn.js, filter.c_str(), broker::kWorkersConsumer,
                                    nullptr, &so, &jerr);
    if (s != NATS_OK) {
      spdlog::warn("worker {}: cannot bind to {}: {}", options_.name, broker::kWorkersConsumer,
                   broker::NatsError(s, jerr));
      lost = true;
      return;
    }
    while (!stop.load() && !lost.load()) {
      natsMsgList list{};
      s = natsSubscription_Fetch(&list, sub, 1, options_.fetch_wait.count(), &jerr);
      if (s == NATS_OK) {
        for (int i = 0; i < list.Count; ++i) serve_one(list.Msgs[i]);
        natsMsgList_Destroy(&list);
      } else if (s != NATS_TIMEOUT) {
        if (natsConnection_IsClosed(conn.conn)) lost = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    }
    natsSubscription_Destroy(sub);
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, options_.threads); ++i) threads.emplace_back(loop);
  loop();
  for (std::thread& t : threads) t.join();
}

}  // namespace missy

#include "daemon/broker/job_dispatcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "daemon/broker/job_wire.h"
#include "daemon/broker/nats_conn.h"

namespace missy {

namespace {

constexpr size_t kFinishedKept = 4096;  // task ids remembered to tell duplicates apart
constexpr int kResultsBatch = 64;
constexpr int64_t kFetchWaitMs = 500;

int64_t UnixMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

struct JobDispatcher::Nats {
  broker::Connection connection;
  natsSubscription* results = nullptr;
  natsSubscription* advisories = nullptr;  // max deliveries of MISSY_JOBS' workers
  ~Nats() {
    if (advisories != nullptr) {
      natsSubscription_Unsubscribe(advisories);
      natsSubscription_Destroy(advisories);
    }
    if (results != nullptr) natsSubscription_Destroy(results);
  }
};

namespace {

void OnAdvisory(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  const uint64_t seq = broker::AdvisoryStreamSeq(
      std::string_view(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))));
  natsMsg_Destroy(msg);
  if (seq > 0) static_cast<JobDispatcher*>(closure)->Exhausted(seq);
}

}  // namespace

JobDispatcher::JobDispatcher(JobDispatcherOptions options) : options_(std::move(options)) {}

JobDispatcher::~JobDispatcher() { Stop(); }

void JobDispatcher::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Loop(); });
}

void JobDispatcher::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::unique_lock lock(conn_mu_);
  nats_.reset();
}

DispatchStats JobDispatcher::Stats() const {
  DispatchStats out;
  {
    std::lock_guard lock(mu_);
    out = stats_;
    out.in_flight = static_cast<int64_t>(pending_.size());
  }
  std::shared_lock lock(conn_mu_);
  out.connected = nats_ != nullptr && nats_->connection.connected();
  return out;
}

void JobDispatcher::Failed(const std::string& error) {
  bool log_it = false;
  {
    std::lock_guard lock(mu_);
    log_it = stats_.last_error != error;
    stats_.last_error = error;
  }
  if (log_it) {
    spdlog::warn("broker {}: {} (summarization runs locally until it is back)",
                 broker::RedactUrl(options_.endpoint.url), error);
  }
}

Result<SummaryTaskResult> JobDispatcher::Run(const SummaryTask& task) {
  const std::string data = broker::TaskToJson(task);
  const std::string subject = broker::JobsSubject(options_.subject_prefix, options_.daemon_id);
  uint64_t stream_seq = 0;  // where MISSY_JOBS stored it (the max-deliveries advisory names it)
  {
    // Jobs left by the last run start at once: give the first connection its chance.
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, options_.endpoint.connect_timeout + std::chrono::seconds(1),
                 [&] { return tried_ || stopping_; });
  }
  {
    // Shared: the results thread replaces the connection only under the unique lock, so
    // it cannot be closed under this publish (which waits at most publish_wait).
    std::shared_lock conn_lock(conn_mu_);
    if (nats_ == nullptr || !nats_->connection.connected()) {
      std::lock_guard lock(mu_);
      ++stats_.not_sent;
      return Status::Unavailable("not connected" +
                                 (stats_.last_error.empty() ? "" : " (" + stats_.last_error + ")"));
    }
    const int64_t max_payload = natsConnection_GetMaxPayload(nats_->connection.conn);
    if (static_cast<int64_t>(data.size()) > max_payload) {
      std::lock_guard lock(mu_);
      ++stats_.not_sent;
      return Status::Unavailable("the job is " + std::to_string(data.size()) +
                                 " bytes, over the broker's max payload of " +
                                 std::to_string(max_payload));
    }
    {
      std::lock_guard lock(mu_);
      if (stopping_) return Status::Unavailable("the daemon is stopping");
      pending_.emplace(task.task_id, std::nullopt);  // before the publish: a result may be fast
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = task.task_id.c_str();
    po.MaxWait = options_.publish_wait.count();
    po.ExpectStream = broker::kJobsStream;
    jsPubAck* ack = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_Publish(&ack, nats_->connection.js, subject.c_str(), data.data(),
                                    static_cast<int>(data.size()), &po, &jerr);
    if (ack != nullptr) {
      stream_seq = ack->Sequence;
      std::lock_guard lock(mu_);
      pending_seqs_[stream_seq] = task.task_id;
      jsPubAck_Destroy(ack);
    }
    if (s != NATS_OK) {
      const std::string why = "publishing the job: " + broker::NatsError(s, jerr);
      {
        std::lock_guard lock(mu_);
        pending_.erase(task.task_id);
        ++stats_.not_sent;
      }
      Failed(why);
      return Status::Unavailable(why);
    }
  }
  std::unique_lock lock(mu_);
  ++stats_.dispatched;
  const auto wait = std::chrono::milliseconds(std::max<int64_t>(0, task.deadline_ms - UnixMs()));
  cv_.wait_for(lock, wait, [&] { return stopping_ || pending_.at(task.task_id).has_value(); });
  std::optional<SummaryTaskResult> result = std::move(pending_.at(task.task_id));
  pending_.erase(task.task_id);
  pending_seqs_.erase(stream_seq);
  if (!result.has_value()) {
    if (stopping_) return Status::Unavailable("the daemon is stopping");
    ++stats_.timeouts;
    return Status::Unavailable("no result from a worker within " + std::to_string(wait.count()) +
                               " ms (no worker running, or its deliveries exhausted)");
  }
  finished_.insert(task.task_id);
  finished_order_.push_back(task.task_id);
  if (finished_order_.size() > kFinishedKept) {
    finished_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
  if (!result->ok && result->worker.empty()) {  // the advisory, not a worker, said so
    ++stats_.exhausted;
    return Status::Unavailable(result->error);
  }
  if (!result->ok) {
    ++stats_.worker_errors;
    return Status::Unavailable("worker " + result->worker + " could not: " + result->error);
  }
  ++stats_.completed;
  return std::move(*result);
}

void JobDispatcher::Deliver(SummaryTaskResult result) {
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(result.task_id);
    if (it == pending_.end()) {
      ++(finished_.count(result.task_id) > 0 ? stats_.duplicates : stats_.stale);
      return;
    }
    if (it->second.has_value()) {
      ++stats_.duplicates;  // the first result of a task wins
      return;
    }
    it->second = std::move(result);
  }
  cv_.notify_all();
}

void JobDispatcher::Exhausted(uint64_t stream_seq) {
  {
    std::lock_guard lock(mu_);
    auto seq = pending_seqs_.find(stream_seq);
    if (seq == pending_seqs_.end()) return;
    auto it = pending_.find(seq->second);
    if (it == pending_.end() || it->second.has_value()) return;
    SummaryTaskResult r;
    r.task_id = seq->second;
    r.error = "its deliveries to workers ran out (max_deliver " +
              std::to_string(options_.max_deliver) + ")";
    it->second = std::move(r);
  }
  cv_.notify_all();
}

void JobDispatcher::Loop() {
  broker::Endpoint endpoint = options_.endpoint;
  endpoint.name = "missyd " + options_.daemon_id + " jobs";
  endpoint.reconnect = true;  // the results subscription survives a broker restart
  const std::string results_subject =
      broker::ResultsSubject(options_.subject_prefix, options_.daemon_id);
  const std::string durable = "results_" + options_.daemon_id;
  auto backoff = std::chrono::milliseconds(250);
  natsSubscription* sub = nullptr;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (stopping_) break;
    }
    if (sub == nullptr) {
      auto fresh = std::make_unique<Nats>();
      Status st = broker::Connect(endpoint, options_.publish_wait, fresh->connection);
      if (st.ok()) {
        broker::JobQueueOptions queue;
        queue.subject_prefix = options_.subject_prefix;
        queue.ack_wait = options_.ack_wait;
        queue.max_deliver = options_.max_deliver;
        st = broker::EnsureJobQueue(fresh->connection.js, queue);
      }
      if (st.ok()) {
        jsSubOptions so;
        jsSubOptions_Init(&so);
        so.Stream = broker::kResultsStream;
        so.Config.Durable = durable.c_str();
        so.Config.AckPolicy = js_AckExplicit;
        so.Config.DeliverPolicy = js_DeliverNew;  // older results belong to runs long gone
        so.Config.FilterSubject = results_subject.c_str();
        jsErrCode jerr = static_cast<jsErrCode>(0);
        const natsStatus s = js_PullSubscribe(&fresh->results, fresh->connection.js,
                                              results_subject.c_str(), durable.c_str(), nullptr,
                                              &so, &jerr);
        if (s != NATS_OK) st = Status::Unavailable("results consumer: " + broker::NatsError(s, jerr));
      }
      if (st.ok()) {
        const std::string advisory = std::string("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.") +
                                     broker::kJobsStream + "." + broker::kWorkersConsumer;
        const natsStatus s = natsConnection_Subscribe(&fresh->advisories, fresh->connection.conn,
                                                      advisory.c_str(), OnAdvisory, this);
        if (s != NATS_OK) st = Status::Unavailable("advisories: " + broker::NatsError(s));
      }
      if (!st.ok()) {
        Failed(st.message());
        std::unique_lock lock(mu_);
        tried_ = true;
        cv_.notify_all();
        cv_.wait_for(lock, backoff, [&] { return stopping_; });
        backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
        continue;
      }
      backoff = std::chrono::milliseconds(250);
      sub = fresh->results;
      {
        std::unique_lock lock(conn_mu_);
        nats_ = std::move(fresh);
      }
      {
        std::lock_guard lock(mu_);
        stats_.last_error.clear();
        tried_ = true;
      }
      cv_.notify_all();
      spdlog::info("broker {}: summarization jobs go to workers on {} as {}",
                   broker::RedactUrl(options_.endpoint.url), broker::kJobsStream, options_.daemon_id);
    }
    natsMsgList list{};
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = natsSubscription_Fetch(&list, sub, kResultsBatch, kFetchWaitMs, &jerr);
    if (s == NATS_OK) {
      for (int i = 0; i < list.Count; ++i) {
        natsMsg* m = list.Msgs[i];
        Result<SummaryTaskResult> r = broker::ResultFromJson(
            std::string_view(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m))));
        if (r.ok()) {
          Deliver(std::move(*r));
        } else {
          spdlog::warn("broker: dropped a malformed result on {}: {}", results_subject,
                       r.status().message());
        }
        natsMsg_Ack(m, nullptr);
      }
      natsMsgList_Destroy(&list);
      continue;
    }
    if (s == NATS_TIMEOUT) continue;
    bool closed = false;
    {
      std::shared_lock lock(conn_mu_);
      closed = nats_ == nullptr || natsConnection_IsClosed(nats_->connection.conn);
    }
    if (closed) {
      sub = nullptr;
      std::unique_lock lock(conn_mu_);
      nats_.reset();
    } else {
      Failed("fetching results: " + broker::NatsError(s, jerr));
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stopping_; });
  }
}

}  // namespace missy

// JobDispatcher: the daemon's side of distributed summarization (context.broker.jobs,
// docs/BROKER.md). Run() publishes one self-contained summarization step to the work-queue
// stream MISSY_JOBS (<prefix>.jobs.<daemon_id>, Nats-Msg-Id = the task id) and waits for
// its result, which a `missyd worker` publishes to <prefix>.results.<daemon_id> (stream
// MISSY_RESULTS). A task whose deliveries to workers ran out (JetStream's max-deliveries
// advisory) fails at once rather than at its deadline. A thread of its own consumes the results (durable consumer
// results_<daemon_id>, explicit acks) and hands each to the run waiting for it: the first
// result of a task wins, a redelivered or duplicate one changes nothing (counted), one
// nobody waits for any more is dropped. Run() fails at once while the broker is
// unreachable (after the first connection attempt ended), and after the task's deadline when no result came: the caller then
// summarizes locally, so summarization never stops because the broker or the workers are
// down. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "daemon/broker/endpoint.h"
#include "daemon/service/summary_dispatch.h"

namespace missy {

struct JobDispatcherOptions {
  broker::Endpoint endpoint;  // url, credentials, TLS, connect timeout
  std::string subject_prefix = "missy";
  std::string daemon_id;
  std::chrono::milliseconds timeout{120000};  // a task without a result by then runs locally
  std::chrono::milliseconds ack_wait{30000};  // the workers' consumer, when it is created here
  int64_t max_deliver = 3;
  std::chrono::milliseconds publish_wait{5000};  // one publish waits this long for its ack
};

class JobDispatcher final : public SummaryDispatcher {
 public:
  explicit JobDispatcher(JobDispatcherOptions options);
  ~JobDispatcher() override;  // Stop()
  JobDispatcher(const JobDispatcher&) = delete;
  JobDispatcher& operator=(const JobDispatcher&) = delete;

  // Connects (and reconnects) on its own thread.
  void Start();
  // Tasks waiting get Unavailable; the results thread is joined.
  void Stop();

  Result<SummaryTaskResult> Run(const SummaryTask& task) override;
  int64_t timeout_ms() const override { return options_.timeout.count(); }
  DispatchStats Stats() const override;
  // A max-deliveries advisory (the subscription's callback): the task published at that
  // MISSY_JOBS sequence fails now, not at its deadline.
  void Exhausted(uint64_t stream_seq);

 private:
  struct Nats;  // job_dispatcher.cpp
  void Loop();
  void Deliver(SummaryTaskResult result);
  void Failed(const std::string& error);

  const JobDispatcherOptions options_;
  // The connection: replaced by the loop (unique), used by Run (shared).
  mutable std::shared_mutex conn_mu_;
  std::unique_ptr<Nats> nats_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // results, Stop
  bool stopping_ = false;
  bool tried_ = false;  // the first connection attempt ended (Run waits for it)
  std::unordered_map<std::string, std::optional<SummaryTaskResult>> pending_;
  std::unordered_map<uint64_t, std::string> pending_seqs_;  // MISSY_JOBS seq -> task id
  std::unordered_set<std::string> finished_;  // recent task ids (duplicate results)
  std::deque<std::string> finished_order_;
  DispatchStats stats_;
  std::thread thread_;
};

}  // namespace missy

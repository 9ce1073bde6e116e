// SummarizationWorker: the thread that runs summarization jobs (DESIGN.md §5) off the
// request path and off the event loop: it claims the due `summarize` job from the queue
// in SQLite (JobStore, with a lease), runs SummarizationService::Summarize, and completes
// the job, or fails it for a retry with backoff. Jobs survive restarts (the queue is in
// SQLite) and a job whose worker died is claimed again once its lease ends, or at once
// when the daemon starts again (every running job then is a stopped daemon's). A request
// never waits for it. Notify() wakes it as soon as a job is queued; otherwise it polls.
// With options.threads > 1, that many jobs (of different sessions) run at once.
// Start/Stop from one thread; Notify from any.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/service/service_deps.h"
#include "storage/records.h"

namespace missy {

class SummarizationService;
class SummaryTrigger;

struct SummarizationWorkerOptions {
  // A job that stored no summary for this long is claimed again (its worker died): each
  // summary stored renews the lease.
  int64_t lease_ms = 10 * 60 * 1000;
  int64_t poll_ms = 1000;  // how often the queue is looked at without Notify
  RetryPolicy retry;       // a failed job's backoff and attempts
  // Jobs run at once (threads). One is enough when the daemon summarizes by itself; with
  // broker workers (context.broker.jobs) each thread mostly waits for a worker's result.
  int threads = 1;
};

class SummarizationWorker {
 public:
  // `trigger` (may be null) checks a session again after a job of it stored summaries:
  // what was appended while the job ran (after it had planned) is summarized by the next
  // job now, not once a later append or context asks.
  SummarizationWorker(const ServiceDeps& deps, SummarizationService& summarizer,
                      SummaryTrigger* trigger = nullptr, SummarizationWorkerOptions options = {});
  ~SummarizationWorker();
  SummarizationWorker(const SummarizationWorker&) = delete;
  SummarizationWorker& operator=(const SummarizationWorker&) = delete;

  // Sets the number of threads Start() runs (before Start).
  void SetThreads(int threads) { options_.threads = threads; }
  void Start();
  // Finishes the jobs in progress (if any) and joins the threads.
  void Stop();
  // A job was queued: look at the queue now.
  void Notify();
  // Jobs finished (done or failed) since Start.
  int64_t finished() const { return finished_.load(); }

 private:
  void Loop();
  // Claims and runs one due job; false when none was due.
  bool RunOne();

  ServiceDeps deps_;
  SummarizationService& summarizer_;
  SummaryTrigger* trigger_;
  SummarizationWorkerOptions options_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool notified_ = false;
  std::atomic<int64_t> finished_{0};
  std::vector<std::thread> threads_;
};

}  // namespace missy

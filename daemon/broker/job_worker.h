// JobWorker: `missyd worker` (docs/BROKER.md): a stateless summarizer on any machine. It
// pulls summarization jobs from the shared durable consumer "workers" of MISSY_JOBS,
// writes each summary with its own configuration's backend and provider (the task names
// the backend, provider and model; API keys never travel over the broker), publishes the
// result to <prefix>.results.<daemon_id> and acknowledges the job only after the broker
// stored the result. While a job runs, it tells the broker it is in progress every third
// of the ack wait, so a long LLM call keeps its job while a worker that died loses it to
// another after the ack wait. A job whose daemon stopped waiting (past its deadline) is
// acknowledged and skipped; a job that cannot be read is answered with an error result
// when it names its task, and terminated so that it is not redelivered.
// No database, no sockets; `threads` jobs at once. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "config/config.h"
#include "core/status.h"
#include "daemon/provider/provider_client.h"
#include "daemon/service/summary_dispatch.h"

namespace missy {

class TokenizerRegistry;

struct JobWorkerOptions {
  std::string name;  // in results and logs: "<host>-<pid>" by default
  int threads = 1;
  std::chrono::milliseconds fetch_wait{1000};
  std::chrono::milliseconds connect_timeout{2000};
  provider::ProviderOptions provider;  // how the llm backend's client connects and retries
  std::function<void()> on_connected;  // after each (re)connection (sd_notify READY=1)
};

struct JobWorkerStats {
  int64_t done = 0;     // results published
  int64_t failed = 0;   // error results published
  int64_t expired = 0;  // jobs skipped past their deadline
};

class JobWorker {
 public:
  // `config`: context.broker (url, credentials, prefix, ack wait, deliveries) and the
  // summarizer's providers. `tokenizers` may be null (heuristic counts).
  JobWorker(DaemonConfig config, const TokenizerRegistry* tokenizers, JobWorkerOptions options);
  ~JobWorker();
  JobWorker(const JobWorker&) = delete;
  JobWorker& operator=(const JobWorker&) = delete;

  // Serves until `stop` is set (checked at least every fetch_wait); reconnects with
  // backoff while the broker is unreachable. The jobs in progress finish first.
  void Run(const std::atomic<bool>& stop);
  JobWorkerStats Stats() const;

  // Writes one summary (what a job asks for), with this worker's config.
  SummaryTaskResult Summarize(const SummaryTask& task) const;

  static std::string DefaultName();

 private:
  void Serve(const std::atomic<bool>& stop);

  const DaemonConfig config_;
  const TokenizerRegistry* tokenizers_;
  const JobWorkerOptions options_;
  std::atomic<int64_t> done_{0}, failed_{0}, expired_{0};
};

}  // namespace missy

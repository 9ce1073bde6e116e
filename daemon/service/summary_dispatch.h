// Summaries written elsewhere (docs/BROKER.md, "Distributed summarization"): the port
// through which a summarization run hands one step (a leaf or a condensed summary) to a
// worker on another machine, and the backend that uses it. The daemon still plans the run,
// counts the result with its own tokenizer and commits it; the worker only writes text.
// Nothing here knows the broker: daemon/broker/job_dispatcher.h implements the port.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/extractive_summarizer.h"
#include "core/message.h"
#include "core/status.h"
#include "daemon/service/dispatch_stats.h"
#include "daemon/service/summary_backend.h"

namespace missy {

// One step, self-contained: everything a stateless worker needs to write the summary.
struct SummaryTask {
  std::string task_id;     // unique per dispatch: "<job_id>:<run id>:<step>"
  int64_t job_id = 0;      // the summarization job the step belongs to (0: forced compaction)
  std::string session_id;  // for the worker's logs only
  bool condense = false;   // children (condense) or messages (leaf)
  std::vector<StoredMessage> messages;  // leaf: the chunk, whole groups, oldest first
  std::vector<ChildSummary> children;   // condense: the summaries, oldest first
  std::string prior;                    // leaf: the newest earlier summary ("" = none)
  int64_t target_tokens = 0;
  std::string backend;   // "llm" | "extractive": what the daemon's config asks for
  std::string provider;  // providers.<name> on the worker ("" = the worker's default)
  std::string model;     // the session's model: the worker counts with its encoding
  int64_t deadline_ms = 0;  // unix ms after which the daemon no longer waits
};

// What a worker sends back.
struct SummaryTaskResult {
  std::string task_id;
  bool ok = false;
  std::string error;      // !ok: why the worker could not (the daemon summarizes locally)
  std::string text;
  ArtifactTrail artifacts;
  std::string backend;    // that wrote `text`: "llm" | "extractive"
  std::string fallback;   // why the worker's llm text was not used ("" when it was)
  int llm_requests = 0;
  std::string worker;     // the worker's name (host-pid)
};

// Runs one task remotely and waits for its result (at most until task.deadline_ms). An
// error (no broker, no worker in time, a worker's failure) means: summarize locally.
// Thread-safe: runs of different sessions dispatch at once.
class SummaryDispatcher {
 public:
  virtual ~SummaryDispatcher() = default;
  virtual Result<SummaryTaskResult> Run(const SummaryTask& task) = 0;
  // How long a task may wait for its result.
  virtual int64_t timeout_ms() const = 0;
  virtual DispatchStats Stats() const = 0;
};

// A SummaryBackend that sends each step to the dispatcher and falls back to the backend
// the daemon would use by itself when no usable result comes back; once the dispatcher
// failed (no broker, no worker in time), the rest of the run is local. The local backend
// is made (`make_local`: an llm one builds a provider client) only when first needed. The
// result is counted with the run's counter; a text not smaller than its source is not
// used either.
class RemoteBackend final : public SummaryBackend {
 public:
  struct Identity {
    std::string task_prefix;  // "<job_id>:<run id>": unique per run
    int64_t job_id = 0;
    std::string session_id, backend, provider, model;
    int64_t max_wait_ms = 0;  // waits at most this long per step (0: the dispatcher's timeout)
  };
  RemoteBackend(SummaryDispatcher& dispatcher, std::function<SelectedBackend()> make_local,
                Identity identity);
  std::string_view name() const override { return identity_.backend; }
  BackendSummary Leaf(std::span<const StoredMessage> chunk, std::string_view prior,
                      int64_t target_tokens, const MessageTokenCounter& counter) override;
  BackendSummary Condense(std::span<const ChildSummary> children, int64_t target_tokens,
                          const MessageTokenCounter& counter) override;

 private:
  // The remote summary, or the local one with the reason in `fallback`.
  template <typename Local>
  BackendSummary Dispatch(SummaryTask task, int64_t source_tokens,
                          const MessageTokenCounter& counter, Local local);

  // The local backend, made on first use.
  SummaryBackend& LocalBackend();

  SummaryDispatcher& dispatcher_;
  std::function<SelectedBackend()> make_local_;
  SelectedBackend local_;  // backend null until LocalBackend()
  Identity identity_;
  int steps_ = 0;
  // Why the dispatcher failed in this run: later steps run locally without waiting again.
  std::string remote_down_;
};

}  // namespace missy

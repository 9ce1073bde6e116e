#include "daemon/service/summary_dispatch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace missy {

namespace {

int64_t UnixMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

RemoteBackend::RemoteBackend(SummaryDispatcher& dispatcher,
                             std::function<SelectedBackend()> make_local, Identity identity)
    : dispatcher_(dispatcher), make_local_(std::move(make_local)), identity_(std::move(identity)) {}

SummaryBackend& RemoteBackend::LocalBackend() {
  if (local_.backend == nullptr) local_ = make_local_();
  return *local_.backend;
}

template <typename Local>
BackendSummary RemoteBackend::Dispatch(SummaryTask task, int64_t source_tokens,
                                       const MessageTokenCounter& counter, Local local) {
  task.task_id = identity_.task_prefix + ":" + std::to_string(++steps_);
  task.job_id = identity_.job_id;
  task.session_id = identity_.session_id;
  task.backend = identity_.backend;
  task.provider = identity_.provider;
  task.model = identity_.model;
  const int64_t wait = identity_.max_wait_ms > 0
                           ? std::min(identity_.max_wait_ms, dispatcher_.timeout_ms())
                           : dispatcher_.timeout_ms();
  task.deadline_ms = UnixMs() + wait;
  std::string why;
  Result<SummaryTaskResult> remote = Status::Unavailable("");
  if (!remote_down_.empty()) {
    why = "broker: " + remote_down_ + " (earlier in this run)";
  } else if (remote = dispatcher_.Run(task); !remote.ok()) {
    why = "broker: " + remote.status().message();
    remote_down_ = remote.status().message();  // the rest of the run does not wait again
  } else {
    BackendSummary out;
    out.text = std::move(remote->text);
    out.tokens = counter.CountText(out.text);  // the daemon's count is the one stored
    out.source_tokens = source_tokens;
    if (out.Shrinks()) {
      out.artifacts = std::move(remote->artifacts);
      out.backend = std::move(remote->backend);
      out.fallback = std::move(remote->fallback);
      out.llm_requests = remote->llm_requests;
      out.worker = std::move(remote->worker);
      return out;
    }
    why = "broker: the summary of worker " + remote->worker + " (" + std::to_string(out.tokens) +
          " tokens) is not smaller than its " + std::to_string(source_tokens) + "-token source";
  }
  spdlog::warn("summarization step {} of {} runs locally: {}", task.task_id, task.session_id, why);
  BackendSummary out = local();
  if (!local_.fallback.empty()) why += "; locally: " + local_.fallback;
  out.fallback = out.fallback.empty() ? why : why + "; " + out.fallback;
  return out;
}

BackendSummary RemoteBackend::Leaf(std::span<const StoredMessage> chunk, std::string_view prior,
                                   int64_t target_tokens, const MessageTokenCounter& counter) {
  SummaryTask task;
  task.messages.assign(chunk.begin(), chunk.end());
  task.prior = std::string(prior);
  task.target_tokens = target_tokens;
  return Dispatch(std::move(task), SourceTokens(chunk, counter), counter,
                  [&] { return LocalBackend().Leaf(chunk, prior, target_tokens, counter); });
}

BackendSummary RemoteBackend::Condense(std::span<const ChildSummary> children,
                                       int64_t target_tokens, const MessageTokenCounter& counter) {
  SummaryTask task;
  task.condense = true;
  task.children.assign(children.begin(), children.end());
  task.target_tokens = target_tokens;
  return Dispatch(std::move(task), SourceTokens(children, counter), counter,
                  [&] { return LocalBackend().Condense(children, target_tokens, counter); });
}

}  // namespace missy

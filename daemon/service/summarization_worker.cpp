#include "daemon/service/summarization_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "daemon/audit/audit_bus.h"
#include "daemon/metrics/daemon_metrics.h"
#include "daemon/service/ports.h"
#include "daemon/service/summarization_service.h"
#include "daemon/service/summary_trigger.h"
#include "storage/stores.h"

namespace missy {

SummarizationWorker::SummarizationWorker(const ServiceDeps& deps, SummarizationService& summarizer,
                                         SummaryTrigger* trigger,
                                         SummarizationWorkerOptions options)
    : deps_(deps), summarizer_(summarizer), trigger_(trigger), options_(options) {}

SummarizationWorker::~SummarizationWorker() { Stop(); }

void SummarizationWorker::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!threads_.empty()) return;
  // What a worker of the daemon's last run was doing when it stopped runs again now, not
  // once its lease ends (up to lease_ms later).
  Result<JobStore::Orphans> orphans =
      deps_.stores->jobs.RequeueOrphaned(deps_.clock->NowMs(), options_.retry);
  if (!orphans.ok()) {
    spdlog::warn(
        "summarization worker: jobs left running by the last run stay until their "
        "lease ends: {}",
        orphans.status().ToString());
  } else if (orphans->requeued > 0 || orphans->failed > 0) {
    spdlog::info(
        "summarization worker: {} job(s) left running when missyd last stopped queued again, "
        "{} failed for good after {} attempts",
        orphans->requeued, orphans->failed, options_.retry.max_attempts);
  }
  stop_ = false;
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

void SummarizationWorker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void SummarizationWorker::Notify() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
  }
  wake_.notify_all();
}

void SummarizationWorker::Loop() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      notified_ = false;
    }
    if (RunOne()) continue;  // there may be more due
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_for(lock, std::chrono::milliseconds(options_.poll_ms),
                   [&] { return stop_ || notified_; });
  }
}

bool SummarizationWorker::RunOne() {
  const int64_t now = deps_.clock->NowMs();
  Result<std::optional<Job>> claimed = deps_.stores->jobs.Claim(now, options_.lease_ms);
  if (!claimed.ok()) {
    spdlog::warn("summarization worker: claiming a job failed: {}", claimed.status().ToString());
    return false;
  }
  if (!claimed->has_value()) return false;
  const Job job = std::move(**claimed);
  if (job.kind != "summarize") {  // not ours: let it fail visibly rather than spin
    (void)deps_.stores->jobs.Fail(job.id, "unknown job kind '" + job.kind + "'",
                                  deps_.clock->NowMs(), options_.retry);
    ++finished_;
    return true;
  }
  SummarizeRequest request;
  request.session_id = job.session_id;
  request.reason = "job";
  request.job_id = job.id;
  request.lease_ms = options_.lease_ms;  // each summary stored renews it
  const auto started = std::chrono::steady_clock::now();
  Result<SummarizeOutcome> out = summarizer_.Summarize(request);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  const int64_t done_at = deps_.clock->NowMs();
  // The configured backend of the run; a run that failed before choosing one: "unknown".
  const std::string backend = out.ok() ? out->backend : "unknown";
  const auto count = [&](const char* state) {
    if (metrics::DaemonMetrics* m = deps_.metrics) {
      m->summarization_jobs.With({backend, state}).Inc();
      m->summarization_job_duration.With({backend}).Observe(took.count());
    }
  };
  if (out.ok()) {
    count("completed");
    if (Status st = deps_.stores->jobs.Complete(job.id, done_at); !st.ok()) {
      spdlog::warn("summarization job {} ran but could not be completed: {}", job.id,
                   st.ToString());
    }
    spdlog::debug("summarization job {} for {}: {} leaves, {} condensed", job.id, job.session_id,
                  out->leaves, out->condensed);
    // The job worked on the history as it was when it planned; what came meanwhile was
    // not queued (the queue holds one job per session). Checked now, it is summarized
    // next. Only after progress: a run that stored nothing would find the same again.
    if (trigger_ != nullptr && out->leaves > 0) {
      if (Result<Session> session = deps_.stores->sessions.Get(job.session_id); session.ok()) {
        trigger_->CheckNow(*session);
      }
    }
  } else {
    Result<Job> failed =
        deps_.stores->jobs.Fail(job.id, out.status().ToString(), done_at, options_.retry);
    count(failed.ok() && failed->state == "queued" ? "retried" : "failed");
    deps_.audit->Emit(
        AuditRecord{"summarization.failed", "context", "error", job.session_id,
                    AuditDetail()
                        .Add("job_id", job.id)
                        .Add("reason", out.status().ToString())
                        .Add("retry", failed.ok() && failed->state == "queued" ? "yes" : "no")});
    spdlog::warn("summarization job {} for {} failed: {}", job.id, job.session_id,
                 out.status().ToString());
  }
  ++finished_;
  return true;
}

}  // namespace missy

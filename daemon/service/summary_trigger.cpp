#include "daemon/service/summary_trigger.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "core/summary_plan.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/service/counting.h"
#include "daemon/service/ports.h"
#include "daemon/service/summarization_service.h"
#include "storage/database.h"
#include "storage/stores.h"

namespace missy {

void SummaryTrigger::Consider(const Session& session, bool over_threshold) {
  auto cfg = deps_.config->Get();
  const int64_t threshold_tokens = static_cast<int64_t>(
      cfg->context.threshold_pct * static_cast<double>(SessionHistoryBudget(*cfg, session)));
  // The uncovered history is part of the whole: under the thresholds as a whole, under
  // them uncovered.
  if (!over_threshold && session.total_tokens <= threshold_tokens &&
      session.message_count <= cfg->context.message_threshold) {
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (checking_.count(session.id) > 0) return;
    auto it = tracked_.find(session.id);
    if (it != tracked_.end()) {
      const Tracked& t = it->second;
      auto before = [&](const NextCheck& n) {
        return session.total_tokens < n.tokens && session.message_count < n.messages;
      };
      // After a job, a leaf chunk's worth of tokens whatever the message count (a job
      // needs half a chunk outside the tail anyway): compactions stay within the history
      // size divided by the chunk size.
      if (session.total_tokens < t.after_job.tokens) return;
      if (before(t.next) && !over_threshold) return;
    }
    checking_.insert(session.id);
  }
  RunOnWorker(deps_, [this, session, over_threshold] {
    CheckNow(session, over_threshold);
    std::lock_guard<std::mutex> lock(mu_);
    checking_.erase(session.id);
  });
}

void SummaryTrigger::CheckNow(const Session& session, bool over_threshold) {
  const std::string& id = session.id;
  auto cfg = deps_.config->Get();
  const int64_t budget = SessionHistoryBudget(*cfg, session);
  const int64_t threshold_tokens =
      static_cast<int64_t>(cfg->context.threshold_pct * static_cast<double>(budget));
  const int64_t message_threshold = cfg->context.message_threshold;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++checks_;
  }

  Result<int64_t> covered_through = deps_.stores->summaries.CoveredThrough(id);
  if (!covered_through.ok()) return;  // a read failed
  Result<std::vector<PlanMessage>> planned = deps_.stores->messages.LoadPlan(id, *covered_through);
  if (!planned.ok()) return;  // the session was removed meanwhile, or a read failed
  const std::vector<PlanMessage>& uncovered = *planned;
  int64_t tokens = 0;
  for (const PlanMessage& m : uncovered) tokens += m.tokens;
  const int64_t count = static_cast<int64_t>(uncovered.size());
  if (!over_threshold && tokens <= threshold_tokens && count <= message_threshold) {
    // Due again exactly when enough has been appended to cross one of them.
    return Remember(id, {session.total_tokens + (threshold_tokens - tokens) + 1,
                         session.message_count + (message_threshold - count) + 1});
  }
  const SummarizerOptions options = SessionSummarizerOptions(*cfg, session);
  // Over a threshold, but is there a chunk worth summarizing? (Else the job would find
  // nothing to do: check again after a quarter chunk more.)
  const NextCheck later{session.total_tokens + std::max<int64_t>(1, options.leaf_chunk_tokens / 4),
                        session.message_count + std::max<int64_t>(8, message_threshold / 8)};
  if (PlanLeafChunks(uncovered, cfg->budget.fresh_tail_count, options).empty()) {
    return Remember(id, later);
  }

  const std::string reason = tokens > threshold_tokens   ? "threshold"
                             : count > message_threshold ? "message_threshold"
                                                         : "context";
  bool created = false;
  int64_t job_id = 0;
  Status st = deps_.db->Write([&](Txn& txn) -> Status {
    const std::string payload =
        AuditDetail().Add("reason", reason).Add("uncovered_tokens", tokens).ToJson();
    Result<EnqueueResult> job =
        deps_.stores->jobs.Enqueue(txn, "summarize", id, payload, deps_.clock->NowMs());
    if (!job.ok()) return job.status();
    created = job->created;
    job_id = job->job.id;
    if (!created) return Status::Ok();
    return deps_.audit->Append(txn, AuditRecord{"summarization.queued", "context", "allow", id,
                                                AuditDetail()
                                                    .Add("job_id", job_id)
                                                    .Add("reason", reason)
                                                    .Add("uncovered_tokens", tokens)
                                                    .Add("uncovered_messages", count)
                                                    .Add("threshold_tokens", threshold_tokens)});
  });
  if (!st.ok()) {
    spdlog::warn("queueing summarization of {} failed: {}", id, st.ToString());
    return;
  }
  // The job covers what is there now: worth another only after a chunk's worth more.
  RememberJob(id, {session.total_tokens + options.leaf_chunk_tokens,
                   session.message_count + std::max<int64_t>(8, message_threshold / 2)});
  if (created) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++queued_;
    }
    spdlog::debug("summarization of {} queued (job {}, {}: {} tokens, {} messages uncovered)", id,
                  job_id, reason, tokens, count);
    if (deps_.on_job_queued) deps_.on_job_queued();
  }
}

void SummaryTrigger::Remember(const std::string& id, NextCheck next) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tracked_.size() >= kMaxTracked && tracked_.count(id) == 0) tracked_.clear();  // re-learned
  Tracked& t = tracked_[id];
  t.next = next;
}

void SummaryTrigger::RememberJob(const std::string& id, NextCheck after_job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tracked_.size() >= kMaxTracked && tracked_.count(id) == 0) tracked_.clear();
  Tracked& t = tracked_[id];
  t.after_job = after_job;
  t.next = after_job;
}

int64_t SummaryTrigger::checks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return checks_;
}

int64_t SummaryTrigger::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

void SummaryTrigger::Forget(const std::string& session_id) {
  std::lock_guard lock(mu_);
  tracked_.erase(session_id);
}

}  // namespace missy

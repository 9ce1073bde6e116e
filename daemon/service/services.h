// Services: every use case of the daemon, built over one set of collaborators and
// sharing the per-session state (history cache, session queue, issued contexts). The
// HTTP routes, and later the summarization worker and the broker bridge, are thin
// adapters over these. Thread-safe; `deps` must outlive it.
#pragma once

#include "daemon/metrics/daemon_metrics.h"
#include "daemon/service/admin_service.h"
#include "daemon/service/context_service.h"
#include "daemon/service/history_cache.h"
#include "daemon/service/issued_contexts.h"
#include "daemon/service/memory_hits_cache.h"
#include "daemon/service/memory_service.h"
#include "daemon/service/recall_service.h"
#include "daemon/service/service_deps.h"
#include "daemon/service/session_queue.h"
#include "daemon/service/session_service.h"
#include "daemon/service/summarization_service.h"
#include "daemon/service/summarization_worker.h"
#include "daemon/service/summary_service.h"
#include "daemon/service/summary_token_cache.h"
#include "daemon/service/summary_trigger.h"
#include "daemon/service/usage_service.h"
#include "daemon/service/worker_pool.h"
#include "daemon/service/write_barrier.h"
#include "storage/database.h"

namespace missy {

struct Services {
  explicit Services(const ServiceDeps& d,
                    size_t history_cache_bytes = HistoryCache::kDefaultMaxBytes)
      : deps(WithShared(d, &workers, &memory_hits, &summary_tokens, &metrics,
                        [this] { summarizer.Notify(); })),
        history(history_cache_bytes),
        trigger(deps),
        sessions(deps, history, queue, &trigger),
        context(deps, history, queue, issued, &trigger),
        usage(deps, queue, issued),
        memory(deps),
        summaries(deps),
        recall(deps),
        summarization(deps),
        summarizer(deps, summarization, &trigger),
        admin(deps, history) {
    history.SetIdleRelease(deps.clock, deps.config->Get()->limits.cache_idle_seconds * 1000);
    context.SetEvictedSummarizer([this](const std::string& id, int64_t through_seq) {
      return summarization.SummarizeEvicted(id, through_seq);
    });
    // A deleted session leaves nothing behind that a new one with its id would inherit.
    sessions.AddDeletionObserver([this](const std::string& id) {
      context.ForgetSession(id);
      trigger.Forget(id);
    });
  }
  // Lets the writes in flight and their continuations finish (they call back into the
  // services) before anything is destroyed.
  ~Services() {
    summarizer.Stop();  // the job in progress finishes first
    for (int i = 0; i < 3; ++i) {
      (void)deps.db->Write([](Txn&) { return Status::Ok(); });
      workers.Drain();
    }
    workers.Stop();
  }
  Services(const Services&) = delete;
  Services& operator=(const Services&) = delete;

  // First: destroyed last, after everything that bumps it (GET /metrics encodes it).
  metrics::DaemonMetrics metrics;
  ServiceDeps deps;
  MemoryHitsCache memory_hits;
  SummaryTokenCache summary_tokens;
  HistoryCache history;
  SessionQueue queue;
  IssuedContexts issued;
  // Proxied answers the agent has whose commit is on its way: API reads wait for them.
  WriteBarrier barrier;
  SummaryTrigger trigger;
  SessionService sessions;
  ContextService context;
  UsageService usage;
  MemoryService memory;
  SummaryService summaries;
  RecallService recall;
  SummarizationService summarization;
  // Runs summarization jobs on its own thread once started (missyd starts it; tests
  // that want background summarization call summarizer.Start()).
  SummarizationWorker summarizer;
  AdminService admin;
  WorkerPool workers{2};  // last: joined first (its tasks use the members above)

 private:
  static ServiceDeps WithShared(ServiceDeps d, WorkerPool* pool, MemoryHitsCache* hits,
                                SummaryTokenCache* summary_tokens, metrics::DaemonMetrics* metrics,
                                std::function<void()> on_job_queued) {
    d.workers = pool;
    d.memory_hits = hits;
    d.summary_tokens = summary_tokens;
    d.metrics = metrics;
    d.on_job_queued = std::move(on_job_queued);
    return d;
  }
};

}  // namespace missy

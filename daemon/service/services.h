// Services: every use case of the daemon, built over one set of collaborators and
// sharing the per-session state (history cache, session queue, issued contexts). The
// HTTP routes, and later the summarization worker and the broker bridge, are thin
// adapters over these. Thread-safe; `deps` must outlive it.
#pragma once

#include "daemon/service/admin_service.h"
#include "daemon/service/context_service.h"
#include "daemon/service/history_cache.h"
#include "daemon/service/issued_contexts.h"
#include "daemon/service/memory_service.h"
#include "daemon/service/service_deps.h"
#include "daemon/service/session_queue.h"
#include "daemon/service/session_service.h"
#include "daemon/service/summary_service.h"
#include "daemon/service/usage_service.h"

namespace missy {

struct Services {
  explicit Services(const ServiceDeps& d, size_t history_cache_bytes = HistoryCache::kDefaultMaxBytes)
      : deps(d),
        history(history_cache_bytes),
        sessions(d, history, queue),
        context(d, history, queue, issued),
        usage(d, queue, issued),
        memory(d),
        summaries(d),
        admin(d, history) {}

  ServiceDeps deps;
  HistoryCache history;
  SessionQueue queue;
  IssuedContexts issued;
  SessionService sessions;
  ContextService context;
  UsageService usage;
  MemoryService memory;
  SummaryService summaries;
  AdminService admin;
};

}  // namespace missy

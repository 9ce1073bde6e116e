// What every use case of the service layer is built from: the stores, the clock, the
// id source, the tokenizers, the audit bus and the current configuration. Plain
// pointers: the daemon (or a test) owns them and outlives the services.
#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include "config/config.h"
#include "core/status.h"
#include "daemon/broker/audit_publisher_stats.h"

namespace missy {

class AuditBus;
class Clock;
class Database;
class IdSource;
class MemoryHitsCache;
class SummaryDispatcher;
class SummaryTokenCache;
class TokenizerRegistry;
class Txn;
class WorkerPool;
struct Stores;
namespace metrics {
class DaemonMetrics;
}

// The configuration in force. Set() swaps it (reload); callers keep the snapshot they
// took for the rest of their request. Thread-safe.
class ConfigHolder {
 public:
  explicit ConfigHolder(std::shared_ptr<const DaemonConfig> config) : config_(std::move(config)) {}
  std::shared_ptr<const DaemonConfig> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return config_;
  }
  void Set(std::shared_ptr<const DaemonConfig> config) {
    std::lock_guard<std::mutex> lock(mu_);
    config_ = std::move(config);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const DaemonConfig> config_;
};

struct ServiceDeps {
  Database* db = nullptr;
  Stores* stores = nullptr;
  const Clock* clock = nullptr;
  IdSource* ids = nullptr;
  const TokenizerRegistry* tokenizers = nullptr;  // null: every count is heuristic
  AuditBus* audit = nullptr;
  ConfigHolder* config = nullptr;
  WorkerPool* workers = nullptr;           // where continuations run after a commit (null: inline)
  MemoryHitsCache* memory_hits = nullptr;  // told of every searchable change (null: none)
  // What each summary's context message costs, shared by the contexts that read it and
  // the summarization that fills it for the summaries it writes (null: each context
  // service counts with a cache of its own).
  SummaryTokenCache* summary_tokens = nullptr;
  std::function<void()> on_job_queued;        // wakes the summarization worker (empty: none)
  metrics::DaemonMetrics* metrics = nullptr;  // counters the use cases bump (null: none)
  // Summarization steps go to broker workers through it (null: all local).
  SummaryDispatcher* dispatcher = nullptr;
  // The broker bridge's figures for /v1/health and /metrics (empty: no broker).
  std::function<AuditPublisherStats()> broker_stats;
};

// Tells deps.memory_hits that searchable content changed (see memory_hits_cache.h).
void SearchableChanged(const ServiceDeps& deps, const std::string& session_id);

// Queues `fn` for the next group commit and returns at once; `done` runs after the
// commit (or the failure) on deps.workers — never on the storage writer's thread when
// there is a pool, so what follows a commit does not delay the next one.
void CommitAsync(const ServiceDeps& deps, std::function<Status(Txn&)> fn,
                 std::function<void(Status)> done);
// Runs `task` on deps.workers (inline when there is none).
void RunOnWorker(const ServiceDeps& deps, std::function<void()> task);

// How an asynchronous use case answers: exactly once, on any thread (the caller's when
// nothing had to commit, else a worker's right after the commit). It must not block.
template <typename T>
using Done = std::function<void(Result<T>)>;

}  // namespace missy

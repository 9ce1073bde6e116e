#include "daemon/service/service_deps.h"

#include "daemon/service/memory_hits_cache.h"
#include "daemon/service/worker_pool.h"
#include "storage/database.h"

namespace missy {

void SearchableChanged(const ServiceDeps& deps, const std::string& session_id) {
  if (deps.memory_hits != nullptr) deps.memory_hits->ContentChanged(session_id);
}

void RunOnWorker(const ServiceDeps& deps, std::function<void()> task) {
  if (deps.workers == nullptr) return task();
  deps.workers->Post(std::move(task));
}

void CommitAsync(const ServiceDeps& deps, std::function<Status(Txn&)> fn,
                 std::function<void(Status)> done) {
  WorkerPool* workers = deps.workers;
  deps.db->WriteAsync(std::move(fn), [workers, done = std::move(done)](Status st) mutable {
    if (workers == nullptr) return done(std::move(st));
    workers->Post([done = std::move(done), st = std::move(st)]() mutable { done(std::move(st)); });
  });
}

}  // namespace missy

// MemoryService: memory items, learnings and full-text search (DESIGN.md §4 rule 4).
// Writes are answered after their commit (with their audit event in the same
// transaction). Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "daemon/service/service_deps.h"
#include "storage/records.h"

namespace missy {

class MemoryService {
 public:
  explicit MemoryService(const ServiceDeps& deps) : deps_(deps) {}

  // Text must not be blank; a session_id must name an existing session.
  void Add(MemoryItem item, Done<MemoryItem> done);
  Result<MemoryItem> Get(const std::string& id);
  Result<std::vector<MemoryItem>> List(const ListOptions& options, const std::string& session_id);
  void Delete(std::string id, Done<std::string> done);
  // Runs on a worker, never on the caller's (loop) thread: with wait_for_index (the
  // default) it first commits the pending message index, a synchronous write.
  void Search(SearchOptions options, Done<std::vector<MemoryHit>> done);

  void AddLearning(LearningRecord learning, Done<LearningRecord> done);
  Result<std::vector<LearningRecord>> ListLearnings(const ListOptions& options,
                                                    const std::string& task_type);

 private:
  ServiceDeps deps_;
};

}  // namespace missy

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
  Result<std::vector<MemoryHit>> Search(const SearchOptions& options);

  void AddLearning(LearningRecord learning, Done<LearningRecord> done);
  Result<std::vector<LearningRecord>> ListLearnings(const ListOptions& options,
                                                    const std::string& task_type);

 private:
  ServiceDeps deps_;
};

}  // namespace missy

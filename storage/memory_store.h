// MemoryStore: memory items (searchable notes, global or per session) and learnings
// (lessons from past tasks). Thread-safe; reads use Database::Read, writes take the
// caller's Txn (or wrap one Database::Write). Full-text search over memory items,
// summaries and messages is storage/search.h.
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "storage/database.h"
#include "storage/records.h"

namespace missy {

class MemoryStore {
 public:
  explicit MemoryStore(Database& db) : db_(db) {}

  // Memory items. Ids are generated when empty ("mem_" + 16 hex digits);
  // kAlreadyExists on a duplicate id, kInvalidArgument for empty text.
  Result<MemoryItem> Add(Txn& txn, const MemoryItem& item);
  Result<MemoryItem> Add(const MemoryItem& item);
  Result<MemoryItem> Get(std::string_view id);  // kNotFound
  // Newest first; `session_id` non-empty: that session's items and global ones.
  Result<std::vector<MemoryItem>> List(const ListOptions& options,
                                       std::string_view session_id = {});
  // Replaces text, tags and pinned of item.id. kNotFound, kInvalidArgument (empty text).
  Status Update(Txn& txn, const MemoryItem& item);
  Status Update(const MemoryItem& item);
  Status Delete(Txn& txn, std::string_view id);  // kNotFound
  Status Delete(std::string_view id);

  // Learnings. Ids are generated when empty ("lrn_" + 16 hex digits); kAlreadyExists
  // on a duplicate id, kInvalidArgument for an empty lesson.
  Result<LearningRecord> AddLearning(Txn& txn, const LearningRecord& learning);
  Result<LearningRecord> AddLearning(const LearningRecord& learning);
  // Newest first; `task_type` filters when non-empty.
  Result<std::vector<LearningRecord>> ListLearnings(const ListOptions& options,
                                                    std::string_view task_type = {});
  Result<LearningRecord> GetLearning(std::string_view id);  // kNotFound
  Status DeleteLearning(Txn& txn, std::string_view id);    // kNotFound
  Status DeleteLearning(std::string_view id);

 private:
  Database& db_;
};

}  // namespace missy

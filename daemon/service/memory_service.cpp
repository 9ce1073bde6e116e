#include "daemon/service/memory_service.h"

#include <memory>

#include "daemon/audit/audit_bus.h"
#include "daemon/service/ports.h"
#include "storage/database.h"
#include "storage/search.h"
#include "storage/stores.h"

namespace missy {

namespace {

bool Blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

void MemoryService::Add(MemoryItem item, Done<MemoryItem> done) {
  if (Blank(item.text)) return done(Status::InvalidArgument("must not be empty", "text"));
  if (!item.session_id.empty() && !deps_.stores->sessions.Get(item.session_id).ok()) {
    return done(Status::NotFound("session '" + item.session_id + "' not found", "session_id"));
  }
  item.created_at_ms = deps_.clock->NowMs();
  auto in = std::make_shared<MemoryItem>(std::move(item));
  auto out = std::make_shared<MemoryItem>();
  CommitAsync(
      deps_,
      [this, in, out](Txn& txn) -> Status {
        Result<MemoryItem> stored = deps_.stores->memory.Add(txn, *in);
        if (!stored.ok()) return stored.status();
        *out = std::move(*stored);
        return deps_.audit->Append(
            txn, AuditRecord{"memory.added", "memory", "allow", out->session_id,
                             AuditDetail().Add("id", out->id).Add("chars", out->text.size())});
      },
      [this, out, done = std::move(done)](Status st) {
        if (!st.ok()) return done(st);
        SearchableChanged(deps_, "");
        done(std::move(*out));
      });
}

Result<MemoryItem> MemoryService::Get(const std::string& id) {
  return deps_.stores->memory.Get(id);
}

Result<std::vector<MemoryItem>> MemoryService::List(const ListOptions& options,
                                                    const std::string& session_id) {
  return deps_.stores->memory.List(options, session_id);
}

void MemoryService::Delete(std::string id, Done<std::string> done) {
  auto shared = std::make_shared<std::string>(std::move(id));
  CommitAsync(
      deps_,
      [this, shared](Txn& txn) -> Status {
        MISSY_RETURN_IF_ERROR(deps_.stores->memory.Delete(txn, *shared));
        return deps_.audit->Append(txn, AuditRecord{"memory.deleted", "memory", "allow", "",
                                                    AuditDetail().Add("id", *shared)});
      },
      [this, shared, done = std::move(done)](Status st) {
        if (!st.ok()) return done(st);
        SearchableChanged(deps_, "");
        done(*shared);
      });
}

void MemoryService::Search(SearchOptions options, Done<std::vector<MemoryHit>> done) {
  RunOnWorker(deps_, [this, options = std::move(options), done = std::move(done)] {
    done(missy::Search(*deps_.db, options));
  });
}

void MemoryService::AddLearning(LearningRecord learning, Done<LearningRecord> done) {
  if (Blank(learning.lesson)) return done(Status::InvalidArgument("must not be empty", "lesson"));
  learning.created_at_ms = deps_.clock->NowMs();
  auto in = std::make_shared<LearningRecord>(std::move(learning));
  auto out = std::make_shared<LearningRecord>();
  CommitAsync(
      deps_,
      [this, in, out](Txn& txn) -> Status {
        Result<LearningRecord> stored = deps_.stores->memory.AddLearning(txn, *in);
        if (!stored.ok()) return stored.status();
        *out = std::move(*stored);
        return deps_.audit->Append(
            txn, AuditRecord{"learning.added", "memory", "allow", out->session_id,
                             AuditDetail().Add("id", out->id).Add("task_type", out->task_type)});
      },
      [out, done = std::move(done)](Status st) {
        if (!st.ok()) return done(st);
        done(std::move(*out));
      });
}

Result<std::vector<LearningRecord>> MemoryService::ListLearnings(const ListOptions& options,
                                                                 const std::string& task_type) {
  return deps_.stores->memory.ListLearnings(options, task_type);
}

}  // namespace missy

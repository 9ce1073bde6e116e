#include "storage/memory_store.h"

#include <string>

#include "storage/json_strings.h"
#include "storage/sqlite.h"
#include "storage/store_util.h"

namespace missy {
namespace {

using sqlite::Connection;
using sqlite::Statement;

const char kMemoryColumns[] = "id, text, tags, session_id, pinned, created_at_ms";

MemoryItem MemoryFromRow(const Statement& s) {
  MemoryItem m;
  m.id = s.Text(0);
  m.text = s.Text(1);
  m.tags = storage_json::StringsFromJson(s.TextView(2));
  m.session_id = s.Text(3);
  m.pinned = s.Int(4) != 0;
  m.created_at_ms = s.Int(5);
  return m;
}

const char kLearningColumns[] =
    "id, task_type, outcome, lesson, approach, session_id, created_at_ms";

LearningRecord LearningFromRow(const Statement& s) {
  LearningRecord l;
  l.id = s.Text(0);
  l.task_type = s.Text(1);
  l.outcome = s.Text(2);
  l.lesson = s.Text(3);
  l.approach = storage_json::StringsFromJson(s.TextView(4));
  l.session_id = s.Text(5);
  l.created_at_ms = s.Int(6);
  return l;
}

Status ValidateItem(const MemoryItem& item) {
  if (item.text.empty()) return Status::InvalidArgument("memory text must not be empty", "text");
  return Status::Ok();
}

Status ValidateLearning(const LearningRecord& l) {
  if (l.lesson.empty()) return Status::InvalidArgument("lesson must not be empty", "lesson");
  return Status::Ok();
}

// Deletes the row of `table` with this id; kNotFound names `what`.
Status DeleteById(Txn& txn, const char* sql, std::string_view id, std::string_view what) {
  MISSY_ASSIGN_STMT(del, txn.conn(), sql);
  del.Bind(1, id);
  MISSY_RETURN_IF_ERROR(del.Run("delete " + std::string(what)));
  if (txn.conn().Changes() == 0) {
    return Status::NotFound(std::string(what) + " '" + std::string(id) + "' not found", "id");
  }
  return Status::Ok();
}

}  // namespace

// --- Memory items ---------------------------------------------------------------------

Result<MemoryItem> MemoryStore::Add(Txn& txn, const MemoryItem& item) {
  MISSY_RETURN_IF_ERROR(ValidateItem(item));
  MemoryItem stored = item;
  if (stored.id.empty()) stored.id = store_util::GenerateId("mem_");
  MISSY_ASSIGN_STMT(insert, txn.conn(),
                    "INSERT INTO memory_items (id, text, tags, session_id, pinned, created_at_ms) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  insert.Bind(1, stored.id)
      .Bind(2, stored.text)
      .Bind(3, storage_json::StringsToJson(stored.tags))
      .BindOrNull(4, stored.session_id)
      .Bind(5, stored.pinned ? 1 : 0)
      .Bind(6, stored.created_at_ms);
  Status st = insert.Run("add memory item");
  if (st.code() == StatusCode::kAlreadyExists) {
    return Status::AlreadyExists("memory item '" + stored.id + "' already exists", "id");
  }
  MISSY_RETURN_IF_ERROR(st);
  return stored;
}

Result<MemoryItem> MemoryStore::Add(const MemoryItem& item) {
  MISSY_RETURN_IF_ERROR(ValidateItem(item));
  return store_util::WriteValue<MemoryItem>(db_, [&](Txn& txn) { return Add(txn, item); });
}

Result<MemoryItem> MemoryStore::Get(std::string_view id) {
  return store_util::ReadValue<MemoryItem>(db_, [&](Connection& c) -> Result<MemoryItem> {
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kMemoryColumns + " FROM memory_items WHERE id = ?1");
    q.Bind(1, id);
    MISSY_ASSIGN_NEXT(row, q, "read memory item");
    if (!row) return Status::NotFound("memory item '" + std::string(id) + "' not found", "id");
    return MemoryFromRow(q);
  });
}

Result<std::vector<MemoryItem>> MemoryStore::List(const ListOptions& options,
                                                  std::string_view session_id) {
  std::vector<MemoryItem> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_ASSIGN_STMT(
        q, c,
        std::string("SELECT ") + kMemoryColumns +
            " FROM memory_items WHERE (?3 = '' OR session_id IS NULL OR "
            "session_id = ?3) ORDER BY created_at_ms DESC, n DESC LIMIT ?1 OFFSET ?2");
    store_util::BindPage(q, options);
    q.Bind(3, session_id);
    return store_util::CollectRows(q, MemoryFromRow, "list memory items", out);
  }));
  return out;
}

Status MemoryStore::Update(Txn& txn, const MemoryItem& item) {
  MISSY_RETURN_IF_ERROR(ValidateItem(item));
  MISSY_ASSIGN_STMT(update, txn.conn(),
                    "UPDATE memory_items SET text = ?2, tags = ?3, pinned = ?4 WHERE id = ?1");
  update.Bind(1, item.id)
      .Bind(2, item.text)
      .Bind(3, storage_json::StringsToJson(item.tags))
      .Bind(4, item.pinned ? 1 : 0);
  MISSY_RETURN_IF_ERROR(update.Run("update memory item"));
  if (txn.conn().Changes() == 0) {
    return Status::NotFound("memory item '" + item.id + "' not found", "id");
  }
  return Status::Ok();
}

Status MemoryStore::Update(const MemoryItem& item) {
  MISSY_RETURN_IF_ERROR(ValidateItem(item));
  return db_.Write([&](Txn& txn) { return Update(txn, item); });
}

Status MemoryStore::Delete(Txn& txn, std::string_view id) {
  return DeleteById(txn, "DELETE FROM memory_items WHERE id = ?1", id, "memory item");
}

Status MemoryStore::Delete(std::string_view id) {
  return db_.Write([&](Txn& txn) { return Delete(txn, id); });
}

// --- Learnings ------------------------------------------------------------------------

Result<LearningRecord> MemoryStore::AddLearning(Txn& txn, const LearningRecord& learning) {
  MISSY_RETURN_IF_ERROR(ValidateLearning(learning));
  LearningRecord stored = learning;
  if (stored.id.empty()) stored.id = store_util::GenerateId("lrn_");
  MISSY_ASSIGN_STMT(insert, txn.conn(),
                    "INSERT INTO learnings (id, task_type, outcome, lesson, approach, session_id, "
                    "created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  insert.Bind(1, stored.id)
      .Bind(2, stored.task_type)
      .Bind(3, stored.outcome)
      .Bind(4, stored.lesson)
      .Bind(5, storage_json::StringsToJson(stored.approach))
      .BindOrNull(6, stored.session_id)
      .Bind(7, stored.created_at_ms);
  Status st = insert.Run("add learning");
  if (st.code() == StatusCode::kAlreadyExists) {
    return Status::AlreadyExists("learning '" + stored.id + "' already exists", "id");
  }
  MISSY_RETURN_IF_ERROR(st);
  return stored;
}

Result<LearningRecord> MemoryStore::AddLearning(const LearningRecord& learning) {
  MISSY_RETURN_IF_ERROR(ValidateLearning(learning));
  return store_util::WriteValue<LearningRecord>(
      db_, [&](Txn& txn) { return AddLearning(txn, learning); });
}

Result<std::vector<LearningRecord>> MemoryStore::ListLearnings(const ListOptions& options,
                                                               std::string_view task_type) {
  std::vector<LearningRecord> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kLearningColumns +
                          " FROM learnings WHERE (?3 = '' OR task_type = ?3) "
                          "ORDER BY created_at_ms DESC, n DESC LIMIT ?1 OFFSET ?2");
    store_util::BindPage(q, options);
    q.Bind(3, task_type);
    return store_util::CollectRows(q, LearningFromRow, "list learnings", out);
  }));
  return out;
}

Result<LearningRecord> MemoryStore::GetLearning(std::string_view id) {
  return store_util::ReadValue<LearningRecord>(db_, [&](Connection& c) -> Result<LearningRecord> {
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kLearningColumns + " FROM learnings WHERE id = ?1");
    q.Bind(1, id);
    MISSY_ASSIGN_NEXT(row, q, "read learning");
    if (!row) return Status::NotFound("learning '" + std::string(id) + "' not found", "id");
    return LearningFromRow(q);
  });
}

Status MemoryStore::DeleteLearning(Txn& txn, std::string_view id) {
  return DeleteById(txn, "DELETE FROM learnings WHERE id = ?1", id, "learning");
}

Status MemoryStore::DeleteLearning(std::string_view id) {
  return db_.Write([&](Txn& txn) { return DeleteLearning(txn, id); });
}

}  // namespace missy

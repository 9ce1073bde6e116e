// Auditor: persists an audit event in SQLite, then publishes its line to the audit
// socket's subscribers. Persist-then-publish: a subscriber never sees an event that
// is not stored. Thread-safe; events are published in seq order.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include <boost/json/object.hpp>

#include "core/audit_event.h"
#include "storage/database.h"

namespace missy {

class Auditor {
 public:
  using Publisher = std::function<void(int64_t seq, const std::string& type, std::string line)>;
  using Clock = std::function<int64_t()>;  // unix ms

  Auditor(Database* db, Clock clock) : db_(db), clock_(std::move(clock)) {}
  void SetPublisher(Publisher publisher);

  // Records an event; failures to persist are logged (never thrown) and returned.
  Status Emit(std::string_view event_type, std::string_view category, std::string_view result,
              std::string_view session_id, const boost::json::object& detail);

 private:
  Database* db_;
  Clock clock_;
  std::mutex mu_;  // orders persist+publish so subscribers see seqs in order
  Publisher publisher_;
};

}  // namespace missy

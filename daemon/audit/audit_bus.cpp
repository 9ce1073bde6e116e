#include "daemon/audit/audit_bus.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "core/audit_event.h"
#include "daemon/service/ports.h"
#include "storage/audit_log.h"
#include "storage/database.h"

namespace missy {

AuditBus::AuditBus(Database& db, AuditLog& log, const Clock& clock)
    : db_(db), log_(log), clock_(clock) {}

void AuditBus::SetPublisher(Publisher publisher) {
  std::lock_guard<std::mutex> lock(mu_);
  publisher_ = std::move(publisher);
}

Status AuditBus::Append(Txn& txn, const AuditRecord& record) {
  AuditEvent event;
  event.timestamp_ms = clock_.NowMs();
  event.event_type = record.event_type;
  event.category = record.category;
  event.result = record.result;
  event.session_id = record.session_id;
  event.detail_json = record.detail.ToJson();
  Result<AuditEvent> stored = log_.Append(txn, event);
  if (!stored.ok()) return stored.status();
  auto line = std::make_shared<std::string>(AuditEventToJsonLine(*stored));
  txn.OnCommit([this, seq = stored->seq, type = stored->event_type, line]() {
    Publisher publisher;
    {
      std::lock_guard<std::mutex> lock(mu_);
      publisher = publisher_;
    }
    feed_.Publish(seq, type, *line);
    if (publisher) publisher(seq, type, std::move(*line));
  });
  return Status::Ok();
}

void AuditBus::Emit(AuditRecord record) {
  auto shared = std::make_shared<AuditRecord>(std::move(record));
  db_.WriteAsync([this, shared](Txn& txn) { return Append(txn, *shared); },
                 [shared](Status st) {
                   if (!st.ok()) {
                     spdlog::error("audit event {} not persisted: {}", shared->event_type,
                                   st.ToString());
                   }
                 });
}

Status AuditBus::EmitAndWait(AuditRecord record) {
  Status st = db_.Write([&](Txn& txn) { return Append(txn, record); });
  if (!st.ok()) spdlog::error("audit event {} not persisted: {}", record.event_type, st.ToString());
  return st;
}

void AuditBus::AfterPending(std::function<void(Status)> done) {
  // The writer serves writes in order: an empty write commits after everything queued
  // before it (and, changing nothing, costs no fsync).
  db_.WriteAsync([](Txn&) { return Status::Ok(); }, std::move(done));
}

std::vector<std::string> AuditBus::BacklogPage(const std::vector<std::string>& types,
                                               int64_t after_seq, size_t max_lines,
                                               int64_t* last_seq_seen) {
  std::vector<std::string> lines;
  if (last_seq_seen != nullptr) *last_seq_seen = after_seq;
  Result<std::vector<AuditEvent>> events =
      log_.Since(after_seq, static_cast<int>(std::max<size_t>(1, max_lines)));
  if (!events.ok()) {
    throw std::runtime_error("audit backlog read failed after seq " + std::to_string(after_seq) +
                             ": " + events.status().ToString());
  }
  for (const AuditEvent& e : *events) {
    if (last_seq_seen != nullptr) *last_seq_seen = e.seq;
    bool wanted = types.empty();
    for (const std::string& t : types) wanted = wanted || t == e.event_type;
    if (wanted) lines.push_back(AuditEventToJsonLine(e));
  }
  return lines;
}

Result<int64_t> AuditBus::OutboxCursor(std::string_view name) { return log_.OutboxCursor(name); }

Status AuditBus::AdvanceOutbox(std::string_view name, int64_t seq) {
  return db_.Write([&](Txn& txn) { return log_.AdvanceOutbox(txn, name, seq); });
}

}  // namespace missy

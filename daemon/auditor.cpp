#include "daemon/auditor.h"

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

namespace missy {

void Auditor::SetPublisher(Publisher publisher) {
  std::lock_guard<std::mutex> lock(mu_);
  publisher_ = std::move(publisher);
}

Status Auditor::Emit(std::string_view event_type, std::string_view category,
                     std::string_view result, std::string_view session_id,
                     const boost::json::object& detail) {
  AuditEvent event;
  event.timestamp_ms = clock_();
  event.event_type = event_type;
  event.category = category;
  event.result = result;
  event.session_id = session_id;
  event.detail_json = boost::json::serialize(detail);
  std::lock_guard<std::mutex> lock(mu_);
  Result<AuditEvent> stored = db_->AppendAuditEvent(event);
  if (!stored.ok()) {
    spdlog::error("audit event {} not persisted: {}", event_type, stored.status().ToString());
    return stored.status();
  }
  if (publisher_) publisher_(stored->seq, stored->event_type, AuditEventToJsonLine(*stored));
  return Status::Ok();
}

}  // namespace missy

#include "core/audit_event.h"

#include <time.h>

#include <boost/json.hpp>
#include <cstdio>

namespace missy {

namespace json = boost::json;

std::string FormatIsoTimestampMs(int64_t epoch_ms) {
  int64_t secs = epoch_ms / 1000;
  int64_t ms = epoch_ms % 1000;
  if (ms < 0) {
    ms += 1000;
    secs -= 1;
  }
  const time_t t = static_cast<time_t>(secs);
  struct tm tm {};
  gmtime_r(&t, &tm);  // pure conversion, no I/O
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string AuditEventToJsonLine(const AuditEvent& e) {
  json::object o;
  o["seq"] = e.seq;
  o["timestamp"] = FormatIsoTimestampMs(e.timestamp_ms);
  o["session_id"] = e.session_id;
  o["task_id"] = e.task_id;
  o["event_type"] = e.event_type;
  o["category"] = e.category;
  o["result"] = e.result;
  boost::system::error_code ec;
  json::value detail = json::parse(e.detail_json.empty() ? "{}" : e.detail_json, ec);
  if (ec) detail = json::object{{"raw", e.detail_json}};
  o["detail"] = std::move(detail);
  o["prev_chain_hash"] = e.prev_chain_hash;
  return json::serialize(o);
}

}  // namespace missy

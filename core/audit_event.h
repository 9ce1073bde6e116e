// An audit event (DESIGN.md §6). `detail_json` is a JSON object as text, secrets
// already redacted by whoever built it.
#pragma once

#include <cstdint>
#include <string>

namespace missy {

struct AuditEvent {
  int64_t seq = 0;           // assigned by storage, monotonic from 1
  int64_t timestamp_ms = 0;  // unix epoch milliseconds
  std::string session_id;    // may be empty (daemon-wide events)
  std::string task_id;       // may be empty
  std::string event_type;    // "session.created", "context.built", ...
  std::string category;      // context|memory|provider|daemon|security
  std::string result;        // allow|deny|error
  std::string detail_json = "{}";
  std::string prev_chain_hash;  // hex SHA-256 of the previous event's line (storage fills it)
};

// One NDJSON line (no trailing newline) with the fields of the audit stream:
// {"seq","timestamp" (ISO-8601 UTC with ms),"session_id","task_id","event_type",
//  "category","result","detail","prev_chain_hash"}. Deterministic: same event, same bytes.
std::string AuditEventToJsonLine(const AuditEvent& e);

// ISO-8601 UTC with milliseconds: 2026-11-21T16:34:47.123Z
std::string FormatIsoTimestampMs(int64_t epoch_ms);

}  // namespace missy

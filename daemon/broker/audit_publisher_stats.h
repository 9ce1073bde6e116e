// What the broker bridge (AuditPublisher) reports, for /v1/health and /metrics: a plain
// struct, so that the service layer can carry it without nats.c or threads.
#pragma once

#include <cstdint>
#include <string>

namespace missy {

struct AuditPublisherStats {
  bool connected = false;
  int64_t published = 0;   // events the broker acknowledged as new
  int64_t duplicates = 0;  // acknowledged as duplicates (republished after a crash)
  int64_t failures = 0;    // connection or publish failures
  int64_t cursor = 0;      // the last seq acknowledged (recorded in the database within 1 s)
  int64_t head = 0;        // the newest committed seq this publisher was told of
  int64_t backlog() const { return head > cursor ? head - cursor : 0; }
  std::string last_error;  // the last failure, without credentials
  double rate = 0;         // events acknowledged per second over the last window of >= 5 s
};

}  // namespace missy

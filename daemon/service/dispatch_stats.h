// The figures of distributed summarization's dispatcher (the SummaryDispatcher port of
// summary_dispatch.h) for /v1/health and /metrics, in a header of their own so that the
// metrics need not include the port.
#pragma once

#include <cstdint>
#include <string>

namespace missy {

// The dispatcher's figures (/v1/health, /metrics).
struct DispatchStats {
  bool connected = false;
  int64_t dispatched = 0;   // tasks published
  int64_t not_sent = 0;     // tasks that never reached the broker (summarized locally)
  int64_t completed = 0;    // results used
  int64_t worker_errors = 0;  // results saying the worker could not
  int64_t timeouts = 0;     // tasks without a result by their deadline
  int64_t exhausted = 0;    // tasks whose deliveries to workers ran out (max_deliver)
  int64_t duplicates = 0;   // second results of a task (dropped)
  int64_t stale = 0;        // results of tasks nobody waits for (dropped)
  int64_t in_flight = 0;    // tasks waiting now
  std::string last_error;
};

}  // namespace missy

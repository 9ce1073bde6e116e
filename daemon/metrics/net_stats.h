// NetStats: what the network edge (daemon/net) counts for /metrics. Header-only plain
// atomics, so that missy_net can bump them without linking the metrics registry.
//
// One instance per process (ProcessNetStats()): NetOptions has no slot to pass one in,
// so the HTTP sessions and broadcast subscribers of every NetServer in the process
// share it. Tests compare differences, never absolute values. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>

namespace missy::metrics {

struct NetStats {
  // HTTP connections.
  std::atomic<int64_t> http_connections_open{0};
  std::atomic<uint64_t> http_connections_total{0};
  // Answered by the connection itself, before any handler: 413, 431, 400.
  std::atomic<uint64_t> http_body_too_large{0};
  std::atomic<uint64_t> http_headers_too_large{0};
  std::atomic<uint64_t> http_malformed{0};
  // Lingering closes after a 413: connections, and request bytes read and discarded.
  std::atomic<uint64_t> http_lingering_closes{0};
  std::atomic<uint64_t> http_lingering_bytes{0};

  // Audit broadcast.
  std::atomic<int64_t> audit_subscribers{0};         // connected now
  std::atomic<uint64_t> audit_subscribers_total{0};  // ever accepted
  std::atomic<uint64_t> audit_subscribers_cut{0};    // cut off as too slow (gap notice)
  std::atomic<uint64_t> audit_lines_dropped{0};      // lines a cut subscriber never got
  std::atomic<uint64_t> audit_lines_sent{0};         // live lines written to subscribers
};

inline NetStats& ProcessNetStats() {
  static NetStats stats;
  return stats;
}

}  // namespace missy::metrics

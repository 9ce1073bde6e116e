// DaemonMetrics: every metric missyd exposes on GET /metrics, declared once. The use
// cases bump the event counters (through ServiceDeps::metrics, which may be null); the
// gauges that describe state (stored sessions, file sizes, writer statistics, the network
// edge) are read at scrape time by the Collect* functions. Thread-safe; owned by
// Services, so one per daemon (and one per in-process test).
#pragma once

#include <string>
#include <string_view>

#include "daemon/broker/audit_publisher_stats.h"
#include "daemon/service/dispatch_stats.h"
#include "daemon/metrics/registry.h"

namespace missy {
class Database;
struct Stores;
}  // namespace missy

namespace missy::metrics {

struct NetStats;

class DaemonMetrics {
 public:
  DaemonMetrics();
  DaemonMetrics(const DaemonMetrics&) = delete;
  DaemonMetrics& operator=(const DaemonMetrics&) = delete;

  std::string Encode() const { return registry.Encode(); }

  Registry registry;  // first: the references below point into it

  // HTTP (daemon/http/router.cpp): route is the router's pattern ("unmatched": no route).
  CounterFamily& http_requests;    // {method, route, status}
  HistogramFamily& http_duration;  // {method, route}: until the answer was handed over
  // The network edge (scrape time, from NetStats).
  Gauge& http_connections;  // open now
  Counter& http_connections_total;
  CounterFamily& http_edge_rejections;  // {status}: 400, 413, 431 answered before a handler
  Counter& http_lingering_closes;
  Counter& http_lingering_bytes;
  Gauge& audit_subscribers;
  Counter& audit_subscribers_total;
  Counter& audit_subscribers_cut;
  Counter& audit_lines_dropped;
  Counter& audit_lines_sent;

  // Context builds (context_service.cpp).
  CounterFamily& context_builds;  // {zone}
  Counter& context_evicted_messages;
  Counter& context_pruned_messages;
  Counter& context_truncated_messages;

  // Summarization (summarization_worker.cpp, summarization_service.cpp).
  CounterFamily& summarization_jobs;            // {backend, state}: completed | retried | failed
  HistogramFamily& summarization_job_duration;  // {backend}
  CounterFamily& summaries;                     // {backend, kind}: kind leaf | condensed
  Counter& summary_fallbacks;                   // llm summaries replaced by extractive ones
  GaugeFamily& summarization_jobs_active;       // {state}: queued | running (scrape time)

  // LLM provider calls (summary_backend.cpp).
  CounterFamily& provider_requests;    // {provider}
  CounterFamily& provider_errors;      // {provider, kind}
  HistogramFamily& provider_duration;  // {provider}

  // Proxy mode (daemon/proxy/): upstream is the base URL (scheme, host, port, path: never
  // a credential), api anthropic | chat | responses | passthrough.
  CounterFamily& proxy_requests;         // {api, upstream, status}: 2xx, 4xx, 5xx, none
  HistogramFamily& proxy_first_byte;     // {api, upstream}: request received to answer head
  HistogramFamily& proxy_duration;       // {api, upstream}: the whole request
  CounterFamily& proxy_relayed_bytes;    // {api, upstream}
  CounterFamily& proxy_retries;          // {api}: context-length refusals compacted and retried
  Counter& proxy_divergences;            // rewritten histories branched
  // Usage reports (usage_service.cpp).
  CounterFamily& usage_reports;            // {model}
  CounterFamily& usage_prompt_tokens;      // {model}
  CounterFamily& usage_completion_tokens;  // {model}

  // Storage (scrape time).
  Gauge& sessions;
  Gauge& messages;
  Gauge& stored_tokens;
  GaugeFamily& database_file_bytes;  // {file}: db | wal
  Counter& writer_transactions;
  Counter& writer_writes;
  Counter& writer_failed_writes;
  Counter& writer_commits_with_fsync;
  Counter& writer_index_transactions;
  Counter& writer_gather_waits;
  Gauge& writer_max_batch;
  Gauge& writer_queue_depth;
  Counter& writer_commit_micros;
  Counter& writer_cpu_micros;
  Counter& writer_checkpoints;
  // The broker bridge (only when one is configured; CollectBroker).
  GaugeFamily& broker_connected;
  GaugeFamily& broker_backlog;
  CounterFamily& broker_published;
  CounterFamily& broker_failures;
  // Distributed summarization (CollectJobs): steps by outcome, and those waiting now.
  CounterFamily& broker_jobs;
  Gauge& broker_jobs_in_flight;
  Gauge& sqlite_memory_bytes;
  Gauge& sqlite_cache_bytes;
  Gauge& database_open_readers;

  // The service layer's caches and the process (scrape time).
  Gauge& history_cache_sessions;
  Gauge& history_cache_bytes;
  Gauge& resident_bytes;
  Gauge& uptime_seconds;
};

// At scrape time. Storage: one snapshot of the session counters, the active jobs, the
// writer statistics and the sizes of the database file and its WAL (stat). Pooled reads
// only: call it off the event loop when the database may be large.
void CollectStorage(DaemonMetrics& m, Database& db, Stores& stores);
// The network edge's counters.
void CollectNet(DaemonMetrics& m, const NetStats& stats);
void CollectBroker(DaemonMetrics& m, const AuditPublisherStats& stats);
void CollectJobs(DaemonMetrics& m, const DispatchStats& stats);

// A method label with bounded values: the usual methods as they are, anything else "other".
std::string_view MethodLabel(std::string_view method);

}  // namespace missy::metrics

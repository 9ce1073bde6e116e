#include "daemon/metrics/daemon_metrics.h"

#include <sys/stat.h>

#include <vector>

#include "daemon/metrics/net_stats.h"
#include "storage/database.h"
#include "storage/stores.h"

namespace missy::metrics {

namespace {

// Seconds: HTTP answers take microseconds to a few seconds (a context waiting for a commit).
const std::vector<double> kHttpBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                          0.1,    0.25,  0.5,    1,     2.5,  5,     10};
// A summarization job: milliseconds (extractive) to minutes (an llm, several chunks).
const std::vector<double> kJobBuckets = {0.01, 0.05, 0.1, 0.25, 0.5, 1,  2.5,
                                         5,    10,   30,  60,   120, 300};
// One provider completion, retries included.
const std::vector<double> kProviderBuckets = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120};
// A proxied request's own overhead is milliseconds; the model's answer, seconds to minutes.
const std::vector<double> kProxyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                           2.5,   5,    10,    30,   60,  120, 300};

int64_t FileBytes(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_size);
}

}  // namespace

DaemonMetrics::DaemonMetrics()
    : http_requests(registry.AddCounter("missyd_http_requests_total",
                                        "HTTP requests answered, by route pattern and status.",
                                        {"method", "route", "status"})),
      http_duration(registry.AddHistogram(
          "missyd_http_request_duration_seconds",
          "Time from routing a request to handing its answer to the connection.",
          {"method", "route"}, kHttpBuckets)),
      http_connections(
          registry.AddGauge("missyd_http_connections", "HTTP connections open on the API socket.")
              .With({})),
      http_connections_total(registry
                                 .AddCounter("missyd_http_connections_total",
                                             "HTTP connections accepted on the API socket.")
                                 .With({})),
      http_edge_rejections(registry.AddCounter(
          "missyd_http_edge_rejections_total",
          "Requests answered by the connection before any route (body or headers too large, "
          "malformed).",
          {"status"})),
      http_lingering_closes(registry
                                .AddCounter("missyd_http_lingering_closes_total",
                                            "Connections that read and discarded the rest of an "
                                            "oversized request before closing.")
                                .With({})),
      http_lingering_bytes(registry
                               .AddCounter("missyd_http_lingering_bytes_total",
                                           "Request bytes read and discarded after a 413 answer.")
                               .With({})),
      audit_subscribers(
          registry.AddGauge("missyd_audit_subscribers", "Audit socket subscribers connected now.")
              .With({})),
      audit_subscribers_total(
          registry
              .AddCounter("missyd_audit_subscribers_total", "Audit socket subscribers accepted.")
              .With({})),
      audit_subscribers_cut(
          registry
              .AddCounter(
                  "missyd_audit_subscribers_cut_total",
                  "Audit subscribers sent a gap notice and disconnected for being too slow.")
              .With({})),
      audit_lines_dropped(
          registry
              .AddCounter("missyd_audit_lines_dropped_total",
                          "Audit lines discarded from the queues of subscribers that were cut off.")
              .With({})),
      audit_lines_sent(registry
                           .AddCounter("missyd_audit_lines_sent_total",
                                       "Live audit lines written to subscribers.")
                           .With({})),
      context_builds(registry.AddCounter("missyd_context_builds_total",
                                         "Contexts built, by the zone of their history budget.",
                                         {"zone"})),
      context_evicted_messages(
          registry
              .AddCounter("missyd_context_evicted_messages_total",
                          "Stored messages left out of built contexts, summed over builds.")
              .With({})),
      context_pruned_messages(registry
                                  .AddCounter("missyd_context_pruned_messages_total",
                                              "Tool results newly pruned (sent as the placeholder "
                                              "from then on).")
                                  .With({})),
      context_truncated_messages(
          registry
              .AddCounter("missyd_context_truncated_messages_total",
                          "Messages cut to fit in built contexts, summed over builds.")
              .With({})),
      summarization_jobs(registry.AddCounter(
          "missyd_summarization_jobs_total",
          "Summarization jobs run, by configured backend and resulting state (completed, "
          "retried, failed).",
          {"backend", "state"})),
      summarization_job_duration(registry.AddHistogram("missyd_summarization_job_duration_seconds",
                                                       "Time one summarization job ran.",
                                                       {"backend"}, kJobBuckets)),
      summaries(registry.AddCounter("missyd_summaries_total",
                                    "Summaries stored, by the backend that wrote them and kind "
                                    "(leaf, condensed).",
                                    {"backend", "kind"})),
      summary_fallbacks(registry
                            .AddCounter("missyd_summary_fallbacks_total",
                                        "Summaries the llm backend left to the extractive one.")
                            .With({})),
      summarization_jobs_active(registry.AddGauge(
          "missyd_summarization_jobs", "Summarization jobs queued or running now.", {"state"})),
      provider_requests(registry.AddCounter("missyd_provider_requests_total",
                                            "LLM provider completion requests (retries inside "
                                            "one request are not counted apart).",
                                            {"provider"})),
      provider_errors(registry.AddCounter("missyd_provider_errors_total",
                                          "LLM provider completion requests that failed, by kind.",
                                          {"provider", "kind"})),
      provider_duration(registry.AddHistogram("missyd_provider_request_duration_seconds",
                                              "Time one LLM provider completion took.",
                                              {"provider"}, kProviderBuckets)),
      proxy_requests(registry.AddCounter("missyd_proxy_requests_total",
                                         "Requests an agent sent through the proxy, by API, "
                                         "upstream and the upstream's status class.",
                                         {"api", "upstream", "status"})),
      proxy_first_byte(registry.AddHistogram(
          "missyd_proxy_first_byte_seconds",
          "From a proxied request's arrival to the upstream answer's head.", {"api", "upstream"},
          kProxyBuckets)),
      proxy_duration(registry.AddHistogram("missyd_proxy_request_duration_seconds",
                                           "A proxied request, answer relayed and stored.",
                                           {"api", "upstream"}, kProxyBuckets)),
      proxy_relayed_bytes(registry.AddCounter("missyd_proxy_relayed_bytes_total",
                                              "Answer bytes relayed to agents.",
                                              {"api", "upstream"})),
      proxy_retries(registry.AddCounter(
          "missyd_proxy_compaction_retries_total",
          "Context-length refusals answered by a forced compaction and one retry.", {"api"})),
      proxy_divergences(registry
                            .AddCounter("missyd_proxy_history_divergences_total",
                                        "Agent histories that no longer matched the stored "
                                        "one (the conversation branched).")
                            .With({})),
      usage_reports(registry.AddCounter("missyd_usage_reports_total",
                                        "Usage reports received, by calibration model.",
                                        {"model"})),
      usage_prompt_tokens(registry.AddCounter("missyd_usage_prompt_tokens_total",
                                              "Prompt tokens reported by agents.", {"model"})),
      usage_completion_tokens(registry.AddCounter("missyd_usage_completion_tokens_total",
                                                  "Completion tokens reported by agents.",
                                                  {"model"})),
      sessions(registry.AddGauge("missyd_sessions", "Sessions stored.").With({})),
      messages(registry.AddGauge("missyd_messages", "Messages stored.").With({})),
      stored_tokens(
          registry.AddGauge("missyd_stored_tokens", "Tokens of the stored messages.").With({})),
      database_file_bytes(registry.AddGauge(
          "missyd_database_file_bytes", "Size of the SQLite database file and its WAL.", {"file"})),
      writer_transactions(registry
                              .AddCounter("missyd_writer_transactions_total",
                                          "Committed group (write) transactions.")
                              .With({})),
      writer_writes(registry
                        .AddCounter("missyd_writer_writes_total",
                                    "Writes served by the storage writer (committed or failed).")
                        .With({})),
      writer_failed_writes(
          registry.AddCounter("missyd_writer_failed_writes_total", "Writes that failed.").With({})),
      writer_commits_with_fsync(registry
                                    .AddCounter("missyd_writer_commits_with_fsync_total",
                                                "Committed transactions that changed rows (each "
                                                "fsyncs the WAL).")
                                    .With({})),
      writer_index_transactions(registry
                                    .AddCounter("missyd_writer_index_transactions_total",
                                                "Committed background (message indexing) "
                                                "transactions.")
                                    .With({})),
      writer_gather_waits(registry
                              .AddCounter("missyd_writer_gather_waits_total",
                                          "Times the writer waited for writes to gather.")
                              .With({})),
      writer_max_batch(
          registry.AddGauge("missyd_writer_max_batch", "Most writes seen in one transaction.")
              .With({})),
      writer_queue_depth(registry
                             .AddGauge("missyd_writer_queue_depth",
                                       "Writes queued for the writer, not yet in a transaction.")
                             .With({})),
      writer_commit_micros(
          registry
              .AddCounter("missyd_writer_commit_microseconds_total",
                          "Time spent in COMMIT (the WAL fsync) by write transactions; divided "
                          "by missyd_writer_transactions_total, the mean commit latency.")
              .With({})),
      writer_cpu_micros(registry
                            .AddCounter("missyd_writer_cpu_microseconds_total",
                                        "CPU time of the database writer thread.")
                            .With({})),
      writer_checkpoints(registry
                             .AddCounter("missyd_writer_checkpoints_total",
                                         "WAL checkpoints (copies back into the database file).")
                             .With({})),
      broker_connected(registry.AddGauge("missyd_broker_connected",
                                         "1 while the broker bridge is connected.", {"stream"})),
      broker_backlog(registry.AddGauge(
          "missyd_broker_backlog_events",
          "Committed audit events the broker has not acknowledged yet (the lag).", {"stream"})),
      broker_published(registry.AddCounter(
          "missyd_broker_published_total",
          "Audit events the broker acknowledged, by outcome (new, duplicate).",
          {"stream", "outcome"})),
      broker_failures(registry.AddCounter("missyd_broker_failures_total",
                                          "Broker connection or publish failures.", {"stream"})),
      broker_jobs(registry.AddCounter(
          "missyd_broker_jobs_total",
          "Summarization steps for broker workers, by outcome (dispatched, completed; not_sent, "
          "worker_error, exhausted, timeout: summarized locally; duplicate, stale: results dropped).",
          {"outcome"})),
      broker_jobs_in_flight(registry
                                .AddGauge("missyd_broker_jobs_in_flight",
                                          "Summarization steps waiting for a worker's result.")
                                .With({})),
      sqlite_memory_bytes(
          registry.AddGauge("missyd_sqlite_memory_bytes", "SQLite heap in use in this process.")
              .With({})),
      sqlite_cache_bytes(registry
                             .AddGauge("missyd_sqlite_cache_bytes",
                                       "SQLite page cache of the database's open connections.")
                             .With({})),
      database_open_readers(
          registry.AddGauge("missyd_database_open_readers", "Read connections open now.").With({})),
      history_cache_sessions(
          registry
              .AddGauge("missyd_history_cache_sessions", "Sessions whose history window is cached.")
              .With({})),
      history_cache_bytes(
          registry.AddGauge("missyd_history_cache_bytes", "Bytes held by the history cache.")
              .With({})),
      resident_bytes(
          registry.AddGauge("missyd_resident_bytes", "Resident set size of the daemon.").With({})),
      uptime_seconds(
          registry.AddGauge("missyd_uptime_seconds", "Seconds since the services started.")
              .With({})) {}

void CollectStorage(DaemonMetrics& m, Database& db, Stores& stores) {
  // Interim: the session rows carry the message and token counters. A cheaper
  // SELECT count(*), sum(message_count), sum(total_tokens) needs a SessionStore method.
  ListOptions all;
  all.limit = -1;
  if (Result<std::vector<Session>> list = stores.sessions.List(all); list.ok()) {
    int64_t messages = 0, tokens = 0;
    for (const Session& s : *list) {
      messages += s.message_count;
      tokens += s.total_tokens;
    }
    m.sessions.Set(static_cast<double>(list->size()));
    m.messages.Set(static_cast<double>(messages));
    m.stored_tokens.Set(static_cast<double>(tokens));
  }
  for (const char* state : {"queued", "running"}) {
    if (Result<std::vector<Job>> jobs = stores.jobs.List(all, state); jobs.ok()) {
      m.summarization_jobs_active.With({state}).Set(static_cast<double>(jobs->size()));
    }
  }

  m.database_file_bytes.With({"db"}).Set(static_cast<double>(FileBytes(db.path())));
  m.database_file_bytes.With({"wal"}).Set(static_cast<double>(FileBytes(db.path() + "-wal")));

  const WriterStats w = db.GetWriterStats();
  m.writer_transactions.Store(static_cast<uint64_t>(w.transactions));
  m.writer_writes.Store(static_cast<uint64_t>(w.writes));
  m.writer_failed_writes.Store(static_cast<uint64_t>(w.failed_writes));
  m.writer_commits_with_fsync.Store(static_cast<uint64_t>(w.commits_with_fsync));
  m.writer_index_transactions.Store(static_cast<uint64_t>(w.index_transactions));
  m.writer_gather_waits.Store(static_cast<uint64_t>(w.gather_waits));
  m.writer_max_batch.Set(static_cast<double>(w.max_batch));
  m.writer_queue_depth.Set(static_cast<double>(w.queue_depth));
  m.writer_commit_micros.Store(static_cast<uint64_t>(w.commit_us_total));
  m.writer_cpu_micros.Store(static_cast<uint64_t>(w.writer_cpu_us));
  m.writer_checkpoints.Store(static_cast<uint64_t>(w.checkpoints));

  const DatabaseMemoryStats mem = db.MemoryStats();
  m.sqlite_memory_bytes.Set(static_cast<double>(mem.sqlite_bytes));
  m.sqlite_cache_bytes.Set(static_cast<double>(mem.cache_bytes));
  m.database_open_readers.Set(mem.open_readers);
}

void CollectBroker(DaemonMetrics& m, const AuditPublisherStats& b) {
  const std::string stream = "MISSY_AUDIT";
  m.broker_connected.With({stream}).Set(b.connected ? 1 : 0);
  m.broker_backlog.With({stream}).Set(static_cast<double>(b.backlog()));
  m.broker_published.With({stream, "new"}).Store(static_cast<uint64_t>(b.published));
  m.broker_published.With({stream, "duplicate"}).Store(static_cast<uint64_t>(b.duplicates));
  m.broker_failures.With({stream}).Store(static_cast<uint64_t>(b.failures));
}

void CollectJobs(DaemonMetrics& m, const DispatchStats& j) {
  m.broker_connected.With({"MISSY_JOBS"}).Set(j.connected ? 1 : 0);
  const std::pair<const char*, int64_t> outcomes[] = {
      {"dispatched", j.dispatched}, {"not_sent", j.not_sent},       {"completed", j.completed},
      {"worker_error", j.worker_errors}, {"exhausted", j.exhausted},
      {"timeout", j.timeouts},      {"duplicate", j.duplicates}, {"stale", j.stale}};
  for (const auto& [outcome, n] : outcomes) {
    m.broker_jobs.With({outcome}).Store(static_cast<uint64_t>(n));
  }
  m.broker_jobs_in_flight.Set(static_cast<double>(j.in_flight));
}

void CollectNet(DaemonMetrics& m, const NetStats& s) {
  m.http_connections.Set(static_cast<double>(s.http_connections_open.load()));
  m.http_connections_total.Store(s.http_connections_total.load());
  m.http_edge_rejections.With({"400"}).Store(s.http_malformed.load());
  m.http_edge_rejections.With({"413"}).Store(s.http_body_too_large.load());
  m.http_edge_rejections.With({"431"}).Store(s.http_headers_too_large.load());
  m.http_lingering_closes.Store(s.http_lingering_closes.load());
  m.http_lingering_bytes.Store(s.http_lingering_bytes.load());
  m.audit_subscribers.Set(static_cast<double>(s.audit_subscribers.load()));
  m.audit_subscribers_total.Store(s.audit_subscribers_total.load());
  m.audit_subscribers_cut.Store(s.audit_subscribers_cut.load());
  m.audit_lines_dropped.Store(s.audit_lines_dropped.load());
  m.audit_lines_sent.Store(s.audit_lines_sent.load());
}

std::string_view MethodLabel(std::string_view method) {
  for (std::string_view known : {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}) {
    if (method == known) return known;
  }
  return "other";
}

}  // namespace missy::metrics

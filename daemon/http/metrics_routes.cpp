// GET /metrics: the Prometheus text format (version 0.0.4). The counters are kept as
// events happen; the state gauges (storage, caches, the network edge) are read now, on
// a worker: the storage reads and the file stats stay off the event loop.
#include "daemon/http/api.h"
#include "daemon/metrics/daemon_metrics.h"
#include "daemon/metrics/net_stats.h"
#include "daemon/service/services.h"
#include "daemon/service/summary_dispatch.h"

namespace missy::http {

void Api::AddMetricsRoutes() {
  Services& s = services_;
  router_.Add("GET", "/metrics", [&s](const std::shared_ptr<Call>& call) {
    RunOnWorker(s.deps, [&s, call] {
      metrics::DaemonMetrics& m = s.metrics;
      metrics::CollectStorage(m, *s.deps.db, *s.deps.stores);
      metrics::CollectNet(m, metrics::ProcessNetStats());
      if (s.deps.broker_stats) metrics::CollectBroker(m, s.deps.broker_stats());
      if (s.deps.dispatcher != nullptr) metrics::CollectJobs(m, s.deps.dispatcher->Stats());
      const HealthFigures h = s.admin.Health();
      m.history_cache_sessions.Set(static_cast<double>(h.cached_sessions));
      m.history_cache_bytes.Set(static_cast<double>(h.cached_bytes));
      m.resident_bytes.Set(static_cast<double>(h.rss_bytes));
      m.uptime_seconds.Set(static_cast<double>(h.uptime_ms) / 1000.0);
      call->Reply(HttpResponse{200, metrics::kTextContentType, m.Encode()});
    });
  });
}

}  // namespace missy::http

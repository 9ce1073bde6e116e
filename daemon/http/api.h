// Api: the /v1 HTTP+JSON routes (docs/API.md) over the service layer. Each handler
// parses the request, calls one use case and encodes its answer; answers that wait
// for a commit complete later, from a service worker thread, through the
// connection's HttpExchange. Thread-safe. Routes are registered per resource
// (sessions_routes.cpp, context_routes.cpp, memory_routes.cpp, admin_routes.cpp), and
// GET /metrics (metrics_routes.cpp) in the Prometheus text format.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "daemon/http/router.h"
#include "daemon/net/server.h"

namespace missy {
struct Services;
}

namespace missy::http {

class Api {
 public:
  Api(Services& services, std::string version);

  void Handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange);
  // For in-process tests and tools: answers one request, waiting for its completion.
  HttpResponse HandleSync(HttpRequest request);

  int64_t requests() const { return requests_.load(); }

 private:
  void AddSessionRoutes();
  void AddContextRoutes();
  void AddMemoryRoutes();
  void AddAdminRoutes();
  void AddMetricsRoutes();
  void AddInspectRoutes();  // inspect_routes.cpp: past contexts, the audit event stream

  Services& services_;
  std::string version_;
  Router router_;
  std::atomic<int64_t> requests_{0};
};

}  // namespace missy::http

// Router: the /v1 route table (bmcweb's BMCWEB_ROUTE, as a table). A route is a method
// and a path pattern whose "{name}" segments are captured; a "{session_id}" capture
// must be a valid session id (else 400 naming "id"). No route: 404; a path that exists
// with another method: 405 naming the allowed ones. A handler answers through its
// Call, now or later from any thread; an exception it throws becomes a 500.
// With metrics, every answer counts in missyd_http_requests_total and the latency
// histogram under its route pattern ("unmatched" when no route's path matched).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/http/json_io.h"
#include "daemon/net/server.h"

namespace missy {
class AuditBus;
namespace metrics {
class DaemonMetrics;
}
}  // namespace missy

namespace missy::http {

// One request being answered. Thread-safe to answer once, from any thread.
class Call {
 public:
  Call(HttpRequest request, RequestTarget target, std::shared_ptr<HttpExchange> exchange,
       AuditBus* audit)
      : request(std::move(request)),
        target(std::move(target)),
        exchange_(std::move(exchange)),
        audit_(audit) {}

  HttpRequest request;
  RequestTarget target;
  std::vector<std::string> params;  // the pattern's captures, in order

  void Reply(int status, const json::value& body) { exchange_->Send(JsonResponse(status, body)); }
  void Reply(HttpResponse response) { exchange_->Send(std::move(response)); }
  // The error's JSON shape and status, and a `request.rejected` audit event.
  void Fail(const Status& status, std::string_view session_id = {},
            const json::object* extra = nullptr);
  // An error answer that has no Status code (405): the same shape and audit event.
  void Reject(int http, std::string_view code, const std::string& message);
  HttpExchange& exchange() { return *exchange_; }

 private:
  void Audit(int http, std::string_view code, const std::string& message, const std::string& field,
             std::string_view session_id);

  std::shared_ptr<HttpExchange> exchange_;
  AuditBus* audit_;
};

using RouteHandler = std::function<void(const std::shared_ptr<Call>& call)>;

class Router {
 public:
  explicit Router(AuditBus* audit, metrics::DaemonMetrics* metrics = nullptr)
      : audit_(audit), metrics_(metrics) {}

  void Add(std::string method, std::string_view pattern, RouteHandler handler);
  void Handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;  // "{x}" captures
    std::string pattern;                // as given to Add: the metrics' route label
    RouteHandler handler;
  };
  static bool Match(const Route& route, const std::vector<std::string>& segments,
                    std::vector<std::string>* params);

  AuditBus* audit_;
  metrics::DaemonMetrics* metrics_;
  std::vector<Route> routes_;
};

}  // namespace missy::http

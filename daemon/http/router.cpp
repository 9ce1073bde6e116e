#include "daemon/http/router.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>

#include "daemon/audit/audit_bus.h"
#include "daemon/metrics/daemon_metrics.h"
#include "daemon/service/session_service.h"

namespace missy::http {

namespace {

constexpr char kUnmatched[] = "unmatched";

// Counts one answer under its route and method and times it, then hands it on.
class MeteredExchange final : public HttpExchange {
 public:
  MeteredExchange(std::shared_ptr<HttpExchange> inner, metrics::DaemonMetrics& metrics,
                  std::string_view method)
      : inner_(std::move(inner)),
        metrics_(metrics),
        method_(metrics::MethodLabel(method)),
        start_(std::chrono::steady_clock::now()) {}
  // Unanswered: the inner exchange answers 500 once released.
  ~MeteredExchange() override { Record(500); }

  // Before the answer (on the routing thread, which hands the call on).
  void set_route(std::string route) { route_ = std::move(route); }

  void Send(HttpResponse response) override {
    Record(response.status);
    inner_->Send(std::move(response));
  }
  std::shared_ptr<BodyStream> Stream(int status, std::string content_type) override {
    Record(status);
    return inner_->Stream(status, std::move(content_type));
  }

 private:
  void Record(int status) {
    if (recorded_.exchange(true)) return;
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
    const std::string method(method_);
    metrics_.http_requests.With({method, route_, std::to_string(status)}).Inc();
    metrics_.http_duration.With({method, route_}).Observe(took.count());
  }

  std::shared_ptr<HttpExchange> inner_;
  metrics::DaemonMetrics& metrics_;
  std::string_view method_;
  std::string route_ = kUnmatched;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> recorded_{false};
};

}  // namespace

void Call::Audit(int http, std::string_view code, const std::string& message,
                 const std::string& field, std::string_view session_id) {
  if (audit_ == nullptr) return;
  audit_->Emit(AuditRecord{"request.rejected", "daemon", http >= 500 ? "error" : "deny",
                           std::string(session_id),
                           AuditDetail()
                               .Add("method", request.method)
                               .Add("path", target.path)
                               .Add("status", http)
                               .Add("code", code)
                               .Add("message", message)
                               .Add("field", field)});
}

void Call::Reject(int http, std::string_view code, const std::string& message) {
  Audit(http, code, message, "", "");
  spdlog::debug("{} {} -> {} {}", request.method, target.path, http, message);
  Reply(http, ErrorBody(code, message, ""));
}

void Call::Fail(const Status& status, std::string_view session_id, const json::object* extra) {
  const int http = HttpStatusOf(status.code());
  const std::string message = status.message();
  Audit(http, ApiCodeOf(status.code()), message, status.field(), session_id);
  if (http >= 500) {
    spdlog::error("{} {} -> {} {}", request.method, target.path, http, status.ToString());
  } else {
    spdlog::debug("{} {} -> {} {}", request.method, target.path, http, status.ToString());
  }
  json::object body = ErrorBody(ApiCodeOf(status.code()), message, status.field());
  if (extra != nullptr) {
    for (const auto& kv : *extra) body[kv.key()] = kv.value();
  }
  Reply(http, body);
}

void Router::Add(std::string method, std::string_view pattern, RouteHandler handler) {
  Route route{std::move(method), ParseTarget(pattern).segments, std::string(pattern),
              std::move(handler)};
  routes_.push_back(std::move(route));
}

bool Router::Match(const Route& route, const std::vector<std::string>& segments,
                   std::vector<std::string>* params) {
  if (route.segments.size() != segments.size()) return false;
  params->clear();
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string& want = route.segments[i];
    if (want.size() > 1 && want.front() == '{' && want.back() == '}') {
      params->push_back(segments[i]);
    } else if (want != segments[i]) {
      return false;
    }
  }
  return true;
}

void Router::Handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange) const {
  std::shared_ptr<MeteredExchange> metered;
  if (metrics_ != nullptr) {
    metered = std::make_shared<MeteredExchange>(std::move(exchange), *metrics_, request.method);
    exchange = metered;
  }
  RequestTarget target = ParseTarget(request.target);
  auto call =
      std::make_shared<Call>(std::move(request), std::move(target), std::move(exchange), audit_);
  const std::vector<std::string>& segments = call->target.segments;
  std::string allowed;
  std::vector<std::string> params;
  for (const Route& route : routes_) {
    if (!Match(route, segments, &params)) continue;
    if (metered && (allowed.empty() || route.method == call->request.method)) {
      metered->set_route(route.pattern);
    }
    if (route.method != call->request.method) {
      if (allowed.find(route.method) == std::string::npos) {
        allowed += (allowed.empty() ? "" : ", ") + route.method;
      }
      continue;
    }
    for (size_t i = 0; i < route.segments.size(); ++i) {
      if (route.segments[i] == "{session_id}" && !ValidSessionId(segments[i])) {
        return call->Fail(Status::InvalidArgument(
            "session id must be 1-128 characters of [A-Za-z0-9._:-]", "id"));
      }
    }
    call->params = std::move(params);
    try {
      route.handler(call);
    } catch (const std::exception& e) {
      call->Fail(Status::Internal(std::string("unexpected error: ") + e.what()));
    }
    return;
  }
  if (!allowed.empty()) {
    return call->Reject(
        405, "method_not_allowed",
        call->request.method + " is not allowed on this path (allowed: " + allowed + ")");
  }
  const bool v1 = !segments.empty() && segments[0] == "v1";
  call->Fail(Status::NotFound("no route for " + call->request.method + " " + call->target.path +
                              (v1 ? "" : " (API paths start with /v1)")));
}

}  // namespace missy::http

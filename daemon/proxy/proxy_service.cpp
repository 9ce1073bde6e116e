#include "daemon/proxy/proxy_service.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <future>
#include <optional>
#include <thread>

#include "config/token_file.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/proxy/anthropic_wire.h"
#include "daemon/proxy/chat_wire.h"
#include "daemon/proxy/context_map.h"
#include "daemon/proxy/proxy_call.h"
#include "daemon/proxy/relay.h"
#include "daemon/service/counting.h"
#include "daemon/service/services.h"
#include "storage/stores.h"

namespace missy::proxy {

namespace json = boost::json;

namespace {

// The API of a POST to `path` that the proxy manages (the path after any /s/ and /t/
// prefix, without its query).
std::optional<Api> ManagedApi(const std::string& path) {
  if (path == "/v1/messages" || path == "/messages") return Api::kAnthropic;
  if (path == "/v1/chat/completions" || path == "/chat/completions") return Api::kChat;
  if (path == "/v1/responses" || path == "/responses") return Api::kResponses;
  return std::nullopt;
}

}  // namespace

ProxyService::ProxyService(Services& services) : services_(services) {}

ProxyService::~ProxyService() { Stop(std::chrono::seconds(10)); }

void ProxyService::Stop(std::chrono::milliseconds grace) {
  stopping_ = true;
  std::unique_lock<std::mutex> lock(mu_);
  if (!idle_.wait_for(lock, grace, [this] { return active_.load() == 0; })) {
    spdlog::warn("proxy: {} request(s) still running after the shutdown grace", active_.load());
    // Relay threads hold references to the services: wait for them regardless.
    idle_.wait(lock, [this] { return active_.load() == 0; });
  }
}

void ProxyService::Handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
  auto call = std::make_shared<Call>();
  call->request = std::move(request);
  call->exchange = std::move(exchange);
  call->config = services_.deps.config->Get();
  call->path = SplitPath(call->request.target);
  // The path says which API; for paths both have (/v1/models), the client's headers do.
  const std::string path = PathOnly(call->path.rest);
  const bool openai_path = path.find("/chat/completions") != std::string::npos ||
                           path.find("/responses") != std::string::npos ||
                           path.find("/embeddings") != std::string::npos;
  call->family = !openai_path && (path.find("/messages") != std::string::npos ||
                                  call->request.headers.count("anthropic-version") != 0)
                     ? Family::kAnthropic
                     : Family::kOpenAi;
  if (stopping_) return call->Fail(503, "overloaded_error", "missyd is shutting down");
  ++active_;
  relay_threads_.Run([this, call] {
    try {
      Run(call);
    } catch (const std::exception& e) {
      spdlog::error("proxy: {} {} failed: {}", call->request.method, PathOnly(call->path.rest),
                    e.what());
      call->Fail(500, "api_error", std::string("missyd proxy: internal error: ") + e.what());
    }
    call->exchange.reset();
    std::lock_guard<std::mutex> lock(mu_);
    if (--active_ == 0) idle_.notify_all();
  });
}

std::shared_ptr<BodyWatch> ProxyService::WatchBody(const HttpRequest& head) const {
  if (head.method != "POST") return nullptr;
  const std::optional<Api> api = ManagedApi(PathOnly(SplitPath(head.target).rest));
  return api ? parse_cache_.Watch(*api) : nullptr;
}

void ProxyService::Run(const std::shared_ptr<Call>& call) {
  const ProxyConfig& cfg = call->config->proxy;
  if (!cfg.token_file.empty()) {
    const Result<std::string> read = ReadTokenFile(cfg.token_file);
    if (!read.ok()) return call->Fail(500, "api_error", "missyd proxy: " + read.status().message());
    const std::string& token = *read;
    auto h = call->request.headers.find("x-missy-token");
    const std::string given = h != call->request.headers.end() ? h->second : call->path.token;
    if (!TokenEquals(given, token)) {
      services_.deps.audit->Emit(AuditRecord{
          "proxy.refused", "security", "deny", "",
          AuditDetail().Add("reason", "token").Add("listener", call->request.listener)});
      return call->Fail(401, "authentication_error",
                        "missyd proxy: a proxy token is required (X-Missy-Token header or a "
                        "/t/TOKEN path prefix; see context.proxy.token_file)");
    }
  }
  const std::string path = PathOnly(call->path.rest);
  if (call->request.method == "POST") {
    if (path == "/v1/messages/count_tokens" || path == "/messages/count_tokens") {
      return CountTokens(*call);
    }
    // A Responses request chained by previous_response_id: the provider holds its history.
    const std::optional<Api> api = ManagedApi(path);
    if (api && (*api != Api::kResponses ||
                call->request.body.find("\"previous_response_id\"") == std::string::npos)) {
      return Managed(*call, *api);
    }
  }
  Passthrough(*call);
}

void ProxyService::Passthrough(Call& call, std::string reason) {
  std::string model;
  if (reason.empty()) reason = "not managed";
  if (!call.request.body.empty()) {
    boost::system::error_code ec;
    json::value v = json::parse(call.request.body, ec);
    if (!ec && v.is_object()) {
      if (const json::value* m = v.get_object().if_contains("model"); m && m->is_string()) {
        model = std::string(m->get_string());
      }
      if (v.get_object().contains("previous_response_id")) {
        reason = "previous_response_id: the provider holds the history";
      }
    }
  }
  Result<UpstreamTarget> up = upstreams_.For(*call.config, call.family, model, call.path.rest);
  if (!up.ok()) return call.Fail(500, "api_error", "missyd proxy: " + up.status().message());
  RelayOutcome out =
      Relay(*up, call.request.method, ForwardHeaders(call.request.headers, up->credentials),
            call.request.body, *call.exchange, nullptr);
  EndRelayed(out);
  call.AnswerUnrelayed(out, up->base);
  services_.deps.audit->Emit(AuditRecord{
      "proxy.request", "provider", out.status >= 200 && out.status < 300 ? "allow" : "error",
      call.path.session,
      AuditDetail()
          .Add("api", call.family == Family::kAnthropic ? "anthropic" : "openai")
          .Add("method", call.request.method)
          .Add("path", PathOnly(call.path.rest))
          .Add("managed", false)
          .Add("reason", reason)
          .Add("model", model)
          .Add("upstream", up->base)
          .Add("upstream_status", out.status)
          .Add("first_byte_ms", out.status != 0 ? MsBetween(call.start, out.head_at) : 0)
          .Add("duration_ms", MsSince(call.start))});
  CountRequest(services_.deps.metrics, "passthrough", up->base, out, call.start);
}

}  // namespace missy::proxy

// What a proxied request carries through ProxyService (internal to daemon/proxy).
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "daemon/net/server.h"
#include "daemon/proxy/anthropic_wire.h"
#include "daemon/proxy/chat_wire.h"
#include "daemon/proxy/proxy_service.h"
#include "daemon/proxy/relay.h"
#include "daemon/proxy/upstreams.h"

namespace missy::proxy {

using SteadyClock = std::chrono::steady_clock;

inline int64_t MsSince(SteadyClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t).count();
}

inline int64_t MsBetween(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

// Waits for a Done<T> continuation (relay threads may block).
template <typename T, typename Start>
Result<T> Await(Start start) {
  std::promise<Result<T>> promise;
  std::future<Result<T>> future = promise.get_future();
  start([&promise](Result<T> r) { promise.set_value(std::move(r)); });
  return future.get();
}

// "/s/{name}/t/{token}/v1/..." (either prefix optional, in that order), split.
struct Path {
  std::string session;
  std::string token;
  std::string rest;  // "/v1/messages?beta=true"
};

inline Path SplitPath(std::string_view target) {
  Path p;
  const auto take = [&](std::string_view prefix, std::string& into) {
    if (!target.starts_with(prefix)) return;
    std::string_view tail = target.substr(prefix.size());
    size_t slash = tail.find('/');
    into = std::string(tail.substr(0, slash));
    target = slash == std::string_view::npos ? std::string_view("/") : tail.substr(slash);
  };
  take("/s/", p.session);
  take("/t/", p.token);
  p.rest = std::string(target);
  return p;
}

inline std::string PathOnly(const std::string& rest) { return rest.substr(0, rest.find('?')); }

struct ProxyService::Call {
  HttpRequest request;
  std::shared_ptr<HttpExchange> exchange;
  std::shared_ptr<const DaemonConfig> config;
  Path path;
  Family family = Family::kOpenAi;
  SteadyClock::time_point start = SteadyClock::now();

  // An error in the API's own shape.
  void Fail(int status, std::string_view type, std::string_view message,
            std::string_view code = {}) {
    HttpResponse r;
    r.status = status;
    r.body = family == Family::kAnthropic
                 ? AnthropicError(type, message)
                 : OpenAiError(type, message, code.empty() ? type : code);
    exchange->Send(std::move(r));
  }

  // What the agent gets when the answer was not relayed: the upstream's held answer as it
  // came, or 502 (no answer) / 504 (too slow) in the API's shape.
  void AnswerUnrelayed(const RelayOutcome& out, const std::string& upstream) {
    if (out.relayed) return;
    if (out.status != 0 && !out.failed) return SendHeld(*exchange, out);
    const bool timeout = out.failure.kind == provider::ProviderErrorKind::kTimeout;
    Fail(timeout ? 504 : 502, "api_error",
         "missyd proxy: the upstream " + upstream + " did not answer: " + out.failure.message);
  }
};

}  // namespace missy::proxy

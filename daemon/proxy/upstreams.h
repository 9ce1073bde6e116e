// Upstreams: where the proxy sends a request. An Anthropic-shaped request goes to
// context.proxy.upstreams.anthropic, an OpenAI-shaped one to .openai, with the agent's
// own credentials; a context.proxy.routes entry whose model glob matches sends it to a
// providers.<name> entry instead (its base_url, and its api_key when it has one). One
// HttpTransport per base URL, kept (its kept-alive connections are reused). Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "config/config.h"
#include "core/status.h"
#include "daemon/provider/http_transport.h"
#include "daemon/provider/provider_wire.h"

namespace missy::proxy {

enum class Family { kAnthropic, kOpenAi };

struct UpstreamTarget {
  std::shared_ptr<const provider::HttpTransport> transport;
  std::string target;                // the request target: path and query
  std::string base;                  // the base URL, for logs (no credentials)
  std::string route;                 // the providers.<name> a route chose ("" = default)
  provider::HeaderList credentials;  // replace the agent's (a route's api_key), else empty
  int64_t timeout_ms = 600000;
};

class Upstreams {
 public:
  // `path_and_query` as the agent sent it, without a /s/{name} prefix ("/v1/messages?beta=true").
  Result<UpstreamTarget> For(const DaemonConfig& config, Family family, std::string_view model,
                             std::string_view path_and_query);

 private:
  Result<std::shared_ptr<const provider::HttpTransport>> Transport(const std::string& base_url,
                                                                   const std::string& ca_file);
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const provider::HttpTransport>> transports_;
};

}  // namespace missy::proxy

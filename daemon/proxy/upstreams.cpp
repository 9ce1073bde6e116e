#include "daemon/proxy/upstreams.h"

#include <fnmatch.h>

#include "daemon/provider/provider_client.h"
#include "daemon/provider/provider_url.h"

namespace missy::proxy {

Result<std::shared_ptr<const provider::HttpTransport>> Upstreams::Transport(
    const std::string& base_url, const std::string& ca_file) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = transports_.find(base_url);
  if (it != transports_.end()) return it->second;
  Result<provider::BaseUrl> url = provider::ParseBaseUrl(base_url);
  if (!url.ok()) return url.status();
  auto transport = provider::HttpTransport::Make(std::move(*url), ca_file);
  if (!transport.ok()) return transport.status();
  std::shared_ptr<const provider::HttpTransport> shared = std::move(*transport);
  transports_.emplace(base_url, shared);
  return shared;
}

Result<UpstreamTarget> Upstreams::For(const DaemonConfig& config, Family family,
                                      std::string_view model, std::string_view path_and_query) {
  UpstreamTarget out;
  out.timeout_ms = config.proxy.timeout_ms;
  std::string base = family == Family::kAnthropic ? config.proxy.anthropic_upstream
                                                  : config.proxy.openai_upstream;
  for (const ProxyRoute& route : config.proxy.routes) {
    if (model.empty() || fnmatch(route.model.c_str(), std::string(model).c_str(), 0) != 0) continue;
    auto p = config.providers.find(route.provider);
    if (p == config.providers.end() || p->second.base_url.empty()) continue;
    base = p->second.base_url;
    out.route = route.provider;
    if (!p->second.api_key.empty()) {
      out.credentials = provider::AuthHeaders(
          family == Family::kAnthropic ? provider::ProviderKind::kAnthropic
                                       : provider::ProviderKind::kOpenAi,
          p->second.api_key);
    }
    if (p->second.timeout_s > 0) out.timeout_ms = p->second.timeout_s * 1000;
    break;
  }
  auto transport = Transport(base, "");
  if (!transport.ok()) {
    return Status::InvalidArgument("the upstream " + (out.route.empty() ? "base URL" : "of route " + out.route) +
                                   " is not usable: " + transport.status().message());
  }
  out.transport = std::move(*transport);
  out.base = out.transport->url().ToString();
  std::string_view path = path_and_query;
  std::string_view query;
  if (size_t q = path.find('?'); q != std::string_view::npos) {
    query = path.substr(q);
    path = path.substr(0, q);
  }
  std::string endpoint(path);
  if (!endpoint.starts_with("/v1/") && endpoint != "/v1") endpoint = "/v1" + endpoint;
  out.target = out.transport->url().Target(endpoint) + std::string(query);
  return out;
}

}  // namespace missy::proxy

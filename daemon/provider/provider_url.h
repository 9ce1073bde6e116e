// BaseUrl: a provider's base_url, parsed. Pure; no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace missy::provider {

struct BaseUrl {
  bool tls = false;         // https
  std::string host;         // lower-cased; an IPv6 literal without its brackets
  uint16_t port = 0;        // explicit or the scheme's default
  std::string path_prefix;  // "" or "/v1", "/api/openai/v1"...: no trailing slash
  bool ip_literal = false;  // host is an IPv4 or IPv6 address (no SNI is sent then)

  // The Host header: host, with ":port" when not the scheme's default.
  std::string HostHeader() const;
  // "https://api.openai.com/v1": scheme, host, non-default port, prefix.
  std::string ToString() const;
  // The request target for an endpoint under /v1 ("/v1/chat/completions"), with the
  // prefix's own "/v1" not doubled: prefix "/v1" + "/v1/messages" → "/v1/messages".
  std::string Target(std::string_view v1_endpoint) const;
};

// Accepts http(s)://host[:port][/path]; a trailing slash is dropped. Refuses credentials
// ("user:pass@"), queries and fragments. Error messages never echo the URL (it might hold a
// secret).
Result<BaseUrl> ParseBaseUrl(std::string_view url);

}  // namespace missy::provider

#include "daemon/provider/provider_url.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

namespace missy::provider {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

bool ValidHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

}  // namespace

std::string BaseUrl::HostHeader() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (port != (tls ? 443 : 80)) h += ":" + std::to_string(port);
  return h;
}

std::string BaseUrl::ToString() const {
  return std::string(tls ? "https://" : "http://") + HostHeader() + path_prefix;
}

std::string BaseUrl::Target(std::string_view v1_endpoint) const {
  std::string_view endpoint = v1_endpoint;
  constexpr std::string_view kV1 = "/v1";
  const bool prefix_has_v1 = path_prefix.size() >= kV1.size() &&
                             std::string_view(path_prefix).substr(path_prefix.size() - 3) == kV1;
  if (prefix_has_v1 && endpoint.starts_with(kV1)) endpoint.remove_prefix(kV1.size());
  return path_prefix + std::string(endpoint);
}

Result<BaseUrl> ParseBaseUrl(std::string_view url) {
  BaseUrl out;
  const std::string lowered = Lower(url.substr(0, std::min<size_t>(url.size(), 8)));
  if (lowered.starts_with("https://")) {
    out.tls = true;
    url.remove_prefix(8);
  } else if (lowered.starts_with("http://")) {
    url.remove_prefix(7);
  } else {
    return Status::InvalidArgument("base_url must start with http:// or https://", "base_url");
  }
  if (url.find_first_of("?#") != std::string_view::npos) {
    return Status::InvalidArgument("base_url must not have a query or fragment", "base_url");
  }
  const size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : url.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return Status::InvalidArgument("base_url must not carry credentials; use api_key", "base_url");
  }
  std::string_view port_text;
  if (authority.starts_with("[")) {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("base_url has an unterminated IPv6 address", "base_url");
    }
    out.host = Lower(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return Status::InvalidArgument("base_url has a bad port", "base_url");
      port_text = rest.substr(1);
    }
    if (!IsIpLiteral(out.host)) {
      return Status::InvalidArgument("base_url has a bad IPv6 address", "base_url");
    }
  } else {
    const size_t colon = authority.find(':');
    out.host = Lower(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    if (!std::all_of(out.host.begin(), out.host.end(), ValidHostChar)) {
      return Status::InvalidArgument("base_url has a bad host name", "base_url");
    }
  }
  if (out.host.empty()) return Status::InvalidArgument("base_url has no host", "base_url");
  out.ip_literal = IsIpLiteral(out.host);
  out.port = out.tls ? 443 : 80;
  if (!port_text.empty() || (authority.ends_with(":"))) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 ||
        value > 65535) {
      return Status::InvalidArgument("base_url has a bad port", "base_url");
    }
    out.port = static_cast<uint16_t>(value);
  }
  while (path.ends_with("/")) path.remove_suffix(1);
  for (char c : path) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return Status::InvalidArgument("base_url path has a space or control character", "base_url");
    }
  }
  out.path_prefix = std::string(path);
  return out;
}

}  // namespace missy::provider

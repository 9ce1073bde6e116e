#include "core/listen_address.h"

#include <arpa/inet.h>

#include <charconv>

namespace missy {
namespace {

Result<uint16_t> ParsePort(std::string_view text, std::string_view whole) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 ||
      value > 65535) {
    return Status::InvalidArgument("listen address '" + std::string(whole) +
                                   "' needs a port from 1 to 65535");
  }
  return static_cast<uint16_t>(value);
}

Status NotLoopback(std::string_view whole) {
  return Status::InvalidArgument(
      "listen address '" + std::string(whole) +
      "' is not a loopback address: use 127.0.0.1:PORT, [::1]:PORT or unix:PATH (the proxy "
      "forwards your API keys, so it never listens where another machine could reach it)");
}

}  // namespace

std::string ListenAddress::ToString() const {
  switch (kind) {
    case Kind::kUnix:
      return "unix:" + path;
    case Kind::kTcp6:
      return "[" + host + "]:" + std::to_string(port);
    case Kind::kTcp4:
      break;
  }
  return host + ":" + std::to_string(port);
}

std::string ListenAddress::HttpBase() const {
  if (kind == Kind::kUnix) return {};
  return "http://" + ToString();
}

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  ListenAddress out;
  if (text.substr(0, 5) == "unix:") {
    out.kind = ListenAddress::Kind::kUnix;
    out.path = std::string(text.substr(5));
    if (out.path.empty()) {
      return Status::InvalidArgument("listen address 'unix:' needs a socket path");
    }
    return out;
  }
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::InvalidArgument("listen address '" + std::string(text) +
                                     "' must be [::1]:PORT");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    in6_addr a6{};
    if (inet_pton(AF_INET6, std::string(host).c_str(), &a6) != 1) return NotLoopback(text);
    if (!IN6_IS_ADDR_LOOPBACK(&a6)) return NotLoopback(text);
    out.kind = ListenAddress::Kind::kTcp6;
    out.host = "::1";
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument("listen address '" + std::string(text) +
                                     "' needs a port (127.0.0.1:PORT)");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host == "localhost") host = "127.0.0.1";
    in_addr a4{};
    if (inet_pton(AF_INET, std::string(host).c_str(), &a4) != 1) return NotLoopback(text);
    if ((ntohl(a4.s_addr) >> 24) != 127) return NotLoopback(text);
    out.kind = ListenAddress::Kind::kTcp4;
    out.host = std::string(host);
  }
  Result<uint16_t> p = ParsePort(port, text);
  if (!p.ok()) return p.status();
  out.port = *p;
  return out;
}

}  // namespace missy

// ListenAddress: where a proxy listener binds, as written in config.yaml
// (context.proxy.listen). Only addresses that no other machine can reach are accepted:
// "127.0.0.1:PORT" (or any 127.x.y.z), "[::1]:PORT", "localhost:PORT" (= 127.0.0.1) and
// "unix:PATH". Pure; no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace missy {

struct ListenAddress {
  enum class Kind { kTcp4, kTcp6, kUnix };
  Kind kind = Kind::kTcp4;
  std::string host;  // "127.0.0.1", "::1" (no brackets); empty for kUnix
  uint16_t port = 0;  // 1-65535 for TCP
  std::string path;   // kUnix: the socket path as written (may start with "~")

  // The address as it is written in config ("127.0.0.1:8788", "[::1]:8788", "unix:/p").
  std::string ToString() const;
  // "http://127.0.0.1:8788" for TCP; "" for kUnix.
  std::string HttpBase() const;
  bool operator==(const ListenAddress&) const = default;
};

// Parses one listen address. kInvalidArgument, saying what was wrong, for anything else: a
// host that is not loopback ("0.0.0.0:8788", "192.168.1.2:80", "example.com:80"), a
// missing or out-of-range port, an empty unix path.
Result<ListenAddress> ParseListenAddress(std::string_view text);

}  // namespace missy

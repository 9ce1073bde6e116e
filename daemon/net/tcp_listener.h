// Loopback TCP listening sockets for the proxy listeners (internal to daemon/net; no
// Asio).
#pragma once

#include <string>

#include "core/listen_address.h"
#include "core/status.h"

namespace missy::net {

struct TcpListener {
  int fd = -1;          // listening, close-on-exec; the caller owns it
  std::string address;  // as bound: "127.0.0.1:41234", "[::1]:8788" (the actual port)
};

// Binds `address` (kTcp4 or kTcp6) with SO_REUSEADDR and listens. Port 0 binds a free
// port, reported in TcpListener::address. Errors name the address: kInvalidArgument for
// a host that is not loopback (127.0.0.0/8, ::1) or a kUnix address, kAlreadyExists when
// the port is in use, kInternal otherwise (EADDRNOTAVAIL for ::1 on a host without IPv6
// among them).
Result<TcpListener> BindTcpListener(const ListenAddress& address);

// Checks a listening socket bound by someone else (socket activation: missyd-proxy.socket)
// and reports its address as bound (getsockname). It must be a listening TCP socket
// (AF_INET or AF_INET6) bound to a loopback address: 127.0.0.0/8, ::1, or 127.0.0.0/8
// IPv4-mapped on an AF_INET6 socket. Otherwise kInvalidArgument naming the descriptor
// (and the address, when it is the address that is refused); `fd` is then left open, the
// caller still owns it. On success `fd` is made close-on-exec and returned in
// TcpListener::fd.
Result<TcpListener> AdoptTcpListener(int fd);

}  // namespace missy::net

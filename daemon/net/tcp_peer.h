// Who is on the other end of a loopback TCP connection, as identd finds it: the uid the
// kernel's socket table (/proc/net/tcp, /proc/net/tcp6) lists for the client's socket
// (internal to daemon/net; no Asio).
//
// Both ends of a loopback connection are sockets of this machine, so the client's end is
// a row of the table: its local address is our peer's, its remote address is ours.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace missy::net {

// An IPv4 or IPv6 address and port. IPv4 is held IPv4-mapped (::ffff:a.b.c.d), so that a
// row of /proc/net/tcp6 for an IPv6 client of an IPv4 listener compares equal.
struct SockAddr {
  std::array<uint8_t, 16> addr{};  // network byte order
  uint16_t port = 0;               // host byte order

  // "127.0.0.1" or "::1" (no brackets); nullopt when `ip` is neither.
  static std::optional<SockAddr> Parse(std::string_view ip, uint16_t port);
  // AF_INET or AF_INET6; nullopt for another family.
  static std::optional<SockAddr> From(const sockaddr* sa, socklen_t len);
  bool IsV4Mapped() const;
  std::string ToString() const;  // "127.0.0.1:41234", "[::1]:41234"
  bool operator==(const SockAddr&) const = default;
};

// The uid column of the row of `proc_net_text` (the text of /proc/net/tcp or tcp6, header
// line included) whose local address is `local_of_client` and whose remote address is
// `remote_of_client`. Addresses are decoded as this host's kernel prints them: hex words
// of 32 bits in host byte order (one for IPv4, four for IPv6), the port in hex. Rows in
// TIME_WAIT are skipped (their uid column is 0, whoever owned the socket); so are lines
// that do not parse. nullopt when no row matches.
std::optional<uint32_t> FindSocketUid(std::string_view proc_net_text,
                                      const SockAddr& local_of_client,
                                      const SockAddr& remote_of_client);

// The uid of the client connected to `fd` (a connected TCP socket of this process), read
// from /proc/self/net/tcp and tcp6 (what /proc/net/tcp links to; readable under systemd's
// ProcSubset=pid, which hides /proc/net). nullopt when it is not found (the row is not
// listed yet, the files cannot be read, `fd` is not TCP). Reads files: do not call it
// where a few milliseconds matter.
std::optional<uint32_t> TcpPeerUid(int fd);

}  // namespace missy::net

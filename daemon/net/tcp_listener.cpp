// Loopback TCP listening sockets. See tcp_listener.h.
#include "daemon/net/tcp_listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <optional>
#include <string>

#include "daemon/net/tcp_peer.h"

namespace missy::net {

Result<TcpListener> BindTcpListener(const ListenAddress& address) {
  const std::string name = address.ToString();
  if (address.kind == ListenAddress::Kind::kUnix) {
    return Status::InvalidArgument("not a TCP address: " + name);
  }
  const bool v6 = address.kind == ListenAddress::Kind::kTcp6;
  sockaddr_storage storage{};
  socklen_t len = 0;
  bool loopback = false;
  if (v6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(address.port);
    loopback = inet_pton(AF_INET6, address.host.c_str(), &in6->sin6_addr) == 1 &&
               IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    len = sizeof(sockaddr_in6);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(address.port);
    loopback = inet_pton(AF_INET, address.host.c_str(), &in->sin_addr) == 1 &&
               (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    len = sizeof(sockaddr_in);
  }
  if (!loopback) {
    return Status::InvalidArgument("proxy listen address " + name +
                                   " is not a loopback address; refusing to bind it");
  }

  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return Status::Internal("cannot listen on " + name + ": socket(): " + strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (v6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), len) != 0) {
    int err = errno;
    close(fd);
    if (err == EADDRINUSE) {
      return Status::AlreadyExists("cannot listen on " + name +
                                   ": the port is in use (another missyd, or another program)");
    }
    return Status::Internal("cannot bind " + name + ": " + strerror(err));
  }
  if (listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    close(fd);
    return Status::Internal("cannot listen on " + name + ": " + strerror(err));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  std::optional<SockAddr> actual;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) == 0) {
    actual = SockAddr::From(reinterpret_cast<sockaddr*>(&bound), bound_len);
  }
  if (!actual) {
    int err = errno;
    close(fd);
    return Status::Internal("cannot read the address bound for " + name + ": " + strerror(err));
  }
  ListenAddress as_bound = address;
  as_bound.port = actual->port;
  return TcpListener{fd, as_bound.ToString()};
}

Result<TcpListener> AdoptTcpListener(int fd) {
  const std::string name = "adopted proxy socket (descriptor " + std::to_string(fd) + ")";
  int type = 0, protocol = 0, listening = 0;
  socklen_t len = sizeof(type);
  if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
    return Status::InvalidArgument(name + " is not a stream socket");
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0 ||
      (bound.ss_family != AF_INET && bound.ss_family != AF_INET6)) {
    return Status::InvalidArgument(name + " is not a TCP socket (AF_INET or AF_INET6)");
  }
  len = sizeof(protocol);
  if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0 || protocol != IPPROTO_TCP) {
    return Status::InvalidArgument(name + " is not a TCP socket");
  }
  len = sizeof(listening);
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0) {
    return Status::InvalidArgument(name + " is not listening");
  }
  std::optional<SockAddr> actual = SockAddr::From(reinterpret_cast<sockaddr*>(&bound), bound_len);
  if (!actual) return Status::InvalidArgument(name + " has no IP address");
  // IPv4 is held IPv4-mapped: 127.0.0.0/8 is ::ffff:127.x.y.z.
  static constexpr std::array<uint8_t, 16> kV6Loopback{0, 0, 0, 0, 0, 0, 0, 0,
                                                       0, 0, 0, 0, 0, 0, 0, 1};
  const bool loopback =
      actual->addr == kV6Loopback || (actual->IsV4Mapped() && actual->addr[12] == 127);
  if (!loopback) {
    return Status::InvalidArgument(name + " is bound to " + actual->ToString() +
                                   ", not a loopback address; refusing to serve it");
  }
  (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
  return TcpListener{fd, actual->ToString()};
}

}  // namespace missy::net

// FreeLoopbackPort, header-only: the tests (through test_util.h) and the benches that
// start a real server (bench/broker_*_bench.cpp, through nats_test_util.h) share it
// without linking the tests' gtest helpers.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace missy::testing {

// A TCP port on 127.0.0.1 that nothing listens on now (bound, read, closed: another
// process may take it meanwhile, which the tests that use it accept).
inline uint16_t FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  uint16_t port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

}  // namespace missy::testing

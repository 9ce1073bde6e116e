// Socket activation (sd_listen_fds(3)): the listening sockets a service manager passed
// to this process, by name. missyd.socket and missyd-audit.socket name theirs "api" and
// "audit" (FileDescriptorName=), missyd-proxy.socket "proxy" (loopback TCP); unnamed ones
// are taken in order (api, then audit).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace missy::ops {

struct ActivatedSockets {
  int api_fd = -1;         // -1: not passed (bind the configured path)
  int audit_fd = -1;       // -1: not passed
  std::string api_path;    // where api_fd is bound (getsockname; "@name" if abstract)
  std::string audit_path;  // likewise for audit_fd
  // The sockets named "proxy", in the order passed: listening TCP sockets bound to a
  // loopback address (proxy mode's listeners), and each one's address as bound
  // ("127.0.0.1:8788", "[::1]:8788"), parallel.
  std::vector<int> proxy_fds;
  std::vector<std::string> proxy_addresses;
  bool any() const { return api_fd >= 0 || audit_fd >= 0 || !proxy_fds.empty(); }
};

// Takes the descriptors passed to this process: only when LISTEN_PID is this process's
// pid; LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are unset afterwards and the
// descriptors made close-on-exec, so nothing spawned later inherits them. The caller
// owns the returned descriptors. Descriptors named "proxy" (any number) are the proxy
// listeners; descriptors named none of "api", "audit", "proxy" fill the roles api and
// audit left, in order; any beyond that are closed (logged). InvalidArgument naming the
// descriptor when a taken "api" or "audit" descriptor is not a listening AF_UNIX stream
// socket, when a "proxy" one is not a listening TCP socket (AF_INET, AF_INET6) bound to a
// loopback address (127.0.0.0/8, ::1; proxied requests carry API keys: a socket other
// machines reach is never served), or when "api" or "audit" is passed twice; every
// descriptor passed is then closed. Nothing passed: an empty ActivatedSockets.
Result<ActivatedSockets> TakeActivatedSockets();

}  // namespace missy::ops

// Socket activation (sd_listen_fds(3)): the listening sockets a service manager passed
// to this process, by name. missyd.socket names them "api" and "audit"
// (FileDescriptorName=); unnamed ones are taken in order (api, then audit).
#pragma once

#include <string>

#include "core/status.h"

namespace missy::ops {

struct ActivatedSockets {
  int api_fd = -1;         // -1: not passed (bind the configured path)
  int audit_fd = -1;       // -1: not passed
  std::string api_path;    // where api_fd is bound (getsockname; "@name" if abstract)
  std::string audit_path;  // likewise for audit_fd
  bool any() const { return api_fd >= 0 || audit_fd >= 0; }
};

// Takes the descriptors passed to this process: only when LISTEN_PID is this process's
// pid; LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are unset afterwards and the
// descriptors made close-on-exec, so nothing spawned later inherits them. The caller
// owns the returned descriptors. Descriptors named neither "api" nor "audit" fill the
// roles left, in order; any beyond that are closed (logged). InvalidArgument when a
// taken descriptor is not a listening AF_UNIX stream socket, or "api" or "audit" is
// passed twice. Nothing passed: an empty ActivatedSockets.
Result<ActivatedSockets> TakeActivatedSockets();

}  // namespace missy::ops

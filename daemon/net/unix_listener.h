// Socket files and peer credentials of the Unix-socket servers (internal to daemon/net).
//
// BindUnixListener creates the socket's directory 0700, replaces a stale socket file
// (nothing accepting on it), refuses a live one or a non-socket (kAlreadyExists) and
// leaves a listening socket chmod 0600. SocketFile::Unlink removes the file only while it
// is still the inode this process bound.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/status.h"

namespace missy::net {

struct SocketFile {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  bool bound = false;

  // Idempotent.
  void Unlink();
};

// A listening, close-on-exec socket descriptor bound to `path` (the caller owns it);
// kInvalidArgument for an empty path or one too long for sockaddr_un.
Result<int> BindUnixListener(const std::string& path, SocketFile* file);

struct PeerCred {
  bool ok = false;  // SO_PEERCRED answered
  uint32_t uid = std::numeric_limits<uint32_t>::max();
  int32_t pid = 0;
};

PeerCred GetPeerCred(int fd);

}  // namespace missy::net

// What a server's listening options name (internal to daemon/net; no Asio): the check
// that they are consistent, and the ownership of the descriptors they hand over.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/status.h"
#include "daemon/net/server.h"

namespace missy::net {

// Refuses option sets that would bind one socket file twice, serve one descriptor twice
// or leave proxy requests without a handler.
Status ValidateListenOptions(const NetOptions& options);

// The listening descriptors NetOptions hands over (socket activation): the server owns
// them from Create on. Closes, when destroyed, every one no listener took.
class AdoptedFds {
 public:
  explicit AdoptedFds(const NetOptions& options) {
    Add(options.api_listen_fd);
    Add(options.audit_listen_fd);
    for (int fd : options.proxy_listen_fds) Add(fd);
  }
  AdoptedFds(const AdoptedFds&) = delete;
  AdoptedFds& operator=(const AdoptedFds&) = delete;
  ~AdoptedFds() {
    for (int fd : fds_) close(fd);
  }
  // `fd` is the caller's from now on (-1 stays -1).
  int Take(int fd) {
    fds_.erase(std::remove(fds_.begin(), fds_.end(), fd), fds_.end());
    return fd;
  }

 private:
  void Add(int fd) {  // once each, so that a descriptor given twice is closed once
    if (fd >= 0 && std::find(fds_.begin(), fds_.end(), fd) == fds_.end()) fds_.push_back(fd);
  }
  std::vector<int> fds_;
};

// An accepted descriptor waiting for its peer check; closed unless released.
class OwnedFd {
 public:
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace missy::net

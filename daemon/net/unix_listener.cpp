// Socket files and peer credentials. See unix_listener.h.
#include "daemon/net/unix_listener.h"

#include <errno.h>
#include <spdlog/spdlog.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>

#include "daemon/net/server.h"

namespace missy {

bool PeerAllowed(uint32_t peer_uid, uint32_t self_uid) { return peer_uid == self_uid; }

namespace net {
namespace {

std::string Errno(int err) { return std::string(strerror(err)); }

// Creates the missing components of `dir` with mode 0700.
Status PrepareDirectory(const std::filesystem::path& dir) {
  if (dir.empty()) return Status::Ok();
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(dir.string() + " is not a directory");
    if ((st.st_mode & 0077) != 0) {
      spdlog::warn("socket directory {} is accessible by other users (mode {:o})", dir.string(),
                   st.st_mode & 07777);
    }
    return Status::Ok();
  }
  MISSY_RETURN_IF_ERROR(PrepareDirectory(dir.parent_path()));
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::Internal("cannot create directory " + dir.string() + ": " + Errno(errno));
  }
  if (chmod(dir.c_str(), 0700) != 0) {
    return Status::Internal("cannot chmod 0700 " + dir.string() + ": " + Errno(errno));
  }
  return Status::Ok();
}

// True if something accepts connections on `path`.
bool SomethingListens(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int err = errno;
  close(fd);
  // EAGAIN: a listener whose backlog is full is still a live listener.
  return rc == 0 || err == EAGAIN || err == EINPROGRESS;
}

}  // namespace

void SocketFile::Unlink() {
  if (!bound) return;
  bound = false;
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && st.st_dev == dev && st.st_ino == ino) {
    unlink(path.c_str());
  }
}

Result<int> BindUnixListener(const std::string& path, SocketFile* file) {
  sockaddr_un addr{};
  if (path.empty()) return Status::InvalidArgument("socket path is empty");
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("socket path is too long (" + std::to_string(path.size()) +
                                   " bytes, at most " + std::to_string(sizeof(addr.sun_path) - 1) +
                                   "): " + path);
  }
  MISSY_RETURN_IF_ERROR(PrepareDirectory(std::filesystem::path(path).parent_path()));

  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::AlreadyExists(path + " exists and is not a socket; refusing to replace it");
    }
    if (SomethingListens(path)) {
      return Status::AlreadyExists("another missyd is listening on " + path);
    }
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::Internal("cannot remove stale socket " + path + ": " + Errno(errno));
    }
    spdlog::info("replaced stale socket file {}", path);
  }

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Internal("socket(): " + Errno(errno));
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(fd);
    if (err == EADDRINUSE) return Status::AlreadyExists("another missyd is listening on " + path);
    return Status::Internal("cannot bind " + path + ": " + Errno(err));
  }
  // The directory is 0700 already; the chmod happens before listen(), so nobody can
  // connect while the file still has the umask's mode.
  if (chmod(path.c_str(), 0600) != 0 || lstat(path.c_str(), &st) != 0) {
    int err = errno;
    close(fd);
    unlink(path.c_str());
    return Status::Internal("cannot chmod 0600 " + path + ": " + Errno(err));
  }
  if (listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    close(fd);
    unlink(path.c_str());
    return Status::Internal("cannot listen on " + path + ": " + Errno(err));
  }
  file->path = path;
  file->dev = st.st_dev;
  file->ino = st.st_ino;
  file->bound = true;
  return fd;
}

PeerCred GetPeerCred(int fd) {
  PeerCred out;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof(cred)) {
    out.ok = true;
    out.uid = cred.uid;
    out.pid = cred.pid;
  }
  return out;
}

}  // namespace net
}  // namespace missy

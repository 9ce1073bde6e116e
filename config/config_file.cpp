// The config file on disk: LoadConfigFile reads and parses it, LoadOrCreateConfig first
// writes the generated default file (0600, in a 0700 directory) when there is none.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "config/config.h"

namespace missy {
namespace {

namespace fs = std::filesystem;

Status WithFile(const std::string& path, const Status& s) {
  return Status(s.code(), path + ": " + s.message(), s.field());
}

Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  return Status::Unavailable(path + ": cannot " + what + ": " + std::strerror(err));
}

// Writes `text` to a new file (O_EXCL, mode 0600) and fsyncs it. EEXIST is returned as
// kAlreadyExists so a lost creation race can be told apart; other errors remove the file.
Status WriteNewPrivateFile(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return Status::AlreadyExists(path + ": exists");
    return ErrnoStatus("create", path, errno);
  }
  size_t done = 0;
  int err = 0;
  if (::fchmod(fd, 0600) != 0) err = errno;
  while (err == 0 && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(path.c_str());
    return ErrnoStatus("write", path, err);
  }
  return Status::Ok();
}

}  // namespace

Result<DaemonConfig> LoadConfigFile(const std::string& path, const std::string& missy_home) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(path + ": not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(path + ": no such file");
    return ErrnoStatus("read", path, err);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ErrnoStatus("read", path, errno);
  Result<DaemonConfig> r = ParseConfig(ss.str(), missy_home);
  if (!r.ok()) return WithFile(path, r.status());
  return r;
}

Result<DaemonConfig> LoadOrCreateConfig(const std::string& path, const std::string& missy_home,
                                        bool* created) {
  if (created != nullptr) *created = false;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return LoadConfigFile(path, missy_home);
  if (errno != ENOENT) return ErrnoStatus("stat", path, errno);

  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
      fs::create_directories(dir, ec);
      if (ec) return ErrnoStatus("create directory", dir.string(), ec.value());
      if (::chmod(dir.c_str(), 0700) != 0) return ErrnoStatus("chmod", dir.string(), errno);
    }
  }
  Status written = WriteNewPrivateFile(path, DefaultConfigYaml());
  if (written.code() == StatusCode::kAlreadyExists) {
    return LoadConfigFile(path, missy_home);  // lost a race: fine
  }
  if (!written.ok()) return written;
  if (created != nullptr) *created = true;
  return LoadConfigFile(path, missy_home);
}

}  // namespace missy

#include "daemon/audit/audit_mirror.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace missy {
namespace {

Result<int> OpenFile(const std::string& path, int64_t* size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::Unavailable("audit mirror " + path + ": " + std::strerror(errno));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::Unavailable("audit mirror " + path + ": " + std::strerror(err));
  }
  // An existing file keeps its content but is made private like a new one.
  (void)::fchmod(fd, 0600);
  *size = static_cast<int64_t>(st.st_size);
  return fd;
}

std::string Numbered(const std::string& path, int n) { return path + "." + std::to_string(n); }

}  // namespace

Result<std::unique_ptr<AuditMirror>> AuditMirror::Open(AuditMirrorOptions options) {
  if (options.path.empty()) return Status::InvalidArgument("audit mirror path is empty");
  if (options.max_bytes < 1) options.max_bytes = 1;
  if (options.files < 1) options.files = 1;
  int64_t size = 0;
  Result<int> fd = OpenFile(options.path, &size);
  if (!fd.ok()) return fd.status();
  return std::unique_ptr<AuditMirror>(new AuditMirror(std::move(options), *fd, size));
}

AuditMirror::AuditMirror(AuditMirrorOptions options, int fd, int64_t size)
    : options_(std::move(options)), fd_(fd), size_(size) {
  flusher_ = std::thread([this] { FlushLoop(); });
}

AuditMirror::~AuditMirror() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  flusher_.join();
  if (fd_ >= 0) ::close(fd_);
}

void AuditMirror::Write(std::string_view line) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (pending_.size() + line.size() + 1 > options_.max_buffered_bytes) {
      ++stats_.dropped_lines;  // the file cannot keep up: the database still has it
      return;
    }
    pending_.append(line);
    pending_.push_back('\n');
    ++queued_;
    wake = pending_.size() >= (256u << 10);
  }
  if (wake) cv_.notify_all();
}

void AuditMirror::Flush() {
  std::unique_lock lock(mu_);
  const int64_t target = queued_;
  flush_wanted_ = true;
  cv_.notify_all();
  flushed_cv_.wait(lock, [&] { return written_ >= target || stopping_; });
}

AuditMirrorStats AuditMirror::Stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void AuditMirror::FlushLoop() {
  std::string batch;
  for (;;) {
    int64_t lines = 0;
    bool stop = false;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, options_.flush_interval, [&] {
        return stopping_ || flush_wanted_ || pending_.size() >= (256u << 10);
      });
      flush_wanted_ = false;
      batch.swap(pending_);
      lines = queued_ - written_;
      stop = stopping_;
    }
    if (!batch.empty()) {
      WriteOut(batch);
      batch.clear();
    }
    {
      std::lock_guard lock(mu_);
      written_ += lines;
    }
    flushed_cv_.notify_all();
    if (stop) {
      std::lock_guard lock(mu_);
      if (pending_.empty()) return;
    }
  }
}

void AuditMirror::WriteOut(const std::string& lines) {
  size_t from = 0;
  int64_t done = 0, dropped = 0, errors = 0, rotations = 0;
  while (from < lines.size()) {
    // As many whole lines as fit in the current file (at least one in an empty file).
    size_t end = from;
    int64_t count = 0;
    while (end < lines.size()) {
      const size_t nl = lines.find('\n', end);
      const size_t next = nl == std::string::npos ? lines.size() : nl + 1;
      const int64_t bytes = static_cast<int64_t>(next - from);
      if (size_ + bytes > options_.max_bytes && (size_ > 0 || count > 0)) break;
      end = next;
      ++count;
    }
    if (count == 0) {  // the file is full: start a new one
      if (Status st = Rotate(); !st.ok()) {
        if (!logged_error_) spdlog::warn("{}", st.message());
        logged_error_ = true;
        ++errors;
        // Keep appending to the current file rather than losing lines.
        size_ = 0;
      } else {
        ++rotations;
      }
      continue;
    }
    const std::string_view chunk(lines.data() + from, end - from);
    if (fd_ >= 0 && WriteAll(chunk)) {
      size_ += static_cast<int64_t>(chunk.size());
      done += count;
    } else {
      if (!logged_error_) {
        spdlog::warn("audit mirror {}: write failed: {}", options_.path, std::strerror(errno));
      }
      logged_error_ = true;
      ++errors;
      dropped += count;
    }
    from = end;
  }
  std::lock_guard lock(mu_);
  stats_.lines += done;
  stats_.dropped_lines += dropped;
  stats_.write_errors += errors;
  stats_.rotations += rotations;
}

Status AuditMirror::Rotate() {
  // <path>.<files> is dropped; each other one moves up by one; <path> becomes <path>.1.
  (void)::unlink(Numbered(options_.path, options_.files).c_str());
  for (int n = options_.files - 1; n >= 1; --n) {
    (void)::rename(Numbered(options_.path, n).c_str(), Numbered(options_.path, n + 1).c_str());
  }
  if (::rename(options_.path.c_str(), Numbered(options_.path, 1).c_str()) != 0 &&
      errno != ENOENT) {
    return Status::Unavailable("audit mirror " + options_.path +
                               ": cannot rotate: " + std::strerror(errno));
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  int64_t size = 0;
  Result<int> fd = OpenFile(options_.path, &size);
  if (!fd.ok()) return fd.status();
  fd_ = *fd;
  size_ = size;
  return Status::Ok();
}

bool AuditMirror::WriteAll(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace missy

// AuditMirror: an optional JSONL copy of the audit stream in a file
// (context.audit.mirror), for people who tail files rather than sockets and for log
// shippers. Every committed event's line is appended, in seq order, by a thread of its
// own (the writer thread only hands the line over). The file is created with mode 0600
// and rotated by size: <path> → <path>.1 → … → <path>.<files>, the oldest dropped. A line
// is never split across two files. The mirror is a copy: the database stays the record
// (a failed write is counted and logged once, and the events stay in the log).
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/status.h"

namespace missy {

struct AuditMirrorOptions {
  std::string path;                  // absolute
  int64_t max_bytes = 64 << 20;      // rotate before a line would take the file past this
  int files = 5;                     // rotated files kept besides the current one
  std::chrono::milliseconds flush_interval{200};  // the longest a line waits in memory
  size_t max_buffered_bytes = 16 << 20;  // lines beyond this wait are dropped (and counted)
};

struct AuditMirrorStats {
  int64_t lines = 0;          // lines written to the file
  int64_t rotations = 0;
  int64_t dropped_lines = 0;  // not written: buffer full or a write error
  int64_t write_errors = 0;
};

class AuditMirror {
 public:
  // Opens (creating, mode 0600) the mirror file; an error names the path.
  static Result<std::unique_ptr<AuditMirror>> Open(AuditMirrorOptions options);
  ~AuditMirror();  // writes out everything buffered
  AuditMirror(const AuditMirror&) = delete;
  AuditMirror& operator=(const AuditMirror&) = delete;

  // Queues one event line (without its newline). Never blocks on the file.
  void Write(std::string_view line);
  // Writes out everything queued before this call (tests, shutdown).
  void Flush();
  AuditMirrorStats Stats() const;
  const std::string& path() const { return options_.path; }

 private:
  AuditMirror(AuditMirrorOptions options, int fd, int64_t size);
  void FlushLoop();
  // Writes `lines` ('\n'-terminated) to the file, rotating between lines. Flusher only.
  void WriteOut(const std::string& lines);
  Status Rotate();
  bool WriteAll(std::string_view bytes);

  const AuditMirrorOptions options_;
  // The flusher thread's alone (and the destructor's once it stopped):
  int fd_;                     // the current file, or -1 after a failed rotation
  int64_t size_;               // bytes in the current file
  bool logged_error_ = false;  // a failure was logged (only the first is)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable flushed_cv_;
  std::string pending_;  // guarded by mu_
  int64_t queued_ = 0, written_ = 0;  // lines queued / handed to the file (mu_)
  bool stopping_ = false;             // guarded by mu_
  bool flush_wanted_ = false;         // Flush() is waiting (mu_)
  AuditMirrorStats stats_;            // guarded by mu_
  std::thread flusher_;
};

}  // namespace missy

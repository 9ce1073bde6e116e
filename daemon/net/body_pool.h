// BodyPool: the memory of large request bodies, reused. An agent behind the proxy resends
// its whole conversation every turn (megabytes), and a fresh buffer of that size costs a
// page fault per 4 KB page the first time it is written: about 25 ms for 9 MB on a virtual
// machine, more than everything else the proxy does in a turn. A body the daemon is done
// with goes back here, and the next large body is read into it.
//
// Bounded: at most kMaxBuffers buffers and kMaxBytes of capacity are kept; smaller bodies
// than kMinBytes are never pooled (the allocator serves them well). Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace missy::net {

class BodyPool {
 public:
  static constexpr size_t kMinBytes = size_t{256} << 10;
  static constexpr size_t kMaxBuffers = 4;
  static constexpr size_t kMaxBytes = size_t{128} << 20;

  // The process's pool.
  static BodyPool& Shared();

  // A string of `size` bytes, in a kept buffer whose capacity is enough when there is one
  // (then its bytes are an earlier body's, up to where it grows: the caller overwrites them
  // all; zeroing 9 MB a turn cost a millisecond); a new buffer has room for the body to
  // grow by an eighth (the next turn's).
  std::string Take(size_t size);
  // Keeps `body`'s memory for a later Take, when the pool has room; else frees it.
  void Give(std::string&& body);

  size_t kept_buffers() const;
  size_t kept_bytes() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> buffers_;  // largest capacity first
  size_t bytes_ = 0;
};

}  // namespace missy::net

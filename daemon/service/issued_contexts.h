// IssuedContexts: the contexts handed out recently (bounded, oldest forgotten first), so
// that a usage report can name one by its context_id and calibration compares the
// provider's count with ours for exactly what was sent. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace missy {

struct IssuedContext {
  std::string session_id;
  std::string calibration_key;
  int64_t estimated_tokens = 0;  // what we counted for the messages and tools sent
};

class IssuedContexts {
 public:
  static constexpr size_t kDefaultCapacity = 4096;
  explicit IssuedContexts(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  void Remember(const std::string& context_id, IssuedContext context);
  std::optional<IssuedContext> Find(const std::string& context_id) const;
  size_t capacity() const { return capacity_; }
  size_t size() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<std::string> order_;  // oldest first
  std::unordered_map<std::string, IssuedContext> contexts_;
};

}  // namespace missy

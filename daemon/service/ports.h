// The service layer's view of the operating system: a clock and an id source, behind
// small interfaces so that tests pass fakes (a clock they move, ids they predict)
// instead of sleeping or reading globals. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace missy {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMs() const = 0;  // unix epoch milliseconds
};

class IdSource {
 public:
  virtual ~IdSource() = default;
  virtual std::string NewId() = 0;  // 16 lowercase hex digits, unique in practice
};

// The wall clock.
class SystemClock final : public Clock {
 public:
  int64_t NowMs() const override;
};

// 64 random bits per id (a per-thread generator seeded from std::random_device).
class RandomIds final : public IdSource {
 public:
  std::string NewId() override;
};

}  // namespace missy

#include "daemon/service/ports.h"

#include <chrono>

#include "core/digest.h"

namespace missy {

int64_t SystemClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string RandomIds::NewId() { return RandomHexId(); }

}  // namespace missy

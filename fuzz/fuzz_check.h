// MISSY_FUZZ_CHECK: the fuzz targets' assertion. A broken property prints what was
// expected and why it failed, then aborts, which libFuzzer records as a crash together
// with the input that caused it. Always on (NDEBUG does not remove it).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace missy::fuzz {

[[noreturn]] inline void CheckFailed(const char* file, int line, const char* condition,
                                     const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n%s\n", file, line, condition, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace missy::fuzz

// `detail` is any expression convertible to std::string, evaluated only on failure.
#define MISSY_FUZZ_CHECK(condition, detail)                                                 \
  do {                                                                                      \
    if (!(condition)) ::missy::fuzz::CheckFailed(__FILE__, __LINE__, #condition, (detail)); \
  } while (0)

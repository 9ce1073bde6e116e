// The crash test (label slow): 100 SIGKILLs of a loaded writer at random moments.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "storage/crash_harness.h"

namespace missy {
namespace {

TEST(CrashTestSlow, AcknowledgedWritesSurviveAHundredKills) {
  const char* env = std::getenv("MISSY_CRASH_SEED");
  const unsigned seed = env != nullptr ? static_cast<unsigned>(std::strtoul(env, nullptr, 10))
                                       : std::random_device{}();
  RecordProperty("seed", static_cast<int>(seed));
  size_t acked = testing::RunCrashTest(100, seed);
  EXPECT_GT(acked, 10000u);
}

}  // namespace
}  // namespace missy

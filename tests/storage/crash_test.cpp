// Short form of the crash test (5 kills) for the default suite; the long form
// (100 kills) is tests/slow/crash_test.cpp.
#include <gtest/gtest.h>

#include "crash_harness.h"

namespace missy {
namespace {

TEST(CrashTest, AcknowledgedWritesSurviveFiveKills) {
  size_t acked = testing::RunCrashTest(5, 20261121);
  EXPECT_GT(acked, 100u) << "the writer acknowledged too little to test anything";
}

}  // namespace
}  // namespace missy

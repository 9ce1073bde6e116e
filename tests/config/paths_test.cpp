#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "config_test_util.h"

namespace missy {
namespace {

using ::missy::testing::ScopedEnv;

TEST(PathsTest, ResolveMissyHome) {
  {
    ScopedEnv home("HOME", "/tmp/h1");
    ScopedEnv missy("MISSY_HOME", nullptr);
    EXPECT_EQ(ResolveMissyHome(), "/tmp/h1/.missy");
  }
  {
    ScopedEnv home("HOME", "/tmp/h1");
    ScopedEnv missy("MISSY_HOME", "");
    EXPECT_EQ(ResolveMissyHome(), "/tmp/h1/.missy");
  }
  {
    ScopedEnv home("HOME", "/tmp/h1");
    ScopedEnv missy("MISSY_HOME", "/opt/missy-test");
    EXPECT_EQ(ResolveMissyHome(), "/opt/missy-test");
  }
  {
    ScopedEnv home("HOME", "/tmp/h1");
    ScopedEnv missy("MISSY_HOME", "~/alt/");
    EXPECT_EQ(ResolveMissyHome(), "/tmp/h1/alt");
  }
}

}  // namespace
}  // namespace missy

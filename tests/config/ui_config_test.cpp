// context.ui.*: the inspector page's keys (config/key_table.cpp). Its own listeners are
// loopback TCP only: a browser cannot use unix:, and another machine must not reach it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "config_test_util.h"

namespace missy {
namespace {

using ::missy::testing::kHome;
using ::missy::testing::ParseOrDie;

std::string UiListenError(const std::string& value) {
  Result<DaemonConfig> r = ParseConfig("context:\n  ui:\n    listen: " + value + "\n", kHome);
  if (r.ok()) return "";
  return r.status().field() + " -> " + r.status().message();
}

TEST(UiConfigTest, OnByDefaultWithoutListenersOfItsOwn) {
  const DaemonConfig c = ParseOrDie("");
  EXPECT_TRUE(c.ui.enabled);
  EXPECT_TRUE(c.ui.listen.empty());
  EXPECT_TRUE(ParseOrDie("context:\n  ui:\n    listen: []\n").ui.listen.empty());
  EXPECT_FALSE(ParseOrDie("context:\n  ui:\n    enabled: false\n").ui.enabled);
}

TEST(UiConfigTest, ListenTakesLoopbackTcpAddresses) {
  const DaemonConfig c =
      ParseOrDie("context:\n  ui:\n    listen: [localhost:8790, \"[::1]:8790\"]\n");
  EXPECT_EQ(c.ui.listen, (std::vector<std::string>{"127.0.0.1:8790", "[::1]:8790"}));
  EXPECT_EQ(ParseOrDie("context:\n  ui:\n    listen: 127.0.0.2:1\n").ui.listen,
            std::vector<std::string>{"127.0.0.2:1"});
}

TEST(UiConfigTest, ListenRefusesWhatIsNotLoopbackTcpNamingTheEntry) {
  const struct {
    std::string value, field, says;
  } cases[] = {{"unix:ui.sock", "context.ui.listen", "loopback TCP"},
               {"[127.0.0.1:1, \"unix:/tmp/ui.sock\"]", "context.ui.listen[1]", "loopback TCP"},
               {"0.0.0.0:8790", "context.ui.listen", "loopback"},
               {"10.0.0.1:8790", "context.ui.listen", "loopback"},
               {"example.com:80", "context.ui.listen", ""},
               {"[127.0.0.1:1, 127.0.0.1:1]", "context.ui.listen[1]", "twice"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    const std::string error = UiListenError(c.value);
    ASSERT_FALSE(error.empty());
    EXPECT_EQ(error.substr(0, error.find(" -> ")), c.field) << error;
    EXPECT_NE(error.find(c.says), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace missy

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "config/config.h"
#include "config_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::ReadFileOrDie;
using ::missy::testing::TempDir;
using ::missy::testing::WriteFileOrDie;

TEST(ConfigFileTest, LoadConfigFileNamesTheFile) {
  TempDir dir;
  const std::string path = dir.Join("config.yaml");
  Result<DaemonConfig> r = LoadConfigFile(path, dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();

  WriteFileOrDie(path, "context:\n  budget:\n    total: abc\n");
  r = LoadConfigFile(path, dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "context.budget.total");
  EXPECT_EQ(r.status().message(), path + ": context.budget.total: expected an integer, got 'abc'");

  WriteFileOrDie(path, "context:\n  budget: {total: 1\n");
  r = LoadConfigFile(path, dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind(path + ": line ", 0), 0u) << r.status().message();

  r = LoadConfigFile(dir.path(), dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir.path() + ": not a regular file");

  WriteFileOrDie(path, "context:\n  socket: s.sock\n");
  r = LoadConfigFile(path, dir.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->socket_path, dir.Join("s.sock"));
}

TEST(ConfigFileTest, LoadOrCreateWritesPrivateDefaults) {
  TempDir tmp;
  const std::string home = tmp.Join("missy-home");
  const std::string path = home + "/config.yaml";
  bool created = false;
  Result<DaemonConfig> r = LoadOrCreateConfig(path, home, &created);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(created);
  EXPECT_EQ(r->socket_path, home + "/missyd.sock");
  EXPECT_EQ(r->budget.total, 30000);

  struct stat st;
  ASSERT_EQ(stat(home.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(ReadFileOrDie(path), DefaultConfigYaml());

  // An existing file is read, never overwritten.
  WriteFileOrDie(path, "context: {budget: {total: 45000}}\n");
  r = LoadOrCreateConfig(path, home, &created);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(created);
  EXPECT_EQ(r->budget.total, 45000);
  EXPECT_EQ(ReadFileOrDie(path), "context: {budget: {total: 45000}}\n");

  // An invalid existing file is an error, and stays as it was.
  WriteFileOrDie(path, "context: {bogus: 1}\n");
  r = LoadOrCreateConfig(path, home, &created);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "context.bogus");
  EXPECT_EQ(ReadFileOrDie(path), "context: {bogus: 1}\n");
}

}  // namespace
}  // namespace missy

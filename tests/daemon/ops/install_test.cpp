// `cmake --install` (make install) lays out a prefix that works without configuration:
// the installed missyd finds its tokenizer rank files in <prefix>/share/missyd, and the
// systemd user units name the installed binary and pass `systemd-analyze verify`.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <sstream>
#include <string>

#include "cli/http_client.h"
#include "daemon/ops/spawn_util.h"
#include "test_util.h"

namespace missy::testing {
namespace {

using namespace std::chrono_literals;

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Runs a shell command; its exit code, with stdout+stderr in `output`.
int Shell(const std::string& command, const std::string& out_file, std::string* output) {
  const int rc = std::system((command + " >" + out_file + " 2>&1").c_str());
  *output = ReadWholeFile(out_file);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

bool HaveSystemdAnalyze() { return std::system("command -v systemd-analyze >/dev/null 2>&1") == 0; }

// `systemd-analyze verify --user` on `units` (a runtime dir of our own: the test may run
// outside a login session). Its exit code; everything it printed in `output`.
int VerifyUnits(const TempDir& scratch, const std::string& units, std::string* output) {
  const std::string runtime = scratch.Join("runtime");
  mkdir(runtime.c_str(), 0700);
  return Shell("cd " + scratch.path() + " && XDG_RUNTIME_DIR=" + runtime +
                   " systemd-analyze verify --user " + units,
               scratch.Join("verify.out"), output);
}

class InstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string out;
    ASSERT_EQ(
        Shell("cmake --install " + std::string(MISSY_BINARY_DIR) + " --prefix " + prefix_.path(),
              scratch_.Join("install.out"), &out),
        0)
        << out;
  }
  std::string At(const std::string& rel) const { return prefix_.Join(rel); }

  TempDir prefix_;
  TempDir scratch_;
};

TEST_F(InstallTest, LaysOutBinariesRankFilesAndUserUnits) {
  EXPECT_TRUE(IsFile(At("bin/missyd")));
  EXPECT_TRUE(IsFile(At("bin/missyctl")));
  EXPECT_TRUE(IsFile(At("share/missyd/o200k_base.tiktoken")));
  EXPECT_TRUE(IsFile(At("share/missyd/cl100k_base.tiktoken")));
  for (const char* unit : {"missyd.service", "missyd.socket", "missyd-audit.socket",
                           "missyd-proxy.socket", "missyd-worker.service"}) {
    EXPECT_TRUE(IsFile(At(std::string("share/systemd/user/") + unit))) << unit;
  }
  const std::string service = ReadWholeFile(At("share/systemd/user/missyd.service"));
  EXPECT_NE(service.find("\nExecStart=" + At("bin/missyd") + "\n"), std::string::npos) << service;
  EXPECT_EQ(service.find("ExecStart=%h/.local/bin/missyd"), std::string::npos);
  const std::string worker = ReadWholeFile(At("share/systemd/user/missyd-worker.service"));
  EXPECT_NE(worker.find("\nExecStart=" + At("bin/missyd") + " worker "), std::string::npos) << worker;
}

TEST_F(InstallTest, TheInstalledDaemonFindsItsTokenizerDataWithoutConfiguration) {
  TempDir home;  // no config.yaml: the default one (tokenizer: exact, data_dir: "")
  SpawnOptions o;
  o.binary = At("bin/missyd");
  o.home = home.path();
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());
  ASSERT_TRUE(d.WaitHealthy(home.Join("missyd.sock")).ok()) << d.log();
  Result<ClientResponse> config = UnixHttpCall(home.Join("missyd.sock"), "GET", "/v1/config");
  ASSERT_TRUE(config.ok());
  boost::json::value c = boost::json::parse(config->body);
  EXPECT_EQ(c.at("context").at("tokenizer").as_string(), "exact");
  EXPECT_EQ(c.at("context").at("data_dir").as_string(), "");
  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.log();
  // Loaded (sha256-checked) from the prefix, not from the build tree.
  EXPECT_NE(d.log().find("tokenizers o200k_base and cl100k_base loaded from " + At("share/missyd") +
                         "\n"),
            std::string::npos)
      << d.log();
}

TEST_F(InstallTest, ContextDataDirStillWins) {
  TempDir home;
  TempDir empty;
  WriteFileOrDie(home.Join("config.yaml"), "context:\n  data_dir: " + empty.path() + "\n");
  std::string out;
  const int rc = Shell("MISSY_HOME=" + home.path() + " " + At("bin/missyd") + " --check-config",
                       scratch_.Join("check.out"), &out);
  EXPECT_EQ(rc, 0) << out;  // the config is valid ...
  SpawnOptions o;
  o.binary = At("bin/missyd");
  o.home = home.path();
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!d.Exited() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(d.Exited());
  EXPECT_EQ(d.exit_code(), 1);  // ... but the rank files are not in the configured dir
  EXPECT_NE(d.log().find(empty.path() + "/o200k_base.tiktoken cannot be read"), std::string::npos)
      << d.log();
}

TEST_F(InstallTest, TheInstalledUnitsPassSystemdAnalyzeVerify) {
  if (!HaveSystemdAnalyze()) GTEST_SKIP() << "systemd-analyze is not installed";
  const std::string dir = At("share/systemd/user/");
  std::string out;
  EXPECT_EQ(VerifyUnits(scratch_,
                        dir + "missyd.socket " + dir + "missyd-audit.socket " + dir +
                            "missyd-proxy.socket " + dir + "missyd.service " + dir +
                            "missyd-worker.service",
                        &out),
            0)
      << out;
  EXPECT_EQ(out, "");  // not even a warning
  // The check can fail: a unit with a misspelt key is reported.
  WriteFileOrDie(scratch_.Join("missyd.service"),
                 ReadWholeFile(dir + "missyd.service") + "WatchdogSecs=30\n");
  ASSERT_NE(VerifyUnits(scratch_, "missyd.service", &out), -1);
  EXPECT_NE(out.find("Unknown key"), std::string::npos) << out;
}

TEST(SystemdUnitsTest, TheUnitsDeclareActivationNotifyWatchdogAndHardening) {
  const std::string dir = std::string(MISSY_SOURCE_DIR) + "/systemd/";
  const std::string api = ReadWholeFile(dir + "missyd.socket");
  const std::string audit = ReadWholeFile(dir + "missyd-audit.socket");
  const std::string proxy = ReadWholeFile(dir + "missyd-proxy.socket");
  const std::string service = ReadWholeFile(dir + "missyd.service");
  for (const char* line : {"ListenStream=%t/missy/missyd.sock", "FileDescriptorName=api",
                           "SocketMode=0600", "DirectoryMode=0700", "Service=missyd.service"}) {
    EXPECT_NE(api.find(std::string("\n") + line + "\n"), std::string::npos) << line;
  }
  for (const char* line : {"ListenStream=%t/missy/audit.sock", "FileDescriptorName=audit",
                           "SocketMode=0600", "DirectoryMode=0700", "Service=missyd.service"}) {
    EXPECT_NE(audit.find(std::string("\n") + line + "\n"), std::string::npos) << line;
  }
  // The proxy listener: loopback TCP on the proxy's default port, optional (the service
  // does not require it), passed to missyd.service by name.
  for (const char* line :
       {"ListenStream=127.0.0.1:8788", "FileDescriptorName=proxy", "Service=missyd.service",
        "BindIPv6Only=ipv6-only", "WantedBy=sockets.target"}) {
    EXPECT_NE(proxy.find(std::string("\n") + line + "\n"), std::string::npos) << line;
  }
  std::istringstream lines(service);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Requires=") || line.starts_with("Wants=") || line.starts_with("Also=")) {
      EXPECT_EQ(line.find("missyd-proxy.socket"), std::string::npos)
          << "the proxy socket is optional: " << line;
    }
  }
  for (const char* line :
       {"Type=notify", "Restart=on-failure", "ExecReload=/bin/kill -HUP $MAINPID", "WatchdogSec=30",
        "NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=%h/.missy", "PrivateTmp=yes",
        "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "LockPersonality=yes",
        "MemoryDenyWriteExecute=yes", "SystemCallFilter=@system-service", "UMask=0077",
        "ExecStart=%h/.local/bin/missyd"}) {
    EXPECT_NE(service.find(std::string("\n") + line + "\n"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace missy::testing

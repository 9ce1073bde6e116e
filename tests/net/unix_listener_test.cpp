// Tests of daemon/net/unix_listener.cpp: socket files, their modes, stale and live
// sockets, the peer rule.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "net_test_util.h"

namespace missy::net_test {
namespace {

// A Unix socket file with nobody listening on it (what a crashed daemon leaves).
void MakeStaleSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << strerror(errno);
  close(fd);
}

TEST(UnixListenerTest, CreatesDirectory0700AndSocket0600AndRemovesThemOnStop) {
  TempDir dir;
  NetOptions opts;
  opts.api_socket_path = dir.Join("a/b/missyd.sock");
  opts.audit_socket_path = dir.Join("a/b/audit.sock");
  auto server = std::make_unique<RunningServer>(opts, SyncHandler(Echo));
  ASSERT_TRUE(server->status().ok()) << server->status().ToString();
  struct stat st;
  for (const char* d : {"a", "a/b"}) {
    ASSERT_EQ(stat(dir.Join(d).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u) << d;
  }
  for (const char* s : {"a/b/missyd.sock", "a/b/audit.sock"}) {
    ASSERT_EQ(lstat(dir.Join(s).c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode)) << s;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << s;
  }
  server->StopAndJoin(1s);
  EXPECT_NE(lstat(dir.Join("a/b/missyd.sock").c_str(), &st), 0);
  EXPECT_NE(lstat(dir.Join("a/b/audit.sock").c_str(), &st), 0);
}

TEST(UnixListenerTest, StaleSocketFileIsReplaced) {
  TempDir dir;
  ASSERT_EQ(mkdir(dir.Join("run").c_str(), 0700), 0);
  MakeStaleSocket(dir.Join("run/missyd.sock"));
  MakeStaleSocket(dir.Join("run/audit.sock"));
  RunningServer server(Options(dir), SyncHandler(Echo));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto r = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/x");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST(UnixListenerTest, LiveSocketIsRefused) {
  TempDir dir;
  RunningServer first(Options(dir), SyncHandler(Echo));
  ASSERT_TRUE(first.status().ok()) << first.status().ToString();

  auto second = NetServer::Create(Options(dir), SyncHandler(Echo));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(second.status().message(),
            "another missyd is listening on " + dir.Join("run/missyd.sock"));

  // Only the audit socket is live: refused as well, and the first server is untouched.
  NetOptions other = Options(dir);
  other.api_socket_path = dir.Join("run/other.sock");
  auto third = NetServer::Create(other, SyncHandler(Echo));
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().message(),
            "another missyd is listening on " + dir.Join("run/audit.sock"));
  struct stat st;
  EXPECT_NE(lstat(dir.Join("run/other.sock").c_str(), &st), 0) << "failed Create must clean up";

  auto r = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/still-there");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST(UnixListenerTest, NonSocketFileIsNotReplaced) {
  TempDir dir;
  ASSERT_EQ(mkdir(dir.Join("run").c_str(), 0700), 0);
  testing::WriteFileOrDie(dir.Join("run/missyd.sock"), "precious");
  auto r = NetServer::Create(Options(dir), SyncHandler(Echo));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(testing::ReadFileOrDie(dir.Join("run/missyd.sock")), "precious");
}

TEST(UnixListenerTest, PeerRuleIsSameUidOnly) {
  EXPECT_TRUE(PeerAllowed(1000, 1000));
  EXPECT_FALSE(PeerAllowed(1001, 1000));
  EXPECT_FALSE(PeerAllowed(0, 1000));
  EXPECT_FALSE(PeerAllowed(1000, 0));
}

}  // namespace
}  // namespace missy::net_test

// NetServer serves listening sockets bound by someone else (socket activation): it
// neither binds the configured paths nor removes the adopted sockets' files, and owns
// (closes) the descriptors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "net_test_util.h"

namespace missy::net_test {
namespace {

int Listening(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 8) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

TEST(AdoptedListenerTest, ServesAdoptedSocketsAndLeavesTheirFiles) {
  TempDir dir;
  const std::string api = dir.Join("adopted-api.sock");
  const std::string audit = dir.Join("adopted-audit.sock");
  const int api_fd = Listening(api);
  const int audit_fd = Listening(audit);
  ASSERT_GE(api_fd, 0);
  ASSERT_GE(audit_fd, 0);
  NetOptions o = Options(dir);  // configured paths under run/: must stay unbound
  o.api_socket_path = api;
  o.audit_socket_path = audit;
  o.api_listen_fd = api_fd;
  o.audit_listen_fd = audit_fd;
  {
    RunningServer server(o, SyncHandler(Echo));
    ASSERT_TRUE(server.status().ok()) << server.status().ToString();
    Result<ClientResponse> r = UnixHttpCall(api, "GET", "/via-adopted");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(Str(ParseObject(r->body), "target"), "/via-adopted");

    LineSubscriber sub;
    ASSERT_TRUE(sub.Connect(audit, "{}").ok());
    ASSERT_TRUE(WaitUntil([&] { return server->SubscriberCount() == 1; }));
    server->Publish(1, "x.y", EventLine(1, "x.y"));
    Result<std::string> line = sub.ReadLine(5s);
    ASSERT_TRUE(line.ok()) << line.status().ToString();
    EXPECT_EQ(SeqOf(*line), 1);
    server.StopAndJoin(1s);
  }
  EXPECT_FALSE(Exists(dir.Join("run/missyd.sock")));
  EXPECT_TRUE(Exists(api));  // the manager's files, not ours to remove
  EXPECT_TRUE(Exists(audit));
  // The server closed the descriptors it adopted.
  EXPECT_EQ(fcntl(api_fd, F_GETFD), -1);
  EXPECT_EQ(fcntl(audit_fd, F_GETFD), -1);
}

TEST(AdoptedListenerTest, AnAdoptedApiSocketWithABoundAuditPath) {
  TempDir dir;
  const std::string api = dir.Join("adopted-api.sock");
  const int api_fd = Listening(api);
  ASSERT_GE(api_fd, 0);
  NetOptions o = Options(dir);
  o.api_listen_fd = api_fd;
  {
    RunningServer server(o, SyncHandler(Echo));
    ASSERT_TRUE(server.status().ok()) << server.status().ToString();
    EXPECT_TRUE(Exists(dir.Join("run/audit.sock")));
    EXPECT_FALSE(Exists(dir.Join("run/missyd.sock")));
    ASSERT_TRUE(UnixHttpCall(api, "GET", "/x").ok());
    server.StopAndJoin(1s);
  }
  EXPECT_FALSE(Exists(dir.Join("run/audit.sock")));  // bound here: removed
  EXPECT_TRUE(Exists(api));
}

}  // namespace
}  // namespace missy::net_test

// TakeActivatedSockets (daemon/ops/listen_fds.cpp) with real sockets passed the way a
// service manager passes them: at fd 3, 4, ... with LISTEN_PID, LISTEN_FDS and
// LISTEN_FDNAMES. Each case runs in a child process, whose descriptors 3, 4, ... may be
// replaced freely; the child reports what it took.
#include "daemon/ops/listen_fds.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/ops/spawn_util.h"
#include "test_util.h"

namespace missy::testing {
namespace {

// What the child's TakeActivatedSockets returned, and which passed descriptors it left
// open.
struct Taken {
  std::string error;  // the status message when it failed
  int api_fd = -1;
  std::string api_path;
  int audit_fd = -1;
  std::vector<int> proxy_fds;
  std::vector<std::string> proxy_addresses;
  std::vector<int> open;  // of 3, 4, ... after the call
};

// Forks; the child moves `fds` to 3, 4, ..., sets LISTEN_PID (its own pid), LISTEN_FDS and
// LISTEN_FDNAMES (`names`, when not empty), calls TakeActivatedSockets and writes a report
// to a pipe, one line per field.
Taken TakeInChild(const std::vector<int>& fds, const std::string& names) {
  int pipe_fds[2];
  EXPECT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  const pid_t child = fork();
  if (child == 0) {
    // Out of the way of 3, 4, ... first, then into place.
    const int out = fcntl(pipe_fds[1], F_DUPFD_CLOEXEC, 200);
    std::vector<int> high;
    for (int fd : fds) high.push_back(fcntl(fd, F_DUPFD_CLOEXEC, 200));
    for (size_t i = 0; i < high.size(); ++i) {
      dup2(high[i], static_cast<int>(3 + i));
      close(high[i]);
    }
    setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
    setenv("LISTEN_FDS", std::to_string(fds.size()).c_str(), 1);
    if (!names.empty()) setenv("LISTEN_FDNAMES", names.c_str(), 1);
    Result<ops::ActivatedSockets> taken = ops::TakeActivatedSockets();
    std::ostringstream report;
    if (!taken.ok()) {
      report << "error " << taken.status().message() << "\n";
    } else {
      report << "api " << taken->api_fd << " " << taken->api_path << "\n";
      report << "audit " << taken->audit_fd << "\n";
      for (size_t i = 0; i < taken->proxy_fds.size(); ++i) {
        report << "proxy " << taken->proxy_fds[i] << " "
               << (i < taken->proxy_addresses.size() ? taken->proxy_addresses[i] : "?") << "\n";
      }
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fcntl(static_cast<int>(3 + i), F_GETFD) != -1) report << "open " << 3 + i << "\n";
    }
    const std::string text = report.str();
    const ssize_t n = write(out, text.data(), text.size());
    _exit(n == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  close(pipe_fds[1]);
  std::string raw;
  for (;;) {
    pollfd p{pipe_fds[0], POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) break;
    char buf[4096];
    const ssize_t n = read(pipe_fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << raw;

  Taken t;
  std::istringstream in(raw);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string what;
    words >> what;
    if (what == "error") {
      t.error = line.substr(6);
    } else if (what == "api") {
      words >> t.api_fd >> t.api_path;
    } else if (what == "audit") {
      words >> t.audit_fd;
    } else if (what == "proxy") {
      int fd = -1;
      std::string address;
      words >> fd >> address;
      t.proxy_fds.push_back(fd);
      t.proxy_addresses.push_back(address);
    } else if (what == "open") {
      int fd = -1;
      words >> fd;
      t.open.push_back(fd);
    }
  }
  return t;
}

// A TCP socket bound to `host`:0 (IPv4), listening unless `listening` is false; its
// address as bound in `address`. -1 on error.
int TcpSocket(const char* host, std::string* address, bool listening = true) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof(a);
  if (fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      (listening && listen(fd, 8) != 0) ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *address = std::string(host) + ":" + std::to_string(ntohs(a.sin_port));
  return fd;
}

// The sockets of one case, closed at its end (the child has its own copies).
struct Sockets {
  std::vector<int> fds;
  ~Sockets() {
    for (int fd : fds) close(fd);
  }
  int Add(int fd) {
    EXPECT_GE(fd, 0);
    fds.push_back(fd);
    return fd;
  }
};

TEST(ListenFdsTest, ProxyNamedLoopbackTcpSocketsAreTakenAsProxySockets) {
  TempDir dir;
  Sockets s;
  std::string first, second;
  const int api = s.Add(BindListeningSocket(dir.Join("missyd.sock")));
  const int proxy1 = s.Add(TcpSocket("127.0.0.1", &first));
  const int audit = s.Add(BindListeningSocket(dir.Join("audit.sock")));
  const int proxy2 = s.Add(TcpSocket("127.0.0.2", &second));  // 127.0.0.0/8: loopback
  Taken t = TakeInChild({api, proxy1, audit, proxy2}, "api:proxy:audit:proxy");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.api_fd, 3);
  EXPECT_EQ(t.api_path, dir.Join("missyd.sock"));
  EXPECT_EQ(t.audit_fd, 5);
  EXPECT_EQ(t.proxy_fds, (std::vector<int>{4, 6}));
  EXPECT_EQ(t.proxy_addresses, (std::vector<std::string>{first, second}));
  EXPECT_EQ(t.open, (std::vector<int>{3, 4, 5, 6}));
}

TEST(ListenFdsTest, UnnamedSocketsStillFillApiThenAuditAroundAProxySocket) {
  TempDir dir;
  Sockets s;
  std::string address;
  const int proxy = s.Add(TcpSocket("127.0.0.1", &address));
  const int api = s.Add(BindListeningSocket(dir.Join("missyd.sock")));
  const int audit = s.Add(BindListeningSocket(dir.Join("audit.sock")));
  // Names other than "api", "audit" and "proxy" count as unnamed.
  Taken t = TakeInChild({proxy, api, audit}, "proxy:unknown:missyd.socket");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.proxy_fds, std::vector<int>{3});
  EXPECT_EQ(t.proxy_addresses, std::vector<std::string>{address});
  EXPECT_EQ(t.api_fd, 4);
  EXPECT_EQ(t.api_path, dir.Join("missyd.sock"));
  EXPECT_EQ(t.audit_fd, 5);
}

TEST(ListenFdsTest, AProxySocketBoundToEveryAddressIsRefusedNamingIt) {
  TempDir dir;
  Sockets s;
  std::string address;
  const int api = s.Add(BindListeningSocket(dir.Join("missyd.sock")));
  const int open_to_all = s.Add(TcpSocket("0.0.0.0", &address));
  Taken t = TakeInChild({api, open_to_all}, "api:proxy");
  EXPECT_NE(t.error.find("socket activation: descriptor 4 ('proxy') is bound to " + address +
                         ", not a loopback address"),
            std::string::npos)
      << t.error;
  EXPECT_TRUE(t.open.empty()) << "every descriptor passed is closed on failure";
}

TEST(ListenFdsTest, AUnixSocketNamedProxyIsRefused) {
  TempDir dir;
  Sockets s;
  const int unix_fd = s.Add(BindListeningSocket(dir.Join("proxy.sock")));
  Taken t = TakeInChild({unix_fd}, "proxy");
  EXPECT_NE(t.error.find("socket activation: descriptor 3 ('proxy') is not a TCP socket"),
            std::string::npos)
      << t.error;
  EXPECT_TRUE(t.open.empty());
}

TEST(ListenFdsTest, AProxySocketThatIsNotListeningIsRefused) {
  Sockets s;
  std::string address;
  const int idle = s.Add(TcpSocket("127.0.0.1", &address, /*listening=*/false));
  Taken t = TakeInChild({idle}, "proxy");
  EXPECT_NE(t.error.find("socket activation: descriptor 3 ('proxy') is not listening"),
            std::string::npos)
      << t.error;
  EXPECT_TRUE(t.open.empty());
}

}  // namespace
}  // namespace missy::testing

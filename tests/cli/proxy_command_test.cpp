#include "cli/proxy_command.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "test_util.h"

namespace missy::cli {
namespace {

ProxyConfig WithListen(std::vector<std::string> listen) {
  ProxyConfig proxy;
  proxy.enabled = true;
  proxy.listen = std::move(listen);
  return proxy;
}

TEST(ProxyCommandTest, TheFirstTcpAddressIsTheBase) {
  EXPECT_EQ(ProxyHttpBase(ProxyConfig{}), "http://127.0.0.1:8788");
  EXPECT_EQ(ProxyHttpBase(WithListen({"unix:/run/p.sock", "[::1]:9", "127.0.0.1:1"})),
            "http://[::1]:9");
  EXPECT_EQ(ProxyHttpBase(WithListen({"unix:/run/p.sock"})), "");
}

TEST(ProxyCommandTest, SessionAndTokenArePathPrefixesInThatOrder) {
  const std::string base = "http://127.0.0.1:8788";
  ProxyBaseUrls urls = ProxyUrls(base);
  EXPECT_EQ(urls.anthropic, "http://127.0.0.1:8788");
  EXPECT_EQ(urls.openai, "http://127.0.0.1:8788/v1");
  urls = ProxyUrls(base, "fix-ci");
  EXPECT_EQ(urls.anthropic, "http://127.0.0.1:8788/s/fix-ci");
  EXPECT_EQ(urls.openai, "http://127.0.0.1:8788/s/fix-ci/v1");
  urls = ProxyUrls(base, "fix-ci", "tok3n");
  EXPECT_EQ(urls.anthropic, "http://127.0.0.1:8788/s/fix-ci/t/tok3n");
  EXPECT_EQ(urls.openai, "http://127.0.0.1:8788/s/fix-ci/t/tok3n/v1");
  EXPECT_EQ(ProxyUrls(base, "", "tok3n").openai, "http://127.0.0.1:8788/t/tok3n/v1");
}

TEST(ProxyCommandTest, ExportLines) {
  EXPECT_EQ(ProxyExportLines(ProxyConfig{}),
            "export ANTHROPIC_BASE_URL=http://127.0.0.1:8788\n"
            "export OPENAI_BASE_URL=http://127.0.0.1:8788/v1\n");
  EXPECT_EQ(ProxyExportLines(WithListen({"unix:/p.sock", "127.0.0.5:9000"}), "nightly"),
            "export ANTHROPIC_BASE_URL=http://127.0.0.5:9000/s/nightly\n"
            "export OPENAI_BASE_URL=http://127.0.0.5:9000/s/nightly/v1\n");
  EXPECT_EQ(ProxyExportLines(WithListen({"unix:/p.sock"})), "");
}

TEST(ProxyCommandTest, CodexConfigBlock) {
  EXPECT_EQ(CodexConfigBlock(ProxyConfig{}),
            "[model_providers.missy]\n"
            "name = \"missy\"\n"
            "base_url = \"http://127.0.0.1:8788/v1\"\n"
            "wire_api = \"responses\"\n"
            "env_key = \"OPENAI_API_KEY\"\n");
  EXPECT_NE(CodexConfigBlock(ProxyConfig{}, "triage")
                .find("base_url = \"http://127.0.0.1:8788/s/triage/v1\"\n"),
            std::string::npos);
  EXPECT_EQ(CodexConfigBlock(WithListen({"unix:/p.sock"})), "");
}

TEST(ProxyCommandTest, ReportListsEachListenerAndTheLinesToUse) {
  const ProxyConfig proxy = WithListen({"127.0.0.1:8788", "unix:/run/p.sock"});
  EXPECT_EQ(ProxyReport(proxy, {ListenerState::kListening, ListenerState::kNotListening}),
            "proxy: enabled\n"
            "listen: 127.0.0.1:8788 (listening)\n"
            "listen: unix:/run/p.sock (not listening; the SDKs need a TCP address)\n"
            "not listening: is missyd running, and was it restarted since the proxy was enabled?\n"
            "inspector: http://127.0.0.1:8788/ui/ (what the model saw on each call; "
            "docs/INSPECTOR.md)\n"
            "\n"
            "# Claude Code, and scripts on the Anthropic or OpenAI SDKs:\n"
            "export ANTHROPIC_BASE_URL=http://127.0.0.1:8788\n"
            "export OPENAI_BASE_URL=http://127.0.0.1:8788/v1\n"
            "\n"
            "# Codex CLI, in ~/.codex/config.toml (with model_provider = \"missy\" at the top,\n"
            "# or: codex -c model_provider=missy):\n"
            "[model_providers.missy]\n"
            "name = \"missy\"\n"
            "base_url = \"http://127.0.0.1:8788/v1\"\n"
            "wire_api = \"responses\"\n"
            "env_key = \"OPENAI_API_KEY\"\n"
            "\n"
            "# A session can be named with a path prefix:\n"
            "#   Anthropic: http://127.0.0.1:8788/s/NAME\n"
            "#   OpenAI:    http://127.0.0.1:8788/s/NAME/v1\n"
            "# or for one command: missyctl run --session NAME -- COMMAND [ARGS...]\n");
}

TEST(ProxyCommandTest, ReportWithASessionATokenOrNoTcpListener) {
  ProxyConfig proxy = WithListen({"[::1]:8788"});
  proxy.token_file = "/home/u/.missy/proxy.token";
  const std::string report = ProxyReport(proxy, {}, "fix-ci");
  EXPECT_NE(report.find("listen: [::1]:8788\n"), std::string::npos) << report;
  EXPECT_NE(report.find("export ANTHROPIC_BASE_URL=http://[::1]:8788/s/fix-ci\n"
                        "export OPENAI_BASE_URL=http://[::1]:8788/s/fix-ci/v1\n"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("/s/NAME\n"), std::string::npos) << "no naming hint with a name";
  EXPECT_NE(report.find("# context.proxy.token_file is set (/home/u/.missy/proxy.token)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("#   http://[::1]:8788/t/TOKEN   (missyctl run adds it)\n"),
            std::string::npos)
      << report;

  EXPECT_EQ(ProxyReport(WithListen({"unix:/run/p.sock"}), {ListenerState::kListening}),
            "proxy: enabled\n"
            "listen: unix:/run/p.sock (listening; the SDKs need a TCP address)\n"
            "\n"
            "No TCP listener: agents and the SDKs need a TCP address; add one such as "
            "127.0.0.1:8788 to context.proxy.listen.\n");
}

TEST(ProxyCommandTest, DisabledTextSaysHowToEnable) {
  EXPECT_EQ(ProxyDisabledText("/home/u/.missy/config.yaml"),
            "proxy: disabled (context.proxy.enabled is false in /home/u/.missy/config.yaml)\n"
            "To enable it, set in that file:\n"
            "  context:\n"
            "    proxy:\n"
            "      enabled: true\n"
            "then restart missyd (systemctl --user restart missyd): the proxy's listeners are\n"
            "bound at start, a reload (missyctl config reload) does not open them.\n");
}

TEST(ProxyCommandTest, SessionNamesAreWhatThePathCarries) {
  for (const char* good : {"fix-ci", "a", "nightly.report_2", "team:alpha", "A-Z.09"}) {
    EXPECT_TRUE(CheckProxySessionName(good).ok()) << good;
  }
  EXPECT_TRUE(CheckProxySessionName(std::string(100, 'x')).ok());
  const struct {
    std::string name;
    std::string message;
  } bad[] = {
      {"", "a session name has 1 to 100 characters, got 0"},
      {std::string(101, 'x'), "a session name has 1 to 100 characters, got 101"},
      {"a/b", "session name 'a/b': use only A-Z a-z 0-9 . _ : -"},
      {"my session", "session name 'my session': use only A-Z a-z 0-9 . _ : -"},
      {"a?b", "session name 'a?b': use only A-Z a-z 0-9 . _ : -"},
      {"..", "session name '..' is only dots"},
  };
  for (const auto& c : bad) {
    Status s = CheckProxySessionName(c.name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(s.message(), c.message) << c.name;
  }
}

TEST(ProxyCommandTest, TokenIsTrimmedAsTheProxyTrimsIt) {
  Result<std::string> t = ProxyTokenForPath("  s3cr3t-Token_~.\r\n");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t, "s3cr3t-Token_~.");
  EXPECT_EQ(ProxyTokenForPath("\n\n").status().message(), "the token file is empty");
  for (const char* bad : {"a/b", "a b", "a%2F", "a?b", "tab\tinside", "\xc3\xa9"}) {
    EXPECT_NE(ProxyTokenForPath(bad).status().message().find("X-Missy-Token header"),
              std::string::npos)
        << bad;
  }
}

TEST(ProxyCommandTest, ProbeTellsListeningFromNotListening) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const uint16_t port = ntohs(addr.sin_port);
  ListenAddress tcp{ListenAddress::Kind::kTcp4, "127.0.0.1", port, ""};
  EXPECT_EQ(ProbeListener(tcp), ListenerState::kListening);
  ::close(fd);
  EXPECT_EQ(ProbeListener(tcp), ListenerState::kNotListening);

  testing::TempDir dir;
  ListenAddress unix_address{ListenAddress::Kind::kUnix, "", 0, dir.Join("p.sock")};
  EXPECT_EQ(ProbeListener(unix_address), ListenerState::kNotListening);
  const int ufd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(ufd, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::strncpy(un.sun_path, unix_address.path.c_str(), sizeof un.sun_path - 1);
  ASSERT_EQ(::bind(ufd, reinterpret_cast<sockaddr*>(&un), sizeof un), 0);
  ASSERT_EQ(::listen(ufd, 4), 0);
  EXPECT_EQ(ProbeListener(unix_address), ListenerState::kListening);
  ::close(ufd);
}

// What a forked child printed and how it ended.
struct ChildResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;
  std::string err;
};

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// Runs `body` in a child whose stdout and stderr are pipes; its return value is the exit code.
ChildResult InChild(const std::function<int()>& body) {
  int out[2];
  int err[2];
  EXPECT_EQ(::pipe(out), 0);
  EXPECT_EQ(::pipe(err), 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    ::_exit(body());
  }
  ::close(out[1]);
  ::close(err[1]);
  ChildResult r;
  r.out = ReadAll(out[0]);
  r.err = ReadAll(err[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

TEST(ProxyCommandTest, RunExecsTheCommandWithTheBaseUrls) {
  const ProxyBaseUrls urls = ProxyUrls("http://127.0.0.1:8788", "fix-ci");
  const ChildResult r = InChild([&] {
    return ExecWithProxyEnv(
        urls, {"sh", "-c", "echo \"$ANTHROPIC_BASE_URL $OPENAI_BASE_URL $0 $1\"; exit 3", "a", "b"},
        stderr);
  });
  EXPECT_EQ(r.out, "http://127.0.0.1:8788/s/fix-ci http://127.0.0.1:8788/s/fix-ci/v1 a b\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.exit_code, 3) << "the command's own exit status";
}

TEST(ProxyCommandTest, RunThatCannotExecSaysWhyAndExits127) {
  const ChildResult r = InChild([] {
    return ExecWithProxyEnv(ProxyUrls("http://127.0.0.1:8788"), {"/nonexistent/missy-agent"},
                            stderr);
  });
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "missyctl: cannot run '/nonexistent/missy-agent': No such file or directory\n");
}

}  // namespace
}  // namespace missy::cli

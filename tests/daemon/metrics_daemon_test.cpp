// The real daemon's GET /metrics over its socket, and the lingering close seen by the
// client it is for: Python's http.client, which writes a whole oversized body before it
// reads the answer.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "daemon_process.h"
#include "test_util.h"

namespace missy::testing {
namespace {

// The value of the one sample named exactly `series`, or "<absent>".
std::string Value(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return line.substr(series.size() + 1);
    }
  }
  return "<absent>";
}

// Runs `cmd`; returns its exit code and stdout+stderr.
int RunCommand(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  out->clear();
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

constexpr char kPythonClient[] = R"(import http.client, socket, sys
class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=20)
        self.unix_path = path
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(20)
        self.sock.connect(self.unix_path)
conn = UnixConnection(sys.argv[1])
body = b'{"id":"big","metadata":{"x":"' + b"a" * (16 << 20) + b'"}}'
conn.request("POST", "/v1/sessions", body=body, headers={"Content-Type": "application/json"})
response = conn.getresponse()
print(response.status, response.getheader("Content-Type"), response.read().decode())
)";

TEST(MetricsDaemonTest, ScrapeCountsRequestsAndTheEdgeAfterAPythonClientGetsIts413) {
  TempDir dir;
  DaemonProcess d(dir.path(), "context:\n  limits:\n    max_body_bytes: 65536\n");
  ASSERT_TRUE(d.Start().ok()) << d.log();
  ASSERT_EQ(d.Call("POST", "/v1/sessions", R"({"id":"s1"})")->status, 201);

  std::string python;
  const bool have_python = RunCommand("command -v python3", &python) == 0;
  if (have_python) {
    const std::string script = dir.Join("client.py");
    std::ofstream(script) << kPythonClient;
    std::string out;
    const int rc = RunCommand("python3 '" + script + "' '" + d.socket() + "'", &out);
    EXPECT_EQ(rc, 0) << out;  // a BrokenPipeError or ConnectionResetError fails here
    EXPECT_EQ(
        out,
        "413 application/json "
        R"({"error":{"code":"payload_too_large","message":"request body exceeds 65536 bytes","field":""}})"
        "\n");
  }

  Result<ClientResponse> scrape = d.Call("GET", "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status().ToString();
  EXPECT_EQ(scrape->status, 200);
  EXPECT_EQ(scrape->headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = scrape->body;
  EXPECT_EQ(
      Value(text, R"(missyd_http_requests_total{method="POST",route="/v1/sessions",status="201"})"),
      "1")
      << text;
  EXPECT_EQ(Value(text, "missyd_sessions"), "1");
  EXPECT_NE(Value(text, "missyd_http_connections"), "0");  // this scrape's own
  EXPECT_EQ(Value(text, "missyd_audit_subscribers"), "0");
  if (have_python) {
    EXPECT_EQ(Value(text, R"(missyd_http_edge_rejections_total{status="413"})"), "1");
    EXPECT_EQ(Value(text, "missyd_http_lingering_closes_total"), "1");
    // The 413 never reached a route.
    EXPECT_EQ(text.find(R"(route="/v1/sessions",status="413")"), std::string::npos);
  } else {
    GTEST_SKIP() << "python3 not found: the http.client half was not run";
  }
}

}  // namespace
}  // namespace missy::testing

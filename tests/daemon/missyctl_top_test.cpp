// missyctl top and context show/ls end to end: the real binaries against a live daemon.
// top runs in a detached tmux pane of 80x24 (send-keys, capture-pane): its rows appear,
// a sort key changes their order, no line is wider than 80 columns, q exits 0. Without a
// terminal it prints one snapshot.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_process.h"
#include "test_util.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

struct ShellRun {
  int code = -1;
  std::string out;
};

ShellRun Shell(const std::string& cmd) {
  ShellRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The session ids in the order their rows appear.
std::vector<std::string> Order(const std::string& screen) {
  std::vector<std::string> ids;
  for (const std::string& line : SplitLines(screen)) {
    for (const char* id : {"alpha", "bravo", "charlie"}) {
      if (line.rfind(id, 0) == 0) ids.emplace_back(id);
    }
  }
  return ids;
}

class MissyctlTopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<DaemonProcess>(dir_.path(), "context:\n  log_level: warn\n");
    ASSERT_TRUE(daemon_->Start().ok()) << daemon_->log();
    // alpha: few messages, a large context; bravo: many messages; charlie: in between.
    Session("alpha", 3, 4000);
    Session("bravo", 40, 10);
    Session("charlie", 12, 10);
  }
  void TearDown() override {
    if (!tmux_socket_.empty()) Shell("tmux -S '" + tmux_socket_ + "' kill-server 2>/dev/null");
    EXPECT_EQ(daemon_->Stop(), 0) << daemon_->log();
  }

  void Session(const std::string& id, int messages, int words) {
    ASSERT_EQ(
        daemon_->Call("POST", "/v1/sessions", R"({"id":")" + id + R"(","model":"gpt-4o"})")->status,
        201);
    std::string text;
    for (int w = 0; w < words; ++w) text += "word" + std::to_string(w) + " ";
    json::array batch;
    for (int i = 0; i < messages; ++i) {
      batch.push_back(json::object{{"role", i % 2 == 0 ? "user" : "assistant"},
                                   {"content", "step " + std::to_string(i) + " " + text}});
    }
    ASSERT_EQ(daemon_
                  ->Call("POST", "/v1/sessions/" + id + "/messages",
                         json::serialize(json::object{{"messages", batch}}))
                  ->status,
              200);
    ASSERT_EQ(daemon_->Call("POST", "/v1/sessions/" + id + "/context", "{}")->status, 200);
  }

  std::string Ctl() const {
    return "MISSY_HOME='" + dir_.path() + "' " + DaemonProcess::Binary("missyctl");
  }
  std::string Tmux(const std::string& args) const {
    return "tmux -S '" + tmux_socket_ + "' " + args;
  }
  std::string Capture() { return Shell(Tmux("capture-pane -p -t top 2>/dev/null")).out; }

  // Waits until the pane shows the three sessions in `want` order.
  bool WaitForOrder(const std::vector<std::string>& want, std::string* screen) {
    for (int i = 0; i < 100; ++i) {
      *screen = Capture();
      if (Order(*screen) == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string tmux_socket_;
};

TEST_F(MissyctlTopTest, RowsAppearSortKeysReorderThemAndQExitsZeroInTmux) {
  tmux_socket_ = dir_.Join("tmux.sock");
  const std::string exit_file = dir_.Join("top.exit");
  ASSERT_EQ(Shell(Tmux("-f /dev/null new-session -d -s top -x 80 -y 24 \"" + Ctl() +
                       " top --interval 1; echo \\$? > '" + exit_file + "'; sleep 5\""))
                .code,
            0);
  std::string screen;
  // Sorted by used tokens (the default): alpha's context is the largest.
  ASSERT_TRUE(WaitForOrder({"alpha", "bravo", "charlie"}, &screen) ||
              WaitForOrder({"alpha", "charlie", "bravo"}, &screen))
      << screen;
  EXPECT_EQ(Order(screen).front(), "alpha") << screen;
  EXPECT_NE(screen.find("sorted by used"), std::string::npos) << screen;
  EXPECT_NE(screen.find("USED/WINDOW"), std::string::npos) << screen;
  for (const std::string& line : SplitLines(screen)) EXPECT_LE(CodePoints(line), 80u) << line;

  ASSERT_EQ(Shell(Tmux("send-keys -t top m")).code, 0);
  EXPECT_TRUE(WaitForOrder({"bravo", "charlie", "alpha"}, &screen)) << screen;
  EXPECT_NE(screen.find("sorted by messages"), std::string::npos) << screen;
  ASSERT_EQ(Shell(Tmux("send-keys -t top n")).code, 0);
  EXPECT_TRUE(WaitForOrder({"alpha", "bravo", "charlie"}, &screen)) << screen;
  EXPECT_NE(screen.find("sorted by name"), std::string::npos) << screen;

  ASSERT_EQ(Shell(Tmux("send-keys -t top q")).code, 0);
  std::string code;
  for (int i = 0; i < 100 && code.empty(); ++i) {
    std::ifstream in(exit_file);
    std::getline(in, code);
    if (code.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(code, "0");
}

TEST_F(MissyctlTopTest, WithoutATerminalTopPrintsOneSnapshot) {
  ShellRun r = Shell(Ctl() + " top --sort messages </dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<std::string> lines = SplitLines(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "no escape codes in a snapshot";
  EXPECT_EQ(Order(r.out), (std::vector<std::string>{"bravo", "charlie", "alpha"})) << r.out;
  for (const std::string& line : lines) EXPECT_LE(CodePoints(line), 80u) << line;
  EXPECT_EQ(Shell(Ctl() + " top --sort nope 2>/dev/null").code, 2);
}

TEST_F(MissyctlTopTest, ContextShowAndLsPrintAPastContext) {
  json::value listed = Body(daemon_->Call("GET", "/v1/sessions/bravo/contexts"));
  ASSERT_EQ(listed.at("contexts").as_array().size(), 1u);
  const std::string id(listed.at("contexts").as_array()[0].at("context_id").as_string());
  ShellRun r = Shell(Ctl() + " context show " + id);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("context " + id + " of session bravo"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept"), std::string::npos) << r.out;
  for (const std::string& line : SplitLines(r.out)) EXPECT_LE(CodePoints(line), 80u) << line;
  r = Shell(Ctl() + " context show " + id + " --json");
  ASSERT_EQ(r.code, 0);
  int kept = 0;  // (a system message may carry memory hits from the other sessions)
  const json::value shown = json::parse(r.out);
  for (const json::value& m : shown.at("messages").as_array()) {
    kept += m.at("missy").at("entry") == "kept" ? 1 : 0;
  }
  EXPECT_EQ(kept, 40);
  r = Shell(Ctl() + " context ls bravo");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(id), std::string::npos) << r.out;
  EXPECT_EQ(Shell(Ctl() + " context show ctx_nope 2>/dev/null").code, 1);
}

}  // namespace
}  // namespace missy::testing

// The real missyd with context.audit.mirror set: the mirror file holds, in seq order and
// byte for byte, the lines the audit log has (spawned daemon: the wiring in missyd_main).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/daemon_process.h"
#include "test_util.h"

namespace missy::testing {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(AuditMirrorDaemonTest, TheMirrorHoldsEveryCommittedEventInOrder) {
  TempDir dir;
  DaemonProcess daemon(dir.path(), "context:\n  audit:\n    mirror: audit.jsonl\n");
  ASSERT_TRUE(daemon.Start().ok()) << daemon.log();
  ASSERT_EQ(daemon.Call("POST", "/v1/sessions", R"({"id":"m1"})")->status, 201);
  ASSERT_EQ(daemon.Call("POST", "/v1/sessions/m1/messages",
                        R"({"messages":[{"role":"user","content":"hello"}]})")
                ->status,
            200);
  ASSERT_EQ(daemon.Call("POST", "/v1/sessions/m1/context", "{}")->status, 200);
  // What the log holds while the daemon runs (the mirror gets daemon.stopped too).
  const boost::json::value logged = Body(daemon.Call("GET", "/v1/audit?limit=100"));
  ASSERT_EQ(daemon.Stop(), 0);

  const std::string path = dir.Join("audit.jsonl");
  struct stat st{};
  ASSERT_EQ(::stat(path.c_str(), &st), 0) << daemon.log();
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::vector<std::string> lines = Lines(path);
  const boost::json::array& events = logged.at("events").as_array();
  ASSERT_GE(events.size(), 4u);  // daemon.started, session.created, messages.appended, ...
  ASSERT_EQ(lines.size(), events.size() + 1) << "the mirror also ends with daemon.stopped";
  int64_t previous = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const boost::json::value line = boost::json::parse(lines[i]);
    const int64_t seq = line.at("seq").as_int64();
    EXPECT_EQ(seq, previous + 1) << "line " << i;
    previous = seq;
    if (i < events.size()) {
      EXPECT_EQ(line, events[i]) << "line " << i;
    } else {
      EXPECT_EQ(line.at("event_type").as_string(), "daemon.stopped");
    }
  }
  std::vector<std::string> types;
  for (const std::string& l : lines) {
    types.emplace_back(boost::json::parse(l).at("event_type").as_string());
  }
  EXPECT_EQ(types.front(), "daemon.started");
  EXPECT_NE(std::find(types.begin(), types.end(), "messages.appended"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "context.built"), types.end());
}

TEST(AuditMirrorDaemonTest, AnUnwritableMirrorStopsTheStartWithTheKeyNamed) {
  TempDir dir;
  DaemonProcess daemon(dir.path(), "context:\n  audit:\n    mirror: no/such/dir/a.jsonl\n");
  std::string output;
  // --check-config accepts it (the path is well formed); starting cannot open it.
  EXPECT_EQ(daemon.RunOnce({"--check-config"}, &output), 0) << output;
  EXPECT_EQ(daemon.RunOnce({}, &output), 1) << output;
  EXPECT_NE(output.find("context.audit.mirror"), std::string::npos) << output;
  EXPECT_NE(output.find(dir.Join("no/such/dir/a.jsonl")), std::string::npos) << output;
}

}  // namespace
}  // namespace missy::testing

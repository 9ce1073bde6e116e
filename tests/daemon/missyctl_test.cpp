// missyctl end to end: the real binary against a live daemon (DaemonProcess), each
// command's output and exit code (0 ok, 1 failure, 2 usage).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_process.h"
#include "test_util.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

struct CtlResult {
  int code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class MissyctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<DaemonProcess>(dir_.path(), "context:\n  log_level: warn\n");
    ASSERT_TRUE(daemon_->Start().ok()) << daemon_->log();
  }

  // Runs `missyctl ARGS` (shell words) with MISSY_HOME = the daemon's home; `prefix` is
  // put before the command (e.g. "printf x |").
  CtlResult Ctl(const std::string& args, const std::string& prefix = {},
                const std::string& home = {}) {
    const std::string err_path = dir_.Join("ctl.err");
    const std::string cmd = prefix + " MISSY_HOME='" + (home.empty() ? dir_.path() : home) + "' " +
                            DaemonProcess::Binary("missyctl") + " " + args + " 2>'" + err_path +
                            "'";
    CtlResult r;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = ReadAll(err_path);
    return r;
  }

  void CreateWithMessages(const std::string& id, int messages,
                          const std::string& model = "gpt-4o") {
    ASSERT_EQ(
        daemon_
            ->Call("POST", "/v1/sessions", R"({"id":")" + id + R"(","model":")" + model + R"("})")
            ->status,
        201);
    for (int i = 0; i < messages; ++i) {
      const std::string role = i % 2 == 0 ? "user" : "assistant";
      const std::string body = R"({"messages":[{"role":")" + role + R"(","content":"step )" +
                               std::to_string(i) + R"(: check the migration of table t)" +
                               std::to_string(i) +
                               R"( and report the failing column names in detail"}]})";
      ASSERT_EQ(daemon_->Call("POST", "/v1/sessions/" + id + "/messages", body)->status, 200);
    }
  }

  int64_t Requests() { return Int(Body(daemon_->Call("GET", "/v1/health")), {"requests"}); }

  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(MissyctlTest, SessionsListShowAndRemove) {
  CreateWithMessages("demo", 3);
  CtlResult r = Ctl("sessions");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines = SplitLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_TRUE(std::regex_match(lines[0], std::regex("ID +MODEL +MSGS +TOKENS +UPDATED")))
      << lines[0];
  EXPECT_TRUE(std::regex_match(
      lines[1], std::regex("demo +gpt-4o +3 +[0-9]+ +20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{8}")))
      << lines[1];
  EXPECT_EQ(Ctl("sessions ls").out, r.out);

  r = Ctl("sessions show demo");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("id              demo\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("messages        3 (last seq 3)\n"), std::string::npos) << r.out;
  r = Ctl("sessions show demo --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Int(json::parse(r.out), {"message_count"}), 3);

  r = Ctl("sessions rm demo");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deleted session demo: 3 messages, 0 summaries, 0 memory items, 0 jobs\n");
  r = Ctl("sessions show demo");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "missyctl: not_found: session 'demo' not found\n");
  r = Ctl("sessions rm demo");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "missyctl: not_found: session 'demo' not found (field session_id)\n");
  EXPECT_EQ(Ctl("sessions").out, "(no sessions)\n");

  // The delete is audited, and its messages are gone from the store.
  json::value events = Body(daemon_->Call("GET", "/v1/audit?type=session.deleted"));
  ASSERT_EQ(events.at("events").as_array().size(), 1u);
  EXPECT_EQ(events.at("events").as_array()[0].at("session_id").as_string(), "demo");
  EXPECT_EQ(Int(events.at("events").as_array()[0], {"detail", "messages"}), 3);
  EXPECT_EQ(daemon_->Call("GET", "/v1/sessions/demo/messages")->status, 404);
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(MissyctlTest, UsageErrorsExitTwoAndSendNothing) {
  const int64_t before = Requests();
  struct Case {
    std::string args;
    std::string err;  // a part of the error output
  };
  const std::vector<Case> cases = {
      {"sessions --bogus", "missyctl: unknown option '--bogus'\nusage: missyctl sessions"},
      {"frobnicate", "missyctl: unknown command 'frobnicate'"},
      {"sessions show", "missyctl: missing argument\nusage: missyctl sessions"},
      {"sessions show a b", "missyctl: unexpected argument 'b'"},
      {"sessions nuke x", "missyctl: unknown subcommand 'nuke' (ls, show or rm)"},
      {"sessions --limit 0", "--limit: expected an integer from 1 to 1000, got '0'"},
      {"context", "missyctl: missing argument\nusage: missyctl context ID"},
      {"context demo --model no-such-model", "--model: unknown model 'no-such-model'"},
      {"audit tail --lines x", "--lines: expected an integer"},
      {"memory add", "missyctl: missing argument"},
      {"tokens", "missing subcommand 'count'"},
      {"config frob", "unknown subcommand 'frob' (check, show or reload)"},
      {"--socket", "usage: missyctl [--socket PATH]"},
      {"", "usage: missyctl [--socket PATH]"},
  };
  for (const Case& c : cases) {
    CtlResult r = Ctl(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.err), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.args;
  }
  EXPECT_EQ(Requests(), before + 1);  // only this count itself reached the daemon
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(MissyctlTest, HelpForEveryCommand) {
  CtlResult r = Ctl("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("exit codes:\n  0  success\n  1  failure"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  2  usage error"), std::string::npos) << r.out;
  for (const char* command :
       {"status", "sessions", "messages", "context", "compact", "summaries", "memory", "learnings",
        "tokens", "import-missy", "config", "audit", "jobs"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + command + " "), std::string::npos) << command;
    CtlResult help = Ctl(std::string("help ") + command);
    EXPECT_EQ(help.code, 0) << command;
    EXPECT_EQ(help.out.rfind(std::string("usage: missyctl ") + command, 0), 0u) << help.out;
    CtlResult flag = Ctl(std::string(command) + " --help");
    EXPECT_EQ(flag.code, 0) << command;
    EXPECT_EQ(flag.out, help.out) << command;
    for (const std::string& line : SplitLines(help.out)) {
      EXPECT_LE(line.size(), 80u) << command << ": " << line;
    }
  }
  EXPECT_EQ(Ctl("help nope").code, 2);
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(MissyctlTest, StatusShowsVersionSessionsTokenizerAndJobs) {
  CreateWithMessages("a", 1);
  CreateWithMessages("b", 2);
  CtlResult r = Ctl("status");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines = SplitLines(r.out);
  ASSERT_GE(lines.size(), 6u) << r.out;
  EXPECT_TRUE(std::regex_match(lines[0], std::regex("ok: missyd [0-9.]+, up .+, schema v[0-9]+")))
      << lines[0];
  EXPECT_NE(r.out.find("\nsessions    2 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ntokenizer   exact\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\njobs        0 queued, 0 running, 0 failed\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("socket      " + daemon_->socket() + "\n"), std::string::npos) << r.out;
  for (const std::string& line : lines) EXPECT_LE(CodePoints(line), 80u) << line;
  EXPECT_EQ(Ctl("health").out.substr(0, 11), "ok: missyd ");  // the old name
  EXPECT_EQ(Int(json::parse(Ctl("status --json").out), {"schema_version"}) > 0, true);

  // --socket wins; a config's context.socket is honoured; an absent socket is one line.
  TempDir other;
  WriteFileOrDie(other.Join("config.yaml"), "context:\n  socket: " + daemon_->socket() + "\n");
  EXPECT_EQ(Ctl("status", "", other.path()).code, 0);
  r = Ctl("--socket " + other.Join("none.sock") + " status");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(
      r.err.rfind("missyctl: unavailable: cannot reach missyd at " + other.Join("none.sock"), 0),
      0u)
      << r.err;
  EXPECT_EQ(Ctl("status --socket " + daemon_->socket(), "", other.Join("empty")).code, 0);

  EXPECT_EQ(daemon_->Stop(), 0);
  r = Ctl("status");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("missyctl: unavailable: cannot reach missyd at " + daemon_->socket(), 0),
            0u)
      << r.err;
  EXPECT_EQ(SplitLines(r.err).size(), 1u) << r.err;
}

TEST_F(MissyctlTest, ContextShowsTheBudgetReport) {
  CreateWithMessages("c", 4);
  CtlResult r = Ctl("context c");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^context ctx_[0-9a-f]+ of c: 4 messages\n")))
      << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("\nused [0-9,]+ of 111,616 tokens \\([0-9.]+%\\), zone safe\n")))
      << r.out;
  EXPECT_NE(r.out.find("window 128,000 - output 16,384; o200k_base x1.00"), std::string::npos)
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nhistory +[0-9,]+ +[0-9,]+  4 kept"))) << r.out;
  for (const std::string& line : SplitLines(r.out)) EXPECT_LE(CodePoints(line), 80u) << line;

  // gpt-4's window from the model table: 8,192 - 4,096.
  r = Ctl("context c --model gpt-4");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(" of 4,096 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("window 8,192 - output 4,096"), std::string::npos) << r.out;
  r = Ctl("context c --window 9000 --max-output 1000 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  json::value v = json::parse(r.out);
  EXPECT_EQ(Int(v, {"budget", "total"}), 8000);
  EXPECT_EQ(v.at("messages").as_array().size(), 4u);

  r = Ctl("context nope");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "missyctl: not_found: session 'nope' not found\n");
  r = Ctl("context c --window 100 --max-output 100");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "missyctl: invalid_argument: max_output_tokens (100) must be smaller than "
            "context_window (100) (field max_output_tokens)\n");
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(MissyctlTest, CompactThenSummariesAndMessages) {
  CreateWithMessages("k", 30);
  CtlResult r = Ctl("compact k --reason test");
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("\ncompacted: ([0-9]+) leaf summar")))
      << r.out;
  EXPECT_GE(std::stoi(m[1]), 1);
  r = Ctl("summaries k");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines = SplitLines(r.out);
  ASSERT_GE(lines.size(), 2u) << r.out;
  EXPECT_TRUE(std::regex_match(lines[0], std::regex("ID +DEPTH +SEQS +MSGS +TOKENS +PARENT")))
      << lines[0];
  EXPECT_TRUE(
      std::regex_match(lines[1], std::regex("sum_[0-9a-f]+ +0 +1-[0-9]+ +[0-9,]+ +[0-9,]+ +.+")))
      << lines[1];
  EXPECT_EQ(Ctl("summaries nope").code, 1);

  r = Ctl("messages k --after 28");
  ASSERT_EQ(r.code, 0) << r.err;
  lines = SplitLines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_TRUE(std::regex_match(lines[1], std::regex(" *29 +user +[0-9]+ +- +step 28: check .*")))
      << lines[1];
  EXPECT_EQ(Ctl("session k").code, 0);  // the old name of sessions show
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(MissyctlTest, MemoryAndLearnings) {
  CreateWithMessages("m", 1);
  CtlResult r = Ctl("memory add The staging database listens on port 6543 --tag db --tag ops");
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(r.out, m, std::regex("added (mem_[0-9a-f]+)\n"))) << r.out;
  const std::string id = m[1];
  r = Ctl("memory search staging port");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nmemory +" + id + " +[-0-9.]+ +.*staging")))
      << r.out;
  r = Ctl("memory ls");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(id + "  (global)  db,ops  The staging database"), std::string::npos)
      << r.out;
  EXPECT_EQ(Ctl("memory rm " + id).out, "deleted " + id + "\n");
  r = Ctl("memory rm " + id);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("missyctl: not_found: ", 0), 0u) << r.err;
  r = Ctl("memory add x --session nope");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("(field session_id)"), std::string::npos) << r.err;

  r = Ctl(
      "learnings add Check the port before blaming the firewall --task-type ops --outcome success");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex("added lrn_[0-9a-f]+\n"))) << r.out;
  r = Ctl("learnings");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines = SplitLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_TRUE(std::regex_match(
      lines[1],
      std::regex("[0-9-]+ [0-9:]+ +ops +success +Check the port before blaming the firewall")))
      << lines[1];
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(MissyctlTest, TokensCountFromArgumentsFileAndStdin) {
  CtlResult r = Ctl("tokens count hello world");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "2\n");
  EXPECT_EQ(Ctl("tokens count", "printf 'hello world' |").out, "2\n");
  EXPECT_EQ(Ctl("tokens count -", "printf 'hello world' |").out, "2\n");
  EXPECT_EQ(Ctl("tokens count --encoding cl100k_base --file /usr/share/common-licenses/GPL-3").out,
            "7455\n");
  r = Ctl("tokens count --file /nonexistent/x");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "missyctl: not_found: cannot read /nonexistent/x (field --file)\n");
  r = Ctl("tokens count --encoding p50k hi");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("(field --encoding)"), std::string::npos) << r.err;
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(MissyctlTest, ConfigCheckShowAndReload) {
  CtlResult r = Ctl("config check");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "config " + dir_.Join("config.yaml") + " is valid\n");
  WriteFileOrDie(dir_.Join("bad.yaml"), "context:\n  budget:\n    total: -3\n");
  r = Ctl("config check " + dir_.Join("bad.yaml"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("missyctl: invalid_argument: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("(field context.budget.total)\n"), std::string::npos) << r.err;
  EXPECT_EQ(Ctl("--config " + dir_.Join("bad.yaml") + " config check").code, 1);

  r = Ctl("config show");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\ncontext.budget.total = 30000\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("context.socket = " + daemon_->socket() + "\n"), std::string::npos);
  EXPECT_EQ(Int(json::parse(Ctl("config show --json").out), {"context", "budget", "total"}), 30000);

  // Reload: only when this build's daemon has the route (another change adds it).
  Result<ClientResponse> probe = daemon_->Call("POST", "/v1/config/reload", "{}");
  ASSERT_TRUE(probe.ok());
  if (probe->status == 404) {
    r = Ctl("config reload");
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.err.rfind("missyctl: not_found: ", 0), 0u) << r.err;
    GTEST_SKIP() << "POST /v1/config/reload is not in this build";
  }
  WriteFileOrDie(dir_.Join("config.yaml"),
                 "context:\n  log_level: warn\n  budget:\n    total: 25000\n");
  r = Ctl("config reload");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("budget.total"), std::string::npos) << r.out;
  EXPECT_NE(Ctl("config show").out.find("\ncontext.budget.total = 25000\n"), std::string::npos);
  WriteFileOrDie(dir_.Join("config.yaml"), "context:\n  budget:\n    total: -3\n");
  r = Ctl("config reload");  // refused, the old config stays
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("missyctl: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("must not be negative, got -3 (field context.budget.total)\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(SplitLines(r.err).size(), 1u) << r.err;
  EXPECT_NE(Ctl("config show").out.find("\ncontext.budget.total = 25000\n"), std::string::npos);
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(MissyctlTest, AuditTailVerifyAndFollow) {
  CreateWithMessages("x", 2);
  CreateWithMessages("y", 1);
  CtlResult r = Ctl("audit verify");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(
      r.out, std::regex("audit chain ok: [0-9]+ events \\(seq 1\\.\\.[0-9]+\\)\n")))
      << r.out;

  r = Ctl("audit tail -n 2");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines = SplitLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_TRUE(std::regex_match(
      lines[1],
      std::regex("[0-9]{2}-[0-9]{2} [0-9:]{8} +[0-9]+ messages\\.appended +y +count=1 .*")))
      << lines[1];
  r = Ctl("audit tail --type session.created");
  ASSERT_EQ(r.code, 0) << r.err;
  lines = SplitLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_TRUE(std::regex_search(lines[0], std::regex(" session\\.created +x +"))) << lines[0];
  EXPECT_TRUE(std::regex_search(lines[1], std::regex(" session\\.created +y +"))) << lines[1];
  for (const std::string& line : lines) EXPECT_LE(CodePoints(line), 80u) << line;

  r = Ctl("audit tail --since 0 --json --type session.created --type messages.appended");
  ASSERT_EQ(r.code, 0) << r.err;
  lines = SplitLines(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;  // 2 sessions, 3 appends
  int64_t prev = 0;
  for (const std::string& line : lines) {
    json::value e = json::parse(line);
    EXPECT_GT(Int(e, {"seq"}), prev);
    prev = Int(e, {"seq"});
  }

  // -f: the backlog, then live events as they are committed.
  const std::string out_path = dir_.Join("follow.out");
  const std::string cmd = "MISSY_HOME='" + dir_.path() + "' timeout 4 " +
                          DaemonProcess::Binary("missyctl") +
                          " audit tail -f -n 1 --type session.created > '" + out_path + "' 2>&1";
  std::thread follower([&] { (void)std::system(cmd.c_str()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const int created = daemon_->Call("POST", "/v1/sessions", R"({"id":"live"})")->status;
  follower.join();
  ASSERT_EQ(created, 201);
  lines = SplitLines(ReadAll(out_path));
  ASSERT_EQ(lines.size(), 2u) << ReadAll(out_path);
  EXPECT_TRUE(std::regex_search(lines[0], std::regex(" session\\.created +y +"))) << lines[0];
  EXPECT_TRUE(std::regex_search(lines[1], std::regex(" session\\.created +live +"))) << lines[1];
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(MissyctlTest, JobsAndImportErrors) {
  CtlResult r = Ctl("jobs");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "(no jobs)\n");
  r = Ctl("jobs --state bogus");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("missyctl: invalid_argument: "), std::string::npos) << r.err;
  r = Ctl("import-missy /nonexistent/memory.db");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("missyctl: not_found: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("(field path)"), std::string::npos) << r.err;
  EXPECT_EQ(daemon_->Stop(), 0);
}

// Started by socket activation, the daemon's sockets are in $XDG_RUNTIME_DIR/missy/:
// missyctl finds them there when the configured one is absent.
TEST_F(MissyctlTest, FindsTheSocketActivatedSocketWhenTheConfiguredOneIsAbsent) {
  TempDir empty_home;  // no config, no socket
  TempDir runtime;
  std::filesystem::create_directories(runtime.Join("missy"));
  std::filesystem::create_symlink(daemon_->socket(), runtime.Join("missy/missyd.sock"));
  CtlResult without = Ctl("status", "", empty_home.path());
  EXPECT_EQ(without.code, 1) << without.out << without.err;
  EXPECT_NE(without.err.find(empty_home.Join("missyd.sock")), std::string::npos) << without.err;
  CtlResult with = Ctl("status", "XDG_RUNTIME_DIR='" + runtime.path() + "'", empty_home.path());
  EXPECT_EQ(with.code, 0) << with.out << with.err;
  EXPECT_NE(with.out.find("ok"), std::string::npos) << with.out;
}

}  // namespace
}  // namespace missy::testing

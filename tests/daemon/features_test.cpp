// Integration tests of the daemon's features over its socket: tool-call validation,
// calibration, memory and learnings in contexts, jobs, audit verification, Missy import,
// config reload, and missyctl.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "daemon_process.h"
#include "test_util.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

// Runs missyctl with MISSY_HOME=home; returns the exit code and stdout+stderr.
int Missyctl(const std::string& home, const std::string& args, std::string* out) {
  const std::string cmd =
      "MISSY_HOME='" + home + "' " + DaemonProcess::Binary("missyctl") + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  out->clear();
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class FeaturesTest : public ::testing::Test {
 protected:
  void Start(const std::string& config = "context:\n  log_level: warn\n") {
    daemon_ = std::make_unique<DaemonProcess>(dir_.path(), config);
    ASSERT_TRUE(daemon_->Start().ok()) << daemon_->log();
  }
  Result<ClientResponse> Call(const std::string& method, const std::string& target,
                              const std::string& body = {}) {
    return daemon_->Call(method, target, body);
  }
  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
};

const char* kCall =
    R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{}"}}]})";

TEST_F(FeaturesTest, InvalidToolSequencesAreFlaggedOrRefusedInStrictMode) {
  Start();
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"lax"})")->status, 201);
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"strict","strict":true})")->status, 201);

  // An orphan result: stored, flagged, and reported.
  const std::string batch = std::string(R"({"messages":[{"role":"user","content":"go"},)") + kCall +
                            R"(,{"role":"tool","tool_call_id":"call_9","content":"?"}]})";
  Result<ClientResponse> r = Call("POST", "/v1/sessions/lax/messages", batch);
  ASSERT_EQ(r->status, 200) << r->body;
  json::value body = Body(r);
  ASSERT_EQ(body.at("warnings").as_array().size(), 1u) << r->body;
  const json::value& w = body.at("warnings").as_array()[0];
  EXPECT_EQ(w.at("tool_call_id").as_string(), "call_9");
  EXPECT_EQ(w.at("problem").as_string(), "orphan_result");
  EXPECT_EQ(Int(w, {"index"}), 2);
  EXPECT_EQ(body.at("messages").as_array()[2].at("flags").as_array()[0].as_string(),
            "orphan_result");
  EXPECT_EQ(Int(body, {"message_count"}), 3);

  // The context never contains the orphan nor the unanswered call, and says why.
  json::value ctx = Body(Call("POST", "/v1/sessions/lax/context", "{}"));
  const json::array& msgs = ctx.at("messages").as_array();
  ASSERT_EQ(msgs.size(), 1u) << json::serialize(ctx);
  EXPECT_EQ(msgs[0].at("role").as_string(), "user");
  EXPECT_GE(ctx.at("budget").at("sanitized").as_array().size(), 2u);

  // Strict: 422, nothing stored, the warnings in the error.
  r = Call("POST", "/v1/sessions/strict/messages", batch);
  EXPECT_EQ(r->status, 422) << r->body;
  body = Body(r);
  EXPECT_EQ(body.at("error").at("code").as_string(), "unprocessable");
  EXPECT_EQ(body.at("error").at("field").as_string(), "messages[2]");
  EXPECT_EQ(body.at("warnings").as_array().size(), 1u);
  EXPECT_EQ(Int(Body(Call("GET", "/v1/sessions/strict")), {"message_count"}), 0);
  // Per request strictness overrides the session's.
  r = Call("POST", "/v1/sessions/lax/messages",
           R"({"strict":true,"messages":[{"role":"tool","tool_call_id":"nope","content":"x"}]})");
  EXPECT_EQ(r->status, 422) << r->body;
  // Ids reused across separate rounds are legal.
  const std::string round = std::string(R"({"messages":[)") + kCall +
                            R"(,{"role":"tool","tool_call_id":"call_1","content":"ok"}]})";
  EXPECT_EQ(
      Body(Call("POST", "/v1/sessions/strict/messages", round)).at("warnings").as_array().size(),
      0u);
  r = Call("POST", "/v1/sessions/strict/messages", round);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(FeaturesTest, UsageReportsCalibrateLaterBudgetsAndSurviveRestart) {
  Start();
  ASSERT_EQ(
      Call("POST", "/v1/sessions", R"({"id":"c","model":"gpt-4o","system_prompt":"Be brief."})")
          ->status,
      201);
  ASSERT_EQ(
      Call(
          "POST", "/v1/sessions/c/messages",
          R"({"messages":[{"role":"user","content":"Count the files in this repository, please."}]})")
          ->status,
      200);
  json::value ctx = Body(Call("POST", "/v1/sessions/c/context", "{}"));
  const std::string context_id(ctx.at("context_id").as_string());
  const int64_t estimated = Int(ctx.at("budget"), {"calibration", "estimated_tokens"});
  EXPECT_EQ(ctx.at("budget").at("encoding").as_string(), "o200k_base");
  EXPECT_GT(estimated, 5);
  EXPECT_EQ(Int(ctx.at("budget"), {"calibration", "calibrated_total"}), 128000 - 16384);

  // The provider saw 25% more: the first sample sets the ratio.
  const int64_t actual = estimated * 5 / 4;
  json::value usage = Body(Call("POST", "/v1/sessions/c/usage",
                                R"({"context_id":")" + context_id + R"(","prompt_tokens":)" +
                                    std::to_string(actual) + R"(,"completion_tokens":7})"));
  EXPECT_NEAR(Num(usage, {"ratio"}), static_cast<double>(actual) / estimated, 1e-9);
  EXPECT_EQ(Int(usage, {"samples"}), 1);

  // Garbage is clamped: a 10x report moves the ratio at most to 1.6.
  usage = Body(Call("POST", "/v1/sessions/c/usage",
                    R"({"context_id":")" + context_id + R"(","prompt_tokens":)" +
                        std::to_string(estimated * 10) + "}"));
  EXPECT_LE(Num(usage, {"ratio"}), 1.6);
  const double ratio = Num(usage, {"ratio"});
  EXPECT_GT(ratio, 1.25);

  // Errors: unknown context, missing tokens.
  EXPECT_EQ(Call("POST", "/v1/sessions/c/usage", R"({"context_id":"ctx_nope","prompt_tokens":5})")
                ->status,
            404);
  EXPECT_EQ(
      Call("POST", "/v1/sessions/c/usage", R"({"context_id":")" + context_id + R"("})")->status,
      400);
  EXPECT_EQ(daemon_->Stop(), 0);

  // After a restart the ratio still applies to the budget in our units.
  Start();
  ctx = Body(Call("POST", "/v1/sessions/c/context", "{}"));
  const json::value& cal = ctx.at("budget").at("calibration");
  EXPECT_NEAR(Num(cal, {"ratio"}), ratio, 1e-9);
  EXPECT_EQ(Int(cal, {"raw_total"}), 128000 - 16384);
  EXPECT_EQ(Int(cal, {"calibrated_total"}), static_cast<int64_t>((128000 - 16384) / ratio));
  EXPECT_EQ(Int(ctx.at("budget"), {"total"}), static_cast<int64_t>((128000 - 16384) / ratio));
  json::value audit = Body(Call("GET", "/v1/audit?type=calibration.updated"));
  EXPECT_EQ(audit.at("events").as_array().size(), 2u);
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(FeaturesTest, MemoryAndLearningsAreInjectedIntoContexts) {
  Start();
  ASSERT_EQ(
      Call("POST", "/v1/sessions", R"({"id":"m","system_prompt":"You are an ops agent."})")->status,
      201);
  Result<ClientResponse> r =
      Call("POST", "/v1/memory",
           R"({"text":"The staging database listens on port 6543, not 5432.","tags":["db"]})");
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string memory_id(Body(r).at("id").as_string());
  ASSERT_EQ(Call("POST", "/v1/memory", R"({"text":"Deploys happen on Tuesdays."})")->status, 201);
  ASSERT_EQ(
      Call(
          "POST", "/v1/learnings",
          R"({"task_type":"ops","outcome":"success","lesson":"Check the port before blaming the firewall."})")
          ->status,
      201);
  EXPECT_EQ(Call("POST", "/v1/memory", R"({"text":"  "})")->status, 400);
  EXPECT_EQ(Call("POST", "/v1/memory", R"({"text":"x","tags":[1]})")->status, 400);

  json::value hits = Body(Call("GET", "/v1/memory/search?q=staging%20database%20port"));
  ASSERT_FALSE(hits.at("results").as_array().empty());
  EXPECT_EQ(hits.at("results").as_array()[0].at("id").as_string(), memory_id);
  // Hostile search text is searched, never an error.
  for (const char* q :
       {"%22%22%22", "NEAR(", "*", "-", "((", "a%20OR%20", "'%3B%20DROP%20TABLE%20x"}) {
    EXPECT_EQ(Call("GET", std::string("/v1/memory/search?q=") + q)->status, 200) << q;
  }

  json::value ctx = Body(
      Call("POST", "/v1/sessions/m/context",
           R"({"message":{"role":"user","content":"Which port does the staging database use?"}})"));
  const std::string system(ctx.at("system").as_string());
  EXPECT_NE(system.find("## Relevant Memory"), std::string::npos) << system;
  EXPECT_NE(system.find("6543"), std::string::npos) << system;
  EXPECT_NE(system.find("## Past Learnings"), std::string::npos) << system;
  EXPECT_NE(system.find("Check the port before blaming the firewall."), std::string::npos);
  EXPECT_GE(Int(ctx.at("budget"), {"memory", "items"}), 1);
  EXPECT_EQ(Int(ctx.at("budget"), {"learnings", "items"}), 1);

  // Deleted memory no longer comes back.
  EXPECT_EQ(Call("DELETE", "/v1/memory/" + memory_id)->status, 200);
  EXPECT_EQ(Call("GET", "/v1/memory/" + memory_id)->status, 404);
  EXPECT_EQ(Call("DELETE", "/v1/memory/" + memory_id)->status, 404);
  ctx = Body(
      Call("POST", "/v1/sessions/m/context",
           R"({"message":{"role":"user","content":"Which port does the staging database use?"}})"));
  EXPECT_EQ(std::string(ctx.at("system").as_string()).find("6543"), std::string::npos);
  EXPECT_EQ(Body(Call("GET", "/v1/learnings")).at("learnings").as_array().size(), 1u);
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(FeaturesTest, AuditChainVerifiesAndMissyctlSpeaksToTheDaemon) {
  Start();
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"v"})")->status, 201);
  json::value verify = Body(Call("GET", "/v1/audit/verify"));
  EXPECT_TRUE(verify.at("ok").as_bool());
  EXPECT_GE(Int(verify, {"checked"}), 2);

  std::string out;
  EXPECT_EQ(Missyctl(dir_.path(), "health", &out), 0) << out;
  EXPECT_NE(out.find("ok: missyd"), std::string::npos) << out;
  EXPECT_EQ(Missyctl(dir_.path(), "sessions", &out), 0) << out;
  EXPECT_NE(out.find("\nv "), std::string::npos) << out;
  EXPECT_EQ(Missyctl(dir_.path(), "audit verify", &out), 0) << out;
  EXPECT_NE(out.find("audit chain ok"), std::string::npos) << out;
  EXPECT_EQ(Missyctl(dir_.path(), "session nope", &out), 1);
  EXPECT_NE(out.find("missyctl: not_found: session 'nope' not found"), std::string::npos) << out;
  EXPECT_EQ(Missyctl(dir_.path(),
                     "tokens count --encoding cl100k_base --file /usr/share/common-licenses/GPL-3", &out),
            0);
  EXPECT_EQ(out, "7455\n");
  EXPECT_EQ(Missyctl(dir_.path(), "tokens count --file /usr/share/common-licenses/GPL-3", &out), 0);
  EXPECT_EQ(out, "7446\n");
  EXPECT_EQ(daemon_->Stop(), 0);
  EXPECT_EQ(Missyctl(dir_.path(), "health", &out), 1) << out;  // daemon gone: a clear error
  EXPECT_NE(out.find("cannot reach missyd"), std::string::npos) << out;
}

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
}

TEST_F(FeaturesTest, ImportsMissysMemoryDatabaseOnce) {
  const std::string missy_db = dir_.Join("memory.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(missy_db.c_str(), &db), SQLITE_OK);
  Exec(db, R"(
    CREATE TABLE sessions (session_id TEXT PRIMARY KEY, name TEXT, created_at TEXT, updated_at TEXT,
                           turn_count INTEGER, provider TEXT, channel TEXT);
    CREATE TABLE turns (id TEXT PRIMARY KEY, session_id TEXT, timestamp TEXT, role TEXT, content TEXT,
                        provider TEXT, metadata TEXT);
    CREATE TABLE summaries (id TEXT PRIMARY KEY, session_id TEXT, depth INTEGER, content TEXT,
                            token_estimate INTEGER, source_turn_ids TEXT, source_summary_ids TEXT,
                            parent_id TEXT, time_range_start TEXT, time_range_end TEXT,
                            descendant_count INTEGER, file_refs TEXT, created_at TEXT);
    CREATE TABLE learnings (id TEXT PRIMARY KEY, task_type TEXT, outcome TEXT, lesson TEXT,
                            approach TEXT, timestamp TEXT);
    INSERT INTO sessions VALUES ('old-1','first','2026-01-02T10:00:00','2026-01-02T10:05:00',2,'openai','cli');
    INSERT INTO turns VALUES ('t1','old-1','2026-01-02T10:00:00','user','Rename the config loader.','openai','{}');
    INSERT INTO turns VALUES ('t2','old-1','2026-01-02T10:01:00','assistant','Renamed it to load_config.','openai','{}');
    INSERT INTO summaries VALUES ('sum_0000000000000001','old-1',0,'User asked to rename the loader; done.',12,
                                  '["t1","t2"]','[]',NULL,'2026-01-02T10:00:00','2026-01-02T10:01:00',2,'[]',
                                  '2026-01-02T10:02:00');
    INSERT INTO learnings VALUES ('l1','refactor','success','Grep for callers before renaming.','["grep"]',
                                  '2026-01-02T10:03:00');
  )");
  sqlite3_close(db);

  Start();
  std::string out;
  EXPECT_EQ(Missyctl(dir_.path(), "import-missy " + missy_db, &out), 0) << out;
  EXPECT_NE(out.find("1 sessions, 2 messages, 1 summaries, 1 learnings"), std::string::npos) << out;
  EXPECT_EQ(Missyctl(dir_.path(), "import-missy " + missy_db, &out), 0) << out;  // idempotent
  EXPECT_NE(out.find("0 sessions, 0 messages, 0 summaries, 0 learnings"), std::string::npos) << out;

  json::value messages = Body(Call("GET", "/v1/sessions/old-1/messages"));
  ASSERT_EQ(messages.at("messages").as_array().size(), 2u);
  EXPECT_EQ(messages.at("messages").as_array()[1].at("content").as_string(),
            "Renamed it to load_config.");
  json::value summaries = Body(Call("GET", "/v1/sessions/old-1/summaries"));
  ASSERT_EQ(summaries.at("summaries").as_array().size(), 1u);
  EXPECT_EQ(Call("POST", "/v1/import/missy", R"({"path":"/nonexistent/memory.db"})")->status, 404);
  EXPECT_EQ(daemon_->Stop(), 0);
}

TEST_F(FeaturesTest, ReloadSwapsAValidConfigAndKeepsTheOldOneOtherwise) {
  Start("context:\n  log_level: warn\n  budget:\n    total: 20000\n");
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"r"})")->status, 201);
  EXPECT_EQ(Int(Body(Call("POST", "/v1/sessions/r/context", "{}")).at("budget"), {"total"}), 20000);

  WriteFileOrDie(dir_.Join("config.yaml"),
                 "context:\n  log_level: warn\n  budget:\n    total: 25000\n");
  ASSERT_EQ(kill(daemon_->pid(), SIGHUP), 0);
  bool swapped = false;
  for (int i = 0; i < 200 && !swapped; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    swapped =
        Int(Body(Call("POST", "/v1/sessions/r/context", "{}")).at("budget"), {"total"}) == 25000;
  }
  EXPECT_TRUE(swapped);

  WriteFileOrDie(dir_.Join("config.yaml"), "context:\n  budget:\n    total: -3\n");
  ASSERT_EQ(kill(daemon_->pid(), SIGHUP), 0);
  bool audited = false;
  for (int i = 0; i < 200 && !audited; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    audited =
        !Body(Call("GET", "/v1/audit?type=config.rejected")).at("events").as_array().empty();
  }
  EXPECT_TRUE(audited);
  EXPECT_EQ(Int(Body(Call("POST", "/v1/sessions/r/context", "{}")).at("budget"), {"total"}), 25000);
  EXPECT_EQ(daemon_->Stop(), 0);
}

}  // namespace
}  // namespace missy::testing

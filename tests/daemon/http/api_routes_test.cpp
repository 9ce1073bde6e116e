// Every /v1 route of daemon/http/*_routes.cpp in process (Api::Handle with a collecting
// exchange): its success status and body, and its errors with the error shape
// {"error":{"code","message","field"}} naming the field.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <boost/json.hpp>
#include <filesystem>
#include <regex>
#include <set>

#include "api_fixture.h"
#include "storage/database.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

constexpr char kSecret[] = "sk-UNMISTAKABLE-7f3e9a1c55d2";

const char* kToolBatch =
    R"({"messages":[{"role":"user","content":"go"},)"
    R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{}"}}]},)"
    R"({"role":"tool","tool_call_id":"call_9","content":"?"}]})";

class ApiRoutesTest : public ApiFixture {
 protected:
  ApiRoutesTest() {
    config_->providers["openai"].api_key = kSecret;
    config_->providers["openai"].model = "gpt-4o";
    config_->default_provider = "openai";
  }

  // Session "s" with two messages and session "strict" (strict mode).
  void Seed() {
    ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"s","system_prompt":"Be terse."})").status,
              201);
    ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"strict","strict":true})").status, 201);
    ApiReply r = Call("POST", "/v1/sessions/s/messages",
                      R"({"messages":[{"role":"user","content":"where is the staging db?"},)"
                      R"({"role":"assistant","content":"port 6543"}]})");
    ASSERT_EQ(r.status, 200) << r.raw;
  }
};

// The routes the tests below cover (success and errors). A route added to
// daemon/http/*_routes.cpp without tests here fails this check.
TEST(ApiRouteListTest, EveryRegisteredRouteIsCoveredHere) {
  const std::set<std::string> covered = {
      "DELETE /v1/memory/{id}",
      "DELETE /v1/sessions/{session_id}",  // also service/session_delete_test.cpp
      "GET /metrics",  // metrics_route_test.cpp
      "GET /v1/audit",
      "GET /v1/audit/stream",  // inspect_routes_test.cpp
      "GET /v1/audit/verify",
      "GET /v1/config",
      "GET /v1/contexts/{context_id}",  // inspect_routes_test.cpp, past_contexts_test.cpp
      "GET /v1/health",
      "GET /v1/jobs",
      "GET /v1/learnings",
      "GET /v1/memory",
      "GET /v1/memory/search",
      "GET /v1/memory/{id}",
      "GET /v1/sessions",
      "GET /v1/sessions/{session_id}",
      "GET /v1/sessions/{session_id}/contexts",  // inspect_routes_test.cpp
      "GET /v1/sessions/{session_id}/messages",
      "GET /v1/sessions/{session_id}/summaries",
      "GET /v1/summaries/{id}",
      "POST /v1/config/reload",  // service/config_reloader_test.cpp, ops/reload_test
      "POST /v1/import/missy",
      "POST /v1/learnings",
      "POST /v1/memory",
      "POST /v1/sessions",
      "POST /v1/sessions/{session_id}/compact",
      "POST /v1/sessions/{session_id}/context",
      "POST /v1/sessions/{session_id}/messages",
      "POST /v1/sessions/{session_id}/recall",
      "POST /v1/sessions/{session_id}/usage",
  };
  std::set<std::string> registered;
  const std::regex add(R"re(router_\.Add\(\s*"([A-Z]+)"\s*,\s*"([^"]+)")re");
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(MISSY_SOURCE_DIR) + "/daemon/http")) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 11 || name.substr(name.size() - 11) != "_routes.cpp") continue;
    const std::string text = ReadFileOrDie(entry.path().string());
    for (std::sregex_iterator it(text.begin(), text.end(), add), end; it != end; ++it) {
      registered.insert((*it)[1].str() + " " + (*it)[2].str());
    }
  }
  EXPECT_EQ(registered, covered);
}

TEST_F(ApiRoutesTest, HealthReportsMemoryAndStorage) {
  ApiReply r = Call("GET", "/v1/health");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body.at("status").as_string(), "ok");
  EXPECT_EQ(r.body.at("version").as_string(), kVersion);
  EXPECT_EQ(Int(r.body, "schema_version"), Database::LatestSchemaVersion());
  EXPECT_EQ(Int(r.body, "requests"), 1);
  const json::object& memory = r.body.at("memory").as_object();
  EXPECT_GT(Int(memory, "rss_bytes"), 0);
  EXPECT_EQ(Int(memory, "limit_mb"), config_->limits.memory_mb);
  const json::object& cache = memory.at("history_cache").as_object();
  EXPECT_EQ(Int(cache, "sessions"), 0);
  EXPECT_EQ(Int(cache, "max_bytes"), static_cast<int64_t>(HistoryCache::kDefaultMaxBytes));
  const json::object& storage = r.body.at("storage").as_object();
  EXPECT_TRUE(storage.contains("write_transactions"));
  EXPECT_TRUE(storage.contains("commits_with_fsync"));

  Seed();  // 3 requests, each committing
  ApiReply after = Call("GET", "/v1/health");
  EXPECT_EQ(Int(after.body, "requests"), 5);
  EXPECT_GE(Int(after.body.at("storage"), "write_transactions"),
            Int(storage, "write_transactions") + 3);
  EXPECT_EQ(Int(after.body.at("memory").at("history_cache"), "sessions"), 1);

  EXPECT_TRUE(IsError(Call("POST", "/v1/health"), 405, "method_not_allowed", ""));
}

TEST_F(ApiRoutesTest, HandleSyncAnswersOneRequest) {
  HttpRequest request;
  request.method = "GET";
  request.target = "/v1/health";
  HttpResponse r = api_->HandleSync(std::move(request));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body).at("version").as_string(), kVersion);
  EXPECT_EQ(api_->requests(), 1);
}

TEST_F(ApiRoutesTest, ConfigNeverShowsAProviderApiKey) {
  ApiReply r = Call("GET", "/v1/config");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.raw.find(kSecret), std::string::npos) << r.raw;
  EXPECT_EQ(r.raw.find("UNMISTAKABLE"), std::string::npos);
  EXPECT_EQ(r.body.at("providers").at("openai").at("api_key").as_string(), "***");
  EXPECT_EQ(r.body.at("providers").at("openai").at("model").as_string(), "gpt-4o");
  EXPECT_EQ(r.body.at("default_provider").as_string(), "openai");
  EXPECT_EQ(r.body.at("context").at("tokenizer").as_string(), "heuristic");

  // Nor after a reload, nor in the audit log of anything the request did.
  SetConfig([](DaemonConfig& c) { c.providers["other"].api_key = std::string(kSecret) + "-2"; });
  ApiReply again = Call("GET", "/v1/config");
  EXPECT_EQ(again.raw.find("UNMISTAKABLE"), std::string::npos) << again.raw;
  EXPECT_EQ(again.body.at("providers").at("other").at("api_key").as_string(), "***");
  EXPECT_TRUE(IsError(Call("PUT", "/v1/config", "{}"), 405, "method_not_allowed", ""));
  ApiReply audit = Call("GET", "/v1/audit?limit=10000");
  EXPECT_EQ(audit.raw.find("UNMISTAKABLE"), std::string::npos);
}

TEST_F(ApiRoutesTest, CreateGetAndListSessions) {
  clock_.Set(kStartMs + 1234);
  ApiReply created = Call("POST", "/v1/sessions",
                          R"({"id":"demo","model":"gpt-4o","system_prompt":"Be terse.",)"
                          R"("tools":[{"type":"function","function":{"name":"ls"}}],)"
                          R"("metadata":{"agent":"t"},"context_window":64000})");
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(created.body.at("id").as_string(), "demo");
  EXPECT_EQ(created.body.at("model").as_string(), "gpt-4o");
  EXPECT_EQ(created.body.at("tools").at(0).at("function").at("name").as_string(), "ls");
  EXPECT_EQ(created.body.at("metadata").at("agent").as_string(), "t");
  EXPECT_EQ(Int(created.body, "context_window"), 64000);
  EXPECT_EQ(created.body.at("strict").as_bool(), false);
  EXPECT_EQ(created.body.at("created_at").as_string(), FormatIsoTimestampMs(kStartMs + 1234));
  EXPECT_EQ(Int(created.body, "message_count"), 0);

  ApiReply generated = Call("POST", "/v1/sessions", "");  // an empty body is {}
  ASSERT_EQ(generated.status, 201) << generated.raw;
  EXPECT_EQ(generated.body.at("id").as_string(), "ses_id000001");

  ApiReply one = Call("GET", "/v1/sessions/demo");
  ASSERT_EQ(one.status, 200) << one.raw;
  EXPECT_EQ(one.body, created.body);

  ApiReply list = Call("GET", "/v1/sessions?limit=1");
  ASSERT_EQ(list.status, 200) << list.raw;
  ASSERT_EQ(list.body.at("sessions").as_array().size(), 1u);
  EXPECT_EQ(list.body.at("sessions").at(0).at("id").as_string(), "demo");
  ApiReply rest = Call("GET", "/v1/sessions?limit=10&offset=1");
  ASSERT_EQ(rest.body.at("sessions").as_array().size(), 1u);
  EXPECT_EQ(rest.body.at("sessions").at(0).at("id").as_string(), "ses_id000001");
}

TEST_F(ApiRoutesTest, AppendAndReadMessages) {
  Seed();
  ApiReply r = Call("POST", "/v1/sessions/s/messages",
                    R"({"messages":[{"role":"user","content":"and prod?"}]})");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body.at("session_id").as_string(), "s");
  EXPECT_EQ(Int(r.body, "appended"), 1);
  EXPECT_EQ(Int(r.body.at("messages").at(0), "seq"), 3);
  EXPECT_GT(Int(r.body.at("messages").at(0), "tokens"), 0);
  EXPECT_FALSE(r.body.at("messages").at(0).as_object().contains("flags"));
  EXPECT_TRUE(r.body.at("warnings").as_array().empty());
  EXPECT_EQ(Int(r.body, "message_count"), 3);
  EXPECT_EQ(Int(r.body, "last_seq"), 3);

  ApiReply flagged = Call("POST", "/v1/sessions/s/messages", kToolBatch);
  ASSERT_EQ(flagged.status, 200) << flagged.raw;
  EXPECT_EQ(flagged.body.at("messages").at(2).at("flags").at(0).as_string(), "orphan_result");
  EXPECT_EQ(flagged.body.at("warnings").at(0).at("problem").as_string(), "orphan_result");
  EXPECT_EQ(Int(flagged.body.at("warnings").at(0), "index"), 2);

  ApiReply page = Call("GET", "/v1/sessions/s/messages?after=1&limit=2");
  ASSERT_EQ(page.status, 200) << page.raw;
  const json::array& rows = page.body.at("messages").as_array();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(Int(rows[0], "seq"), 2);
  EXPECT_EQ(rows[0].at("content").as_string(), "port 6543");
  EXPECT_EQ(rows[1].at("content").as_string(), "and prod?");
  ApiReply all = Call("GET", "/v1/sessions/s/messages");
  ASSERT_EQ(all.body.at("messages").as_array().size(), 6u);
  EXPECT_EQ(all.body.at("messages").at(5).at("flags").at(0).as_string(), "orphan_result");
}

TEST_F(ApiRoutesTest, StrictAppendIs422WithWarningsAndStoresNothing) {
  Seed();
  ApiReply r = Call("POST", "/v1/sessions/strict/messages", kToolBatch);
  EXPECT_TRUE(IsError(r, 422, "unprocessable", "messages[2]", /*extra_keys=*/1));
  ASSERT_TRUE(r.body.as_object().contains("warnings")) << r.raw;
  ASSERT_EQ(r.body.at("warnings").as_array().size(), 1u);
  EXPECT_EQ(r.body.at("warnings").at(0).at("tool_call_id").as_string(), "call_9");
  EXPECT_EQ(r.body.at("warnings").at(0).at("problem").as_string(), "orphan_result");
  EXPECT_TRUE(Call("GET", "/v1/sessions/strict/messages").body.at("messages").as_array().empty());

  // "strict" in the body does the same for a lax session.
  std::string body = kToolBatch;
  body.insert(body.size() - 1, R"(,"strict":true)");
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions/s/messages", body), 422, "unprocessable",
                      "messages[2]", 1));
  EXPECT_EQ(Int(Call("GET", "/v1/sessions/s").body, "message_count"), 2);
}

TEST_F(ApiRoutesTest, MoreThanTenThousandMessagesIs413) {
  Seed();
  std::string body = R"({"messages":[)";
  for (int i = 0; i <= 10000; ++i)
    body += std::string(i ? "," : "") + R"({"role":"user","content":"x"})";
  body += "]}";
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions/s/messages", body), 413, "payload_too_large", ""));
  EXPECT_EQ(Int(Call("GET", "/v1/sessions/s").body, "message_count"), 2);
}

TEST_F(ApiRoutesTest, ContextAndUsage) {
  Seed();
  ApiReply ctx = Call("POST", "/v1/sessions/s/context",
                      R"({"message":{"role":"user","content":"and prod?"},"context_window":16000,)"
                      R"("max_output_tokens":1000})");
  ASSERT_EQ(ctx.status, 200) << ctx.raw;
  EXPECT_EQ(ctx.body.at("session_id").as_string(), "s");
  const json::array& messages = ctx.body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 4u) << ctx.raw;
  EXPECT_EQ(messages[0].at("role").as_string(), "system");
  EXPECT_EQ(messages[1].at("content").as_string(), "where is the staging db?");
  EXPECT_EQ(messages[3].at("content").as_string(), "and prod?");
  EXPECT_EQ(ctx.body.at("system").as_string(), "Be terse.");
  const json::object& budget = ctx.body.at("budget").as_object();
  EXPECT_EQ(budget.at("encoding").as_string(), "heuristic");
  EXPECT_EQ(Int(budget, "total"), 15000);
  EXPECT_EQ(Int(budget.at("calibration"), "samples"), 0);
  const std::string context_id(ctx.body.at("context_id").as_string());
  const int64_t estimated = Int(budget.at("calibration"), "estimated_tokens");
  ASSERT_GT(estimated, 0);

  ApiReply usage = Call("POST", "/v1/sessions/s/usage",
                        R"({"context_id":")" + context_id + R"(","prompt_tokens":)" +
                            std::to_string(estimated) + R"(,"completion_tokens":12})");
  ASSERT_EQ(usage.status, 200) << usage.raw;
  EXPECT_EQ(usage.body.at("context_id").as_string(), context_id);
  EXPECT_EQ(usage.body.at("model").as_string(), "default");
  EXPECT_EQ(Int(usage.body, "estimated_tokens"), estimated);
  EXPECT_EQ(Int(usage.body, "prompt_tokens"), estimated);
  EXPECT_EQ(Int(usage.body, "completion_tokens"), 12);
  EXPECT_DOUBLE_EQ(usage.body.at("ratio_before").to_number<double>(), 1.0);
  EXPECT_DOUBLE_EQ(usage.body.at("ratio").to_number<double>(), 1.0);
  EXPECT_EQ(Int(usage.body, "samples"), 1);

  // Reported for another session: not found, naming the context id.
  ApiReply other = Call("POST", "/v1/sessions/strict/usage",
                        R"({"context_id":")" + context_id + R"(","prompt_tokens":5})");
  EXPECT_TRUE(IsError(other, 404, "not_found", "context_id"));
}

TEST_F(ApiRoutesTest, SummariesOfASession) {
  Seed();
  ApiReply empty = Call("GET", "/v1/sessions/s/summaries");
  ASSERT_EQ(empty.status, 200) << empty.raw;
  EXPECT_TRUE(empty.body.at("summaries").as_array().empty());

  SummaryRecord leaf;
  leaf.session_id = "s";
  leaf.content = "Asked where staging is; port 6543.";
  leaf.tokens = 9;
  leaf.first_seq = 1;
  leaf.last_seq = 2;
  leaf.descendant_count = 2;
  Awaiter<Result<SummaryRecord>> w;
  services_->summaries.Commit(leaf, w.Callback());
  std::optional<Result<SummaryRecord>> stored = w.Wait();
  ASSERT_TRUE(stored && stored->ok());
  const std::string id = (*stored)->id;

  ApiReply list = Call("GET", "/v1/sessions/s/summaries");
  ASSERT_EQ(list.body.at("summaries").as_array().size(), 1u) << list.raw;
  EXPECT_EQ(list.body.at("summaries").at(0).at("id").as_string(), id);
  ApiReply one = Call("GET", "/v1/summaries/" + id);
  ASSERT_EQ(one.status, 200) << one.raw;
  EXPECT_EQ(one.body.at("content").as_string(), leaf.content);
  EXPECT_TRUE(one.body.at("children").as_array().empty());
  ASSERT_EQ(one.body.at("messages").as_array().size(), 2u);
  EXPECT_EQ(one.body.at("messages").at(1).at("content").as_string(), "port 6543");
}

TEST_F(ApiRoutesTest, MemoryItemsSearchAndDelete) {
  Seed();
  ApiReply added = Call("POST", "/v1/memory",
                        R"({"text":"The staging database listens on port 6543.","tags":["db"],)"
                        R"("session_id":"s","pinned":true})");
  ASSERT_EQ(added.status, 201) << added.raw;
  const std::string id(added.body.at("id").as_string());
  EXPECT_EQ(id.rfind("mem_", 0), 0u) << id;
  EXPECT_EQ(added.body.at("tags").at(0).as_string(), "db");

  ApiReply list = Call("GET", "/v1/memory?session_id=s");
  ASSERT_EQ(list.status, 200) << list.raw;
  ASSERT_EQ(list.body.at("items").as_array().size(), 1u);
  ApiReply one = Call("GET", "/v1/memory/" + id);
  ASSERT_EQ(one.status, 200) << one.raw;
  EXPECT_EQ(one.body.at("text").as_string(), "The staging database listens on port 6543.");

  ApiReply search = Call("GET", "/v1/memory/search?q=staging+port&limit=5");
  ASSERT_EQ(search.status, 200) << search.raw;
  EXPECT_EQ(search.body.at("query").as_string(), "staging port");
  bool found = false;
  for (const json::value& hit : search.body.at("results").as_array()) {
    found = found || (hit.at("source").as_string() == "memory" && hit.at("id").as_string() == id);
  }
  EXPECT_TRUE(found) << search.raw;
  // Any text is quoted before matching: never an error.
  EXPECT_EQ(Call("GET", "/v1/memory/search?q=NEAR(%22a%22+*+OR").status, 200);

  ApiReply deleted = Call("DELETE", "/v1/memory/" + id);
  ASSERT_EQ(deleted.status, 200) << deleted.raw;
  EXPECT_EQ(deleted.body.at("deleted").as_string(), id);
  EXPECT_TRUE(IsError(Call("GET", "/v1/memory/" + id), 404, "not_found", "id"));
  EXPECT_TRUE(IsError(Call("DELETE", "/v1/memory/" + id), 404, "not_found", "id"));
}

TEST_F(ApiRoutesTest, Learnings) {
  ApiReply added =
      Call("POST", "/v1/learnings",
           R"({"task_type":"ops","outcome":"success","lesson":"Check the port first.",)"
           R"("approach":["grep"]})");
  ASSERT_EQ(added.status, 201) << added.raw;
  EXPECT_EQ(added.body.at("lesson").as_string(), "Check the port first.");
  ASSERT_EQ(Call("POST", "/v1/learnings", R"({"task_type":"chat","lesson":"Be brief."})").status,
            201);
  ApiReply ops = Call("GET", "/v1/learnings?task_type=ops");
  ASSERT_EQ(ops.status, 200) << ops.raw;
  ASSERT_EQ(ops.body.at("learnings").as_array().size(), 1u);
  EXPECT_EQ(ops.body.at("learnings").at(0).at("lesson").as_string(), "Check the port first.");
  EXPECT_EQ(Call("GET", "/v1/learnings").body.at("learnings").as_array().size(), 2u);
}

TEST_F(ApiRoutesTest, JobsAuditAndVerify) {
  Seed();
  ASSERT_TRUE(stores_->jobs.Enqueue("summarize", "s", "{}", kStartMs).ok());
  ApiReply jobs = Call("GET", "/v1/jobs");
  ASSERT_EQ(jobs.status, 200) << jobs.raw;
  ASSERT_EQ(jobs.body.at("jobs").as_array().size(), 1u);
  EXPECT_EQ(jobs.body.at("jobs").at(0).at("kind").as_string(), "summarize");
  EXPECT_EQ(Call("GET", "/v1/jobs?state=queued").body.at("jobs").as_array().size(), 1u);
  EXPECT_TRUE(Call("GET", "/v1/jobs?state=done").body.at("jobs").as_array().empty());

  ApiReply created = Call("GET", "/v1/audit?type=session.created");
  ASSERT_EQ(created.status, 200) << created.raw;
  const json::array& events = created.body.at("events").as_array();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].at("session_id").as_string(), "s");
  EXPECT_EQ(events[1].at("session_id").as_string(), "strict");
  const int64_t first_seq = Int(events[0], "seq");
  ApiReply since = Call("GET", "/v1/audit?type=session.created&since=" + std::to_string(first_seq));
  ASSERT_EQ(since.body.at("events").as_array().size(), 1u);
  EXPECT_EQ(since.body.at("events").at(0).at("session_id").as_string(), "strict");
  EXPECT_EQ(Call("GET", "/v1/audit?limit=1").body.at("events").as_array().size(), 1u);

  ApiReply verify = Call("GET", "/v1/audit/verify");
  ASSERT_EQ(verify.status, 200) << verify.raw;
  EXPECT_TRUE(verify.body.at("ok").as_bool());
  EXPECT_EQ(Int(verify.body, "broken_seq"), 0);
  EXPECT_EQ(Int(verify.body, "first_seq"), 1);
  EXPECT_EQ(Int(verify.body, "checked"), Int(verify.body, "last_seq"));
  EXPECT_GE(Int(verify.body, "checked"), 3);  // two sessions, one append
}

// A minimal Missy memory.db: one session with two turns and one learning.
void WriteMissyDb(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* sql = R"sql(
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, name TEXT, created_at TEXT, updated_at TEXT,
                       turn_count INTEGER DEFAULT 0, provider TEXT, channel TEXT);
CREATE TABLE turns (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, timestamp TEXT NOT NULL,
                    role TEXT NOT NULL, content TEXT NOT NULL, provider TEXT, metadata TEXT DEFAULT '{}');
CREATE TABLE summaries (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, depth INTEGER NOT NULL DEFAULT 0,
                        content TEXT NOT NULL, token_estimate INTEGER DEFAULT 0,
                        source_turn_ids TEXT DEFAULT '[]', source_summary_ids TEXT DEFAULT '[]',
                        parent_id TEXT, time_range_start TEXT, time_range_end TEXT,
                        descendant_count INTEGER DEFAULT 0, file_refs TEXT DEFAULT '[]', created_at TEXT);
CREATE TABLE learnings (id INTEGER PRIMARY KEY AUTOINCREMENT, task_type TEXT, outcome TEXT,
                        lesson TEXT, approach TEXT, timestamp TEXT);
INSERT INTO sessions VALUES ('m1', 'chat', '2025-03-02T09:00:00Z', '2025-03-02T09:05:00Z', 2, 'openai', 'cli');
INSERT INTO turns VALUES ('u1', 'm1', '2025-03-02T09:00:10Z', 'user', 'hello', 'openai', '{}');
INSERT INTO turns VALUES ('u2', 'm1', '2025-03-02T09:00:12Z', 'assistant', 'hi there', 'openai', '{}');
INSERT INTO learnings (task_type, outcome, lesson, approach, timestamp)
  VALUES ('chat', 'success', 'be brief', '[]', '2025-03-02T09:06:00Z');
)sql";
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

TEST_F(ApiRoutesTest, ImportMissy) {
  const std::string path = dir_.Join("memory.db");
  WriteMissyDb(path);
  ApiReply r = Call("POST", "/v1/import/missy", R"({"path":")" + path + R"("})");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body.at("path").as_string(), path);
  EXPECT_EQ(Int(r.body, "sessions"), 1);
  EXPECT_EQ(Int(r.body, "messages"), 2);
  EXPECT_EQ(Int(r.body, "learnings"), 1);
  ApiReply again = Call("POST", "/v1/import/missy", "{}");  // default: <missy_home>/memory.db
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(Int(again.body, "sessions"), 0);
  EXPECT_EQ(Int(again.body, "messages"), 0);
  EXPECT_GT(Int(again.body, "skipped"), 0);
  EXPECT_EQ(Call("GET", "/v1/sessions").body.at("sessions").as_array().size(), 1u);
}

// One row per error the routes answer: the route, the request, the status, code and field.
struct ErrorCase {
  std::string method;
  std::string target;
  std::string body;
  int status;
  std::string code;
  std::string field;
  std::string message_part = {};  // the message contains this
};

TEST_F(ApiRoutesTest, ErrorsHaveTheShapeAndNameTheField) {
  Seed();
  const std::vector<ErrorCase> cases = {
      // Sessions
      {"POST", "/v1/sessions", R"({"id":"s"})", 409, "already_exists", "id", "'s'"},
      {"POST", "/v1/sessions", R"({"bogus":1})", 400, "invalid_argument", "bogus", "unknown field"},
      {"POST", "/v1/sessions", R"({"id":"a b"})", 400, "invalid_argument", "id"},
      {"POST", "/v1/sessions", R"({"tools":{}})", 400, "invalid_argument", "tools"},
      {"POST", "/v1/sessions", R"({"tools":[1]})", 400, "invalid_argument", "tools[0]"},
      {"POST", "/v1/sessions", R"({"metadata":[]})", 400, "invalid_argument", "metadata"},
      {"POST", "/v1/sessions", R"({"context_window":0})", 400, "invalid_argument",
       "context_window"},
      {"POST", "/v1/sessions", R"({"strict":"yes"})", 400, "invalid_argument", "strict"},
      {"POST", "/v1/sessions", "[1,2]", 400, "invalid_argument", "", "JSON object"},
      {"POST", "/v1/sessions", "{oops", 400, "invalid_argument", "", "not valid JSON"},
      {"GET", "/v1/sessions?limit=0", "", 400, "invalid_argument", "limit"},
      {"GET", "/v1/sessions?limit=1001", "", 400, "invalid_argument", "limit"},
      {"GET", "/v1/sessions?offset=-1", "", 400, "invalid_argument", "offset"},
      {"GET", "/v1/sessions/ghost", "", 404, "not_found", "", "'ghost'"},
      {"GET", "/v1/sessions/bad%20id", "", 400, "invalid_argument", "id"},
      // Messages
      {"POST", "/v1/sessions/s/messages", R"({"messages":[{"role":"robot"}]})", 400,
       "invalid_argument", "messages[0].role", "robot"},
      {"POST", "/v1/sessions/s/messages",
       R"({"messages":[{"role":"user","content":"a"},{"role":"user"}]})", 400, "invalid_argument",
       "messages[1].content"},
      {"POST", "/v1/sessions/s/messages",
       R"({"messages":[{"role":"user","content":"a"}],"extra":true})", 400, "invalid_argument",
       "extra", "unknown field"},
      {"POST", "/v1/sessions/s/messages", "{}", 400, "invalid_argument", "messages"},
      {"POST", "/v1/sessions/s/messages", R"({"messages":[]})", 400, "invalid_argument",
       "messages"},
      {"POST", "/v1/sessions/s/messages", R"({"messages":"hi"})", 400, "invalid_argument",
       "messages"},
      {"POST", "/v1/sessions/s/messages", "", 400, "invalid_argument", "", "empty"},
      {"POST", "/v1/sessions/ghost/messages", R"({"messages":[{"role":"user","content":"a"}]})",
       404, "not_found", "", "'ghost'"},
      {"POST", "/v1/sessions/bad%20id/messages", R"({"messages":[{"role":"user","content":"a"}]})",
       400, "invalid_argument", "id"},
      {"GET", "/v1/sessions/s/messages?limit=0", "", 400, "invalid_argument", "limit"},
      {"GET", "/v1/sessions/s/messages?after=x", "", 400, "invalid_argument", "after"},
      {"GET", "/v1/sessions/ghost/messages", "", 404, "not_found", ""},
      // Context and usage
      {"POST", "/v1/sessions/s/context", R"({"context_window":8000,"max_output_tokens":8000})", 400,
       "invalid_argument", "max_output_tokens"},
      {"POST", "/v1/sessions/s/context", R"({"nope":1})", 400, "invalid_argument", "nope"},
      {"POST", "/v1/sessions/s/context", R"({"message":{"role":"robot"}})", 400, "invalid_argument",
       "message.role"},
      {"POST", "/v1/sessions/s/context", R"({"context_window":"big"})", 400, "invalid_argument",
       "context_window"},
      {"POST", "/v1/sessions/ghost/context", "{}", 404, "not_found", ""},
      {"POST", "/v1/sessions/s/usage", R"({"prompt_tokens":10})", 400, "invalid_argument",
       "context_id"},
      {"POST", "/v1/sessions/s/usage", R"({"context_id":"ctx_x"})", 400, "invalid_argument",
       "prompt_tokens"},
      {"POST", "/v1/sessions/s/usage", R"({"context_id":"ctx_x","prompt_tokens":0})", 400,
       "invalid_argument", "prompt_tokens"},
      {"POST", "/v1/sessions/s/usage", R"({"context_id":"ctx_x","prompt_tokens":5,"x":1})", 400,
       "invalid_argument", "x"},
      {"POST", "/v1/sessions/s/usage", R"({"context_id":"ctx_unknown","prompt_tokens":10})", 404,
       "not_found", "context_id", "ctx_unknown"},
      {"POST", "/v1/sessions/s/usage", "", 400, "invalid_argument", ""},
      // Summaries
      {"GET", "/v1/sessions/ghost/summaries", "", 404, "not_found", ""},
      {"GET", "/v1/summaries/sum_nope", "", 404, "not_found", "id", "'sum_nope'"},
      // Memory and learnings
      {"GET", "/v1/memory?limit=abc", "", 400, "invalid_argument", "limit"},
      {"POST", "/v1/memory", R"({"text":"   "})", 400, "invalid_argument", "text"},
      {"POST", "/v1/memory", R"({"text":"x","session_id":"ghost"})", 404, "not_found",
       "session_id"},
      {"POST", "/v1/memory", R"({"text":"x","tags":"db"})", 400, "invalid_argument", "tags"},
      {"POST", "/v1/memory", R"({"text":"x","tags":["a",2]})", 400, "invalid_argument", "tags[1]"},
      {"POST", "/v1/memory", R"({"text":"x","pinned":1})", 400, "invalid_argument", "pinned"},
      {"POST", "/v1/memory", R"({"text":"x","colour":"red"})", 400, "invalid_argument", "colour"},
      {"GET", "/v1/memory/search", "", 400, "invalid_argument", "q"},
      {"GET", "/v1/memory/search?q=x&limit=101", "", 400, "invalid_argument", "limit"},
      {"GET", "/v1/memory/mem_nope", "", 404, "not_found", "id", "'mem_nope'"},
      {"DELETE", "/v1/memory/mem_nope", "", 404, "not_found", "id", "'mem_nope'"},
      {"DELETE", "/v1/sessions/nope", "", 404, "not_found", "session_id", "'nope'"},
      {"POST", "/v1/learnings", R"({"task_type":"ops"})", 400, "invalid_argument", "lesson"},
      {"POST", "/v1/learnings", R"({"lesson":"x","approach":[1]})", 400, "invalid_argument",
       "approach[0]"},
      {"GET", "/v1/learnings?limit=0", "", 400, "invalid_argument", "limit"},
      // Admin
      {"GET", "/v1/jobs?state=bogus", "", 400, "invalid_argument", "state"},
      {"GET", "/v1/audit?limit=0", "", 400, "invalid_argument", "limit"},
      {"GET", "/v1/audit?since=-1", "", 400, "invalid_argument", "since"},
      {"POST", "/v1/import/missy", R"({"path":"/nonexistent/memory.db"})", 404, "not_found", "path",
       "/nonexistent/memory.db"},
      {"POST", "/v1/import/missy", R"({"file":"x"})", 400, "invalid_argument", "file"},
      // The table itself
      {"GET", "/v1/nope", "", 404, "not_found", "", "no route for GET /v1/nope"},
      {"GET", "/nope", "", 404, "not_found", "", "/v1"},
      {"PUT", "/v1/sessions", "", 405, "method_not_allowed", "", "GET, POST"},
      {"PUT", "/v1/sessions/s", "", 405, "method_not_allowed", "", "allowed: GET, DELETE"},
      {"GET", "/v1/sessions/s/context", "", 405, "method_not_allowed", "", "allowed: POST"},
      {"PATCH", "/v1/memory/mem_x", "", 405, "method_not_allowed", "", "GET, DELETE"},
      {"POST", "/v1/health", "", 405, "method_not_allowed", "", "allowed: GET"},
      {"POST", "/v1/audit/verify", "", 405, "method_not_allowed", "", "allowed: GET"},
      {"GET", "/v1/import/missy", "", 405, "method_not_allowed", "", "allowed: POST"},
  };
  for (const ErrorCase& c : cases) {
    ApiReply r = Call(c.method, c.target, c.body);
    EXPECT_TRUE(IsError(r, c.status, c.code, c.field))
        << c.method << " " << c.target << " " << c.body;
    if (!c.message_part.empty()) {
      EXPECT_NE(ErrorMessage(r).find(c.message_part), std::string::npos)
          << c.method << " " << c.target << ": " << r.raw;
    }
  }
  // Nothing above was stored.
  EXPECT_EQ(Int(Call("GET", "/v1/sessions/s").body, "message_count"), 2);
  EXPECT_EQ(Call("GET", "/v1/sessions").body.at("sessions").as_array().size(), 2u);
  EXPECT_TRUE(Call("GET", "/v1/memory").body.at("items").as_array().empty());
}

// Bytes that are not UTF-8 can arrive percent-encoded in a path or query; every answer
// must still be valid JSON (the audit log too).
TEST_F(ApiRoutesTest, InvalidUtf8InTheTargetStillGivesJsonAnswers) {
  Seed();
  struct Case {
    std::string method, target;
    int status;
  };
  const Case cases[] = {
      {"GET", "/v1/memory/search?q=port%FF%FE", 200},
      {"GET", "/v1/memory/search?q=%C3", 200},
      {"GET", "/v1/memory/mem%FF", 404},
      {"DELETE", "/v1/memory/mem%FF", 404},
      {"GET", "/v1/summaries/sum%FF", 404},
      {"GET", "/v1/sessions?limit=%FF", 400},
      {"GET", "/v1/jobs?state=%FF", 400},
      {"GET", "/v1/%FF", 404},
      {"GET", "/v1/sessions/%FF", 400},
  };
  for (const Case& c : cases) {
    ApiReply r = Call(c.method, c.target);
    EXPECT_EQ(r.status, c.status) << c.target << ": " << r.raw;
    EXPECT_TRUE(r.body.is_object()) << c.target << " answered invalid JSON: " << r.raw;
  }
  ApiReply audit = Call("GET", "/v1/audit?limit=10000");
  EXPECT_EQ(audit.status, 200) << audit.raw;
  EXPECT_TRUE(audit.body.is_object()) << audit.raw;
}

TEST_F(ApiRoutesTest, RejectedRequestsAreAuditedWithTheirSession) {
  Seed();
  ASSERT_EQ(Call("POST", "/v1/sessions/s/messages", R"({"messages":[{"role":"robot"}]})").status,
            400);
  ApiReply audit = Call("GET", "/v1/audit?type=request.rejected");
  ASSERT_EQ(audit.status, 200) << audit.raw;
  const json::array& events = audit.body.at("events").as_array();
  ASSERT_EQ(events.size(), 1u) << audit.raw;
  EXPECT_EQ(events[0].at("session_id").as_string(), "s");
  const json::value& d = events[0].at("detail");
  EXPECT_EQ(d.at("method").as_string(), "POST");
  EXPECT_EQ(d.at("path").as_string(), "/v1/sessions/s/messages");
  EXPECT_EQ(Int(d, "status"), 400);
  EXPECT_EQ(d.at("field").as_string(), "messages[0].role");
}

}  // namespace
}  // namespace missy::testing

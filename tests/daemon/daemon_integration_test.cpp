// Integration tests: the real missyd binary on a temporary MISSY_HOME, over its sockets.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "daemon_process.h"
#include "test_util.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

// A small budget so that 40 messages do not all fit.
constexpr const char* kSmallBudgetConfig = R"(# test config
default_provider: openai        # Missy's keys are read or ignored
providers:
  openai: {model: gpt-4o, api_key: sk-secret}
memory_db: ~/.missy/memory.db
context:
  log_level: debug
  budget:
    total: 3000
    system_reserve: 100
    tool_definitions_reserve: 100
    fresh_tail_count: 16
)";

std::string MessageText(int i) {
  std::string text = "message " + std::to_string(i) + ":";
  for (int k = 0; k < 30; ++k) text += " alpha beta gamma delta";
  return text;
}

// Appends 40 alternating user/assistant messages; returns each one's token count (index = seq).
std::vector<int64_t> Append40(DaemonProcess& d, const std::string& session) {
  json::array messages;
  for (int i = 1; i <= 40; ++i) {
    messages.push_back(
        json::object{{"role", i % 2 == 1 ? "user" : "assistant"}, {"content", MessageText(i)}});
  }
  Result<ClientResponse> r = d.Call("POST", "/v1/sessions/" + session + "/messages",
                                    json::serialize(json::object{{"messages", messages}}));
  json::value body = Body(r);
  EXPECT_EQ(r->status, 200) << r->body;
  std::vector<int64_t> tokens(41, 0);
  const json::array& rows = body.at("messages").as_array();
  EXPECT_EQ(rows.size(), 40u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(Int(rows[i], {"seq"}), static_cast<int64_t>(i + 1));
    tokens[i + 1] = Int(rows[i], {"tokens"});
    EXPECT_GT(tokens[i + 1], 20);
  }
  EXPECT_EQ(Int(body, {"message_count"}), 40);
  EXPECT_EQ(Int(body, {"last_seq"}), 40);
  return tokens;
}

class DaemonTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(DaemonTest, StartsWithDefaultConfigAndSecureSockets) {
  DaemonProcess d(dir_.path());
  ASSERT_TRUE(d.Start().ok()) << d.log();
  struct stat st {};
  ASSERT_EQ(stat((dir_.path() + "/config.yaml").c_str(), &st), 0) << "default config not created";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(d.socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(d.audit_socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir_.path() + "/missyd.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the database must be private to its user";

  json::value health = Body(d.Call("GET", "/v1/health"));
  EXPECT_EQ(health.at("status").as_string(), "ok");
  EXPECT_EQ(health.at("socket").as_string(), d.socket());

  // A second daemon on the same sockets is refused, and the first keeps serving.
  std::string output;
  DaemonProcess second(dir_.path());
  EXPECT_EQ(second.RunOnce({}, &output), 1);
  EXPECT_NE(output.find("another missyd is listening on " + d.socket()), std::string::npos)
      << output;
  EXPECT_EQ(Body(d.Call("GET", "/v1/health")).at("status").as_string(), "ok");
  EXPECT_EQ(d.Stop(), 0) << d.log();
}

TEST_F(DaemonTest, CheckConfigReportsTheKeyPath) {
  DaemonProcess d(dir_.path(), "context:\n  budget:\n    memory_fraction: 1.5\n");
  std::string output;
  EXPECT_EQ(d.RunOnce({"--check-config"}, &output), 1);
  EXPECT_NE(output.find("context.budget.memory_fraction"), std::string::npos) << output;

  DaemonProcess good(dir_.path(), kSmallBudgetConfig);
  EXPECT_EQ(good.RunOnce({"--check-config"}, &output), 0) << output;
}

TEST_F(DaemonTest, AppendFortyMessagesAndAssembleAContext) {
  DaemonProcess d(dir_.path(), kSmallBudgetConfig);
  ASSERT_TRUE(d.Start().ok()) << d.log();
  // The session's own window is large, so appending queues no background summarization
  // (a summary written before the context would change what it keeps: this test is about
  // eviction); the context asks for the 3,000-token budget itself.
  Result<ClientResponse> created = d.Call("POST", "/v1/sessions",
                                          R"({"id":"s1","system_prompt":"You are a test agent.",)"
                                          R"("metadata":{"k":1},"context_window":1000000})");
  ASSERT_EQ(created->status, 201) << created->body;
  EXPECT_EQ(Body(created).at("id").as_string(), "s1");
  const std::vector<int64_t> tokens = Append40(d, "s1");
  EXPECT_TRUE(Body(d.Call("GET", "/v1/jobs")).at("jobs").as_array().empty());

  Result<ClientResponse> r = d.Call("POST", "/v1/sessions/s1/context",
                                    R"({"context_window":3100,"max_output_tokens":100})");
  ASSERT_EQ(r->status, 200) << r->body;
  json::value ctx = Body(r);
  const json::value& budget = ctx.at("budget");
  const int64_t total = Int(budget, {"total"});
  EXPECT_EQ(total, 3000);
  EXPECT_LE(Int(budget, {"used_tokens"}), total);
  EXPECT_EQ(Int(budget, {"tools", "tokens"}), 100);  // no tool definitions: the reserve applies

  // The kept part is a contiguous suffix that includes the fresh tail of 16; the next
  // older message would not have fit in what history had.
  const int64_t first = Int(budget, {"history", "first_kept_seq"});
  const int64_t kept = Int(budget, {"history", "kept_messages"});
  EXPECT_EQ(first + kept - 1, 40);
  EXPECT_GE(kept, 16);
  EXPECT_LT(kept, 40);
  EXPECT_EQ(Int(budget, {"history", "dropped_messages"}), 40 - kept);
  int64_t kept_tokens = 0;
  for (int64_t seq = first; seq <= 40; ++seq) kept_tokens += tokens[seq];
  // The session's task (its first message) is pinned: sent on its own, its room first.
  EXPECT_EQ(Int(budget, {"task", "seq"}), 1);
  EXPECT_TRUE(budget.at("task").at("pinned").as_bool());
  const int64_t history_room = Int(budget, {"available"}) - Int(budget, {"task", "tokens"});
  EXPECT_LE(kept_tokens, history_room);
  EXPECT_GT(kept_tokens + tokens[first - 1], history_room);

  // messages: the system prompt first, the pinned task, then exactly seqs first..40 in order.
  const json::array& messages = ctx.at("messages").as_array();
  ASSERT_EQ(messages.size(), static_cast<size_t>(kept + 2));
  EXPECT_EQ(messages[1].at("role").as_string(), "user");
  EXPECT_EQ(std::string(messages[1].at("content").as_string()),
            "[Session task — message 1, pinned]\n" + MessageText(1));
  EXPECT_EQ(messages[0].at("role").as_string(), "system");
  EXPECT_NE(std::string(messages[0].at("content").as_string()).find("You are a test agent."),
            std::string::npos);
  EXPECT_EQ(ctx.at("system").as_string(), messages[0].at("content").as_string());
  for (int64_t i = 0; i < kept; ++i) {
    EXPECT_EQ(messages[static_cast<size_t>(i + 2)].at("content").as_string(),
              MessageText(static_cast<int>(first + i)));
  }

  // A new user message is appended last.
  r = d.Call("POST", "/v1/sessions/s1/context",
             R"({"message":{"role":"user","content":"what next?"},"context_window":3100,)"
             R"("max_output_tokens":100})");
  ASSERT_EQ(r->status, 200) << r->body;
  json::value with_new = Body(r);
  EXPECT_EQ(with_new.at("messages").as_array().back().at("content").as_string(), "what next?");
  EXPECT_LE(Int(with_new.at("budget"), {"used_tokens"}), total);

  // A model's window is the window minus its output reserve (gpt-4o: 128000 - 16384).
  ASSERT_EQ(d.Call("POST", "/v1/sessions", R"({"id":"s2","model":"gpt-4o"})")->status, 201);
  json::value big = Body(d.Call("POST", "/v1/sessions/s2/context", "{}"));
  EXPECT_EQ(Int(big.at("budget"), {"total"}), 128000 - 16384);
  EXPECT_EQ(d.Stop(), 0);
}

struct BadRequest {
  const char* method;
  const char* target;
  std::string body;
  int status;
  const char* code;
  const char* field;
};

TEST_F(DaemonTest, BadRequestsGetDocumentedErrorsAndTheDaemonKeepsServing) {
  DaemonProcess d(dir_.path(), "context:\n  limits:\n    max_body_bytes: 65536\n");
  ASSERT_TRUE(d.Start().ok()) << d.log();
  ASSERT_EQ(d.Call("POST", "/v1/sessions", R"({"id":"s1"})")->status, 201);
  const BadRequest cases[] = {
      {"POST", "/v1/sessions", "{not json", 400, "invalid_argument", ""},
      {"POST", "/v1/sessions", "[1,2]", 400, "invalid_argument", ""},
      {"POST", "/v1/sessions", R"({"id":"s1"})", 409, "already_exists", "id"},
      {"POST", "/v1/sessions", R"({"id":"bad id!"})", 400, "invalid_argument", "id"},
      {"POST", "/v1/sessions", R"({"model":5})", 400, "invalid_argument", "model"},
      {"POST", "/v1/sessions", R"({"colour":"red"})", 400, "invalid_argument", "colour"},
      {"GET", "/v1/sessions/nope", "", 404, "not_found", ""},
      {"POST", "/v1/sessions/nope/messages", R"({"messages":[{"role":"user","content":"x"}]})", 404,
       "not_found", ""},
      {"POST", "/v1/sessions/s1/messages", R"({"messages":"hi"})", 400, "invalid_argument",
       "messages"},
      {"POST", "/v1/sessions/s1/messages", R"({"messages":[]})", 400, "invalid_argument",
       "messages"},
      {"POST", "/v1/sessions/s1/messages",
       R"({"messages":[{"role":"user","content":"ok"},{"role":"robot","content":"x"}]})", 400,
       "invalid_argument", "messages[1].role"},
      {"POST", "/v1/sessions/s1/messages",
       R"({"messages":[{"role":"tool","content":"x","tool_call_id":3}]})", 400, "invalid_argument",
       "messages[0].tool_call_id"},
      {"POST", "/v1/sessions/s1/context", R"({"context_window":"big"})", 400, "invalid_argument",
       "context_window"},
      {"POST", "/v1/sessions/s1/context", R"({"context_window":1000,"max_output_tokens":1000})",
       400, "invalid_argument", "max_output_tokens"},
      {"GET", "/v1/nothing", "", 404, "not_found", ""},
      {"DELETE", "/v1/health", "", 405, "method_not_allowed", ""},
      {"GET", "/v1/sessions?limit=abc", "", 400, "invalid_argument", "limit"},
      {"POST", "/v1/sessions",
       "{\"id\":\"big\",\"metadata\":{\"x\":\"" + std::string(70000, 'a') + "\"}}", 413,
       "payload_too_large", ""},
  };
  for (const BadRequest& c : cases) {
    SCOPED_TRACE(std::string(c.method) + " " + c.target + " " + c.body.substr(0, 80));
    Result<ClientResponse> r = UnixHttpCall(d.socket(), c.method, c.target, c.body);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, c.status) << r->body;
    json::value body = Body(r);
    ASSERT_TRUE(body.is_object() && body.as_object().contains("error")) << r->body;
    EXPECT_EQ(body.at("error").at("code").as_string(), c.code);
    EXPECT_EQ(body.at("error").at("field").as_string(), c.field);
    EXPECT_FALSE(body.at("error").at("message").as_string().empty());
  }
  // Nothing of the failed batch was stored, and the daemon still serves.
  json::value session = Body(d.Call("GET", "/v1/sessions/s1"));
  EXPECT_EQ(Int(session, {"message_count"}), 0);
  EXPECT_EQ(Body(d.Call("GET", "/v1/health")).at("status").as_string(), "ok");
  EXPECT_EQ(d.Stop(), 0);
}

TEST_F(DaemonTest, AuditClientReceivesEventsInOrder) {
  DaemonProcess d(dir_.path(), kSmallBudgetConfig);
  ASSERT_TRUE(d.Start().ok()) << d.log();
  LineSubscriber live;
  ASSERT_TRUE(live.Connect(d.audit_socket(), "{}").ok());
  // Give the server a moment to register the subscriber before events are produced.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  ASSERT_EQ(d.Call("POST", "/v1/sessions", R"({"id":"a1"})")->status, 201);
  Append40(d, "a1");
  ASSERT_EQ(d.Call("POST", "/v1/sessions/a1/context", "{}")->status, 200);
  ASSERT_EQ(d.Call("GET", "/v1/sessions/missing")->status, 404);

  // 40 long messages cross the summarization threshold: the trigger queues a job off the
  // request path (after the append, so before or after the context's own event), and the
  // daemon's worker runs it in the background (its events interleave with the requests'
  // own, in seq order).
  const std::vector<std::string> expected = {"session.created", "messages.appended",
                                             "context.built", "request.rejected",
                                             "summarization.queued"};
  std::vector<std::string> requests, background;
  int64_t last_seq = 0;
  while (requests.size() < expected.size() ||
         std::find(background.begin(), background.end(), "summarization.completed") ==
             background.end()) {
    Result<std::string> line = live.ReadLine(std::chrono::seconds(5));
    ASSERT_TRUE(line.ok()) << "after " << requests.size() << " request events and "
                           << background.size() << " background ones: " << line.status().ToString();
    json::value e = json::parse(*line);
    const std::string type(e.at("event_type").as_string());
    EXPECT_GT(Int(e, {"seq"}), last_seq);
    last_seq = Int(e, {"seq"});
    for (const char* field : {"timestamp", "session_id", "category", "result", "detail"}) {
      EXPECT_TRUE(e.as_object().contains(field)) << field << " missing in " << *line;
    }
    if (type == "summarization.started" || type == "summarization.completed") {
      background.push_back(type);
    } else {
      requests.push_back(type);
    }
  }
  // The job is queued once, after the append that crossed the threshold.
  const auto queued = std::find(requests.begin(), requests.end(), "summarization.queued");
  ASSERT_NE(queued, requests.end());
  EXPECT_GT(queued - requests.begin(), 1) << "queued before the append";
  std::vector<std::string> ordered = requests;
  ordered.erase(ordered.begin() + (queued - requests.begin()));
  ordered.push_back("summarization.queued");
  EXPECT_EQ(ordered, expected);
  EXPECT_EQ(background.front(), "summarization.started");

  // A resuming client gets the backlog from seq 0: daemon.started comes first.
  LineSubscriber resumed;
  ASSERT_TRUE(resumed.Connect(d.audit_socket(), R"({"since":0})").ok());
  Result<std::string> first = resumed.ReadLine(std::chrono::seconds(5));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(json::parse(*first).at("event_type").as_string(), "daemon.started");

  // The same events are queryable, persisted.
  json::value audit = Body(d.Call("GET", "/v1/audit?since=0&limit=100&type=context.built"));
  ASSERT_EQ(audit.at("events").as_array().size(), 1u);
  EXPECT_EQ(audit.at("events").as_array()[0].at("session_id").as_string(), "a1");
  EXPECT_EQ(d.Stop(), 0);
}

TEST_F(DaemonTest, SessionsSurviveARestart) {
  {
    DaemonProcess d(dir_.path(), kSmallBudgetConfig);
    ASSERT_TRUE(d.Start().ok()) << d.log();
    ASSERT_EQ(d.Call("POST", "/v1/sessions", R"({"id":"keep","model":"gpt-4o"})")->status, 201);
    Append40(d, "keep");
    EXPECT_EQ(d.Stop(), 0) << d.log();
  }
  DaemonProcess d(dir_.path());
  ASSERT_TRUE(d.Start().ok()) << d.log();
  json::value session = Body(d.Call("GET", "/v1/sessions/keep"));
  EXPECT_EQ(Int(session, {"message_count"}), 40);
  EXPECT_EQ(session.at("model").as_string(), "gpt-4o");
  json::value messages = Body(d.Call("GET", "/v1/sessions/keep/messages"));
  const json::array& list = messages.at("messages").as_array();
  ASSERT_EQ(list.size(), 40u);
  EXPECT_EQ(list[0].at("content").as_string(), MessageText(1));
  EXPECT_EQ(list[39].at("content").as_string(), MessageText(40));
  EXPECT_EQ(list[39].at("role").as_string(), "assistant");
  // Appending continues the sequence.
  Result<ClientResponse> r = d.Call("POST", "/v1/sessions/keep/messages",
                                    R"({"messages":[{"role":"user","content":"back again"}]})");
  EXPECT_EQ(Int(Body(r), {"last_seq"}), 41);
  json::value sessions = Body(d.Call("GET", "/v1/sessions"));
  ASSERT_EQ(sessions.at("sessions").as_array().size(), 1u);
  EXPECT_EQ(d.Stop(), 0);
}

}  // namespace
}  // namespace missy::testing

// Proxy mode end to end (daemon/proxy/): the real missyd with its proxy listener on
// loopback, a scripted fake upstream recording what it receives, and the test as the
// agent resending its whole conversation every turn.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>
#include <string>
#include <thread>

#include "daemon/daemon_process.h"
#include "provider/fake_provider_server.h"
#include "test_util.h"

namespace missy::testing {
namespace {

namespace json = boost::json;
using provider_test::FakeProviderServer;
using provider_test::Reply;

std::string AnthropicMessage(const std::string& id, const json::array& content,
                             const std::string& stop = "end_turn") {
  return json::serialize(json::object{{"id", id},
                                      {"type", "message"},
                                      {"role", "assistant"},
                                      {"model", "claude-test"},
                                      {"content", content},
                                      {"stop_reason", stop},
                                      {"usage", {{"input_tokens", 50}, {"output_tokens", 5}}}});
}

Reply JsonReply(int status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
  Reply r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  r.headers.emplace_back("Content-Type", "application/json");
  return r;
}

// Six long user/assistant turns and a short question: about 2,500 tokens of history.
json::array SixLongTurns() {
  json::array messages;
  std::string lorem, amet;
  for (int i = 0; i < 110; ++i) lorem += "lorem ipsum dolor ";
  for (int i = 0; i < 120; ++i) amet += "sit amet ";
  for (int i = 0; i < 6; ++i) {
    messages.push_back({{"role", "user"}, {"content", "Step " + std::to_string(i) + ": " + lorem}});
    messages.push_back({{"role", "assistant"}, {"content", "Noted step " + std::to_string(i) + ". " + amet}});
  }
  messages.push_back({{"role", "user"}, {"content", "and now?"}});
  return messages;
}

class ProxyTest : public ::testing::Test {
 protected:
  // `openai_url` empty: the fake upstream (with /v1).
  void Start(std::vector<Reply> script, const std::string& extra_config = {},
             std::string openai_url = {}) {
    upstream_ = std::make_unique<FakeProviderServer>(std::move(script));
    port_ = FreeLoopbackPort();
    const std::string config =
        "context:\n  log_level: info\n  proxy:\n    enabled: true\n    listen: 127.0.0.1:" +
        std::to_string(port_) + "\n    upstreams:\n      anthropic: " + upstream_->Url() +
        "\n      openai: " + (openai_url.empty() ? upstream_->Url("/v1") : openai_url) + "\n" +
        extra_config;
    daemon_ = std::make_unique<DaemonProcess>(dir_.path(), config);
    ASSERT_TRUE(daemon_->Start().ok()) << daemon_->log();
    agent_ = UnixHttpConnection("tcp:127.0.0.1:" + std::to_string(port_));
    agent_.set_extra_headers(
        "x-api-key: sk-ant-secret-1\r\nanthropic-version: 2023-06-01\r\nanthropic-beta: "
        "fine-grained-tool-streaming-2025-05-14\r\n");
  }

  // One agent turn: POSTs `request` to `path`; the answer's JSON (aborts on failure).
  Result<ClientResponse> Send(const std::string& path, const json::object& request) {
    return agent_.Call("POST", path, json::serialize(request), std::chrono::seconds(30));
  }

  json::value Upstream(size_t i) {
    auto requests = upstream_->requests();
    EXPECT_LT(i, requests.size());
    if (i >= requests.size()) return {};
    return json::parse(requests[i].body);
  }

  TempDir dir_;
  std::unique_ptr<FakeProviderServer> upstream_;
  std::unique_ptr<DaemonProcess> daemon_;
  UnixHttpConnection agent_;
  uint16_t port_ = 0;
};

TEST_F(ProxyTest, AnAnthropicToolLoopReachesTheUpstreamUntouchedAndIsStoredTurnByTurn) {
  const json::array call1 = json::parse(
      R"([{"type":"thinking","thinking":"plan","signature":"sig-A"},{"type":"text","text":"Listing."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}])").as_array();
  const json::array done = json::parse(R"([{"type":"text","text":"Two files."}])").as_array();
  const std::string answer1 = AnthropicMessage("msg_1", call1, "tool_use");
  const std::string answer2 = AnthropicMessage("msg_2", done);
  Start({JsonReply(200, answer1, {{"request-id", "req_1"}}), JsonReply(200, answer2)});

  json::object request{{"model", "claude-sonnet-4-5"},
                       {"max_tokens", 1024},
                       {"system", json::array{{{"type", "text"}, {"text", "You are an agent."}}}},
                       {"tools", json::parse(R"([{"name":"Bash","input_schema":{"type":"object"}}])")},
                       {"metadata", {{"user_id", "u-1"}}},
                       {"messages", json::array{{{"role", "user"}, {"content", "List the files."}}}}};
  Result<ClientResponse> r1 = Send("/v1/messages?beta=true", request);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString() << daemon_->log();
  ASSERT_EQ(r1->status, 200) << r1->body;
  EXPECT_EQ(r1->body, answer1);  // byte for byte
  EXPECT_EQ(r1->headers["request-id"], "req_1");

  auto seen = upstream_->requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].target, "/v1/messages?beta=true");
  EXPECT_EQ(seen[0].headers["x-api-key"], "sk-ant-secret-1");
  EXPECT_EQ(seen[0].headers["anthropic-version"], "2023-06-01");
  EXPECT_EQ(seen[0].headers["anthropic-beta"], "fine-grained-tool-streaming-2025-05-14");
  // Nothing needed changing: the same bytes, every field in its order.
  EXPECT_EQ(seen[0].body, json::serialize(request));

  // Turn 2: the agent resends everything with the answer and the tool's output.
  json::array& messages = request["messages"].as_array();
  messages.push_back({{"role", "assistant"}, {"content", call1}});
  messages.push_back(json::parse(
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.py\nb.py"}]})"));
  Result<ClientResponse> r2 = Send("/v1/messages", request);
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2->status, 200) << r2->body;
  EXPECT_EQ(r2->body, answer2);
  EXPECT_EQ(Upstream(1).at("messages"), request["messages"]);  // thinking signature and all

  // The session holds every turn: 3 sent + 2 answers, engine form.
  json::value sessions = Body(daemon_->Call("GET", "/v1/sessions"));
  const json::array& list = sessions.at("sessions").as_array();
  ASSERT_EQ(list.size(), 1u);
  const std::string id = std::string(list[0].at("id").as_string());
  EXPECT_EQ(id.rfind("px-", 0), 0u) << id;
  json::value stored = Body(daemon_->Call("GET", "/v1/sessions/" + id + "/messages"));
  const json::array& rows = stored.at("messages").as_array();
  ASSERT_EQ(rows.size(), 4u) << json::serialize(stored);
  EXPECT_EQ(rows[1].at("tool_calls").at(0).at("id"), "toolu_1");
  EXPECT_EQ(rows[2].at("role"), "tool");
  EXPECT_EQ(rows[3].at("content"), "Two files.");
  // The key never reaches the log.
  EXPECT_EQ(daemon_->log().find("sk-ant-secret-1"), std::string::npos);
}

TEST_F(ProxyTest, AStreamIsRelayedAsTheUpstreamSentItAndItsMessageIsStored) {
  const std::string sse =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\","
      "\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":"
      "{\"input_tokens\":12,\"output_tokens\":1}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello \"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"there.\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
      "\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  Reply stream;
  stream.body = sse;
  stream.headers = {{"Content-Type", "text/event-stream"}};
  Start({stream, JsonReply(200, AnthropicMessage("msg_2", json::array{}))});
  json::object request{{"model", "claude-sonnet-4-5"}, {"max_tokens", 100}, {"stream", true},
                       {"messages", json::array{{{"role", "user"}, {"content", "Say hello."}}}}};
  Result<ClientResponse> r = Send("/s/greeter/v1/messages", request);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["content-type"], "text/event-stream");
  EXPECT_EQ(r->body, sse);
  // Named by its path: the session is "greeter"; the answer was rebuilt from the deltas.
  json::value stored = Body(daemon_->Call("GET", "/v1/sessions/greeter/messages"));
  const json::array& rows = stored.at("messages").as_array();
  ASSERT_EQ(rows.size(), 2u) << json::serialize(stored);
  EXPECT_EQ(rows[1].at("content"), "Hello there.");
  // The next turn matches the stored history: nothing diverges.
  request["messages"].as_array().push_back(
      json::parse(R"({"role":"assistant","content":[{"type":"text","text":"Hello there."}]})"));
  request["messages"].as_array().push_back({{"role", "user"}, {"content", "Again."}});
  request["stream"] = false;
  ASSERT_EQ(Send("/s/greeter/v1/messages", request)->status, 200);
  stored = Body(daemon_->Call("GET", "/v1/sessions/greeter/messages"));
  EXPECT_EQ(stored.at("messages").as_array().size(), 4u);
  json::value sessions = Body(daemon_->Call("GET", "/v1/sessions"));
  EXPECT_EQ(sessions.at("sessions").as_array().size(), 1u);
}

TEST_F(ProxyTest, ARewrittenHistoryBranchesIntoANewSessionAndKeepsTheOld) {
  Start({JsonReply(200, AnthropicMessage("a", json::parse(R"([{"type":"text","text":"one"}])").as_array())),
         JsonReply(200, AnthropicMessage("b", json::parse(R"([{"type":"text","text":"two"}])").as_array()))});
  json::object request{{"model", "claude-sonnet-4-5"}, {"max_tokens", 100},
                       {"messages", json::parse(R"([{"role":"user","content":"first"},{"role":"assistant","content":"x"},{"role":"user","content":"second"}])")}};
  ASSERT_EQ(Send("/s/work/v1/messages", request)->status, 200);
  // The agent compacted on its own: the middle of its history is different now.
  request["messages"] = json::parse(
      R"J([{"role":"user","content":"first"},{"role":"assistant","content":"(summary)"},{"role":"user","content":"third"}])J");
  Result<ClientResponse> second = Send("/s/work/v1/messages", request);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->status, 200) << second->body;
  json::value old_rows = Body(daemon_->Call("GET", "/v1/sessions/work/messages"));
  EXPECT_EQ(old_rows.at("messages").as_array().size(), 4u);  // 3 + the answer, untouched
  json::value branch = Body(daemon_->Call("GET", "/v1/sessions/work:b1/messages"));
  ASSERT_EQ(branch.at("messages").as_array().size(), 4u);
  EXPECT_EQ(branch.at("messages").at(1).at("content"), "(summary)");
  Result<ClientResponse> audit =
      daemon_->Call("GET", "/v1/audit?type=proxy.history_diverged");
  ASSERT_TRUE(audit.ok());
  EXPECT_NE(audit->body.find("work:b1"), std::string::npos) << audit->body;
}

TEST_F(ProxyTest, UpstreamErrorsPassThroughAndAnUnreachableUpstreamIsA502InTheApisShape) {
  // The OpenAI upstream is a port nothing listens on.
  const std::string dead = "http://127.0.0.1:" + std::to_string(FreeLoopbackPort()) + "/v1";
  Start({JsonReply(429, R"({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}})",
                   {{"retry-after", "7"}})},
        {}, dead);
  json::object request{{"model", "claude-sonnet-4-5"}, {"max_tokens", 100},
                       {"messages", json::array{{{"role", "user"}, {"content", "hi"}}}}};
  Result<ClientResponse> r = Send("/v1/messages", request);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->headers["retry-after"], "7");
  EXPECT_NE(r->body.find("slow down"), std::string::npos);

  json::object chat{{"model", "gpt-4o"},
                    {"messages", json::array{{{"role", "user"}, {"content", "hi"}}}}};
  r = Send("/v1/chat/completions", chat);
  ASSERT_TRUE(r.ok()) << r.status().ToString() << daemon_->log();
  EXPECT_EQ(r->status, 502) << r->body;
  json::value err = json::parse(r->body);
  EXPECT_EQ(err.at("error").at("type"), "api_error");
  EXPECT_NE(std::string(err.at("error").at("message").as_string()).find("did not answer"),
            std::string::npos);
}

// The upstream's refusal of a request over the model's window.
Reply TooLongReply() {
  return JsonReply(400, R"({"type":"error","error":{"type":"invalid_request_error","message":)"
                        R"("prompt is too long: 300000 tokens > 200000 maximum"}})");
}

TEST_F(ProxyTest, AContextLengthRefusalCompactsTheSessionAndRetriesOnceSmaller) {
  Start({TooLongReply(),
         JsonReply(200, AnthropicMessage("ok", json::parse(R"([{"type":"text","text":"fits"}])").as_array()))});
  json::array messages = SixLongTurns();
  json::object request{{"model", "claude-sonnet-4-5"}, {"max_tokens", 100}, {"messages", messages}};
  Result<ClientResponse> r = Send("/s/long/v1/messages", request);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  ASSERT_EQ(upstream_->requests().size(), 2u);
  // The retry carried summaries in place of older turns: fewer messages, the last kept.
  const json::value retry = Upstream(1);
  const json::array& retried = retry.at("messages").as_array();
  EXPECT_LT(retried.size(), messages.size());
  EXPECT_EQ(retried.back(), messages.back());
  EXPECT_LT(upstream_->requests()[1].body.size(), upstream_->requests()[0].body.size());
  // The refusal and the retry are audited on the request.
  Result<ClientResponse> audit = daemon_->Call("GET", "/v1/audit?type=compaction.forced");
  ASSERT_TRUE(audit.ok());
  EXPECT_NE(audit->body.find("context_length_exceeded"), std::string::npos) << audit->body;
}

// The common turn (one new message on a stored conversation) has its context built while
// that message is stored: a refusal then compacts the session with the message in it, and
// the retry, the stored history and the answer come out as for any other request.
TEST_F(ProxyTest, ARefusedTurnOfOneNewMessageIsStoredCompactedAndRetried) {
  const json::array first_answer = json::parse(R"([{"type":"text","text":"first"}])").as_array();
  Start({JsonReply(200, AnthropicMessage("m1", first_answer)),
         TooLongReply(),
         JsonReply(200, AnthropicMessage("m2", json::parse(R"([{"type":"text","text":"fits"}])").as_array()))});
  json::array messages = SixLongTurns();
  json::object request{{"model", "claude-sonnet-4-5"}, {"max_tokens", 100}, {"messages", messages}};
  Result<ClientResponse> r = Send("/s/turns/v1/messages", request);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;

  // The next turn: the answer as the agent keeps it, and one new message.
  messages.push_back({{"role", "assistant"}, {"content", first_answer}});
  messages.push_back({{"role", "user"}, {"content", "and after that?"}});
  request["messages"] = messages;
  r = Send("/s/turns/v1/messages", request);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  ASSERT_EQ(upstream_->requests().size(), 3u);
  const json::value refused_body = Upstream(1), retried_body = Upstream(2);
  const json::array& refused = refused_body.at("messages").as_array();
  const json::array& retried = retried_body.at("messages").as_array();
  EXPECT_EQ(refused.back(), messages.back());  // sent before it was stored
  EXPECT_EQ(retried.back(), messages.back());
  EXPECT_LT(retried.size(), refused.size());
  // Stored in order: 13 messages, the first answer, the new message, the second answer.
  json::value stored = json::parse(daemon_->Call("GET", "/v1/sessions/turns/messages")->body);
  const json::array& rows = stored.at("messages").as_array();
  ASSERT_EQ(rows.size(), 16u);
  EXPECT_EQ(rows[14].at("content"), "and after that?");
  EXPECT_EQ(rows[15].at("content"), "fits");
  Result<ClientResponse> audit = daemon_->Call("GET", "/v1/audit?type=proxy.request");
  ASSERT_TRUE(audit.ok());
  json::value events = json::parse(audit->body);
  const json::array& list = events.at("events").as_array();
  ASSERT_EQ(list.size(), 2u);
  const json::object& second = list[1].at("detail").as_object();
  EXPECT_EQ(second.at("new_messages"), 1);
  EXPECT_EQ(second.at("retried_after_compaction"), true);
  EXPECT_EQ(second.at("answer"), "complete");
}

TEST_F(ProxyTest, ChatCompletionsAreManagedAndSentWithTheAgentsBearerToken) {
  const std::string answer =
      R"({"id":"c1","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"pong"}}],"usage":{"prompt_tokens":9,"completion_tokens":1}})";
  Start({JsonReply(200, answer)});
  agent_.set_extra_headers("Authorization: Bearer sk-openai-secret\r\n");
  json::object request{{"model", "gpt-4o"},
                       {"messages", json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"ping"}])")}};
  Result<ClientResponse> r = Send("/v1/chat/completions", request);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, answer);
  auto seen = upstream_->requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].target, "/v1/chat/completions");
  EXPECT_EQ(seen[0].headers["authorization"], "Bearer sk-openai-secret");
  EXPECT_EQ(json::parse(seen[0].body), json::value(request));
}

// A turn whose one new message the store must repair (a tool result without its call's id)
// is stored first and sent as stored: the result paired with the only open call, not left
// out as an orphan along with that call.
TEST_F(ProxyTest, ANewResultWithoutItsCallsIdGoesOutPairedAsTheStoreRepairedIt) {
  const std::string call =
      R"({"id":"c1","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]}}],"usage":{"prompt_tokens":9,"completion_tokens":1}})";
  const std::string done =
      R"({"id":"c2","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"done"}}],"usage":{"prompt_tokens":12,"completion_tokens":1}})";
  Start({JsonReply(200, call), JsonReply(200, done)});
  agent_.set_extra_headers("Authorization: Bearer sk-openai-secret\r\n");
  json::array messages = json::parse(R"([{"role":"user","content":"list the files"}])").as_array();
  json::object request{{"model", "gpt-4o"}, {"messages", messages}};
  Result<ClientResponse> r = Send("/s/repair/v1/chat/completions", request);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  messages.push_back(json::parse(
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]})"));
  messages.push_back(json::parse(R"({"role":"tool","tool_call_id":"","content":"a.txt b.txt"})"));
  request["messages"] = messages;
  r = Send("/s/repair/v1/chat/completions", request);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  ASSERT_EQ(upstream_->requests().size(), 2u);
  const json::value sent = Upstream(1);
  const json::array& out = sent.at("messages").as_array();
  ASSERT_EQ(out.size(), 3u) << json::serialize(sent);
  EXPECT_EQ(out[1].at("tool_calls").at(0).at("id"), "call_1");
  EXPECT_EQ(out[2].at("role"), "tool");
  EXPECT_EQ(out[2].at("tool_call_id"), "call_1");
  EXPECT_EQ(out[2].at("content"), "a.txt b.txt");
}

}  // namespace
}  // namespace missy::testing

namespace missy::testing {
namespace {

TEST_F(ProxyTest, ATokenFileMakesEveryRequestCarryTheTokenAndNeverShowsIt) {
  const std::string token_path = dir_.path() + "/proxy.token";
  {
    std::ofstream(token_path) << "tok-s3cret\n";
  }
  Start({JsonReply(200, AnthropicMessage("m", json::parse(R"([{"type":"text","text":"hi"}])").as_array()))},
        "    token_file: " + token_path + "\n");
  json::object request{{"model", "claude-sonnet-4-5"}, {"max_tokens", 10},
                       {"messages", json::array{{{"role", "user"}, {"content", "hello"}}}}};
  Result<ClientResponse> r = Send("/v1/messages", request);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(json::parse(r->body).at("error").at("type"), "authentication_error");
  EXPECT_EQ(r->body.find("tok-s3cret"), std::string::npos);
  EXPECT_TRUE(upstream_->requests().empty());
  r = Send("/t/wrong/v1/messages", request);
  EXPECT_EQ(r->status, 401);
  // The token as a path prefix, or as a header.
  r = Send("/t/tok-s3cret/v1/messages", request);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200) << r->body;
  ASSERT_EQ(upstream_->requests().size(), 1u);
  EXPECT_EQ(upstream_->requests()[0].target, "/v1/messages");
  EXPECT_EQ(upstream_->requests()[0].headers.count("x-missy-token"), 0u);
  EXPECT_EQ(daemon_->log().find("tok-s3cret"), std::string::npos);
  Result<ClientResponse> config = daemon_->Call("GET", "/v1/config");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->body.find("tok-s3cret"), std::string::npos);
}

TEST_F(ProxyTest, TwoAgentsAtOnceNeverMixAndTheMetricsCountThem) {
  std::vector<Reply> script;
  for (int i = 0; i < 8; ++i) {
    Reply r = JsonReply(200, AnthropicMessage("m" + std::to_string(i),
                                              json::parse(R"([{"type":"text","text":"ok"}])").as_array()));
    r.delay = std::chrono::milliseconds(20);
    script.push_back(r);
  }
  Start(std::move(script));
  auto agent = [&](const std::string& name) {
    UnixHttpConnection c("tcp:127.0.0.1:" + std::to_string(port_));
    c.set_extra_headers("x-api-key: k\r\nanthropic-version: 2023-06-01\r\nX-Missy-Session: " + name +
                        "\r\n");
    json::array messages{{{"role", "user"}, {"content", "I am " + name}}};
    for (int turn = 0; turn < 4; ++turn) {
      json::object request{{"model", "claude-sonnet-4-5"}, {"max_tokens", 10}, {"messages", messages}};
      Result<ClientResponse> r = c.Call("POST", "/v1/messages", json::serialize(request),
                                        std::chrono::seconds(30));
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r->status, 200) << r->body;
      messages.push_back(json::parse(R"({"role":"assistant","content":[{"type":"text","text":"ok"}]})"));
      messages.push_back({{"role", "user"}, {"content", name + " turn " + std::to_string(turn)}});
    }
  };
  std::thread a(agent, "alice");
  std::thread b(agent, "bob");
  a.join();
  b.join();
  for (const std::string name : {"alice", "bob"}) {
    json::value stored = Body(daemon_->Call("GET", "/v1/sessions/" + name + "/messages"));
    const json::array& rows = stored.at("messages").as_array();
    ASSERT_EQ(rows.size(), 8u) << name;  // 4 requests: 1 + 3 x (answer + user), + last answer
    for (const json::value& row : rows) {
      if (row.at("role") != "user") continue;
      EXPECT_NE(std::string(row.at("content").as_string()).find(name), std::string::npos) << name;
    }
  }
  // Counted once the request is over (after the agent has its answer): wait for the last.
  const std::string line = "missyd_proxy_requests_total{api=\"anthropic\",upstream=\"" +
                           upstream_->Url() + "\",status=\"2xx\"} 8";
  Result<ClientResponse> metrics = daemon_->Call("GET", "/metrics");
  for (int i = 0; i < 100 && metrics.ok() && metrics->body.find(line) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    metrics = daemon_->Call("GET", "/metrics");
  }
  ASSERT_TRUE(metrics.ok());
  const size_t at = metrics->body.find("missyd_proxy_requests_total{");
  EXPECT_NE(metrics->body.find(line), std::string::npos)
      << (at == std::string::npos ? std::string("no proxy metrics") : metrics->body.substr(at, 400));
  EXPECT_NE(metrics->body.find("missyd_proxy_first_byte_seconds_bucket"), std::string::npos);
}

}  // namespace
}  // namespace missy::testing

namespace missy::testing {
namespace {

TEST_F(ProxyTest, CountTokensOfAStoredConversationCountsWhatMissydWouldSend) {
  Start({JsonReply(200, AnthropicMessage("m", json::parse(R"([{"type":"text","text":"ok"}])").as_array())),
         JsonReply(200, R"({"input_tokens":1234})"), JsonReply(200, R"({"input_tokens":99})")},
        "  models:\n    - {pattern: \"tiny-test\", context_window: 4000, max_output_tokens: 500, "
        "encoding: o200k_base}\n");
  json::array messages;
  std::string lorem;
  for (int i = 0; i < 120; ++i) lorem += "lorem ipsum dolor sit amet ";
  for (int i = 0; i < 8; ++i) {
    messages.push_back({{"role", "user"}, {"content", "Step " + std::to_string(i) + ": " + lorem}});
    messages.push_back({{"role", "assistant"}, {"content", "Noted " + std::to_string(i)}});
  }
  messages.push_back({{"role", "user"}, {"content", "Sum up."}});
  json::object request{{"model", "tiny-test"}, {"max_tokens", 500}, {"messages", messages}};
  ASSERT_EQ(Send("/s/cnt/v1/messages", request)->status, 200);
  const size_t sent_first = Upstream(0).at("messages").as_array().size();
  EXPECT_LT(sent_first, messages.size());  // the window forced a fit

  // The agent asks what its next request costs: the stored part as missyd sends it.
  messages.push_back(json::parse(R"({"role":"assistant","content":[{"type":"text","text":"ok"}]})"));
  messages.push_back({{"role", "user"}, {"content", "And now?"}});
  json::object count{{"model", "tiny-test"}, {"messages", messages}};
  Result<ClientResponse> r = Send("/s/cnt/v1/messages/count_tokens", count);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, R"({"input_tokens":1234})");
  auto seen = upstream_->requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].target, "/v1/messages/count_tokens");
  const json::value counted = json::parse(seen[1].body);
  const json::array& sent = counted.at("messages").as_array();
  EXPECT_LT(sent.size(), messages.size());
  EXPECT_EQ(sent.back(), messages.back());  // the new message as the agent wrote it
  // Nothing was stored by counting: the session still holds 17 + the answer.
  json::value stored = Body(daemon_->Call("GET", "/v1/sessions/cnt/messages"));
  EXPECT_EQ(stored.at("messages").as_array().size(), 18u);

  // A conversation missyd does not hold is counted as sent.
  json::object other{{"model", "tiny-test"},
                     {"messages", json::array{{{"role", "user"}, {"content", "new here"}}}}};
  r = Send("/s/unknown/v1/messages/count_tokens", other);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(upstream_->requests()[2].body), json::value(other));
}

}  // namespace
}  // namespace missy::testing

namespace missy::testing {
namespace {

TEST_F(ProxyTest, AFirstRequestOfMoreThanTenThousandMessagesIsStoredInBatches) {
  Start({JsonReply(200, AnthropicMessage("m", json::parse(R"([{"type":"text","text":"ok"}])").as_array()))});
  json::array messages;
  for (int i = 0; i < 10050; ++i) {
    messages.push_back({{"role", i % 2 == 0 ? "user" : "assistant"}, {"content", "m" + std::to_string(i)}});
  }
  messages.push_back({{"role", "user"}, {"content", "last"}});
  json::object request{{"model", "claude-sonnet-4-5"}, {"max_tokens", 100}, {"messages", messages}};
  Result<ClientResponse> r = Send("/s/big/v1/messages", request);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  json::value session = Body(daemon_->Call("GET", "/v1/sessions/big"));
  EXPECT_EQ(Int(session, {"message_count"}), 10052);  // every message and the answer
}

// Claude Code working on its one task wrote three modules whole with its Write tool, more
// than the model's window holds: the request goes out (it was refused with a 400 before),
// the largest write cut in its content with its tool_use input still an object naming the
// file, every tool_use beside its tool_result, and the session stores the writes whole.
TEST_F(ProxyTest, AnAgentsOwnFileWritesLargerThanTheWindowAreCutNotRefused) {
  Start({JsonReply(200, AnthropicMessage("m", json::parse(R"([{"type":"text","text":"done"}])").as_array()))},
        "  models:\n    - {pattern: \"tiny-test\", context_window: 4000, max_output_tokens: 500, "
        "encoding: o200k_base}\n");
  json::array messages{{{"role", "user"}, {"content", "Write the three handler modules."}}};
  std::vector<std::string> contents;
  for (int k = 0; k < 3; ++k) {
    std::string code;
    for (int i = 0; code.size() < 6000; ++i) {
      code += "def handle_" + std::to_string(k) + "_" + std::to_string(i) + "(event):\n    return " +
              std::to_string(i * 7 + k) + "\n";
    }
    contents.push_back(code);
    const std::string id = "toolu_w" + std::to_string(k);
    messages.push_back(
        {{"role", "assistant"},
         {"content", json::array{{{"type", "tool_use"},
                                  {"id", id},
                                  {"name", "Write"},
                                  {"input", {{"file_path", "/repo/handlers_" + std::to_string(k) + ".py"},
                                             {"content", code}}}}}}});
    messages.push_back(
        {{"role", "user"},
         {"content", json::array{{{"type", "tool_result"}, {"tool_use_id", id}, {"content", "File created"}}}}});
  }
  json::object request{{"model", "tiny-test"}, {"max_tokens", 500}, {"messages", messages}};
  Result<ClientResponse> r = Send("/s/writes/v1/messages", request);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;

  const json::value sent_body = Upstream(0);
  const json::array& sent = sent_body.at("messages").as_array();
  ASSERT_EQ(sent.size(), 7u) << json::serialize(sent);
  int cut = 0;
  for (int k = 0; k < 3; ++k) {
    const json::object& use = sent[1 + 2 * k].at("content").at(0).as_object();
    const std::string id = "toolu_w" + std::to_string(k);
    EXPECT_EQ(use.at("id"), json::value(id));
    ASSERT_TRUE(use.at("input").is_object()) << json::serialize(use);
    EXPECT_EQ(use.at("input").at("file_path"),
              json::value("/repo/handlers_" + std::to_string(k) + ".py"));
    const std::string content(use.at("input").at("content").as_string());
    if (content != contents[k]) {
      ++cut;
      const size_t marker = content.find("[...truncated ");
      ASSERT_NE(marker, std::string::npos);
      EXPECT_GT(marker, 0u);
      EXPECT_EQ(contents[k].rfind(content.substr(0, marker), 0), 0u) << "the file's start";
    }
    EXPECT_EQ(sent[2 + 2 * k].at("content").at(0).at("tool_use_id"), json::value(id));
  }
  EXPECT_GE(cut, 1);
  // Stored as the agent wrote them.
  json::value stored = Body(daemon_->Call("GET", "/v1/sessions/writes/messages"));
  const json::array& rows = stored.at("messages").as_array();
  ASSERT_EQ(rows.size(), 8u);
  for (int k = 0; k < 3; ++k) {
    const json::value args =
        json::parse(rows[1 + 2 * k].at("tool_calls").at(0).at("function").at("arguments").as_string());
    EXPECT_EQ(std::string(args.at("content").as_string()), contents[k]);
  }
}

}  // namespace
}  // namespace missy::testing

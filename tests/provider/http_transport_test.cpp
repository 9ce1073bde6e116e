// HttpTransport::Stream (daemon/provider/http_transport.cpp), the proxy's upstream call,
// against the fake provider: the request it sends, the answer handed on, the pool, and a
// sink that gives up.
#include "daemon/provider/http_transport.h"

#include <gtest/gtest.h>

#include "provider/fake_provider_server.h"

namespace missy::provider {
namespace {

using missy::provider_test::FakeProviderServer;
using missy::provider_test::Json;
using missy::provider_test::Reply;
using namespace std::chrono_literals;

std::unique_ptr<HttpTransport> Transport(const FakeProviderServer& server) {
  auto url = ParseBaseUrl(server.Url());
  EXPECT_TRUE(url.ok()) << url.status().ToString();
  auto transport = HttpTransport::Make(std::move(url).value(), "");
  EXPECT_TRUE(transport.ok()) << transport.status().ToString();
  return std::move(transport).value();
}

AttemptLimits Limits() {
  AttemptLimits limits;
  limits.connect_timeout = 2000ms;
  limits.handshake_timeout = 2000ms;
  limits.first_byte_timeout = 2000ms;
  limits.deadline = std::chrono::steady_clock::now() + 5s;
  return limits;
}

// What a sink received.
struct Received {
  HttpHead head;
  std::string body;
  StreamSink Sink(bool keep_head = true) {
    return StreamSink{[this, keep_head](const HttpHead& h) {
                        head = h;
                        return keep_head;
                      },
                      [this](std::string_view piece) {
                        body += piece;
                        return true;
                      }};
  }
};

TEST(HttpTransportTest, StreamSendsTheRequestAndHandsTheAnswerOnOverOnePooledConnection) {
  Reply first = Json(201, R"({"n":1})");
  first.headers.emplace_back("X-Upstream", "a");
  FakeProviderServer server({first, Json(200, R"({"n":2})")});
  auto transport = Transport(server);
  Received one;
  StreamOutcome out = transport->Stream("POST", "/v1/messages?beta=true",
                                        {{"x-api-key", "k"}, {"User-Agent", "agent/1"}},
                                        R"({"q":1})", Limits(), one.Sink());
  EXPECT_TRUE(out.complete) << out.failure.message;
  EXPECT_EQ(one.head.status, 201);
  bool found = false;
  for (const auto& [name, value] : one.head.headers)
    found = found || (name == "X-Upstream" && value == "a");
  EXPECT_TRUE(found);
  EXPECT_EQ(one.body, R"({"n":1})");

  Received two;
  out = transport->Stream("GET", "/v1/models", {}, "", Limits(), two.Sink());
  EXPECT_TRUE(out.complete) << out.failure.message;
  EXPECT_EQ(two.body, R"({"n":2})");
  EXPECT_EQ(server.connections(), 1);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/messages?beta=true");
  EXPECT_EQ(requests[0].body, R"({"q":1})");
  EXPECT_EQ(requests[0].headers.at("x-api-key"), "k");
  EXPECT_EQ(requests[0].headers.at("user-agent"), "agent/1");  // the caller's, not missyd's
  EXPECT_EQ(requests[0].headers.at("host"), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(requests[1].headers.at("user-agent"), "missyd");
  EXPECT_EQ(requests[1].headers.count("content-length"), 0u);
}

TEST(HttpTransportTest, ASinkThatGivesUpClosesTheConnection) {
  FakeProviderServer server({Json(200, R"({"n":1})"), Json(200, R"({"n":2})")});
  auto transport = Transport(server);
  Received abandoned;
  StreamOutcome out =
      transport->Stream("GET", "/a", {}, "", Limits(), abandoned.Sink(/*keep_head=*/false));
  EXPECT_TRUE(out.abandoned);
  EXPECT_TRUE(out.got_head);
  EXPECT_FALSE(out.complete);
  EXPECT_EQ(abandoned.body, "");
  Received next;
  out = transport->Stream("GET", "/b", {}, "", Limits(), next.Sink());
  EXPECT_TRUE(out.complete) << out.failure.message;
  EXPECT_EQ(next.body, R"({"n":2})");
  EXPECT_EQ(server.connections(), 2) << "the abandoned connection is not pooled";
}

TEST(HttpTransportTest, NothingListeningIsANetworkFailure) {
  uint16_t port = 0;
  {
    FakeProviderServer gone({});
    port = gone.port();
  }
  auto url = ParseBaseUrl("http://127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(url.ok());
  auto transport = HttpTransport::Make(std::move(url).value(), "");
  ASSERT_TRUE(transport.ok());
  Received none;
  StreamOutcome out = (*transport)->Stream("GET", "/", {}, "", Limits(), none.Sink());
  EXPECT_FALSE(out.complete);
  EXPECT_FALSE(out.got_head);
  EXPECT_EQ(out.failure.kind, ProviderErrorKind::kNetwork);
  EXPECT_NE(out.failure.message.find("cannot connect"), std::string::npos) << out.failure.message;
}

}  // namespace
}  // namespace missy::provider

// The route table on its own (daemon/http/router.h): matching and captures, the
// {session_id} check, 404/405, exceptions, late answers, and the error shape with its
// request.rejected audit event.
#include "daemon/http/router.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

#include "api_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;
using http::Call;
using http::Router;

class RouterTest : public ServiceFixture {
 protected:
  void SetUp() override {
    ServiceFixture::SetUp();
    router_ = std::make_unique<Router>(audit_.get());
  }
  void TearDown() override {
    for (std::thread& t : late_) t.join();
    router_.reset();
    ServiceFixture::TearDown();
  }

  // Registers `method pattern`; the handler records its call and answers 200 with the
  // captures.
  void Echo(const std::string& method, std::string_view pattern) {
    router_->Add(method, pattern, [method](const std::shared_ptr<Call>& call) {
      json::array params;
      for (const std::string& p : call->params) params.push_back(json::string(p));
      json::object query;
      for (const auto& [k, v] : call->target.query) query[k] = v;
      call->Reply(200, json::object{{"route", method + " " + call->target.path},
                                    {"params", std::move(params)},
                                    {"query", std::move(query)}});
    });
  }

  ApiReply Handle(std::string method, std::string target, std::string body = {}) {
    HttpRequest request;
    request.method = std::move(method);
    request.target = std::move(target);
    request.body = std::move(body);
    auto exchange = std::make_shared<TestExchange>();
    router_->Handle(std::move(request), exchange);
    ApiReply r = ToReply(exchange->Wait());
    EXPECT_EQ(exchange->sends(), 1);
    return r;
  }

  std::vector<json::value> Rejected() {
    std::vector<json::value> out;
    for (const AuditEvent& e : Events("request.rejected"))
      out.push_back(json::parse(e.detail_json));
    return out;
  }

  std::unique_ptr<Router> router_;
  std::vector<std::thread> late_;
};

TEST_F(RouterTest, MatchesMethodAndPathAndPassesCapturesInOrder) {
  Echo("GET", "/v1/things");
  Echo("POST", "/v1/things");
  Echo("GET", "/v1/things/{thing}/parts/{part}");
  struct Case {
    std::string method, target, route;
    std::vector<std::string> params;
  };
  const Case cases[] = {
      {"GET", "/v1/things", "GET /v1/things", {}},
      {"POST", "/v1/things", "POST /v1/things", {}},
      {"GET", "/v1/things/", "GET /v1/things/", {}},  // a trailing slash is the same path
      {"GET", "/v1/things/t1/parts/p%202", "GET /v1/things/t1/parts/p%202", {"t1", "p 2"}},
      {"GET", "/v1/things/a%2Fb/parts/x?k=v", "GET /v1/things/a%2Fb/parts/x", {"a/b", "x"}},
  };
  for (const Case& c : cases) {
    ApiReply r = Handle(c.method, c.target);
    ASSERT_EQ(r.status, 200) << c.method << " " << c.target << ": " << r.raw;
    EXPECT_EQ(r.body.at("route").as_string(), c.route) << c.target;
    std::vector<std::string> params;
    for (const json::value& p : r.body.at("params").as_array()) {
      params.emplace_back(p.as_string());
    }
    EXPECT_EQ(params, c.params) << c.target;
  }
}

TEST_F(RouterTest, QueryParametersAreDecoded) {
  Echo("GET", "/v1/search");
  ApiReply r = Handle("GET", "/v1/search?q=a+b%21&empty=&limit=5&flag");
  ASSERT_EQ(r.status, 200) << r.raw;
  const json::object& q = r.body.at("query").as_object();
  EXPECT_EQ(q.at("q").as_string(), "a b!");
  EXPECT_EQ(q.at("empty").as_string(), "");
  EXPECT_EQ(q.at("limit").as_string(), "5");
  EXPECT_EQ(q.at("flag").as_string(), "");
}

TEST_F(RouterTest, SessionIdCapturesAreValidated) {
  Echo("GET", "/v1/sessions/{session_id}");
  Echo("GET", "/v1/memory/{id}");
  for (const std::string& target : std::vector<std::string>{
           "/v1/sessions/has%20space", "/v1/sessions/a%2Fb", "/v1/sessions/%C3%A9t%C3%A9",
           "/v1/sessions/" + std::string(129, 'x')}) {
    ApiReply r = Handle("GET", target);
    EXPECT_TRUE(IsError(r, 400, "invalid_argument", "id")) << target;
  }
  EXPECT_EQ(Handle("GET", "/v1/sessions/ok.id:1_a-b").status, 200);
  EXPECT_EQ(Handle("GET", "/v1/sessions/" + std::string(128, 'x')).status, 200);
  // Other captures are the handler's business.
  EXPECT_EQ(Handle("GET", "/v1/memory/has%20space").status, 200);
}

TEST_F(RouterTest, UnknownPathIs404AndKnownPathWithOtherMethodIs405) {
  Echo("GET", "/v1/things");
  Echo("POST", "/v1/things");
  Echo("DELETE", "/v1/things/{id}");

  ApiReply none = Handle("GET", "/v1/nope");
  EXPECT_TRUE(IsError(none, 404, "not_found", ""));
  EXPECT_EQ(ErrorMessage(none), "no route for GET /v1/nope");
  ApiReply outside = Handle("GET", "/things");
  EXPECT_TRUE(IsError(outside, 404, "not_found", ""));
  EXPECT_NE(ErrorMessage(outside).find("start with /v1"), std::string::npos) << outside.raw;
  EXPECT_TRUE(IsError(Handle("GET", "/v1/things/1/extra"), 404, "not_found", ""));

  ApiReply put = Handle("PUT", "/v1/things");
  EXPECT_TRUE(IsError(put, 405, "method_not_allowed", ""));
  EXPECT_NE(ErrorMessage(put).find("GET, POST"), std::string::npos) << put.raw;
  ApiReply get_one = Handle("GET", "/v1/things/7");
  EXPECT_TRUE(IsError(get_one, 405, "method_not_allowed", ""));
  EXPECT_NE(ErrorMessage(get_one).find("DELETE"), std::string::npos) << get_one.raw;
  EXPECT_EQ(ErrorMessage(get_one).find("GET,"), std::string::npos) << get_one.raw;
}

TEST_F(RouterTest, EveryRejectedRequestIsAnAuditEvent) {
  Echo("GET", "/v1/things");
  Echo("GET", "/v1/sessions/{session_id}");
  ASSERT_EQ(Handle("GET", "/v1/nope").status, 404);
  ASSERT_EQ(Handle("GET", "/v1/sessions/bad%20id").status, 400);
  ASSERT_EQ(Handle("POST", "/v1/things").status, 405);
  ASSERT_EQ(Handle("GET", "/v1/things").status, 200);  // accepted: no event

  std::vector<AuditEvent> events = Events("request.rejected");
  std::vector<int64_t> statuses;
  for (const AuditEvent& e : events) {
    statuses.push_back(json::parse(e.detail_json).at("status").to_number<int64_t>());
    EXPECT_EQ(e.category, "daemon");
    EXPECT_EQ(e.result, "deny");
  }
  // docs/API.md: "Every rejected request is also an audit event request.rejected".
  EXPECT_EQ(statuses, (std::vector<int64_t>{404, 400, 405}));
  ASSERT_GE(events.size(), 2u);
  json::value d = json::parse(events[1].detail_json);
  EXPECT_EQ(d.at("method").as_string(), "GET");
  EXPECT_EQ(d.at("path").as_string(), "/v1/sessions/bad%20id");
  EXPECT_EQ(d.at("code").as_string(), "invalid_argument");
  EXPECT_EQ(d.at("field").as_string(), "id");
  EXPECT_FALSE(d.at("message").as_string().empty());
}

TEST_F(RouterTest, AThrowingHandlerAnswers500AndIsAuditedAsAnError) {
  router_->Add("GET", "/v1/boom",
               [](const std::shared_ptr<Call>&) -> void { throw std::runtime_error("kaboom"); });
  ApiReply r = Handle("GET", "/v1/boom");
  EXPECT_TRUE(IsError(r, 500, "internal", ""));
  EXPECT_NE(ErrorMessage(r).find("kaboom"), std::string::npos) << r.raw;
  std::vector<AuditEvent> events = Events("request.rejected");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].result, "error");
  EXPECT_EQ(json::parse(events[0].detail_json).at("status").to_number<int64_t>(), 500);
}

TEST_F(RouterTest, AHandlerMayAnswerLaterFromAnotherThread) {
  router_->Add("POST", "/v1/later", [this](const std::shared_ptr<Call>& call) {
    late_.emplace_back([call] { call->Reply(201, json::object{{"body", call->request.body}}); });
  });
  ApiReply r = Handle("POST", "/v1/later", "payload");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body.at("body").as_string(), "payload");
}

TEST_F(RouterTest, FailKeepsTheShapeAndAddsExtraKeysBesideError) {
  router_->Add("POST", "/v1/sessions/{session_id}/strict", [](const std::shared_ptr<Call>& call) {
    json::object extra{{"warnings", json::array{json::object{{"index", 2}}}}};
    call->Fail(Status::Unprocessable("refused", "messages[2]"), call->params[0], &extra);
  });
  ApiReply r = Handle("POST", "/v1/sessions/s1/strict");
  EXPECT_TRUE(IsError(r, 422, "unprocessable", "messages[2]", /*extra_keys=*/1));
  EXPECT_EQ(r.body.at("warnings").at(0).at("index").to_number<int64_t>(), 2);
  std::vector<AuditEvent> events = Events("request.rejected");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].session_id, "s1");
}

TEST_F(RouterTest, StatusCodesMapToHttpStatusesAndApiCodes) {
  struct Case {
    Status status;
    int http;
    const char* code;
  };
  const std::vector<Case> cases = {
      {Status::InvalidArgument("bad", "f"), 400, "invalid_argument"},
      {Status::NotFound("gone"), 404, "not_found"},
      {Status::AlreadyExists("dup", "id"), 409, "already_exists"},
      {Status::PayloadTooLarge("big"), 413, "payload_too_large"},
      {Status::Unprocessable("no"), 422, "unprocessable"},
      {Status::ContextOverflow("full"), 422, "context_overflow"},
      {Status::Unavailable("disk"), 503, "unavailable"},
      {Status::Internal("bug"), 500, "internal"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    router_->Add("GET", "/v1/fail/" + std::to_string(i),
                 [st = c.status](const std::shared_ptr<Call>& call) { call->Fail(st); });
    ApiReply r = Handle("GET", "/v1/fail/" + std::to_string(i));
    EXPECT_TRUE(IsError(r, c.http, c.code, c.status.field())) << c.status.ToString();
    EXPECT_EQ(ErrorMessage(r), c.status.message());
  }
}

}  // namespace
}  // namespace missy::testing

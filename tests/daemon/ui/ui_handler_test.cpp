// The inspector page's handler: its files with their content types and headers, the
// read-only window on the API (never /v1/config), the loopback Host and Origin checks
// and the token.
#include "daemon/ui/ui_handler.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/http/api_fixture.h"
#include "daemon/ui/ui_assets.h"

namespace missy::ui {
namespace {

using testing::TestExchange;

std::string HeaderOf(const HttpResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k.size() == name.size() && std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
          return std::tolower(a) == std::tolower(b);
        })) {
      return v;
    }
  }
  return {};
}

// A fake API that records what reached it and answers like the real one would, /v1/config
// with a secret in it.
struct FakeApi {
  std::mutex mu;
  std::vector<std::string> seen;  // "GET /v1/sessions"
  HttpHandler handler() {
    return [this](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
      {
        std::lock_guard<std::mutex> lock(mu);
        seen.push_back(request.method + " " + request.target);
      }
      HttpResponse r;
      r.body = request.target.starts_with("/v1/config") ? R"({"api_key":"sk-secret"})"
                                                        : R"({"ok":true})";
      exchange->Send(std::move(r));
    };
  }
};

class UiHandlerTest : public ::testing::Test {
 protected:
  HttpResponse Get(std::string target, std::string method = "GET",
                   std::map<std::string, std::string> headers = {}) {
    UiHandler handler(UiOptions{api.handler(), [this]() -> Result<std::string> { return token; },
                                [this] { return enabled; }});
    HttpRequest request;
    request.method = std::move(method);
    request.target = std::move(target);
    request.headers = {{"host", "127.0.0.1:8788"}};
    for (auto& [k, v] : headers) request.headers[k] = v;
    auto exchange = std::make_shared<TestExchange>();
    handler.Handle(std::move(request), exchange);
    auto r = exchange->Wait();
    return r ? *r : HttpResponse{0, "", "", {}};
  }

  FakeApi api;
  std::string token;
  bool enabled = true;
};

TEST_F(UiHandlerTest, ClaimsOnlyTheUiPaths) {
  EXPECT_TRUE(UiHandler::Claims("/ui"));
  EXPECT_TRUE(UiHandler::Claims("/ui/"));
  EXPECT_TRUE(UiHandler::Claims("/ui/app.js?x=1"));
  EXPECT_TRUE(UiHandler::Claims("/ui?token=a"));
  EXPECT_FALSE(UiHandler::Claims("/uix"));
  EXPECT_FALSE(UiHandler::Claims("/v1/messages"));
  EXPECT_FALSE(UiHandler::Claims("/s/ui/v1/messages"));
}

TEST_F(UiHandlerTest, ServesEveryEmbeddedFileWithItsTypeAndTheStrictHeaders) {
  ASSERT_FALSE(EmbeddedAssets().empty());
  const struct {
    std::string target, type;
  } cases[] = {{"/ui/", "text/html; charset=utf-8"},
               {"/ui/index.html", "text/html; charset=utf-8"},
               {"/ui/app.js", "text/javascript; charset=utf-8"},
               {"/ui/style.css", "text/css; charset=utf-8"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.target);
    HttpResponse r = Get(c.target);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.content_type, c.type);
    EXPECT_FALSE(r.body.empty());
    EXPECT_EQ(HeaderOf(r, "content-security-policy"),
              "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; "
              "script-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
    EXPECT_EQ(HeaderOf(r, "x-content-type-options"), "nosniff");
  }
  for (const UiAsset& asset : EmbeddedAssets()) {
    SCOPED_TRACE(asset.name);
    HttpResponse r = Get("/ui/" + std::string(asset.name));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, asset.body);
    EXPECT_NE(r.content_type, "application/octet-stream");
  }
  // The page names no other host: every script and style is a relative path.
  HttpResponse index = Get("/ui/");
  EXPECT_EQ(index.body.find("http:"), std::string::npos);
  EXPECT_EQ(index.body.find("https:"), std::string::npos);
  EXPECT_EQ(index.body.find("//"), std::string::npos);
}

TEST_F(UiHandlerTest, RedirectsTheBarePathAndAnswers404And405) {
  HttpResponse bare = Get("/ui");
  EXPECT_EQ(bare.status, 301);
  EXPECT_EQ(HeaderOf(bare, "location"), "/ui/");
  HttpResponse missing = Get("/ui/nope.js");
  EXPECT_EQ(missing.status, 404);
  EXPECT_FALSE(HeaderOf(missing, "content-security-policy").empty());
  EXPECT_EQ(Get("/ui/../config").status, 404);
  // On a listener of its own every path arrives: only /ui is served, / leads there.
  EXPECT_EQ(Get("/v1/models").status, 404);
  EXPECT_EQ(Get("/uiapp.js").status, 404);
  EXPECT_EQ(HeaderOf(Get("/"), "location"), "/ui/");
  HttpResponse post = Get("/ui/app.js", "POST");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(HeaderOf(post, "allow"), "GET");
  EXPECT_TRUE(api.seen.empty());
}

TEST_F(UiHandlerTest, PassesReadsToTheApiWithTheirQuery) {
  HttpResponse r = Get("/ui/api/v1/sessions?limit=5&offset=10");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"ok":true})");
  EXPECT_EQ(HeaderOf(r, "x-content-type-options"), "nosniff");
  EXPECT_EQ(HeaderOf(r, "cache-control"), "no-store");
  EXPECT_EQ(Get("/ui/api/v1/audit/stream?types=a,b").status, 200);
  EXPECT_EQ(Get("/ui/api/metrics").status, 200);
  EXPECT_EQ(
      Get("/ui/api/v1/sessions/s1/recall", "POST", {{"content-type", "application/json"}}).status,
      200);
  EXPECT_EQ(api.seen, (std::vector<std::string>{"GET /v1/sessions?limit=5&offset=10",
                                                "GET /v1/audit/stream?types=a,b", "GET /metrics",
                                                "POST /v1/sessions/s1/recall"}));
}

TEST_F(UiHandlerTest, NeverPassesTheConfigOrAWrite) {
  const struct {
    std::string method, target;
  } refused[] = {{"GET", "/ui/api/v1/config"},
                 {"GET", "/ui/api/v1/%63onfig"},
                 {"GET", "/ui/api/v1/sessions/../config"},
                 {"GET", "/ui/api/v1/sessions/%2e%2e/config"},
                 {"GET", "/ui/api/v1/config?x=/v1/sessions"},
                 {"POST", "/ui/api/v1/config/reload"},
                 {"POST", "/ui/api/v1/sessions"},
                 {"POST", "/ui/api/v1/sessions/s1/messages"},
                 {"POST", "/ui/api/v1/sessions/s1/recall"},  // no JSON content type
                 {"POST", "/ui/api/v1/import/missy"},
                 {"DELETE", "/ui/api/v1/sessions/s1"},
                 {"GET", "/ui/api/v2/sessions"},
                 {"GET", "/ui/api/"}};
  for (const auto& c : refused) {
    SCOPED_TRACE(c.method + " " + c.target);
    HttpResponse r = Get(c.target, c.method);
    EXPECT_TRUE(r.status == 403 || r.status == 405) << r.status;
    EXPECT_EQ(r.body.find("sk-secret"), std::string::npos);
  }
  EXPECT_TRUE(api.seen.empty());
}

TEST_F(UiHandlerTest, RefusesOtherHostsAndOrigins) {
  // DNS rebinding: the browser sends the attacker's name.
  EXPECT_EQ(Get("/ui/", "GET", {{"host", "evil.example:8788"}}).status, 403);
  EXPECT_EQ(Get("/ui/", "GET", {{"host", "127.0.0.1.evil.example"}}).status, 403);
  EXPECT_EQ(Get("/ui/", "GET", {{"host", "127.0.0.256:1"}}).status, 403);
  EXPECT_EQ(Get("/ui/", "GET", {{"host", ""}}).status, 403);
  EXPECT_EQ(Get("/ui/api/v1/sessions", "GET", {{"origin", "http://evil.example"}}).status, 403);
  EXPECT_EQ(Get("/ui/", "GET", {{"host", "localhost:8788"}}).status, 200);
  EXPECT_EQ(Get("/ui/", "GET", {{"host", "[::1]:8788"}}).status, 200);
  EXPECT_EQ(Get("/ui/", "GET", {{"host", "127.1.2.3:9"}}).status, 200);
  EXPECT_EQ(Get("/ui/api/v1/sessions", "GET", {{"origin", "http://127.0.0.1:8788"}}).status, 200);
  EXPECT_EQ(api.seen.size(), 1u);
}

TEST_F(UiHandlerTest, TheTokenIsRequiredThenCarriedByACookie) {
  token = "s3cret token";
  EXPECT_EQ(Get("/ui/").status, 401);
  EXPECT_EQ(Get("/ui/api/v1/sessions").status, 401);
  EXPECT_EQ(Get("/ui/?token=wrong").status, 401);
  EXPECT_EQ(Get("/ui/api/v1/sessions", "GET", {{"x-missy-token", "wrong"}}).status, 401);
  EXPECT_TRUE(api.seen.empty());

  HttpResponse login = Get("/ui/?token=s3cret%20token");
  EXPECT_EQ(login.status, 303);
  EXPECT_EQ(HeaderOf(login, "location"), "/ui/");
  const std::string cookie = HeaderOf(login, "set-cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos);
  EXPECT_EQ(cookie.find("s3cret"), std::string::npos) << "the cookie holds a hash, not the token";
  const std::string pair = cookie.substr(0, cookie.find(';'));
  EXPECT_EQ(Get("/ui/app.js", "GET", {{"cookie", "a=b; " + pair}}).status, 200);
  EXPECT_EQ(Get("/ui/api/v1/sessions", "GET", {{"cookie", pair}}).status, 200);
  EXPECT_EQ(Get("/ui/api/v1/sessions", "GET", {{"x-missy-token", "s3cret token"}}).status, 200);
  EXPECT_EQ(Get("/ui/api/v1/sessions", "GET", {{"cookie", "missy_ui_token=00"}}).status, 401);
  EXPECT_EQ(api.seen.size(), 2u);
}

TEST_F(UiHandlerTest, AnUnreadableTokenFileRefusesEverything) {
  UiHandler handler(UiOptions{
      api.handler(), []() -> Result<std::string> { return Status::Internal("unreadable"); }, {}});
  HttpRequest request;
  request.method = "GET";
  request.target = "/ui/";
  request.headers = {{"host", "127.0.0.1:1"}};
  auto exchange = std::make_shared<TestExchange>();
  handler.Handle(std::move(request), exchange);
  EXPECT_EQ(exchange->Wait()->status, 500);
}

TEST_F(UiHandlerTest, TheProxySummaryNamesUpstreamsWithoutCredentials) {
  DaemonConfig config;
  config.proxy.enabled = true;
  config.proxy.anthropic_upstream = "https://user:sk-secret@api.example/x@y";
  config.providers["local"] =
      ProviderConfig{"m", "http://k:sk-secret@127.0.0.1:11434/v1", "sk-key", 60};
  config.proxy.routes = {{"llama*", "local"}};
  const std::string json = ProxySummaryJson(config);
  EXPECT_EQ(json.find("sk-"), std::string::npos) << json;
  boost::json::value v = boost::json::parse(json);
  EXPECT_TRUE(v.at("enabled").as_bool());
  EXPECT_EQ(v.at("upstreams").at("anthropic").as_string(), "https://api.example/x@y");
  EXPECT_EQ(v.at("upstreams").at("openai").as_string(), "https://api.openai.com/v1");
  EXPECT_EQ(v.at("routes").at(0).at("base_url").as_string(), "http://127.0.0.1:11434/v1");
  EXPECT_EQ(v.at("routes").at(0).at("model").as_string(), "llama*");

  UiHandler handler(UiOptions{
      api.handler(), {}, {}, [&] { return std::make_shared<const DaemonConfig>(config); }});
  HttpRequest request;
  request.method = "GET";
  request.target = "/ui/api/proxy";
  request.headers = {{"host", "127.0.0.1:1"}};
  auto exchange = std::make_shared<TestExchange>();
  handler.Handle(std::move(request), exchange);
  auto r = exchange->Wait();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, json + "\n");
  EXPECT_TRUE(api.seen.empty());
}

TEST_F(UiHandlerTest, OffAnswers404) {
  enabled = false;
  EXPECT_EQ(Get("/ui/").status, 404);
  EXPECT_EQ(Get("/ui/api/v1/sessions").status, 404);
  EXPECT_TRUE(api.seen.empty());
}

// Through the real API: a read answers its JSON, and the config is not readable.
class UiApiTest : public testing::ApiFixture {};

TEST_F(UiApiTest, ReadsTheRealApiButNotItsConfig) {
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"ui-s"})").status, 201);
  UiHandler handler(UiOptions{[this](HttpRequest r, std::shared_ptr<HttpExchange> e) {
                                api_->Handle(std::move(r), std::move(e));
                              },
                              {},
                              {}});
  auto get = [&](std::string target) {
    HttpRequest request;
    request.method = "GET";
    request.target = std::move(target);
    request.headers = {{"host", "127.0.0.1:8788"}};
    auto exchange = std::make_shared<TestExchange>();
    handler.Handle(std::move(request), exchange);
    return testing::ToReply(exchange->Wait());
  };
  testing::ApiReply sessions = get("/ui/api/v1/sessions");
  ASSERT_EQ(sessions.status, 200) << sessions.raw;
  EXPECT_EQ(sessions.body.at("sessions").as_array().size(), 1u);
  EXPECT_EQ(get("/ui/api/v1/sessions/ui-s").body.at("id").as_string(), "ui-s");
  EXPECT_EQ(get("/ui/api/v1/config").status, 403);
  EXPECT_EQ(get("/ui/api/v1/nothing-here").status, 403);
  EXPECT_EQ(get("/ui/api/v1/sessions/nobody").status, 404);
}

}  // namespace
}  // namespace missy::ui

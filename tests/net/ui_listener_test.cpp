// The inspector page's own listeners (NetOptions::ui_listen, server.cpp): loopback TCP
// served by the ui handler, listed apart from the proxy's, never a Unix socket.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net_test_util.h"
#include "tcp_test_util.h"

namespace missy::net_test {
namespace {

ListenAddress Loopback() {
  ListenAddress a;
  a.kind = ListenAddress::Kind::kTcp4;
  a.host = "127.0.0.1";
  a.port = 0;
  return a;
}

HttpHandler Named(const char* who) {
  return SyncHandler([who](const HttpRequest& r) {
    json::object o{{"who", who}, {"listener", r.listener}, {"target", r.target}};
    return HttpResponse{200, "application/json", json::serialize(o), {}};
  });
}

TEST(UiListenerTest, ServesTheUiHandlerAndIsListedApartFromTheProxy) {
  TempDir dir;
  NetOptions o = Options(dir);
  o.ui_listen = {Loopback()};
  o.ui_handler = Named("ui");
  o.proxy_listen = {Loopback()};
  o.proxy_handler = Named("proxy");
  RunningServer server(o, Named("api"));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::vector<std::string> ui = server->UiAddresses();
  ASSERT_EQ(ui.size(), 1u);
  EXPECT_EQ(ui[0].rfind("127.0.0.1:", 0), 0u) << ui[0];
  ASSERT_EQ(server->ProxyAddresses().size(), 1u);
  EXPECT_NE(server->ProxyAddresses()[0], ui[0]);

  auto r = TcpCall(ui[0], "GET", "/ui/", "");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  json::object body = ParseObject(r->body);
  EXPECT_EQ(Str(body, "who"), "ui");
  EXPECT_EQ(Str(body, "listener"), ui[0]);
  EXPECT_EQ(Str(body, "target"), "/ui/");

  auto p = TcpCall(server->ProxyAddresses()[0], "GET", "/v1/models", "");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(Str(ParseObject(p->body), "who"), "proxy");
}

TEST(UiListenerTest, RefusesAUnixSocketAndAMissingHandler) {
  TempDir dir;
  NetOptions o = Options(dir);
  ListenAddress unix_address;
  unix_address.kind = ListenAddress::Kind::kUnix;
  unix_address.path = dir.Join("run/ui.sock");
  o.ui_listen = {unix_address};
  o.ui_handler = Named("ui");
  auto refused = NetServer::Create(o, Named("api"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("loopback TCP"), std::string::npos)
      << refused.status().message();

  NetOptions no_handler = Options(dir);
  no_handler.ui_listen = {Loopback()};
  auto missing = NetServer::Create(no_handler, Named("api"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("handler"), std::string::npos);
}

}  // namespace
}  // namespace missy::net_test

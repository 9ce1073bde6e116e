#include "daemon/provider/provider_url.h"

#include <gtest/gtest.h>

namespace missy::provider {
namespace {

struct UrlCase {
  const char* url;
  bool tls;
  const char* host;
  int port;
  const char* prefix;
  const char* chat_target;
  const char* printed;
};

TEST(ProviderUrlTest, ParsesBaseUrls) {
  const UrlCase cases[] = {
      {"https://api.openai.com/v1", true, "api.openai.com", 443, "/v1", "/v1/chat/completions",
       "https://api.openai.com/v1"},
      {"https://api.anthropic.com", true, "api.anthropic.com", 443, "", "/v1/chat/completions",
       "https://api.anthropic.com"},
      {"http://127.0.0.1:11434/v1/", false, "127.0.0.1", 11434, "/v1", "/v1/chat/completions",
       "http://127.0.0.1:11434/v1"},
      {"http://localhost:8080", false, "localhost", 8080, "", "/v1/chat/completions",
       "http://localhost:8080"},
      {"HTTPS://Example.COM:443/openai/v1", true, "example.com", 443, "/openai/v1",
       "/openai/v1/chat/completions", "https://example.com/openai/v1"},
      {"https://gw.example/proxy", true, "gw.example", 443, "/proxy", "/proxy/v1/chat/completions",
       "https://gw.example/proxy"},
      {"http://[::1]:8000/v1", false, "::1", 8000, "/v1", "/v1/chat/completions",
       "http://[::1]:8000/v1"},
      {"http://host:80", false, "host", 80, "", "/v1/chat/completions", "http://host"},
  };
  for (const UrlCase& c : cases) {
    SCOPED_TRACE(c.url);
    auto url = ParseBaseUrl(c.url);
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    EXPECT_EQ(url->tls, c.tls);
    EXPECT_EQ(url->host, c.host);
    EXPECT_EQ(url->port, c.port);
    EXPECT_EQ(url->path_prefix, c.prefix);
    EXPECT_EQ(url->Target("/v1/chat/completions"), c.chat_target);
    EXPECT_EQ(url->ToString(), c.printed);
  }
}

TEST(ProviderUrlTest, AnthropicTargetWithAndWithoutV1) {
  EXPECT_EQ(ParseBaseUrl("https://api.anthropic.com")->Target("/v1/messages"), "/v1/messages");
  EXPECT_EQ(ParseBaseUrl("https://api.anthropic.com/v1")->Target("/v1/messages"), "/v1/messages");
}

TEST(ProviderUrlTest, IpLiteralsAndHostHeader) {
  EXPECT_TRUE(ParseBaseUrl("https://127.0.0.1:9/")->ip_literal);
  EXPECT_TRUE(ParseBaseUrl("https://[::1]/")->ip_literal);
  EXPECT_FALSE(ParseBaseUrl("https://localhost/")->ip_literal);
  EXPECT_EQ(ParseBaseUrl("https://[::1]:8443")->HostHeader(), "[::1]:8443");
  EXPECT_EQ(ParseBaseUrl("https://a.example")->HostHeader(), "a.example");
}

TEST(ProviderUrlTest, RefusesBadUrlsWithoutEchoingThem) {
  for (const char* bad :
       {"", "api.openai.com", "ftp://x", "https://", "https://:443", "https://host:0",
        "https://host:70000", "https://host:12ab",
        "https://host:", "https://user:sk-secret-1@host/v1", "https://host/v1?key=sk-secret-1",
        "https://host/v1#frag", "https://ho st/", "https://[::1", "https://host/a b"}) {
    SCOPED_TRACE(bad);
    auto url = ParseBaseUrl(bad);
    ASSERT_FALSE(url.ok());
    EXPECT_EQ(url.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(url.status().field(), "base_url");
    EXPECT_EQ(url.status().message().find("sk-secret"), std::string::npos);
  }
}

}  // namespace
}  // namespace missy::provider

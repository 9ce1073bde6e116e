// context.proxy.*: the proxy mode's keys, read through the key table (config/key_table.cpp).
// Listen addresses go through ParseListenAddress, so `missyd --check-config` and
// `missyctl config check` refuse one another machine could reach, naming the entry.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/key_table.h"
#include "config_test_util.h"
#include "core/listen_address.h"
#include "test_util.h"

namespace missy {
namespace {

namespace json = boost::json;
using ::missy::testing::kHome;
using ::missy::testing::ParseOrDie;
using ::missy::testing::ScopedEnv;
using ::missy::testing::TempDir;
using ::missy::testing::WriteFileOrDie;

// The error ParseConfig gives for `yaml`, as "field -> message" (empty when it parses).
std::string ErrorOf(const std::string& yaml) {
  Result<DaemonConfig> r = ParseConfig(yaml, kHome);
  if (r.ok()) return "";
  return r.status().field() + " -> " + r.status().message();
}

std::string ListenError(const std::string& value) {
  return ErrorOf("context:\n  proxy:\n    listen: " + value + "\n");
}

TEST(ProxyConfigTest, DefaultsAreOffOnLoopback) {
  const DaemonConfig c = ParseOrDie("");
  EXPECT_FALSE(c.proxy.enabled);
  EXPECT_EQ(c.proxy.listen, std::vector<std::string>{"127.0.0.1:8788"});
  EXPECT_EQ(c.proxy.token_file, "");
  EXPECT_EQ(c.proxy.anthropic_upstream, "https://api.anthropic.com");
  EXPECT_EQ(c.proxy.openai_upstream, "https://api.openai.com/v1");
  EXPECT_EQ(c.proxy.timeout_ms, 600000);
  EXPECT_EQ(c.proxy.max_body_bytes, 268435456);
  EXPECT_TRUE(c.proxy.routes.empty());
}

TEST(ProxyConfigTest, ListenAcceptsLoopbackAndUnixAddresses) {
  DaemonConfig c = ParseOrDie(
      "context:\n  proxy:\n    enabled: true\n"
      "    listen: [127.0.0.1:8788, \"[::1]:8788\", \"unix:/tmp/x.sock\"]\n");
  EXPECT_TRUE(c.proxy.enabled);
  EXPECT_EQ(c.proxy.listen,
            (std::vector<std::string>{"127.0.0.1:8788", "[::1]:8788", "unix:/tmp/x.sock"}));

  // One string is a list of one.
  c = ParseOrDie("context: {proxy: {listen: 127.0.0.2:9000}}");
  EXPECT_EQ(c.proxy.listen, std::vector<std::string>{"127.0.0.2:9000"});
}

// Entries are stored canonically: localhost is 127.0.0.1, a unix: path is resolved like a
// path key (relative to the Missy home, "~" is $HOME).
TEST(ProxyConfigTest, ListenEntriesAreCanonical) {
  ScopedEnv home("HOME", "/home/u");
  const DaemonConfig c = ParseOrDie(
      "context:\n  proxy:\n"
      "    listen: [localhost:8788, \"unix:proxy.sock\", \"unix:~/run/p.sock\", "
      "\"unix:/a/../b.sock\"]\n");
  EXPECT_EQ(c.proxy.listen,
            (std::vector<std::string>{"127.0.0.1:8788", "unix:/home/u/.missy/proxy.sock",
                                      "unix:/home/u/run/p.sock", "unix:/b.sock"}));
}

TEST(ProxyConfigTest, ListenRefusesAnAddressAnotherMachineCouldReach) {
  const std::string wildcard = ParseListenAddress("0.0.0.0:8788").status().message();
  ASSERT_NE(wildcard.find("not a loopback address"), std::string::npos) << wildcard;
  EXPECT_EQ(ListenError("0.0.0.0:8788"),
            "context.proxy.listen -> context.proxy.listen: " + wildcard);

  const std::string lan = ParseListenAddress("10.0.0.1:2").status().message();
  EXPECT_EQ(ListenError("[127.0.0.1:1, \"10.0.0.1:2\"]"),
            "context.proxy.listen[1] -> context.proxy.listen[1]: " + lan);
  EXPECT_NE(ListenError("[\"192.168.1.2:80\"]")
                .find("context.proxy.listen[0]: listen address "
                      "'192.168.1.2:80' is not a loopback"),
            std::string::npos);
  EXPECT_NE(ListenError("example.com:80").find("not a loopback"), std::string::npos);
}

TEST(ProxyConfigTest, ListenRefusesMalformedLists) {
  const struct {
    std::string value;
    std::string error;
  } cases[] = {
      {"127.0.0.1", "context.proxy.listen -> context.proxy.listen: " +
                        ParseListenAddress("127.0.0.1").status().message()},
      {"127.0.0.1:0", "context.proxy.listen -> context.proxy.listen: " +
                          ParseListenAddress("127.0.0.1:0").status().message()},
      {"\"unix:\"",
       "context.proxy.listen -> context.proxy.listen: listen address 'unix:' "
       "needs a socket path"},
      {"[]", "context.proxy.listen -> context.proxy.listen: must list at least one entry"},
      {"",
       "context.proxy.listen -> context.proxy.listen: expected a string or a list of "
       "strings, got null"},
      {"{a: 1}",
       "context.proxy.listen -> context.proxy.listen: expected a string or a list "
       "of strings, got a mapping"},
      {"[[127.0.0.1:1]]",
       "context.proxy.listen[0] -> context.proxy.listen[0]: expected a "
       "string, got a list"},
      {"[127.0.0.1:1, localhost:1]",
       "context.proxy.listen[1] -> context.proxy.listen[1]: "
       "'127.0.0.1:1' is listed twice"},
      {"[\"unix:~bob/p.sock\"]",
       "context.proxy.listen[0] -> context.proxy.listen[0]: '~user' "
       "paths are not supported, got 'unix:~bob/p.sock'"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ListenError(c.value), c.error) << "listen: " << c.value;
  }
}

// `missyd --check-config` and `missyctl config check` read the file through LoadConfigFile:
// the refusal names the file and the entry.
TEST(ProxyConfigTest, ConfigCheckRefusesANonLoopbackListenAddress) {
  TempDir dir;
  const std::string path = dir.Join("config.yaml");
  WriteFileOrDie(path, "context:\n  proxy:\n    enabled: true\n    listen: 0.0.0.0:8788\n");
  Result<DaemonConfig> r = LoadConfigFile(path, dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "context.proxy.listen");
  EXPECT_EQ(r.status().message().rfind(path + ": context.proxy.listen: listen address "
                                              "'0.0.0.0:8788' is not a loopback address",
                                       0),
            0u)
      << r.status().message();
}

TEST(ProxyConfigTest, TokenFileIsAPathKey) {
  EXPECT_EQ(ParseOrDie("context: {proxy: {token_file: proxy.token}}").proxy.token_file,
            std::string(kHome) + "/proxy.token");
  EXPECT_EQ(ParseOrDie("context: {proxy: {token_file: /etc/t}}").proxy.token_file, "/etc/t");
  EXPECT_EQ(ParseOrDie("context: {proxy: {token_file: \"\"}}").proxy.token_file, "");
}

TEST(ProxyConfigTest, UpstreamsMustBeHttpUrls) {
  DaemonConfig c = ParseOrDie(
      "context:\n  proxy:\n    upstreams:\n      anthropic: http://127.0.0.1:9000\n"
      "      openai: https://openrouter.ai/api/v1\n");
  EXPECT_EQ(c.proxy.anthropic_upstream, "http://127.0.0.1:9000");
  EXPECT_EQ(c.proxy.openai_upstream, "https://openrouter.ai/api/v1");

  for (const std::string bad :
       {"ftp://x", "api.openai.com", "https://", "http:///v1", "\"https://a b\"", "\"\""}) {
    SCOPED_TRACE(bad);
    for (const std::string api : {"anthropic", "openai"}) {
      const std::string key = "context.proxy.upstreams." + api;
      const std::string error =
          ErrorOf("context:\n  proxy:\n    upstreams:\n      " + api + ": " + bad + "\n");
      EXPECT_EQ(error.rfind(key + " -> " + key +
                                ": expected an http:// or https:// URL without spaces, got '",
                            0),
                0u)
          << error;
    }
  }
  EXPECT_EQ(ErrorOf("context: {proxy: {upstreams: {gemini: https://x}}}"),
            "context.proxy.upstreams.gemini -> context.proxy.upstreams.gemini: unknown key");
}

TEST(ProxyConfigTest, RoutesNameExistingProviders) {
  const DaemonConfig c = ParseOrDie(
      "providers:\n  ollama: {model: llama3.1:8b, base_url: 'http://localhost:11434/v1'}\n"
      "  openrouter: {model: x}\n"
      "context:\n  proxy:\n    routes:\n      - {model: \"llama*\", provider: ollama}\n"
      "      - {model: \"qwen?-*\", provider: openrouter}\n");
  EXPECT_EQ(c.proxy.routes,
            (std::vector<ProxyRoute>{{"llama*", "ollama"}, {"qwen?-*", "openrouter"}}));

  EXPECT_EQ(ErrorOf("context: {proxy: {routes: [{model: \"llama*\", provider: ollama}]}}"),
            "context.proxy.routes[0].provider -> context.proxy.routes[0].provider: the route's "
            "provider 'ollama' is not among providers");
  const std::string p = "providers: {p: {model: m}}\n";
  const struct {
    std::string routes;
    std::string error;
  } cases[] = {
      {"[{model: a}]",
       "context.proxy.routes[0].provider -> context.proxy.routes[0].provider: "
       "required"},
      {"[{model: a, provider: p}, {provider: p}]",
       "context.proxy.routes[1].model -> context.proxy.routes[1].model: required"},
      {"[{model: \"\", provider: p}]",
       "context.proxy.routes[0].model -> context.proxy.routes[0].model: must not be empty"},
      {"[{model: a, provider: p, weight: 2}]",
       "context.proxy.routes[0].weight -> context.proxy.routes[0].weight: unknown key"},
      {"[a]", "context.proxy.routes[0] -> context.proxy.routes[0]: expected a mapping, got 'a'"},
      {"{model: a}",
       "context.proxy.routes -> context.proxy.routes: expected a list, got a "
       "mapping"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ErrorOf(p + "context: {proxy: {routes: " + c.routes + "}}"), c.error) << c.routes;
  }
  EXPECT_TRUE(ParseOrDie(p + "context: {proxy: {routes: }}").proxy.routes.empty());
}

TEST(ProxyConfigTest, LimitsHaveLowerBounds) {
  EXPECT_EQ(ErrorOf("context: {proxy: {timeout_ms: 999}}"),
            "context.proxy.timeout_ms -> context.proxy.timeout_ms: must be at least 1000, got 999");
  EXPECT_EQ(ErrorOf("context: {proxy: {max_body_bytes: 4095}}"),
            "context.proxy.max_body_bytes -> context.proxy.max_body_bytes: must be at least 4096, "
            "got 4095");
  EXPECT_EQ(ParseOrDie("context: {proxy: {timeout_ms: 5000}}").proxy.timeout_ms, 5000);
}

// The default file shows the section with its defaults, nested groups indented, and
// parses back to them.
TEST(ProxyConfigTest, DefaultFileShowsTheSection) {
  const std::string yaml = DefaultConfigYaml();
  for (const char* line : {
           "\n  proxy:                        # the proxy mode: missyd as an agent's "
           "ANTHROPIC_BASE_URL / OPENAI_BASE_URL\n    # Off by default; read at start",
           "\n    enabled: false              # serve the Anthropic and OpenAI APIs on `listen` "
           "for agents\n",
           "\n    listen: [\"127.0.0.1:8788\"]  # loopback address(es) to listen on: one, or a "
           "list\n",
           "\n    routes: []                  # requests for a matching model go to "
           "providers.<name> instead\n",
           "\n    upstreams:                  # where requests go when no route matches\n"
           "      anthropic: \"https://api.anthropic.com\"  # where Anthropic Messages requests "
           "go\n      openai: \"https://api.openai.com/v1\"  # where OpenAI",
       }) {
    EXPECT_NE(yaml.find(line), std::string::npos) << line << "\n---\n" << yaml;
  }
  // The route example of the note is a valid row.
  const size_t at = yaml.find("\n    # - {model:");
  ASSERT_NE(at, std::string::npos) << yaml;
  const std::string row = yaml.substr(at + 7, yaml.find('\n', at + 1) - at - 7);
  const DaemonConfig c =
      ParseOrDie("providers: {ollama: {}}\ncontext:\n  proxy:\n    routes:\n      " + row + "\n");
  EXPECT_EQ(c.proxy.routes, (std::vector<ProxyRoute>{{"llama*", "ollama"}}));
}

TEST(ProxyConfigTest, EffectiveConfigShowsTheSection) {
  const DaemonConfig c = ParseOrDie(
      "providers: {local: {model: m}}\n"
      "context:\n  proxy:\n    enabled: true\n    listen: [127.0.0.1:1, \"unix:/run/p.sock\"]\n"
      "    routes: [{model: \"m*\", provider: local}]\n");
  const json::value v = json::parse(EffectiveConfigJson(c));
  const json::value& proxy = v.at("context").at("proxy");
  EXPECT_EQ(json::serialize(proxy),
            R"({"enabled":true,"listen":["127.0.0.1:1","unix:/run/p.sock"],"memory":true,"token_file":"",)"
            R"("timeout_ms":600000,"max_body_bytes":268435456,)"
            R"("routes":[{"model":"m*","provider":"local"}],)"
            R"("upstreams":{"anthropic":"https://api.anthropic.com",)"
            R"("openai":"https://api.openai.com/v1"}})");
}

TEST(ProxyConfigTest, ReferenceHasATablePerGroup) {
  const std::string md = ConfigReferenceMarkdown();
  EXPECT_NE(md.find("### `context.proxy`\n\nThe proxy mode: missyd as an agent's "),
            std::string::npos);
  EXPECT_NE(md.find("### `context.proxy.upstreams`\n\nWhere requests go when no route matches."),
            std::string::npos);
  EXPECT_NE(md.find("| `context.proxy.listen` | `[\"127.0.0.1:8788\"]` | 127.0.0.1:PORT \\| "
                    "[::1]:PORT \\| localhost:PORT \\| unix:PATH, or a list of them |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `context.proxy.upstreams.openai` | `\"https://api.openai.com/v1\"` | "
                    "http:// or https:// URL |"),
            std::string::npos)
      << md;
}

}  // namespace
}  // namespace missy

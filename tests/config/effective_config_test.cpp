#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "config/config.h"
#include "config/key_table.h"
#include "config_test_util.h"

namespace missy {
namespace {

namespace json = boost::json;
using ::missy::testing::kHome;
using ::missy::testing::ParseOrDie;

TEST(EffectiveConfigTest, EffectiveConfigJsonMirrorsYamlKeys) {
  DaemonConfig c = ParseOrDie("context: {budget: {total: 12345}, tokenizer: heuristic}");
  json::value v = json::parse(EffectiveConfigJson(c));
  EXPECT_EQ(v.at("missy_home").as_string(), kHome);
  const json::value& ctx = v.at("context");
  EXPECT_EQ(ctx.at("socket").as_string(), "/home/u/.missy/missyd.sock");
  EXPECT_EQ(ctx.at("budget").at("total").as_int64(), 12345);
  EXPECT_EQ(ctx.at("tokenizer").as_string(), "heuristic");
  EXPECT_EQ(ctx.at("pruning").at("minimum_freed").as_int64(), 20000);
  EXPECT_DOUBLE_EQ(ctx.at("calibration").at("max_ratio").as_double(), 1.6);
  EXPECT_EQ(ctx.at("models").as_array().size(), ModelTable::Builtin().rows().size());
}

// The value at `path` ("budget.total") of the JSON context object, or nullptr.
const json::value* At(const json::value& context, std::string_view path) {
  const json::value* v = &context;
  while (v != nullptr) {
    const size_t dot = path.find('.');
    const json::object* o = v->if_object();
    v = o == nullptr ? nullptr : o->if_contains(path.substr(0, dot));
    if (dot == std::string_view::npos) break;
    path.remove_prefix(dot + 1);
  }
  return v;
}

void ExpectEveryKeyWithItsValue(const DaemonConfig& c) {
  const json::value root = json::parse(EffectiveConfigJson(c));
  const json::value& context = root.at("context");
  const std::function<size_t(const json::value&)> leaves = [&](const json::value& v) {
    if (!v.is_object()) return size_t{1};
    size_t n = 0;
    for (const auto& [name, child] : v.as_object()) n += leaves(child);
    return n;
  };
  EXPECT_EQ(leaves(context), ContextKeys().size()) << context;  // nothing but the table's keys
  for (const ConfigKey& key : ContextKeys()) {
    SCOPED_TRACE(std::string(key.path));
    const json::value* v = At(context, key.path);
    ASSERT_NE(v, nullptr) << context;
    std::visit(
        [&](const auto& rule) {
          using Rule = std::decay_t<decltype(rule)>;
          if constexpr (std::is_same_v<Rule, IntRule>) {
            EXPECT_EQ(v->as_int64(), rule.field.get(c));
          } else if constexpr (std::is_same_v<Rule, NumberRule>) {
            EXPECT_EQ(v->as_double(), rule.field.get(c));
          } else if constexpr (std::is_same_v<Rule, BoolRule>) {
            EXPECT_EQ(v->as_bool(), rule.field.get(c));
          } else if constexpr (std::is_same_v<Rule, PathRule>) {
            EXPECT_EQ(v->as_string(), rule.field.get(c));
          } else if constexpr (std::is_same_v<Rule, StringRule>) {
            EXPECT_EQ(v->as_string(), rule.field.get(c));
          } else if constexpr (std::is_same_v<Rule, ChoiceRule>) {
            EXPECT_EQ(v->as_string(), rule.get(c));
          } else if constexpr (std::is_same_v<Rule, StringListRule>) {
            const std::vector<std::string>& items = rule.field.get(c);
            ASSERT_EQ(v->as_array().size(), items.size());
            for (size_t i = 0; i < items.size(); ++i) {
              EXPECT_EQ(v->as_array()[i].as_string(), items[i]);
            }
          } else if constexpr (std::is_same_v<Rule, ProxyRoutesRule>) {
            const std::vector<ProxyRoute>& routes = rule.field.get(c);
            ASSERT_EQ(v->as_array().size(), routes.size());
            for (size_t i = 0; i < routes.size(); ++i) {
              EXPECT_EQ(v->as_array()[i].at("model").as_string(), routes[i].model);
              EXPECT_EQ(v->as_array()[i].at("provider").as_string(), routes[i].provider);
            }
          } else {
            ASSERT_EQ(v->as_array().size(), rule.field.get(c).rows().size());
            const json::value& last = v->as_array().back();
            const ModelSpec& row = rule.field.get(c).rows().back();
            EXPECT_EQ(last.at("pattern").as_string(), row.pattern);
            EXPECT_EQ(last.at("context_window").as_int64(), row.context_window);
            EXPECT_EQ(last.at("max_output_tokens").as_int64(), row.max_output_tokens);
            EXPECT_EQ(last.at("encoding").as_string(), row.encoding);
            EXPECT_EQ(last.at("factor").as_double(), row.factor);
          }
        },
        key.rule);
  }
}

TEST(EffectiveConfigTest, ContainsEveryKeyOfTheTableWithItsValue) {
  ExpectEveryKeyWithItsValue(ParseOrDie(""));
  ExpectEveryKeyWithItsValue(ParseOrDie(R"(
context:
  data_dir: ranks
  log_level: warn
  budget: {total: 64000, memory_fraction: 0.25}
  strict: true
  tokenizer: heuristic
  calibration: {alpha: 0.5}
  limits: {memory_mb: 512}
  models: [{pattern: zz-json, context_window: 9000, max_output_tokens: 900, factor: 1.5}]
  proxy:
    enabled: true
    listen: [127.0.0.1:9001, "[::1]:9001"]
    routes: [{model: "llama*", provider: local}]
    upstreams: {openai: "http://127.0.0.1:9/v1"}
providers:
  local: {model: llama3.1:8b}
)"));
}

TEST(EffectiveConfigTest, ProviderApiKeysNeverAppear) {
  const char kSecret[] = "sk-proj-Zq8vT3uniqueSECRETvalue41";
  DaemonConfig c = ParseOrDie(std::string(R"(
default_provider: main
providers:
  main: {model: gpt-4o, api_key: )") +
                              kSecret + R"(}
  backup: {model: claude-sonnet-4-5, api_key: ")" +
                              kSecret + R"(-2"}
  local: {model: llama3.1:8b}
)");
  ASSERT_EQ(c.providers.at("main").api_key, kSecret);  // parsed, kept in memory
  const std::string text = EffectiveConfigJson(c);
  EXPECT_EQ(text.find(kSecret), std::string::npos) << text;
  EXPECT_EQ(text.find("SECRET"), std::string::npos) << text;
  EXPECT_EQ(text.find("Zq8vT3"), std::string::npos) << text;
  const json::value v = json::parse(text);
  EXPECT_EQ(v.at("providers").at("main").at("api_key").as_string(), "***");
  EXPECT_EQ(v.at("providers").at("backup").at("api_key").as_string(), "***");
  EXPECT_EQ(v.at("providers").at("local").at("api_key").as_string(), "");
  EXPECT_EQ(v.at("providers").at("main").at("model").as_string(), "gpt-4o");
  EXPECT_EQ(v.at("providers").at("local").at("timeout").as_int64(), ProviderConfig{}.timeout_s);
}

}  // namespace
}  // namespace missy

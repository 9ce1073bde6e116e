// EffectiveConfigJson: the config as /v1/config shows it. The context section is built
// from the key table (every key, nested by its path); providers' api keys are redacted.
#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "config/config.h"
#include "config/key_table.h"

namespace missy {
namespace {

namespace json = boost::json;

json::value ModelRowsJson(const ModelTable& table) {
  json::array rows;
  for (const ModelSpec& m : table.rows()) {
    rows.push_back(json::object{{"pattern", m.pattern},
                                {"context_window", m.context_window},
                                {"max_output_tokens", m.max_output_tokens},
                                {"encoding", m.encoding},
                                {"factor", m.factor}});
  }
  return rows;
}

json::value KeyJson(const ConfigKey& key, const DaemonConfig& c) {
  return std::visit(
      RuleVisitor{
          [&](const IntRule& r) -> json::value { return r.field.get(c); },
          [&](const NumberRule& r) -> json::value { return r.field.get(c); },
          [&](const BoolRule& r) -> json::value { return r.field.get(c); },
          [&](const PathRule& r) -> json::value { return json::string(r.field.get(c)); },
          [&](const StringRule& r) -> json::value {
            const std::string& v = r.field.get(c);
            return json::string(r.secret && !v.empty() ? "***" : v);
          },
          [&](const ChoiceRule& r) -> json::value { return json::string(r.get(c)); },
          [&](const ModelRowsRule& r) { return ModelRowsJson(r.field.get(c)); },
          [&](const StringListRule& r) -> json::value {
            json::array items;
            for (const std::string& item : r.field.get(c)) items.emplace_back(item);
            return items;
          },
          [&](const ProxyRoutesRule& r) -> json::value {
            json::array routes;
            for (const ProxyRoute& route : r.field.get(c)) {
              routes.push_back(json::object{{"model", route.model}, {"provider", route.provider}});
            }
            return routes;
          },
      },
      key.rule);
}

json::object ContextJson(const DaemonConfig& c) {
  json::object context;
  for (const ConfigKey& key : ContextKeys()) {
    json::object* parent = &context;
    std::string_view path = key.path;
    for (size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.')) {
      json::value& child = (*parent)[path.substr(0, dot)];
      if (!child.is_object()) child = json::object();
      parent = &child.as_object();
      path.remove_prefix(dot + 1);
    }
    (*parent)[path] = KeyJson(key, c);
  }
  return context;
}

}  // namespace

std::string EffectiveConfigJson(const DaemonConfig& c) {
  json::object providers;
  for (const auto& [name, p] : c.providers) {
    providers[name] = json::object{{"model", p.model},
                                   {"base_url", p.base_url},
                                   {"api_key", p.api_key.empty() ? "" : "***"},
                                   {"timeout", p.timeout_s}};
  }
  json::object root{{"missy_home", c.missy_home},
                    {"default_provider", c.default_provider},
                    {"providers", std::move(providers)},
                    {"context", ContextJson(c)}};
  return json::serialize(root);
}

}  // namespace missy

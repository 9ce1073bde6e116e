// Key-by-key comparison of two configs over the key table. See config_diff.h.
#include "daemon/service/config_diff.h"

#include <set>
#include <variant>

namespace missy {
namespace {

bool SameProvider(const ProviderConfig& a, const ProviderConfig& b) {
  return a.model == b.model && a.base_url == b.base_url && a.api_key == b.api_key &&
         a.timeout_s == b.timeout_s;
}

}  // namespace

bool SameKeyValue(const ConfigKey& key, const DaemonConfig& a, const DaemonConfig& b) {
  return std::visit(
      RuleVisitor{
          [&](const IntRule& r) { return r.field.get(a) == r.field.get(b); },
          [&](const NumberRule& r) { return r.field.get(a) == r.field.get(b); },
          [&](const BoolRule& r) { return r.field.get(a) == r.field.get(b); },
          [&](const PathRule& r) { return r.field.get(a) == r.field.get(b); },
          [&](const StringRule& r) { return r.field.get(a) == r.field.get(b); },
          [&](const ChoiceRule& r) { return r.get(a) == r.get(b); },
          [&](const ModelRowsRule& r) { return r.field.get(a).rows() == r.field.get(b).rows(); },
          [&](const StringListRule& r) { return r.field.get(a) == r.field.get(b); },
          [&](const ProxyRoutesRule& r) { return r.field.get(a) == r.field.get(b); },
      },
      key.rule);
}

void CopyKeyValue(const ConfigKey& key, const DaemonConfig& from, DaemonConfig& to) {
  std::visit(RuleVisitor{
                 [&](const IntRule& r) { r.field.ref(to) = r.field.get(from); },
                 [&](const NumberRule& r) { r.field.ref(to) = r.field.get(from); },
                 [&](const BoolRule& r) { r.field.ref(to) = r.field.get(from); },
                 [&](const PathRule& r) { r.field.ref(to) = r.field.get(from); },
                 [&](const StringRule& r) { r.field.ref(to) = r.field.get(from); },
                 [&](const ChoiceRule& r) { r.set(to, r.get(from)); },
                 [&](const ModelRowsRule& r) { r.field.ref(to) = r.field.get(from); },
                 [&](const StringListRule& r) { r.field.ref(to) = r.field.get(from); },
                 [&](const ProxyRoutesRule& r) { r.field.ref(to) = r.field.get(from); },
             },
             key.rule);
}

std::vector<std::string> ChangedConfigKeys(const DaemonConfig& before, const DaemonConfig& after) {
  std::vector<std::string> changed;
  for (const ConfigKey& key : ContextKeys()) {
    if (!SameKeyValue(key, before, after)) changed.push_back(ContextKeyPath(key.path));
  }
  if (before.default_provider != after.default_provider) changed.push_back("default_provider");
  std::set<std::string> names;
  for (const auto& [name, p] : before.providers) names.insert(name);
  for (const auto& [name, p] : after.providers) names.insert(name);
  for (const std::string& name : names) {
    auto a = before.providers.find(name);
    auto b = after.providers.find(name);
    if (a == before.providers.end() || b == after.providers.end() ||
        !SameProvider(a->second, b->second)) {
      changed.push_back("providers." + name);
    }
  }
  return changed;
}

}  // namespace missy

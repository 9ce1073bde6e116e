// Fuzzes the config parser (config/config.h). Input: raw bytes as the YAML text of
// ~/.missy/config.yaml. Only ParseConfig is called, with a fixed Missy home and $HOME
// that are never created: nothing touches the filesystem. Properties checked:
//  - ParseConfig returns (yaml-cpp's exceptions stay inside); a rejection is
//    kInvalidArgument with a message;
//  - an accepted config's EffectiveConfigJson is a valid JSON object whose providers'
//    non-empty api_keys are redacted to "***";
//  - DefaultConfigYaml() still parses (no state leaks from one parse into the next).
#include <stdlib.h>

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"
#include "fuzz/fuzz_check.h"

namespace {

namespace json = boost::json;
using missy::DaemonConfig;
using missy::Result;

constexpr char kMissyHome[] = "/tmp/missy-fuzz-home";

void CheckDefaultConfigParses() {
  Result<DaemonConfig> d = missy::ParseConfig(missy::DefaultConfigYaml(), kMissyHome);
  MISSY_FUZZ_CHECK(d.ok(), "DefaultConfigYaml() is rejected: " + d.status().message());
}

void CheckEffectiveJson(const DaemonConfig& config, std::string_view yaml) {
  const std::string text = missy::EffectiveConfigJson(config);
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  MISSY_FUZZ_CHECK(!ec, "EffectiveConfigJson is not valid JSON (" + ec.message() + "): " + text +
                            "\n--- yaml:\n" + std::string(yaml));
  MISSY_FUZZ_CHECK(v.is_object(), "EffectiveConfigJson is not an object: " + text);
  const json::value* providers = v.get_object().if_contains("providers");
  MISSY_FUZZ_CHECK(providers != nullptr && providers->is_object(),
                   "EffectiveConfigJson has no providers object: " + text);
  for (const auto& [name, provider] : config.providers) {
    if (provider.api_key.empty()) continue;
    const json::value* p = providers->get_object().if_contains(name);
    const json::value* key =
        p != nullptr && p->is_object() ? p->get_object().if_contains("api_key") : nullptr;
    MISSY_FUZZ_CHECK(key != nullptr && key->is_string() && key->get_string() == "***",
                     "api_key of provider '" + name + "' is not redacted: " + text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // "~" in the context section expands $HOME: make it fixed so a finding reproduces.
  setenv("HOME", "/tmp/missy-fuzz-user", 1);
  CheckDefaultConfigParses();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  Result<DaemonConfig> r = missy::ParseConfig(yaml, kMissyHome);
  if (!r.ok()) {
    MISSY_FUZZ_CHECK(r.status().code() == missy::StatusCode::kInvalidArgument,
                     "rejection is not invalid_argument: " + r.status().ToString());
    MISSY_FUZZ_CHECK(!r.status().message().empty(), "rejection without a message");
    return 0;
  }
  CheckEffectiveJson(*r, yaml);
  CheckDefaultConfigParses();
  return 0;
}

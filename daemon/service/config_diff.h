// Which configuration keys differ between two DaemonConfigs, by name only: values are
// never reported (a provider's api_key stays out of logs and audit lines). Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/key_table.h"

namespace missy {

// Key paths whose values differ, in key-table order: "context.budget.total" for the
// context section, then "default_provider", then "providers.<name>" for each provider
// added, removed or changed (any of model, base_url, api_key, timeout).
std::vector<std::string> ChangedConfigKeys(const DaemonConfig& before, const DaemonConfig& after);

// True when `key` has the same value in both.
bool SameKeyValue(const ConfigKey& key, const DaemonConfig& a, const DaemonConfig& b);

// Sets `key` in `to` to its value in `from`.
void CopyKeyValue(const ConfigKey& key, const DaemonConfig& from, DaemonConfig& to);

}  // namespace missy

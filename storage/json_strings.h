// JSON arrays of strings as storage keeps them in TEXT columns (tags, approach, child
// summary ids, Missy's source ids). Storage-internal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace missy::storage_json {

std::string StringsToJson(const std::vector<std::string>& values);
// Lenient: anything that is not a JSON array of strings yields the strings it has.
std::vector<std::string> StringsFromJson(std::string_view text);

}  // namespace missy::storage_json

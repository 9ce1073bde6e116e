#include "storage/json_strings.h"

#include <boost/json.hpp>

namespace missy::storage_json {

namespace json = boost::json;

std::string StringsToJson(const std::vector<std::string>& values) {
  json::array a;
  for (const std::string& v : values) a.emplace_back(json::string_view(v));
  return json::serialize(a);
}

std::vector<std::string> StringsFromJson(std::string_view text) {
  std::vector<std::string> out;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_array()) return out;
  for (const json::value& e : v.as_array()) {
    if (e.is_string()) out.emplace_back(e.as_string().c_str(), e.as_string().size());
  }
  return out;
}

}  // namespace missy::storage_json

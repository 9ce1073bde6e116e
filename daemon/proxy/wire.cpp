#include "daemon/proxy/wire.h"

#include <boost/json/serialize.hpp>

#include "core/digest.h"
#include "core/message_json.h"

namespace missy::proxy {

std::string_view ApiName(Api api) {
  switch (api) {
    case Api::kAnthropic:
      return "anthropic";
    case Api::kChat:
      return "chat";
    case Api::kResponses:
      return "responses";
  }
  return "unknown";
}

std::string CanonicalHash(const std::vector<Message>& engine) {
  std::string text;
  for (const Message& m : engine) {
    text += boost::json::serialize(MessageToJson(m));
    text.push_back('\n');
  }
  return Sha256Hex(text);
}

int CountCacheMarkers(const boost::json::value& v) {
  int n = 0;
  if (v.is_object()) {
    for (const auto& [key, value] : v.get_object()) {
      if (key == "cache_control" && !value.is_null()) ++n;
      n += CountCacheMarkers(value);
    }
  } else if (v.is_array()) {
    for (const auto& e : v.get_array()) n += CountCacheMarkers(e);
  }
  return n;
}

}  // namespace missy::proxy

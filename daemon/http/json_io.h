// The JSON edge of the HTTP routes: request targets, bodies and field readers that
// name the offending field in their errors, and response builders. Only daemon/http
// includes this (Boost.JSON stays out of the service layer).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "daemon/net/server.h"
#include "storage/records.h"

namespace missy::http {

namespace json = boost::json;

struct RequestTarget {
  std::string path;                   // undecoded path, without the query
  std::vector<std::string> segments;  // decoded path segments
  std::unordered_map<std::string, std::string> query;
};
RequestTarget ParseTarget(std::string_view target);

// The body serialized (always valid UTF-8: invalid bytes echoed from a request become
// U+FFFD) with a trailing newline.
HttpResponse JsonResponse(int status, const json::value& body);
json::object ErrorBody(std::string_view code, const std::string& message, const std::string& field);

// An integer query parameter in [min, max] (left unchanged when absent).
Status QueryInt(const RequestTarget& t, const std::string& key, int64_t min, int64_t max,
                int64_t& out);
// limit (1..max_limit) and offset of a list endpoint.
Result<ListOptions> Paging(const RequestTarget& t, int64_t default_limit = 100,
                           int64_t max_limit = 1000);
std::string QueryString(const RequestTarget& t, const std::string& key);

// The body as a JSON object; an empty body is an empty object when `empty_ok`.
Result<json::object> ParseBody(const std::string& body, bool empty_ok);
Status CheckKnownKeys(const json::object& o, std::initializer_list<std::string_view> known);
Status OptString(const json::object& o, std::string_view key, std::string& out);
Status OptBool(const json::object& o, std::string_view key, std::optional<bool>& out);
Status OptInt(const json::object& o, std::string_view key, int64_t min, int64_t max, int64_t& out);
Status OptInt(const json::object& o, std::string_view key, int64_t min, int64_t max,
              std::optional<int64_t>& out);
Status OptStrings(const json::object& o, std::string_view key, std::vector<std::string>& out);

// Stored JSON text parsed back (the fallback when it is not valid JSON).
json::value ParseStoredJson(const std::string& text, json::value fallback);

}  // namespace missy::http

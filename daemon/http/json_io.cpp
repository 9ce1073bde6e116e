#include "daemon/http/json_io.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>

#include "core/utf8.h"

namespace missy::http {

namespace {

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int value = 0;
      auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, value, 16);
      if (ec == std::errc() && p == s.data() + i + 3) {
        out += static_cast<char>(value);
        i += 2;
        continue;
      }
    }
    out += (plus_is_space && s[i] == '+') ? ' ' : s[i];
  }
  return out;
}

}  // namespace

RequestTarget ParseTarget(std::string_view target) {
  RequestTarget t;
  const size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  t.path = std::string(path);
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > start)
      t.segments.push_back(PercentDecode(path.substr(start, slash - start), false));
    start = slash + 1;
  }
  if (q != std::string_view::npos) {
    std::string_view qs = target.substr(q + 1);
    while (!qs.empty()) {
      size_t amp = qs.find('&');
      std::string_view pair = qs.substr(0, amp);
      size_t eq = pair.find('=');
      t.query[PercentDecode(pair.substr(0, eq), true)] =
          eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
      if (amp == std::string_view::npos) break;
      qs = qs.substr(amp + 1);
    }
  }
  return t;
}

HttpResponse JsonResponse(int status, const json::value& body) {
  HttpResponse r;
  r.status = status;
  r.body = json::serialize(body);
  // Text echoed from the request (a path, a query) may not be UTF-8; Boost.JSON writes
  // such bytes as they are, which would make the body invalid JSON. They only occur
  // inside strings, so replacing them keeps the document's structure.
  if (InvalidUtf8At(r.body) != std::string::npos) r.body = ToValidUtf8(r.body);
  r.body += '\n';
  return r;
}

json::object ErrorBody(std::string_view code, const std::string& message,
                       const std::string& field) {
  return json::object{
      {"error", json::object{{"code", code}, {"message", message}, {"field", field}}}};
}

Status QueryInt(const RequestTarget& t, const std::string& key, int64_t min, int64_t max,
                int64_t& out) {
  auto it = t.query.find(key);
  if (it == t.query.end()) return Status::Ok();
  int64_t value = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  if (ec != std::errc() || p != it->second.data() + it->second.size()) {
    return Status::InvalidArgument("expected an integer, got '" + it->second + "'", key);
  }
  if (value < min || value > max) {
    return Status::InvalidArgument(
        "must be between " + std::to_string(min) + " and " + std::to_string(max), key);
  }
  out = value;
  return Status::Ok();
}

Result<ListOptions> Paging(const RequestTarget& t, int64_t default_limit, int64_t max_limit) {
  int64_t limit = default_limit, offset = 0;
  MISSY_RETURN_IF_ERROR(QueryInt(t, "limit", 1, max_limit, limit));
  MISSY_RETURN_IF_ERROR(QueryInt(t, "offset", 0, int64_t{1} << 30, offset));
  ListOptions options;
  options.limit = static_cast<int>(limit);
  options.offset = static_cast<int>(offset);
  return options;
}

std::string QueryString(const RequestTarget& t, const std::string& key) {
  auto it = t.query.find(key);
  return it == t.query.end() ? std::string() : it->second;
}

Result<json::object> ParseBody(const std::string& body, bool empty_ok) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
    if (empty_ok) return json::object{};
    return Status::InvalidArgument("request body is empty; expected a JSON object");
  }
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) return Status::InvalidArgument("request body is not valid JSON: " + ec.message());
  if (!v.is_object()) return Status::InvalidArgument("request body must be a JSON object");
  return std::move(v.get_object());
}

Status CheckKnownKeys(const json::object& o, std::initializer_list<std::string_view> known) {
  for (const auto& kv : o) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || kv.key() == k;
    if (!ok) return Status::InvalidArgument("unknown field", std::string(kv.key()));
  }
  return Status::Ok();
}

Status OptString(const json::object& o, std::string_view key, std::string& out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_string()) return Status::InvalidArgument("expected a string", std::string(key));
  out.assign(v->get_string().begin(), v->get_string().end());
  return Status::Ok();
}

Status OptBool(const json::object& o, std::string_view key, std::optional<bool>& out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_bool()) return Status::InvalidArgument("expected a boolean", std::string(key));
  out = v->get_bool();
  return Status::Ok();
}

Status OptInt(const json::object& o, std::string_view key, int64_t min, int64_t max, int64_t& out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  int64_t value = 0;
  if (v->is_int64()) {
    value = v->get_int64();
  } else if (v->is_uint64() && v->get_uint64() <= static_cast<uint64_t>(max)) {
    value = static_cast<int64_t>(v->get_uint64());
  } else {
    return Status::InvalidArgument("expected an integer", std::string(key));
  }
  if (value < min || value > max) {
    return Status::InvalidArgument(
        "must be between " + std::to_string(min) + " and " + std::to_string(max), std::string(key));
  }
  out = value;
  return Status::Ok();
}

Status OptInt(const json::object& o, std::string_view key, int64_t min, int64_t max,
              std::optional<int64_t>& out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  int64_t value = 0;
  MISSY_RETURN_IF_ERROR(OptInt(o, key, min, max, value));
  out = value;
  return Status::Ok();
}

Status OptStrings(const json::object& o, std::string_view key, std::vector<std::string>& out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_array())
    return Status::InvalidArgument("expected an array of strings", std::string(key));
  for (size_t i = 0; i < v->get_array().size(); ++i) {
    const json::value& e = v->get_array()[i];
    if (!e.is_string()) {
      return Status::InvalidArgument("expected a string",
                                     std::string(key) + "[" + std::to_string(i) + "]");
    }
    out.emplace_back(e.get_string().begin(), e.get_string().end());
  }
  return Status::Ok();
}

json::value ParseStoredJson(const std::string& text, json::value fallback) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  return ec ? fallback : v;
}

}  // namespace missy::http

#include "cli/api_client.h"

#include <boost/json/parse.hpp>

#include "cli/http_client.h"

namespace missy::cli {

namespace json = boost::json;

std::string FormatError(const ApiError& e) {
  std::string out =
      "missyctl: " + (e.code.empty() ? std::string("error") : e.code) + ": " + e.message;
  if (!e.field.empty()) out += " (field " + e.field + ")";
  return out;
}

ApiError ErrorFromResponse(int http_status, const std::string& body) {
  ApiError e;
  e.http = http_status;
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    if (const json::value* err = v.get_object().if_contains("error"); err && err->is_object()) {
      const json::object& o = err->get_object();
      auto text = [&](const char* key) {
        const json::value* f = o.if_contains(key);
        return f && f->is_string() ? std::string(f->get_string()) : std::string();
      };
      e.code = text("code");
      e.message = text("message");
      e.field = text("field");
      if (!e.code.empty()) return e;
    }
  }
  e.code = "http_" + std::to_string(http_status);
  std::string first = body.substr(0, body.find('\n'));
  if (first.size() > 200) first = first.substr(0, 200) + "...";
  e.message = first.empty() ? "HTTP " + std::to_string(http_status) + " without a body" : first;
  return e;
}

ApiReply ApiClient::Call(const std::string& method, const std::string& target,
                         const std::string& body) const {
  ApiReply reply;
  Result<ClientResponse> r = UnixHttpCall(socket_, method, target, body, timeout_);
  if (!r.ok()) {
    reply.error = ApiError{0, "unavailable",
                           "cannot reach missyd at " + socket_ + ": " + r.status().message(), ""};
    return reply;
  }
  if (r->status < 200 || r->status >= 300) {
    reply.error = ErrorFromResponse(r->status, r->body);
    return reply;
  }
  boost::system::error_code ec;
  reply.body = json::parse(r->body, ec);
  if (ec) {
    reply.error =
        ApiError{r->status, "invalid_reply",
                 "the daemon answered " + method + " " + target + " with invalid JSON", ""};
  }
  return reply;
}

}  // namespace missy::cli

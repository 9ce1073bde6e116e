// Text forms with no Asio in them: a request's bytes as Connection::Write sends them, an
// endpoint's name for messages.
#include <algorithm>
#include <cctype>

#include "httpclient/connection.h"

namespace missy::httpclient {
namespace {

bool Iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string Endpoint::Describe() const {
  if (!unix_path.empty()) return unix_path;
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string FormatRequest(std::string_view method, std::string_view target,
                          const HeaderList& headers, std::string_view body) {
  std::string out;
  out.reserve(128 + target.size() + body.size());
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
  bool has_length = false;
  for (const auto& [name, value] : headers) {
    has_length = has_length || Iequals(name, "content-length");
    out.append(name).append(": ").append(value).append("\r\n");
  }
  if (!has_length && (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH")) {
    out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  out.append("\r\n").append(body);
  return out;
}

}  // namespace missy::httpclient

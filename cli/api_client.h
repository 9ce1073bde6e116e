// ApiClient: missyctl's calls to the daemon's HTTP API, answering the JSON body of a
// 2xx response or an ApiError (the daemon's {"error":{code,message,field}}, or
// "unavailable" when the socket cannot be reached). One connection per call; not
// thread-safe (missyctl is single-threaded).
#pragma once

#include <boost/json/value.hpp>
#include <chrono>
#include <optional>
#include <string>

namespace missy::cli {

struct ApiError {
  int http = 0;      // 0: no HTTP answer (connection failure, timeout)
  std::string code;  // "not_found", "invalid_argument", "unavailable", ...
  std::string message;
  std::string field;  // the request field to blame, or ""
};

// One line: "missyctl: not_found: session 'x' not found (field session_id)".
std::string FormatError(const ApiError& error);
// The error a non-2xx answer carries (its JSON error object, else the raw body).
ApiError ErrorFromResponse(int http_status, const std::string& body);

struct ApiReply {
  boost::json::value body;        // 2xx: the parsed body
  std::optional<ApiError> error;  // set on failure
  bool ok() const { return !error.has_value(); }
};

class ApiClient {
 public:
  explicit ApiClient(std::string socket_path,
                     std::chrono::milliseconds timeout = std::chrono::seconds(60))
      : socket_(std::move(socket_path)), timeout_(timeout) {}

  ApiReply Call(const std::string& method, const std::string& target,
                const std::string& body = {}) const;
  ApiReply Get(const std::string& target) const { return Call("GET", target); }
  const std::string& socket() const { return socket_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

 private:
  std::string socket_;
  std::chrono::milliseconds timeout_;
};

}  // namespace missy::cli

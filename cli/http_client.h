// The client of missyd's sockets for missyctl and the tests: HTTP/1.1 calls over a Unix
// socket (or "tcp:127.0.0.1:PORT", a loopback TCP server), on httpclient::Connection (the
// one HTTP client, on Beast, that the daemon's upstream calls use too), and an NDJSON line
// reader for the audit socket (not HTTP: plain POSIX calls).
//
// Guarantees: every call is bounded by its timeout (connect, write and read included);
// errors are returned as Status (kUnavailable for connection problems and timeouts,
// kInvalidArgument for bad arguments, kCorruption for a response that is not valid
// HTTP, including a chunked body cut short). Bodies may be Content-Length, chunked
// (extensions and trailers accepted) or delimited by the end of the connection; a
// streamed body can be read as it arrives, chunk by chunk or line by line. SIGPIPE is
// never raised. Objects are movable, not copyable, and not thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "httpclient/connection.h"

namespace missy {

struct ClientResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// One request on a fresh connection ("Connection: close").
Result<ClientResponse> UnixHttpCall(const std::string& socket_path, const std::string& method,
                                    const std::string& target, const std::string& body = {},
                                    std::chrono::milliseconds timeout = std::chrono::seconds(10));

// A keep-alive connection reused across calls. Call() connects on first use and
// reconnects once, transparently, when the server closed an idle reused connection
// before answering.
class UnixHttpConnection {
 public:
  UnixHttpConnection() = default;
  explicit UnixHttpConnection(std::string socket_path) : path_(std::move(socket_path)) {}
  ~UnixHttpConnection();
  UnixHttpConnection(UnixHttpConnection&& other) noexcept;
  UnixHttpConnection& operator=(UnixHttpConnection&& other) noexcept;
  UnixHttpConnection(const UnixHttpConnection&) = delete;
  UnixHttpConnection& operator=(const UnixHttpConnection&) = delete;

  Status Connect(const std::string& socket_path,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));
  bool connected() const { return conn_.open(); }
  // Header lines ("Name: value\r\n" each) added to every request of Call() and Start().
  void set_extra_headers(std::string lines) { extra_headers_ = std::move(lines); }
  void Close();

  // Sends a request (Content-Type application/json when `body` is not empty).
  Result<ClientResponse> Call(const std::string& method, const std::string& target,
                              const std::string& body = {},
                              std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Sends `bytes` as they are and reads one response (tests of malformed requests).
  // Never retried. A server that closes while we still write is fine as long as it
  // answered first (413 on a body that is too large).
  Result<ClientResponse> SendRaw(std::string_view bytes,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // Streaming: sends a request like Call() (reconnecting the same way) but reads only the
  // status line and headers; `body` of the result is empty. The body is then read with
  // ReadBodyChunk() or ReadBodyLine() until they return std::nullopt. Any other request
  // started before that closes the connection first (it cannot be reused mid-body).
  Result<ClientResponse> Start(const std::string& method, const std::string& target,
                               const std::string& body = {},
                               std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The next piece of the started response's body: exactly one chunk's data for a
  // chunked body, otherwise the bytes that arrived. std::nullopt once the body ended (or
  // when no body is pending). An error (timeout: kUnavailable; truncated or malformed
  // body: kCorruption) closes the connection.
  Result<std::optional<std::string>> ReadBodyChunk(
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The next line of the started response's body, without its "\n" (or "\r\n"); a last
  // line lacking "\n" is returned when the body ends. std::nullopt after the last line.
  Result<std::optional<std::string>> ReadBodyLine(
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // A started response's body has not been read to its end yet.
  bool body_pending() const { return conn_.body_pending(); }

 private:
  // Writes `bytes` and reads the answer (only its head when `head_only`). *before_answer:
  // the connection ended before any byte of an answer.
  Result<ClientResponse> RoundTrip(std::string_view bytes, httpclient::Clock::time_point deadline,
                                   bool head_only, const httpclient::ReadOptions& options,
                                   bool* before_answer);
  // Sends `request` with the reconnect-once rule of Call().
  Result<ClientResponse> Exchange(const std::string& request, const std::string& method,
                                  httpclient::Clock::time_point deadline, bool head_only);

  std::string path_;  // a socket path, or "tcp:127.0.0.1:PORT" for a loopback TCP server
  std::string extra_headers_;
  httpclient::Connection conn_;
  std::string line_buf_;  // ReadBodyLine: body bytes after the last returned line
};

// A client of the audit socket: one NDJSON line at a time.
class LineSubscriber {
 public:
  LineSubscriber() = default;
  ~LineSubscriber();
  LineSubscriber(LineSubscriber&& other) noexcept;
  LineSubscriber& operator=(LineSubscriber&& other) noexcept;
  LineSubscriber(const LineSubscriber&) = delete;
  LineSubscriber& operator=(const LineSubscriber&) = delete;

  // Connects and, unless `first_line` is empty, sends it followed by '\n'
  // (e.g. {"since":0,"types":["context.built"]}; `{}` asks for live events without the
  // server's 1 s wait for a first line).
  Status Connect(const std::string& socket_path, const std::string& first_line = {},
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The next complete line without its '\n'. kUnavailable on timeout (timed_out() is
  // then true) or when the server closed the connection (eof() is then true); a partial
  // last line before EOF is discarded.
  Result<std::string> ReadLine(std::chrono::milliseconds timeout);
  bool eof() const { return eof_; }
  bool timed_out() const { return timed_out_; }
  void Close();

 private:
  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
  bool timed_out_ = false;
};

}  // namespace missy

// HttpTransport: one HTTP/1.1 request to a provider or a proxy's upstream, over TCP or TLS,
// with a deadline on each phase, on httpclient::Connection (missyd's one HTTP client, the
// one missyctl uses too; Asio, Beast and OpenSSL stay in httpclient/connection.cpp).
//
// Thread safety: Post and Stream may run on several threads at once: each call has a
// connection (and its io_context) of its own, taken from the pool of kept-alive ones under
// a mutex or made anew; the TLS context is shared read-only. Blocking.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "core/status.h"
#include "daemon/provider/provider_client.h"
#include "daemon/provider/provider_url.h"
#include "daemon/provider/provider_wire.h"

namespace missy::provider {

struct AttemptLimits {
  std::chrono::milliseconds connect_timeout;       // resolve + connect
  std::chrono::milliseconds handshake_timeout;     // TLS handshake
  std::chrono::milliseconds first_byte_timeout;    // request sent and response header read
  std::chrono::steady_clock::time_point deadline;  // nothing of the attempt runs past it
  std::size_t max_response_bytes = 8 << 20;
};

// A complete HTTP answer (any status).
struct HttpAnswer {
  int status = 0;
  std::string body;
  std::string retry_after;     // the Retry-After header, "" when absent
  std::string retry_after_ms;  // the retry-after-ms header, "" when absent
};

// No complete answer: kTimeout, kNetwork, kTls or kBadResponse, with a message that names
// the phase. Messages hold no request content (so no key).
struct TransportFailure {
  ProviderErrorKind kind = ProviderErrorKind::kNetwork;
  std::string message;
};

// The head of an answer read as a stream: its status and every header, in order.
struct HttpHead {
  int status = 0;
  HeaderList headers;  // names as the server wrote them
};

// Receives an answer as it arrives. on_head is called once, then on_body for each piece of
// the (de-chunked) body, which it may take (move from: a relay keeps it without a copy);
// either returns false to abandon the call: the connection is closed at once, which is how
// a relay cancels the upstream request of a client that went away.
struct StreamSink {
  std::function<bool(const HttpHead& head)> on_head;
  std::function<bool(std::string& piece)> on_body;
};

struct StreamOutcome {
  bool complete = false;   // the whole answer was received
  bool abandoned = false;  // a sink call returned false
  bool got_head = false;   // on_head was called (a failure after it broke the body off)
  TransportFailure failure;  // when neither complete nor abandoned
};

class HttpTransport {
 public:
  // For https, loads ca_file (or the system's trust store when empty); kInvalidArgument when
  // it cannot be loaded.
  static Result<std::unique_ptr<HttpTransport>> Make(BaseUrl url, const std::string& ca_file);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // POSTs `body` (application/json) to `target` with the extra headers, on an idle
  // kept-alive connection when there is one (if the server closed it meanwhile, on a new
  // one at once, within the same attempt), else on a new one.
  std::variant<HttpAnswer, TransportFailure> Post(const std::string& target,
                                                  const HeaderList& headers,
                                                  const std::string& body,
                                                  const AttemptLimits& limits) const;

  // Sends one request (any method; a body only when not empty, as given, with the
  // caller's headers: it sets only Host and, when absent, User-Agent) and hands the answer
  // to `sink` piece by piece as it arrives, with no limit on its size. The first-byte
  // timeout bounds the wait for the head and for each next piece (an idle stream); the
  // deadline bounds the whole. Never retried: the caller decides. A connection whose answer
  // was read whole goes back to the pool.
  StreamOutcome Stream(const std::string& method, const std::string& target,
                       const HeaderList& headers, const std::string& body,
                       const AttemptLimits& limits, const StreamSink& sink) const;

  const BaseUrl& url() const;

 private:
  struct Impl;
  explicit HttpTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace missy::provider

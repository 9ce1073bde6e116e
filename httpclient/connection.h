// httpclient::Connection: missyd's one HTTP/1.1 client, on Beast. A blocking connection to
// a Unix socket, a TCP server or a TLS server; it writes a request and reads the answer's
// head, then its body piece by piece, each step bounded by a deadline of its own. The
// daemon's provider and proxy upstream calls (daemon/provider/http_transport.h), missyctl
// and the tests' client (cli/http_client.h) are all built on it.
//
// Guarantees: no call runs past the deadline it is given (a phase that does is aborted by
// closing the connection: kTimeout). Any failure closes the connection. SIGPIPE is never
// raised; a peer that closes while a request is being written may still be read (the 413
// a server sends before it stops reading). Bodies may be Content-Length, chunked
// (extensions and trailers accepted) or delimited by the end of the connection.
// Thread safety: a Connection is used by one thread at a time; a TlsContext is shared
// read-only. Asio, Beast and OpenSSL stay in connection.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace missy::httpclient {

using Clock = std::chrono::steady_clock;
using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The trust store for TLS connections: the system's, or the certificates of one PEM file.
class TlsContext {
 public:
  // kInvalidArgument when the CA file (or the system's store, when ca_file is empty)
  // cannot be loaded.
  static Result<std::shared_ptr<const TlsContext>> Make(const std::string& ca_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit TlsContext(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Where a connection goes: a Unix socket, or host:port over TCP, with TLS when `tls` is set
// (the certificate must then name `host`; SNI is sent for a name, never for an address).
struct Endpoint {
  std::string unix_path;  // when not empty, a Unix socket (host and port are unused)
  std::string host;       // a name or an address (an IPv6 one without brackets)
  uint16_t port = 0;
  bool numeric_host = false;  // host is an address: no lookup
  std::shared_ptr<const TlsContext> tls;

  // "tcp:127.0.0.1:PORT" or "tcp:[::1]:PORT" (a loopback TCP server, no lookup); anything
  // else is a Unix socket path. kInvalidArgument for an empty or malformed spec.
  static Result<Endpoint> Parse(const std::string& spec);
  // The path, or host:port, for messages.
  std::string Describe() const;
};

enum class FailureKind {
  kInvalidArgument,  // a bad endpoint
  kConnect,          // cannot resolve the host or connect
  kTls,              // handshake failed, or the certificate was refused
  kTimeout,          // a phase missed its deadline
  kClosed,           // the peer closed before any byte of an answer came
  kTruncated,        // the peer closed in the middle of an answer
  kMalformed,        // the answer is not HTTP/1.1 as this client reads it
  kTooLarge,         // the answer's head or body is over its limit
  kNetwork,          // any other I/O error
};

// Why a call failed. The message names the phase and never holds request content.
struct Failure {
  FailureKind kind = FailureKind::kNetwork;
  std::string message;
  bool refused = false;  // kConnect: nothing listens there (ENOENT, ECONNREFUSED)
  // Nothing of an answer came before the connection ended (or writing the request
  // failed): a request sent on a reused connection may be sent again on a new one.
  bool before_answer = false;
};

// The head of an answer.
struct ResponseHead {
  int status = 0;
  HeaderList headers;  // names as the server wrote them, in order
};

struct ReadOptions {
  std::optional<uint64_t> body_limit;   // none: unlimited (kTooLarge past it)
  std::size_t header_limit = 64 << 10;  // kTooLarge past it
  bool no_body = false;                 // the answer to a HEAD request: no body follows
};

// "METHOD target HTTP/1.1\r\n", the headers in order, then the body. Adds Content-Length
// at the end when the headers have none and the body is not empty or the method is POST,
// PUT or PATCH.
std::string FormatRequest(std::string_view method, std::string_view target,
                          const HeaderList& headers, std::string_view body);

// What one ReadBody hands over.
enum class BodyPiece {
  kArrived,     // the bytes that arrived, never across the end of a chunk
  kWholeChunk,  // for a chunked body, one chunk's data whole (an event per chunk)
  kAllArrived,  // all that arrived so far, across chunks, up to 256 KB: a relay's pieces
                // (a sender faster than the reader gives fewer, larger ones)
};

class Connection {
 public:
  Connection();
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects (closing any previous connection): resolve and connect by
  // min(now + connect_timeout, deadline); then for TLS the handshake by
  // min(its start + handshake_timeout, deadline).
  [[nodiscard]] std::optional<Failure> Connect(const Endpoint& endpoint,
                                               std::chrono::milliseconds connect_timeout,
                                               std::chrono::milliseconds handshake_timeout,
                                               Clock::time_point deadline);
  // Connected, and no answer read so far asked for (or forced) the end of the connection.
  bool open() const;
  // At least one answer was read whole on this connection.
  bool reused() const;
  void Close();

  // Writes `bytes` as they are. A peer that closed meanwhile is no failure here (its
  // answer, if any, is read next; the connection ends after it).
  [[nodiscard]] std::optional<Failure> Write(std::string_view bytes, Clock::time_point deadline);

  // Reads the head of the next answer (bytes read past an earlier answer come first);
  // interim 1xx answers other than 101 are skipped.
  [[nodiscard]] std::optional<Failure> ReadHead(Clock::time_point deadline,
                                                const ReadOptions& options, ResponseHead* head);
  // The body of the answer whose head was read is not read to its end yet.
  bool body_pending() const;
  // Replaces *piece with the next bytes of the body (see BodyPiece). An empty piece with
  // body_pending() false: the body ended. At its end a connection the answer does not
  // keep alive is closed.
  [[nodiscard]] std::optional<Failure> ReadBody(Clock::time_point deadline, BodyPiece mode,
                                                std::string* piece);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace missy::httpclient

// One connection: its socket (Unix, TCP, or TLS over TCP) on a private io_context, the
// bytes read and not parsed yet, and Beast's parser of the answer being read. Each phase
// starts one asynchronous operation and runs the io_context until the operation completes
// or the phase's deadline passes (then the socket is closed, which aborts it). The parser is
// fed by hand (put/put_eof), so that a reset counts as the end of the connection, and a
// failure can say where in the answer it happened.
#include "httpclient/connection.h"

#include <errno.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <cctype>
#include <charconv>
#include <functional>
#include <thread>

namespace missy::httpclient {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using UnixSocket = asio::local::stream_protocol::socket;
using error_code = boost::system::error_code;

namespace {

constexpr std::size_t kReadSize = 64 << 10;
constexpr std::size_t kMaxGatheredPiece = 256 << 10;

// A body that hands its bytes on: the reader appends them to the message's string, which
// ReadBody swaps with the caller's piece while it parses (the bytes land in the piece).
struct PieceBody {
  using value_type = std::string;
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>&, value_type& body) : body_(body) {}
    void init(const boost::optional<std::uint64_t>&, error_code& ec) { ec = {}; }
    template <class Buffers>
    std::size_t put(const Buffers& buffers, error_code& ec) {
      ec = {};
      std::size_t n = 0;
      for (const auto b : boost::beast::buffers_range_ref(buffers)) {
        body_.append(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
      return n;
    }
    void finish(error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

// The peer is gone: what a closed connection looks like to a read or a write.
bool PeerGone(const error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == ssl::error::stream_truncated;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "0", "000;ext=1": the line of the last chunk.
bool IsLastChunkLine(std::string_view line) {
  line = Trim(line.substr(0, line.find(';')));
  return !line.empty() && line.find_first_not_of('0') == std::string_view::npos;
}

Failure MakeFailure(FailureKind kind, std::string message) {
  Failure f;
  f.kind = kind;
  f.message = std::move(message);
  return f;
}

}  // namespace

// ---------------------------------------------------------------------------------------

struct TlsContext::Impl {
  // SSL_new on a shared SSL_CTX is thread-safe; asio's stream wants a non-const context.
  mutable ssl::context ctx{ssl::context::tls_client};
};

TlsContext::TlsContext(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsContext::~TlsContext() = default;

Result<std::shared_ptr<const TlsContext>> TlsContext::Make(const std::string& ca_file) {
  try {
    auto impl = std::make_unique<Impl>();
    impl->ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                          ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                          ssl::context::no_tlsv1_1);
    impl->ctx.set_verify_mode(ssl::verify_peer);
    error_code ec;
    if (ca_file.empty()) {
      impl->ctx.set_default_verify_paths(ec);
    } else {
      impl->ctx.load_verify_file(ca_file, ec);
    }
    if (ec) {
      return Status::InvalidArgument(
          (ca_file.empty() ? std::string("cannot load the system's CA certificates: ")
                           : "cannot load the CA file " + ca_file + ": ") +
          ec.message());
    }
    return std::shared_ptr<const TlsContext>(new TlsContext(std::move(impl)));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("cannot set up TLS: ") + e.what());
  }
}

Result<Endpoint> Endpoint::Parse(const std::string& spec) {
  Endpoint e;
  if (spec.empty()) return Status::InvalidArgument("socket path is empty");
  if (!spec.starts_with("tcp:")) {
    e.unix_path = spec;
    return e;
  }
  const std::string rest = spec.substr(4);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("no port in " + spec);
  std::string host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string_view port = std::string_view(rest).substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    return Status::InvalidArgument("bad port in " + spec);
  }
  error_code bad;
  asio::ip::make_address(host, bad);
  if (bad) return Status::InvalidArgument("bad address in " + spec);
  e.host = std::move(host);
  e.port = static_cast<uint16_t>(value);
  e.numeric_host = true;
  return e;
}

// ---------------------------------------------------------------------------------------

struct Connection::Impl {
  asio::io_context io{1};
  // One of these is set while connected (sockets are destroyed before the io_context).
  std::optional<UnixSocket> unix_socket;
  std::optional<tcp::socket> tcp_socket;
  std::optional<ssl::stream<tcp::socket>> tls_stream;
  std::string where;                 // the endpoint, for messages
  bool open = false;                 // connected, and no answer asked for the end
  bool reused = false;               // an answer was read whole
  bool peer_closed = false;          // the peer was gone while a request was written
  boost::beast::flat_buffer buffer;  // read, not parsed yet
  std::optional<http::response_parser<PieceBody>> parser;
  bool body_pending = false;
  std::optional<uint64_t> body_limit;  // of the answer being read, for messages
  // The chunked body being read: chunks seen, and the bytes the current one still owes.
  int chunks = 0;
  uint64_t chunk_left = 0;
  // The parser keeps references to these.
  std::function<void(std::uint64_t, boost::beast::string_view, error_code&)> on_chunk_header =
      [this](std::uint64_t size, boost::beast::string_view, error_code& ec) {
        ec = {};
        ++chunks;
        chunk_left = size;
        // Room for the chunk, which the piece being read takes whole or in part.
        std::string& body = parser->get().body();
        body.reserve(body.size() + static_cast<std::size_t>(std::min<std::uint64_t>(
                                       size, kMaxGatheredPiece + kReadSize)));
      };
  std::function<std::size_t(std::uint64_t, boost::beast::string_view, error_code&)> on_chunk_body =
      [this](std::uint64_t remain, boost::beast::string_view data, error_code& ec) {
        ec = {};
        parser->get().body().append(data.data(), data.size());
        chunk_left = remain - data.size();
        return data.size();
      };

  template <typename F>
  void WithStream(F&& f) {
    if (tls_stream) {
      f(*tls_stream);
    } else if (tcp_socket) {
      f(*tcp_socket);
    } else if (unix_socket) {
      f(*unix_socket);
    }
  }

  void CloseSocket() {
    error_code ignored;
    if (tls_stream) tls_stream->next_layer().close(ignored);
    if (tcp_socket) tcp_socket->close(ignored);
    if (unix_socket) unix_socket->close(ignored);
  }

  void Reset() {
    CloseSocket();
    tls_stream.reset();
    tcp_socket.reset();
    unix_socket.reset();
    open = false;
    reused = false;
    peer_closed = false;
    buffer.clear();
    parser.reset();
    body_pending = false;
  }

  Failure Fail(Failure failure) {
    Reset();
    return failure;
  }
  Failure Fail(FailureKind kind, std::string message) {
    return Fail(MakeFailure(kind, std::move(message)));
  }

  // Starts an operation (start(done)) and runs the io_context until done() was called or
  // the deadline passed; then aborts it (cancel(), by default closing the socket) and
  // drains. True on timeout.
  template <typename Start>
  bool RunPhase(Clock::time_point deadline, Start start) {
    return RunPhase(deadline, start, [this] { CloseSocket(); });
  }
  template <typename Start, typename Cancel>
  bool RunPhase(Clock::time_point deadline, Start start, Cancel cancel) {
    bool finished = false;
    io.restart();
    start([&finished] { finished = true; });
    while (!finished) {
      if (io.run_one_until(deadline) != 0) continue;
      if (finished) break;
      if (Clock::now() >= deadline) {
        cancel();
        io.restart();
        while (!finished && io.run_one() != 0) {
        }
        return true;
      }
      if (io.stopped()) io.restart();
    }
    return false;
  }

  std::optional<Failure> ConnectUnix(const std::string& path, Clock::time_point deadline);
  std::optional<Failure> ConnectTcp(const Endpoint& endpoint, Clock::time_point deadline);
  std::optional<Failure> Handshake(const Endpoint& endpoint, Clock::time_point deadline);
  std::optional<Failure> Fill(Clock::time_point deadline, const char* phase, std::size_t* n);
  // Bytes a plain socket holds unread (0 when unknown, as for TLS).
  std::size_t Available() {
    error_code ec;
    std::size_t n = 0;
    if (tcp_socket) n = tcp_socket->available(ec);
    if (unix_socket) n = unix_socket->available(ec);
    return ec ? 0 : n;
  }
  void NewParser(const ReadOptions& options);
  void AnswerEnded();
  Failure ParseFailure(const error_code& ec);
  std::string TruncatedBody() const;
};

std::optional<Failure> Connection::Impl::ConnectUnix(const std::string& path,
                                                     Clock::time_point deadline) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return MakeFailure(FailureKind::kInvalidArgument, "socket path is too long: " + path);
  }
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return MakeFailure(FailureKind::kNetwork, std::string("socket(): ") + strerror(errno));
  unix_socket.emplace(io);
  error_code ec;
  unix_socket->assign(asio::local::stream_protocol(), fd, ec);
  if (ec) {
    ::close(fd);
    return MakeFailure(FailureKind::kNetwork, "cannot use a socket: " + ec.message());
  }
  // A Unix connect never waits: it succeeds, fails, or finds the listen backlog full
  // (EAGAIN), when it is tried again until the deadline.
  for (;;) {
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return std::nullopt;
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN) {
      if (Clock::now() >= deadline) {
        return MakeFailure(FailureKind::kTimeout,
                           "timed out connecting to " + path + " (listen backlog full)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    Failure f =
        MakeFailure(FailureKind::kConnect, "cannot connect to " + path + ": " + strerror(err));
    f.refused = err == ENOENT || err == ECONNREFUSED;
    return f;
  }
}

std::optional<Failure> Connection::Impl::ConnectTcp(const Endpoint& endpoint,
                                                    Clock::time_point deadline) {
  std::vector<tcp::endpoint> addresses;
  error_code ec;
  if (endpoint.numeric_host) {
    const auto address = asio::ip::make_address(endpoint.host, ec);
    if (ec) return MakeFailure(FailureKind::kInvalidArgument, "bad address " + endpoint.host);
    addresses.emplace_back(address, endpoint.port);
  } else {
    // A name's getaddrinfo cannot be interrupted: a hung lookup is bounded by the system
    // resolver's own timeouts (resolv.conf).
    tcp::resolver resolver(io);
    const bool timed_out = RunPhase(
        deadline,
        [&](auto done) {
          resolver.async_resolve(endpoint.host, std::to_string(endpoint.port),
                                 tcp::resolver::numeric_service,
                                 [&, done](const error_code& e, tcp::resolver::results_type r) {
                                   ec = e;
                                   for (const auto& entry : r) {
                                     addresses.push_back(entry.endpoint());
                                   }
                                   done();
                                 });
        },
        [&] { resolver.cancel(); });
    if (timed_out) return MakeFailure(FailureKind::kTimeout, "timed out resolving the host");
    if (ec || addresses.empty()) {
      return MakeFailure(FailureKind::kConnect,
                         "cannot resolve " + endpoint.host + ": " + ec.message());
    }
  }
  error_code last;
  for (const tcp::endpoint& address : addresses) {
    const int fd = ::socket(address.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = error_code(errno, boost::system::system_category());
      continue;
    }
    tcp_socket.emplace(io);
    tcp_socket->assign(address.protocol(), fd, ec);
    if (ec) {
      ::close(fd);
      tcp_socket.reset();
      last = ec;
      continue;
    }
    const bool timed_out = RunPhase(deadline, [&](auto done) {
      tcp_socket->async_connect(address, [&, done](const error_code& e) {
        ec = e;
        done();
      });
    });
    if (timed_out) return MakeFailure(FailureKind::kTimeout, "timed out connecting to " + where);
    if (!ec) {
      // A request's last segment must not wait for a delayed ACK (Nagle: up to 40 ms).
      error_code ignored;
      tcp_socket->set_option(tcp::no_delay(true), ignored);
      if (endpoint.tls) {
        tls_stream.emplace(std::move(*tcp_socket), endpoint.tls->impl().ctx);
        tcp_socket.reset();
      }
      return std::nullopt;
    }
    last = ec;
    tcp_socket.reset();
  }
  Failure f =
      MakeFailure(FailureKind::kConnect, "cannot connect to " + where + ": " + last.message());
  f.refused = last == asio::error::connection_refused;
  return f;
}

std::optional<Failure> Connection::Impl::Handshake(const Endpoint& endpoint,
                                                   Clock::time_point deadline) {
  SSL* ssl = tls_stream->native_handle();
  if (!endpoint.numeric_host) {
    // SNI (never for an address, RFC 6066) and the name the certificate must carry.
    SSL_set_tlsext_host_name(ssl, endpoint.host.c_str());
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set1_host(ssl, endpoint.host.c_str()) != 1) {
      return MakeFailure(FailureKind::kTls, "cannot set the expected host name");
    }
  } else if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), endpoint.host.c_str()) != 1) {
    return MakeFailure(FailureKind::kTls, "cannot set the expected address");
  }
  tls_stream->set_verify_mode(ssl::verify_peer);
  error_code ec;
  const bool timed_out = RunPhase(deadline, [&](auto done) {
    tls_stream->async_handshake(ssl::stream_base::client, [&, done](const error_code& e) {
      ec = e;
      done();
    });
  });
  if (timed_out) return MakeFailure(FailureKind::kTimeout, "timed out in the TLS handshake");
  if (!ec) return std::nullopt;
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    return MakeFailure(FailureKind::kTls, std::string("TLS certificate refused: ") +
                                              X509_verify_cert_error_string(verify));
  }
  if (ec.category() == asio::error::get_ssl_category() ||
      ec.category() == ssl::error::get_stream_category()) {
    return MakeFailure(FailureKind::kTls, "TLS handshake failed: " + ec.message());
  }
  return MakeFailure(FailureKind::kNetwork,
                     "connection lost in the TLS handshake: " + ec.message());
}

// Reads what arrives into the buffer: *n bytes, 0 once the peer closed (an end of stream
// or a reset: what it sent before is still read).
std::optional<Failure> Connection::Impl::Fill(Clock::time_point deadline, const char* phase,
                                              std::size_t* n) {
  *n = 0;
  const auto space = buffer.prepare(kReadSize);
  error_code ec;
  std::size_t got = 0;
  const bool timed_out = RunPhase(deadline, [&](auto done) {
    WithStream([&](auto& stream) {
      stream.async_read_some(space, [&, done](const error_code& e, std::size_t bytes) {
        ec = e;
        got = bytes;
        done();
      });
    });
  });
  if (timed_out) return Fail(FailureKind::kTimeout, std::string("timed out ") + phase);
  buffer.commit(got);
  if (ec && !PeerGone(ec)) {
    return Fail(FailureKind::kNetwork,
                std::string("connection failed ") + phase + ": " + ec.message());
  }
  *n = got;
  return std::nullopt;
}

void Connection::Impl::NewParser(const ReadOptions& options) {
  parser.emplace();
  parser->header_limit(static_cast<std::uint32_t>(options.header_limit));
  if (options.body_limit) {
    parser->body_limit(*options.body_limit);
  } else {
    parser->body_limit(boost::none);
  }
  if (options.no_body) parser->skip(true);
  parser->on_chunk_header(on_chunk_header);
  parser->on_chunk_body(on_chunk_body);
  body_limit = options.body_limit;
  chunks = 0;
  chunk_left = 0;
}

// The answer was read whole: the connection serves the next request, or ends.
void Connection::Impl::AnswerEnded() {
  body_pending = false;
  reused = true;
  if (!parser->keep_alive() || peer_closed) {
    CloseSocket();
    open = false;
  }
}

Failure Connection::Impl::ParseFailure(const error_code& ec) {
  if (ec == http::error::body_limit) {
    return Fail(FailureKind::kTooLarge,
                "the response is larger than " + std::to_string(body_limit.value_or(0)) + " bytes");
  }
  if (ec == http::error::header_limit) {
    return Fail(FailureKind::kTooLarge, "the response's header is too large");
  }
  if (ec == http::error::bad_chunk) {
    // The parser stopped where the chunk's size line starts: after the data of the
    // previous chunk, that line begins with its CRLF.
    const std::string_view rest(static_cast<const char*>(buffer.data().data()), buffer.size());
    return Fail(FailureKind::kMalformed, chunks > 0 && !rest.starts_with("\r\n")
                                             ? "chunk data not followed by CRLF"
                                             : "bad chunk size");
  }
  return Fail(FailureKind::kMalformed, "malformed HTTP response: " + ec.message());
}

// What a connection closed in the middle of a body leaves unread, said in words.
std::string Connection::Impl::TruncatedBody() const {
  if (!parser->chunked()) return "connection closed inside the response body";
  if (chunk_left > 0) return "connection closed inside a chunk";
  std::string_view rest(static_cast<const char*>(buffer.data().data()), buffer.size());
  if (chunks > 0 && rest.starts_with("\r\n")) rest.remove_prefix(2);
  const size_t eol = rest.find("\r\n");
  if (eol != std::string_view::npos && IsLastChunkLine(rest.substr(0, eol))) {
    return "connection closed inside chunk trailers";
  }
  return "connection closed inside a chunk size line";
}

// ---------------------------------------------------------------------------------------

Connection::Connection() : impl_(std::make_unique<Impl>()) {}
Connection::~Connection() = default;
Connection::Connection(Connection&& other) noexcept = default;
Connection& Connection::operator=(Connection&& other) noexcept = default;

bool Connection::open() const { return impl_ && impl_->open; }
bool Connection::reused() const { return impl_ && impl_->open && impl_->reused; }
bool Connection::body_pending() const { return impl_ && impl_->body_pending; }

void Connection::Close() {
  if (impl_) impl_->Reset();
}

std::optional<Failure> Connection::Connect(const Endpoint& endpoint,
                                           std::chrono::milliseconds connect_timeout,
                                           std::chrono::milliseconds handshake_timeout,
                                           Clock::time_point deadline) {
  if (!impl_) impl_ = std::make_unique<Impl>();
  Impl& c = *impl_;
  c.Reset();
  c.where = endpoint.Describe();
  const auto connect_deadline = std::min(Clock::now() + connect_timeout, deadline);
  std::optional<Failure> failure = endpoint.unix_path.empty()
                                       ? c.ConnectTcp(endpoint, connect_deadline)
                                       : c.ConnectUnix(endpoint.unix_path, connect_deadline);
  if (!failure && endpoint.tls) {
    failure = c.Handshake(endpoint, std::min(Clock::now() + handshake_timeout, deadline));
  }
  if (failure) return c.Fail(std::move(*failure));
  c.open = true;
  return std::nullopt;
}

std::optional<Failure> Connection::Write(std::string_view bytes, Clock::time_point deadline) {
  if (!open()) {
    Failure f = MakeFailure(FailureKind::kClosed, "not connected");
    f.before_answer = true;
    return f;
  }
  Impl& c = *impl_;
  c.peer_closed = false;
  error_code ec;
  const bool timed_out = c.RunPhase(deadline, [&](auto done) {
    c.WithStream([&](auto& stream) {
      asio::async_write(stream, asio::buffer(bytes.data(), bytes.size()),
                        [&, done](const error_code& e, std::size_t) {
                          ec = e;
                          done();
                        });
    });
  });
  if (timed_out) return c.Fail(FailureKind::kTimeout, "timed out writing the request");
  if (ec && PeerGone(ec)) {
    c.peer_closed = true;  // an answer it sent first is still read
  } else if (ec) {
    Failure f =
        c.Fail(FailureKind::kNetwork, "connection failed writing the request: " + ec.message());
    f.before_answer = true;
    return f;
  }
  return std::nullopt;
}

std::optional<Failure> Connection::ReadHead(Clock::time_point deadline, const ReadOptions& options,
                                            ResponseHead* head) {
  if (!impl_ || (!impl_->open && impl_->buffer.size() == 0)) {
    Failure f = MakeFailure(FailureKind::kClosed, "not connected");
    f.before_answer = true;
    return f;
  }
  Impl& c = *impl_;
  if (c.body_pending)
    return c.Fail(FailureKind::kNetwork, "the previous answer was not read whole");
  bool got_some = c.buffer.size() > 0;
  for (;;) {
    c.NewParser(options);
    while (!c.parser->is_header_done()) {
      if (c.buffer.size() > 0) {
        error_code ec;
        const std::size_t used = c.parser->put(c.buffer.data(), ec);
        c.buffer.consume(used);
        if (!ec) continue;
        if (ec != http::error::need_more) return c.ParseFailure(ec);
      }
      std::size_t n = 0;
      if (auto failure = c.Fill(deadline, "waiting for the response", &n)) return failure;
      if (n == 0) {
        if (!got_some) {
          Failure f = c.Fail(FailureKind::kClosed, "connection closed before a response arrived");
          f.before_answer = true;
          return f;
        }
        return c.Fail(FailureKind::kTruncated,
                      "connection closed in the middle of the response headers");
      }
      got_some = true;
    }
    const int status = static_cast<int>(c.parser->get().result_int());
    if (status >= 100 && status < 200 && status != 101) continue;  // the real one follows
    head->status = status;
    head->headers.clear();
    for (const auto& field : c.parser->get()) {
      head->headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    c.body_pending = true;
    if (c.parser->is_done()) c.AnswerEnded();
    return std::nullopt;
  }
}

std::optional<Failure> Connection::ReadBody(Clock::time_point deadline, BodyPiece mode,
                                            std::string* piece) {
  piece->clear();
  if (!body_pending()) return std::nullopt;
  Impl& c = *impl_;
  // The parser writes the body's bytes straight into the piece (no copy after it): the
  // piece is its body while this call parses, and is handed back on every return but a
  // failure's (which drops the parser).
  std::string& body = c.parser->get().body();
  body.swap(*piece);
  if (mode == BodyPiece::kAllArrived) {
    // Room for what has arrived (a piece a relay took leaves none): no regrowth copies.
    body.reserve(std::min(kMaxGatheredPiece + kReadSize, c.buffer.size() + c.Available()));
  }
  struct HandBack {
    Impl& c;
    std::string* piece;
    ~HandBack() {
      if (c.parser) piece->swap(c.parser->get().body());
    }
  } hand_back{c, piece};
  for (;;) {
    if (c.buffer.size() > 0) {
      error_code ec;
      const std::size_t before = body.size();
      const std::size_t used = c.parser->put(c.buffer.data(), ec);
      c.buffer.consume(used);
      if (ec && ec != http::error::need_more) return c.ParseFailure(ec);
      const bool data = body.size() > before;
      if (c.parser->is_done()) {
        c.AnswerEnded();
        return std::nullopt;
      }
      // A step without data (a chunk's size line), or more wanted: parse on.
      const bool more = !data ||
                        (mode == BodyPiece::kAllArrived && body.size() < kMaxGatheredPiece) ||
                        (mode == BodyPiece::kWholeChunk && c.parser->chunked() && c.chunk_left > 0);
      if (!ec && used > 0 && more) continue;
    }
    if (!body.empty()) {
      switch (mode) {
        case BodyPiece::kArrived:
          return std::nullopt;
        case BodyPiece::kWholeChunk:
          if (!c.parser->chunked() || c.chunk_left == 0) return std::nullopt;
          break;
        case BodyPiece::kAllArrived:
          if (body.size() >= kMaxGatheredPiece || c.Available() == 0) return std::nullopt;
          break;
      }
    }
    std::size_t n = 0;
    if (auto failure = c.Fill(deadline, "reading the response body", &n)) return failure;
    if (n == 0) {
      error_code ec;
      c.parser->put_eof(ec);
      if (!ec && c.parser->is_done()) {  // a body delimited by the end of the connection
        c.AnswerEnded();
        return std::nullopt;
      }
      return c.Fail(FailureKind::kTruncated, c.TruncatedBody());
    }
  }
}

}  // namespace missy::httpclient

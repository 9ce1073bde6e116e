// One POST per call: resolve, connect, TLS handshake (unless a kept-alive connection is
// reused), write, read header, read body, each phase run on the connection's private
// io_context until it completes or its deadline passes (then the socket is closed, which
// aborts the operation, and the phase fails with kTimeout). A connection the answer keeps
// alive goes back to the transport's pool for the next POST: a compaction's hundred
// requests cost one TCP connect and one TLS handshake, not a hundred.
#include "daemon/provider/http_transport.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "daemon/provider/provider_client.h"

namespace missy::provider {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMaxHeaderBytes = 64 << 10;
// Idle connections kept per transport, and for how long: servers close idle connections
// after a while of their own (a reused one they closed is replaced at once, see Post).
constexpr std::size_t kMaxIdleConnections = 4;
constexpr auto kMaxIdle = std::chrono::seconds(30);

// One connection's I/O, phase by phase. Stream is tcp::socket or ssl::stream<tcp::socket>.
class Exchange {
 public:
  Exchange(const BaseUrl& url, ssl::context* tls) : url_(url), socket_(io_) {
    if (tls != nullptr) tls_.emplace(io_, *tls);
  }

  // Sends `request` and reads its answer, connecting first unless the connection is open.
  std::variant<HttpAnswer, TransportFailure> Run(const http::request<http::string_body>& request,
                                                 const AttemptLimits& limits) {
    const auto phase_deadline = [&](std::chrono::milliseconds timeout) {
      return std::min(SteadyClock::now() + timeout, limits.deadline);
    };
    lost_before_answer_ = false;
    if (!open_) {
      if (auto failure = Connect(limits, phase_deadline)) return *failure;
      open_ = true;
    }
    if (tls_) return Exchange2(*tls_, request, limits, phase_deadline(limits.first_byte_timeout));
    return Exchange2(socket_, request, limits, phase_deadline(limits.first_byte_timeout));
  }

  // Sends `request` and hands its answer to `sink` as it arrives.
  StreamOutcome RunStreamed(const http::request<http::string_body>& request,
                            const AttemptLimits& limits, const StreamSink& sink) {
    const auto phase_deadline = [&](std::chrono::milliseconds timeout) {
      return std::min(SteadyClock::now() + timeout, limits.deadline);
    };
    lost_before_answer_ = false;
    if (!open_) {
      if (auto failure = Connect(limits, phase_deadline)) {
        StreamOutcome out;
        out.failure = *failure;
        return out;
      }
      open_ = true;
    }
    if (tls_) return Streamed(*tls_, request, limits, sink);
    return Streamed(socket_, request, limits, sink);
  }

  // Whether the last answer left the connection open for another request.
  bool open() const { return open_; }
  // Whether the last Run found the connection closed before any byte of an answer came
  // (what a pooled connection the server closed while idle does): resending is safe.
  bool lost_before_answer() const { return lost_before_answer_; }
  SteadyClock::time_point idle_since() const { return idle_since_; }

 private:
  // Resolves, connects and (for https) shakes hands. A failure closes the socket.
  template <typename Deadline>
  std::optional<TransportFailure> Connect(const AttemptLimits& limits, Deadline phase_deadline) {
    // Resolve and connect.
    const auto connect_deadline = phase_deadline(limits.connect_timeout);
    tcp::resolver resolver(io_);
    tcp::resolver::results_type endpoints;
    error_code ec;
    bool timed_out = RunPhase(
        connect_deadline,
        [&](auto done) {
          // An address needs no lookup; a name's getaddrinfo cannot be interrupted, so a
          // hung lookup is bounded by the system resolver's own timeouts (resolv.conf).
          const auto flags = url_.ip_literal ? tcp::resolver::numeric_host : tcp::resolver::flags{};
          resolver.async_resolve(url_.host, std::to_string(url_.port),
                                 flags | tcp::resolver::numeric_service,
                                 [&, done](const error_code& e, tcp::resolver::results_type r) {
                                   ec = e;
                                   endpoints = std::move(r);
                                   done();
                                 });
        },
        [&] { resolver.cancel(); });
    if (timed_out) return Timeout("resolving the host");
    if (ec) return Failure(ProviderErrorKind::kNetwork, "cannot resolve the host: " + ec.message());
    timed_out = RunPhase(
        connect_deadline,
        [&](auto done) {
          asio::async_connect(Socket(), endpoints, [&, done](const error_code& e, const auto&) {
            ec = e;
            done();
          });
        },
        [&] { Close(); });
    if (timed_out) return Timeout("connecting");
    if (ec) return Failure(ProviderErrorKind::kNetwork, "cannot connect: " + ec.message());
    if (tls_) {
      if (auto failure = Handshake(phase_deadline(limits.handshake_timeout))) {
        Close();
        return *failure;
      }
    }
    return std::nullopt;
  }

  tcp::socket& Socket() { return tls_ ? tls_->next_layer() : socket_; }
  void Close() {
    error_code ignored;
    Socket().close(ignored);
    open_ = false;
  }

  // Starts an operation (start(done)) and runs the io_context until done() was called or
  // the deadline passed; then cancels (closing the socket) and drains. True on timeout.
  template <typename Start, typename Cancel>
  bool RunPhase(SteadyClock::time_point deadline, Start start, Cancel cancel) {
    bool finished = false;
    io_.restart();
    start([&finished] { finished = true; });
    while (!finished) {
      if (io_.run_one_until(deadline) != 0) continue;
      if (finished) break;
      if (SteadyClock::now() >= deadline) {
        cancel();
        io_.restart();
        while (!finished && io_.run_one() != 0) {
        }
        return true;
      }
      if (io_.stopped()) io_.restart();  // out of work without completion: cannot happen
    }
    return false;
  }

  std::optional<TransportFailure> Handshake(SteadyClock::time_point deadline) {
    SSL* ssl = tls_->native_handle();
    if (!url_.ip_literal) {
      // SNI (never for an address, RFC 6066) and the name the certificate must carry.
      SSL_set_tlsext_host_name(ssl, url_.host.c_str());
      SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      if (SSL_set1_host(ssl, url_.host.c_str()) != 1) {
        return TransportFailure{ProviderErrorKind::kTls, "cannot set the expected host name"};
      }
    } else if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), url_.host.c_str()) != 1) {
      return TransportFailure{ProviderErrorKind::kTls, "cannot set the expected address"};
    }
    tls_->set_verify_mode(ssl::verify_peer);
    error_code ec;
    const bool timed_out = RunPhase(
        deadline,
        [&](auto done) {
          tls_->async_handshake(ssl::stream_base::client, [&, done](const error_code& e) {
            ec = e;
            done();
          });
        },
        [&] { Close(); });
    if (timed_out) return Timeout("in the TLS handshake");
    if (!ec) return std::nullopt;
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      return TransportFailure{ProviderErrorKind::kTls, std::string("TLS certificate refused: ") +
                                                           X509_verify_cert_error_string(verify)};
    }
    if (ec.category() == asio::error::get_ssl_category() ||
        ec.category() == ssl::error::get_stream_category()) {
      return TransportFailure{ProviderErrorKind::kTls, "TLS handshake failed: " + ec.message()};
    }
    return TransportFailure{ProviderErrorKind::kNetwork,
                            "connection lost in the TLS handshake: " + ec.message()};
  }

  // Writes `request` and reads the answer's header into `parser`, each phase by the
  // deadline `deadline()` gives when it starts. A failure leaves closing to the caller and
  // sets lost_before_answer_ when no byte of an answer came (resending is then safe).
  template <typename Stream, typename Parser, typename Deadline>
  std::optional<TransportFailure> SendAndReadHeader(
      Stream& stream, const http::request<http::string_body>& request,
      boost::beast::flat_buffer& buffer, Parser& parser, const AttemptLimits& limits,
      Deadline deadline) {
    parser.header_limit(kMaxHeaderBytes);
    error_code ec;
    bool timed_out = RunPhase(
        deadline(),
        [&](auto done) {
          http::async_write(stream, request, [&, done](const error_code& e, std::size_t) {
            ec = e;
            done();
          });
        },
        [&] { Close(); });
    if (timed_out) return Timeout("sending the request");
    if (ec) {
      lost_before_answer_ = true;
      return ReadFailure("sending the request", ec, limits);
    }
    timed_out = RunPhase(
        deadline(),
        [&](auto done) {
          http::async_read_header(stream, buffer, parser,
                                  [&, done](const error_code& e, std::size_t) {
                                    ec = e;
                                    done();
                                  });
        },
        [&] { Close(); });
    if (timed_out) return Timeout("waiting for the answer");
    if (ec) {
      lost_before_answer_ =
          buffer.size() == 0 &&
          (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
           ec == asio::error::eof || ec == ssl::error::stream_truncated);
      return ReadFailure("reading the answer's header", ec, limits);
    }
    return std::nullopt;
  }

  template <typename Stream>
  std::variant<HttpAnswer, TransportFailure> Exchange2(
      Stream& stream, const http::request<http::string_body>& request, const AttemptLimits& limits,
      SteadyClock::time_point first_byte_deadline) {
    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(limits.max_response_bytes);
    if (auto failure = SendAndReadHeader(stream, request, buffer, parser, limits,
                                         [&] { return first_byte_deadline; })) {
      return Closed(*failure);
    }
    if (!parser.is_done()) {
      error_code ec;
      const bool timed_out = RunPhase(
          limits.deadline,
          [&](auto done) {
            http::async_read(stream, buffer, parser, [&, done](const error_code& e, std::size_t) {
              ec = e;
              done();
            });
          },
          [&] { Close(); });
      if (timed_out) return Closed(Timeout("reading the answer"));
      if (ec) return Closed(ReadFailure("reading the answer", ec, limits));
    }
    auto& response = parser.get();
    if (response.keep_alive()) {
      idle_since_ = SteadyClock::now();
    } else {
      Close();  // no TLS close_notify wait
    }
    HttpAnswer answer;
    answer.status = static_cast<int>(response.result_int());
    answer.retry_after = std::string(response[http::field::retry_after]);
    answer.retry_after_ms = std::string(response["retry-after-ms"]);
    answer.body = std::move(response.body());
    return answer;
  }

  template <typename Stream>
  StreamOutcome Streamed(Stream& stream, const http::request<http::string_body>& request,
                         const AttemptLimits& limits, const StreamSink& sink) {
    StreamOutcome out;
    const auto idle_deadline = [&] {
      return std::min(SteadyClock::now() + limits.first_byte_timeout, limits.deadline);
    };
    const auto fail = [&](TransportFailure failure) {
      Close();
      out.failure = std::move(failure);
      return out;
    };
    // Room for large reads: a streamed answer arrives in as few pieces as the peer allows.
    boost::beast::flat_buffer buffer;
    buffer.reserve(64 << 10);
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    if (auto failure = SendAndReadHeader(stream, request, buffer, parser, limits, idle_deadline)) {
      return fail(*failure);
    }
    HttpHead head;
    head.status = static_cast<int>(parser.get().result_int());
    for (const auto& field : parser.get()) {
      head.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    out.got_head = true;
    if (!sink.on_head(head)) {
      Close();
      out.abandoned = true;
      return out;
    }
    std::vector<char> piece(64 << 10);
    while (!parser.is_done()) {
      parser.get().body().data = piece.data();
      parser.get().body().size = piece.size();
      error_code ec;
      const bool timed_out = RunPhase(
          idle_deadline(),
          [&](auto done) {
            http::async_read_some(stream, buffer, parser,
                                  [&, done](const error_code& e, std::size_t) {
                                    ec = e;
                                    done();
                                  });
          },
          [&] { Close(); });
      if (timed_out) return fail(Timeout("reading the answer"));
      if (ec == http::error::need_buffer) ec = {};
      if (ec) return fail(ReadFailure("reading the answer", ec, limits));
      const std::size_t n = piece.size() - parser.get().body().size;
      if (n > 0 && !sink.on_body(std::string_view(piece.data(), n))) {
        Close();
        out.abandoned = true;
        return out;
      }
    }
    if (parser.get().keep_alive()) {
      idle_since_ = SteadyClock::now();
    } else {
      Close();
    }
    out.complete = true;
    return out;
  }

  // A failed exchange leaves the connection in no state to reuse.
  TransportFailure Closed(TransportFailure failure) {
    Close();
    return failure;
  }

  static TransportFailure Timeout(const std::string& phase) {
    return TransportFailure{ProviderErrorKind::kTimeout, "timed out " + phase};
  }

  static TransportFailure Failure(ProviderErrorKind kind, std::string message) {
    return TransportFailure{kind, std::move(message)};
  }

  static TransportFailure ReadFailure(const std::string& phase, const error_code& ec,
                                      const AttemptLimits& limits) {
    if (ec == http::error::body_limit || ec == http::error::buffer_overflow) {
      return Failure(
          ProviderErrorKind::kBadResponse,
          "the answer is larger than " + std::to_string(limits.max_response_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) {
      return Failure(ProviderErrorKind::kBadResponse, "the answer's header is too large");
    }
    if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
        ec == ssl::error::stream_truncated) {
      return Failure(ProviderErrorKind::kNetwork, "connection closed " + phase);
    }
    if (ec.category() == http::make_error_code(http::error::bad_version).category()) {
      return Failure(ProviderErrorKind::kBadResponse,
                     "malformed HTTP " + phase + ": " + ec.message());
    }
    return Failure(ProviderErrorKind::kNetwork, "connection failed " + phase + ": " + ec.message());
  }

  const BaseUrl& url_;
  asio::io_context io_{1};
  tcp::socket socket_;                           // plain http
  std::optional<ssl::stream<tcp::socket>> tls_;  // https
  bool open_ = false;                            // connected, and the last answer kept it
  bool lost_before_answer_ = false;
  SteadyClock::time_point idle_since_{};
};

}  // namespace

struct HttpTransport::Impl {
  BaseUrl url;
  std::unique_ptr<ssl::context> tls;  // null for http
  std::mutex mu;
  std::vector<std::unique_ptr<Exchange>> idle;  // guarded by mu; the newest last

  // The newest idle connection not idle too long, or a new (unconnected) one.
  std::unique_ptr<Exchange> Take(bool& reused) {
    {
      std::lock_guard lock(mu);
      const auto now = SteadyClock::now();
      while (!idle.empty()) {
        std::unique_ptr<Exchange> e = std::move(idle.back());
        idle.pop_back();
        if (now - e->idle_since() < kMaxIdle) {
          reused = true;
          return e;
        }
      }
    }
    reused = false;
    return std::make_unique<Exchange>(url, tls.get());
  }

  void GiveBack(std::unique_ptr<Exchange> e) {
    if (!e->open()) return;
    std::lock_guard lock(mu);
    if (idle.size() < kMaxIdleConnections) idle.push_back(std::move(e));
  }
};

HttpTransport::HttpTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpTransport::~HttpTransport() = default;

const BaseUrl& HttpTransport::url() const { return impl_->url; }

Result<std::unique_ptr<HttpTransport>> HttpTransport::Make(BaseUrl url,
                                                           const std::string& ca_file) {
  auto impl = std::make_unique<Impl>();
  impl->url = std::move(url);
  if (impl->url.tls) {
    try {
      auto tls = std::make_unique<ssl::context>(ssl::context::tls_client);
      tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
      tls->set_verify_mode(ssl::verify_peer);
      error_code ec;
      if (ca_file.empty()) {
        tls->set_default_verify_paths(ec);
      } else {
        tls->load_verify_file(ca_file, ec);
      }
      if (ec) {
        return Status::InvalidArgument(
            (ca_file.empty() ? std::string("cannot load the system's CA certificates: ")
                             : "cannot load the CA file " + ca_file + ": ") +
            ec.message());
      }
      impl->tls = std::move(tls);
    } catch (const std::exception& e) {
      return Status::InvalidArgument(std::string("cannot set up TLS: ") + e.what());
    }
  }
  return std::unique_ptr<HttpTransport>(new HttpTransport(std::move(impl)));
}

std::variant<HttpAnswer, TransportFailure> HttpTransport::Post(const std::string& target,
                                                               const HeaderList& headers,
                                                               const std::string& body,
                                                               const AttemptLimits& limits) const {
  try {
    http::request<http::string_body> request{http::verb::post, target, 11};
    request.set(http::field::host, impl_->url.HostHeader());
    request.set(http::field::user_agent, "missyd");
    request.set(http::field::content_type, "application/json");
    request.set(http::field::accept, "application/json");
    for (const auto& [name, value] : headers) request.set(name, value);
    request.body() = body;
    request.prepare_payload();
    bool reused = false;
    std::unique_ptr<Exchange> exchange = impl_->Take(reused);
    std::variant<HttpAnswer, TransportFailure> result = exchange->Run(request, limits);
    if (reused && exchange->lost_before_answer() && SteadyClock::now() < limits.deadline) {
      // The server closed the pooled connection while it was idle: a new one at once.
      exchange = std::make_unique<Exchange>(impl_->url, impl_->tls.get());
      result = exchange->Run(request, limits);
    }
    impl_->GiveBack(std::move(exchange));
    return result;
  } catch (const std::exception& e) {
    // Asio reports failures through error codes; this is allocation failure and the like.
    return TransportFailure{ProviderErrorKind::kNetwork,
                            std::string("request failed: ") + e.what()};
  }
}

StreamOutcome HttpTransport::Stream(const std::string& method, const std::string& target,
                                    const HeaderList& headers, const std::string& body,
                                    const AttemptLimits& limits, const StreamSink& sink) const {
  try {
    http::request<http::string_body> request{http::string_to_verb(method), target, 11};
    if (request.method() == http::verb::unknown) request.method_string(method);
    request.set(http::field::host, impl_->url.HostHeader());
    for (const auto& [name, value] : headers) request.insert(name, value);
    if (request.find(http::field::user_agent) == request.end()) {
      request.set(http::field::user_agent, "missyd");
    }
    if (!body.empty()) request.body() = body;
    request.prepare_payload();
    bool reused = false;
    std::unique_ptr<Exchange> exchange = impl_->Take(reused);
    StreamOutcome result = exchange->RunStreamed(request, limits, sink);
    if (reused && !result.got_head && exchange->lost_before_answer() &&
        SteadyClock::now() < limits.deadline) {
      // The server closed the pooled connection while it was idle: a new one at once.
      exchange = std::make_unique<Exchange>(impl_->url, impl_->tls.get());
      result = exchange->RunStreamed(request, limits, sink);
    }
    if (result.complete) impl_->GiveBack(std::move(exchange));
    return result;
  } catch (const std::exception& e) {
    StreamOutcome out;
    out.failure = TransportFailure{ProviderErrorKind::kNetwork,
                                   std::string("request failed: ") + e.what()};
    return out;
  }
}

}  // namespace missy::provider

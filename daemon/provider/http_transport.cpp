// One POST per call: resolve, connect, TLS handshake, write, read header, read body, each
// phase run on a private io_context until it completes or its deadline passes (then the
// socket is closed, which aborts the operation, and the phase fails with kTimeout).
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
#include <optional>

#include "daemon/provider/provider_client.h"

namespace missy::provider {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

struct HttpTransport::Impl {
  BaseUrl url;
  std::unique_ptr<ssl::context> tls;  // null for http
};

namespace {

constexpr std::size_t kMaxHeaderBytes = 64 << 10;

// One connection's I/O, phase by phase. Stream is tcp::socket or ssl::stream<tcp::socket>.
class Exchange {
 public:
  Exchange(const BaseUrl& url, ssl::context* tls) : url_(url), socket_(io_) {
    if (tls != nullptr) tls_.emplace(io_, *tls);
  }

  std::variant<HttpAnswer, TransportFailure> Run(const http::request<http::string_body>& request,
                                                 const AttemptLimits& limits) {
    const auto phase_deadline = [&](std::chrono::milliseconds timeout) {
      return std::min(SteadyClock::now() + timeout, limits.deadline);
    };
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
        return *failure;
      }
      return Exchange2(*tls_, request, limits, phase_deadline(limits.first_byte_timeout));
    }
    return Exchange2(socket_, request, limits, phase_deadline(limits.first_byte_timeout));
  }

 private:
  tcp::socket& Socket() { return tls_ ? tls_->next_layer() : socket_; }
  void Close() {
    error_code ignored;
    Socket().close(ignored);
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

  template <typename Stream>
  std::variant<HttpAnswer, TransportFailure> Exchange2(
      Stream& stream, const http::request<http::string_body>& request, const AttemptLimits& limits,
      SteadyClock::time_point first_byte_deadline) {
    error_code ec;
    bool timed_out = RunPhase(
        first_byte_deadline,
        [&](auto done) {
          http::async_write(stream, request, [&, done](const error_code& e, std::size_t) {
            ec = e;
            done();
          });
        },
        [&] { Close(); });
    if (timed_out) return Timeout("sending the request");
    if (ec) return ReadFailure("sending the request", ec, limits);

    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(limits.max_response_bytes);
    timed_out = RunPhase(
        first_byte_deadline,
        [&](auto done) {
          http::async_read_header(stream, buffer, parser,
                                  [&, done](const error_code& e, std::size_t) {
                                    ec = e;
                                    done();
                                  });
        },
        [&] { Close(); });
    if (timed_out) return Timeout("waiting for the answer");
    if (ec) return ReadFailure("reading the answer's header", ec, limits);
    if (!parser.is_done()) {
      timed_out = RunPhase(
          limits.deadline,
          [&](auto done) {
            http::async_read(stream, buffer, parser, [&, done](const error_code& e, std::size_t) {
              ec = e;
              done();
            });
          },
          [&] { Close(); });
      if (timed_out) return Timeout("reading the answer");
      if (ec) return ReadFailure("reading the answer", ec, limits);
    }
    Close();  // one request per connection; no TLS close_notify wait
    auto& response = parser.get();
    HttpAnswer answer;
    answer.status = static_cast<int>(response.result_int());
    answer.retry_after = std::string(response[http::field::retry_after]);
    answer.retry_after_ms = std::string(response["retry-after-ms"]);
    answer.body = std::move(response.body());
    return answer;
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
};

}  // namespace

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
    request.set(http::field::connection, "close");
    for (const auto& [name, value] : headers) request.set(name, value);
    request.body() = body;
    request.prepare_payload();
    Exchange exchange(impl_->url, impl_->tls.get());
    return exchange.Run(request, limits);
  } catch (const std::exception& e) {
    // Asio reports failures through error codes; this is allocation failure and the like.
    return TransportFailure{ProviderErrorKind::kNetwork,
                            std::string("request failed: ") + e.what()};
  }
}

}  // namespace missy::provider

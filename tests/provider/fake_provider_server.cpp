#include "provider/fake_provider_server.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <thread>

namespace missy::provider_test {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;

struct FakeProviderServer::Impl {
  std::vector<Reply> script;
  Responder responder;  // when set, answers instead of the script
  FakeServerOptions options;
  std::unique_ptr<ssl::context> tls;  // outlives io: sessions destroyed with io use it
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;
  mutable std::mutex mu;
  std::vector<RecordedRequest> requests;  // guarded by mu
  int connections = 0;                    // guarded by mu

  Reply Next(RecordedRequest request) {
    if (responder) {
      {
        std::lock_guard lock(mu);
        requests.push_back(request);
      }
      return responder(request);  // only this thread calls it: one request at a time
    }
    std::lock_guard lock(mu);
    const size_t n = requests.size();
    requests.push_back(std::move(request));
    if (n < script.size()) return script[n];
    return Json(500, R"({"error":{"message":"fake server: script exhausted"}})");
  }

  void Listen() {
    if (!options.cert_file.empty()) {
      tls = std::make_unique<ssl::context>(ssl::context::tls_server);
      tls->use_certificate_chain_file(options.cert_file);
      tls->use_private_key_file(options.key_file, ssl::context::pem);
    }
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    acceptor.open(endpoint.protocol());
    acceptor.set_option(tcp::acceptor::reuse_address(true));
    acceptor.bind(endpoint);
    acceptor.listen();
    asio::co_spawn(io, Accept(), asio::detached);
    thread = std::thread([this] { io.run(); });
  }

  awaitable<void> Accept() {
    for (;;) {
      tcp::socket socket = co_await acceptor.async_accept(use_awaitable);
      {
        std::lock_guard lock(mu);
        ++connections;
      }
      asio::co_spawn(io, Session(std::move(socket)), asio::detached);
    }
  }

  awaitable<void> Session(tcp::socket socket) {
    try {
      if (!tls) {
        co_await Serve(socket, socket, "");
        co_return;
      }
      ssl::stream<tcp::socket> stream(std::move(socket), *tls);
      if (options.stall_handshake) {
        asio::steady_timer forever(io, std::chrono::hours(1));
        co_await forever.async_wait(use_awaitable);
      }
      co_await stream.async_handshake(ssl::stream_base::server, use_awaitable);
      const char* sni = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name);
      co_await Serve(stream, stream.next_layer(), sni == nullptr ? "" : sni);
    } catch (const std::exception&) {
      // The client went away or refused us: nothing to answer.
    }
  }

  // Serves requests on one connection until one of them (or its reply) ends it.
  template <typename Stream>
  awaitable<void> Serve(Stream& stream, tcp::socket& raw, std::string sni) {
    boost::beast::flat_buffer buffer;
    boost::system::error_code ignored;
    for (;;) {
      http::request<http::string_body> request;
      co_await http::async_read(stream, buffer, request, use_awaitable);
      RecordedRequest recorded;
      recorded.method = std::string(request.method_string());
      recorded.target = std::string(request.target());
      recorded.body = request.body();
      for (const auto& field : request) {
        std::string name(field.name_string());
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        recorded.headers[name] = std::string(field.value());
      }
      recorded.sni = sni;
      recorded.at = std::chrono::steady_clock::now();
      const Reply reply = Next(std::move(recorded));
      if (reply.delay.count() > 0) {
        asio::steady_timer timer(io, reply.delay);
        co_await timer.async_wait(use_awaitable);
      }
      bool keep = false;
      switch (reply.action) {
        case Reply::Action::kRespond: {
          http::response<http::string_body> response{static_cast<http::status>(reply.status), 11};
          response.set(http::field::content_type, "application/json");
          response.keep_alive(request.keep_alive());
          for (const auto& [name, value] : reply.headers) response.set(name, value);
          keep = response.keep_alive();  // a scripted "Connection: close" wins
          response.body() = reply.body;
          response.prepare_payload();
          co_await http::async_write(stream, response, use_awaitable);
          keep = keep && !reply.close_after;
          break;
        }
        case Reply::Action::kResetMidBody: {
          const std::string partial =
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
              "{\"choices\":[{\"message\":";
          co_await asio::async_write(stream, asio::buffer(partial), use_awaitable);
          raw.set_option(asio::socket_base::linger(true, 0), ignored);
          break;
        }
        case Reply::Action::kCloseNoAnswer:
          break;
      }
      if (!keep) break;
    }
    raw.close(ignored);
  }
};

FakeProviderServer::FakeProviderServer(std::vector<Reply> script, FakeServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->script = std::move(script);
  impl_->options = std::move(options);
  impl_->Listen();
}

FakeProviderServer::FakeProviderServer(RespondWith respond, FakeServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->responder = std::move(respond.responder);
  impl_->options = std::move(options);
  impl_->Listen();
}

FakeProviderServer::~FakeProviderServer() {
  impl_->io.stop();
  impl_->thread.join();
}

uint16_t FakeProviderServer::port() const { return impl_->acceptor.local_endpoint().port(); }

std::string FakeProviderServer::Url(const std::string& suffix, const std::string& host) const {
  return std::string(impl_->tls ? "https://" : "http://") + host + ":" + std::to_string(port()) +
         suffix;
}

std::vector<RecordedRequest> FakeProviderServer::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

int FakeProviderServer::connections() const {
  std::lock_guard lock(impl_->mu);
  return impl_->connections;
}

std::string OpenAiAnswer(const std::string& text, const std::string& model) {
  return R"({"id":"chatcmpl-1","object":"chat.completion","model":")" + model +
         R"(","choices":[{"index":0,"message":{"role":"assistant","content":")" + text +
         R"("},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}})";
}

std::string AnthropicAnswer(const std::string& text, const std::string& model) {
  return R"j({"id":"msg_1","type":"message","role":"assistant","model":")j" + model +
         R"j(","content":[{"type":"text","text":")j" + text +
         R"j("},{"type":"text","text":" (end)"}],"stop_reason":"end_turn",)j"
         R"j("usage":{"input_tokens":30,"output_tokens":5}})j";
}

Reply Json(int status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

}  // namespace missy::provider_test

// One HTTP/1.1 connection on its own strand (Beast's session pattern, bmcweb's AsyncResp
// for answers), over a Unix or a TCP socket (a generic stream socket serves both). See
// server.h for the contract.
//
// A request is read, handed to the handler with an Exchange, and nothing more is read
// until the answer (a response, or a stream up to its last chunk) has been written. The
// exchange reaches back through ExchangeTarget, whose methods post to the strand.
//
// Lingering close: a client that writes its whole request before reading (Python's
// http.client, requests) would get EPIPE or ECONNRESET instead of our 413 (or the 403
// of a refused proxy peer) if we closed with its body still arriving. So after the answer
// is written the connection shuts its sending side (the client sees the answer, then
// EOF) and reads and discards the rest of the request: the declared Content-Length, or
// until the client closes, at most kLingerBytes and for at most kLingerTime (or the read
// timeout, if shorter).
#include <errno.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <charconv>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/metrics/net_stats.h"
#include "daemon/net/body_pool.h"
#include "daemon/net/connection.h"
#include "daemon/net/http_exchange.h"
#include "daemon/net/request_read.h"
#include "daemon/net/response_headers.h"

namespace missy::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

using Generic = asio::generic::stream_protocol;
using error_code = boost::system::error_code;

constexpr size_t kStreamWriteBytes = 256 * 1024;         // one gathered write of a stream
constexpr uint64_t kLingerBytes = uint64_t{64} << 20;    // discarded after a 413, at most
constexpr std::chrono::milliseconds kLingerTime{5000};   // ... and for at most this long
constexpr size_t kLingerReadBytes = 64 * 1024;           // one discarding read
constexpr size_t kBodyReadBytes = 64 * 1024;             // one read of a large body
constexpr std::chrono::milliseconds kRefusedWait{5000};  // for a refused peer's header

constexpr std::string_view kProxyForbidden =
    R"({"type":"error","error":{"type":"permission_error","message":)"
    R"("missyd proxy: only the user running missyd may use this proxy"}})";

std::string ChunkSizeLine(size_t size) {
  char buf[24];
  int n = snprintf(buf, sizeof(buf), "%zx\r\n", size);
  return std::string(buf, static_cast<size_t>(n));
}

class HttpSession final : public Connection,
                          public ExchangeTarget,
                          public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ServerContext* server, Generic::socket socket, PeerCred peer,
              std::shared_ptr<const HttpEndpoint> endpoint, bool refuse_peer)
      : server_(server),
        endpoint_(std::move(endpoint)),
        stream_(std::move(socket)),
        peer_(peer),
        refuse_peer_(refuse_peer) {
    metrics::NetStats& stats = metrics::ProcessNetStats();
    ++stats.http_connections_open;
    ++stats.http_connections_total;
  }
  ~HttpSession() override { --metrics::ProcessNetStats().http_connections_open; }

  // Connection.
  void Start() override {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->WaitForRequest(); });
  }
  void OnServerStopping() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->Close();
    });
  }
  void ForceClose() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->Close(); });
  }

  // ExchangeTarget.
  void Answer(uint64_t request_id, HttpResponse response) override {
    asio::post(stream_.get_executor(),
               [self = shared_from_this(), request_id, response = std::move(response)]() mutable {
                 self->OnAnswer(request_id, std::move(response));
               });
  }
  void BeginStream(uint64_t request_id, std::shared_ptr<StreamState> state, int status,
                   std::string content_type, HttpHeaderList headers) override {
    asio::post(stream_.get_executor(),
               [self = shared_from_this(), request_id, state = std::move(state), status,
                content_type = std::move(content_type), headers = std::move(headers)]() mutable {
                 self->OnBeginStream(request_id, std::move(state), status, std::move(content_type),
                                     std::move(headers));
               });
  }
  void StreamActivity(std::shared_ptr<StreamState> state) override {
    asio::post(stream_.get_executor(), [self = shared_from_this(), state = std::move(state)] {
      if (state == self->out_state_) self->FlushStream();
    });
  }

 private:
  using Stream = beast::basic_stream<Generic, asio::any_io_executor, beast::unlimited_rate_policy>;

  // Reading a request.
  void WaitForRequest();
  void OnIdleRead(const error_code& ec, size_t n);
  void StartRequest();
  void OnHeader(const error_code& ec);
  void ReadBody();
  void OnRead(const error_code& ec);
  // A large body of declared length, read straight into its string (see ReadBody).
  void ReadWholeBody(uint64_t length);
  // Shows body_watch_ the bytes of whole_body_ up to `arrived` it has not seen.
  void WatchArrived(size_t arrived);
  void OnReadError(const error_code& ec);
  std::optional<uint64_t> DeclaredBodyLength() const;
  void Refuse();
  void Handle();

  // Answering with one response.
  void OnAnswer(uint64_t request_id, HttpResponse response);
  void Send(int status, std::string content_type, std::string body, bool keep_alive,
            HttpHeaderList headers = {});
  void OnWrite(const error_code& ec, bool keep_alive);

  // Lingering close after a 413 or a 403 (see the top of the file).
  void Linger();
  void LingerRead();
  void OnLingerRead(const error_code& ec, size_t n);
  void Discarded(size_t n);

  // Answering with a stream.
  void OnBeginStream(uint64_t request_id, std::shared_ptr<StreamState> state, int status,
                     std::string content_type, HttpHeaderList headers);
  void FlushStream();
  void OnStreamWrite(const error_code& ec, size_t payload_bytes, bool last);
  void FinishStream();
  void WatchPeer();
  void OnPeerReadable(const error_code& ec, uint64_t generation);
  void StopWatching();

  void Close();

  // How long the current read may take: the listener's read timeout, at most
  // kRefusedWait for a refused peer.
  std::chrono::milliseconds ReadTimeout() const;

  ServerContext* server_;
  std::shared_ptr<const HttpEndpoint> endpoint_;
  Stream stream_;
  PeerCred peer_;
  const bool refuse_peer_;  // answer 403 to the first request, then close
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<RequestBody>> parser_;
  std::chrono::steady_clock::time_point head_read_at_{};
  std::optional<std::string> whole_body_;  // ReadWholeBody's, while it is used
  std::shared_ptr<BodyWatch> body_watch_;   // seeing whole_body_ arrive, if the endpoint has one
  size_t watched_ = 0;                      // bytes of whole_body_ body_watch_ has seen
  std::optional<http::response<http::string_body>> response_;
  bool busy_ = false;  // a request has started arriving and is not answered yet
  bool closed_ = false;

  // Lingering close: set when the answer being written is a 413 or a refusal.
  bool linger_ = false;
  std::optional<uint64_t> linger_declared_;  // the request's Content-Length, if it had one
  std::optional<uint64_t> linger_left_;      // of the declared body, still to discard
  uint64_t linger_budget_ = 0;               // bytes we still accept to discard
  std::unique_ptr<char[]> linger_buf_;

  // The request being answered.
  uint64_t request_id_ = 0;
  bool awaiting_answer_ = false;
  bool request_keep_alive_ = false;
  unsigned request_version_ = 11;

  // The stream being written (out_state_ is null when there is none).
  std::shared_ptr<StreamState> out_state_;
  std::string out_head_;  // status line and headers, not yet written
  bool out_chunked_ = true;
  bool out_keep_alive_ = false;
  bool out_writing_ = false;
  std::vector<std::string> out_parts_;  // what the write in flight points into: head, sizes
  std::vector<std::shared_ptr<const std::string>> out_chunks_;  // and the chunks' bytes
  bool watching_ = false;               // waiting for the peer to close during a stream
  uint64_t watch_generation_ = 0;
};

// ---------------------------------------------------------------------------------------
// Reading a request.

void HttpSession::WaitForRequest() {
  if (closed_) return;
  if (server_->stopping()) return Close();
  if (buffer_.size() > 0) return StartRequest();  // pipelined bytes already here
  // Idle keep-alive connections get the same timeout as a request.
  stream_.expires_after(ReadTimeout());
  stream_.async_read_some(
      buffer_.prepare(4096),
      [self = shared_from_this()](const error_code& ec, size_t n) { self->OnIdleRead(ec, n); });
}

void HttpSession::OnIdleRead(const error_code& ec, size_t n) {
  if (ec) return Close();  // timeout, EOF, cancelled by shutdown
  buffer_.commit(n);
  StartRequest();
}

void HttpSession::StartRequest() {
  busy_ = true;
  parser_.emplace();
  parser_->body_limit(endpoint_->body_limit);
  parser_->header_limit(static_cast<std::uint32_t>(std::min<size_t>(
      server_->options().header_limit, std::numeric_limits<std::uint32_t>::max())));
  // The whole request (headers and body) must arrive within one read timeout.
  stream_.expires_after(ReadTimeout());
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](const error_code& ec, size_t) { self->OnHeader(ec); });
}

void HttpSession::OnHeader(const error_code& ec) {
  if (ec) return OnReadError(ec);
  head_read_at_ = std::chrono::steady_clock::now();
  if (refuse_peer_) return Refuse();
  const auto& req = parser_->get();
  if (!parser_->is_done() && beast::iequals(req[http::field::expect], "100-continue")) {
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(stream_, asio::buffer(kContinue),
                      [self = shared_from_this()](const error_code& wec, size_t) {
                        if (wec) return self->Close();
                        self->ReadBody();
                      });
    return;
  }
  ReadBody();
}

void HttpSession::ReadBody() {
  // A large body (an agent's whole conversation: megabytes) of declared length is read
  // straight into its string: through the parser, each read would go through a copy out
  // of its buffer.
  if (std::optional<uint64_t> declared = DeclaredBodyLength();
      declared && *declared > (64 << 10) && !parser_->is_done()) {
    return ReadWholeBody(*declared);
  }
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](const error_code& ec, size_t) { self->OnRead(ec); });
}

void HttpSession::ReadWholeBody(uint64_t length) {
  // The parser checked the length against the body limit with the header.
  whole_body_.emplace(BodyPool::Shared().Take(static_cast<size_t>(length)));
  std::string& body = *whole_body_;
  const size_t have = std::min(buffer_.size(), body.size());
  asio::buffer_copy(asio::buffer(body.data(), have), buffer_.data());
  buffer_.consume(have);
  watched_ = 0;
  body_watch_ = endpoint_->body_watch ? endpoint_->body_watch(HeadOf(parser_->get())) : nullptr;
  WatchArrived(have);
  if (have == body.size()) return OnRead({});
  const size_t rest = body.size() - have;
  // 64 KB a read: the sender refills the socket while each is copied out. Reads that take
  // all the socket holds (megabytes at once) left the sender waiting on a closed window
  // during each long copy: 9 MB took 7 ms instead of 4 to 5 (bench/proxy/RESULTS.md).
  asio::async_read(
      stream_, asio::buffer(body.data() + have, rest),
      [this, have, rest](const error_code& ec, size_t done) -> size_t {
        if (!ec) WatchArrived(have + done);
        return ec ? 0 : std::min<size_t>(rest - done, kBodyReadBytes);
      },
      [self = shared_from_this()](const error_code& ec, size_t) { self->OnRead(ec); });
}

void HttpSession::WatchArrived(size_t arrived) {
  if (!body_watch_ || arrived <= watched_) return;
  body_watch_->Arrived(watched_, std::string_view(*whole_body_).substr(watched_, arrived - watched_));
  watched_ = arrived;
}

void HttpSession::OnRead(const error_code& ec) {
  if (ec) return OnReadError(ec);
  // The read's last bytes (asio asks the completion condition only while some remain).
  if (whole_body_) WatchArrived(whole_body_->size());
  Handle();
}

// The Content-Length of the request whose header was read; nullopt when the body is
// chunked or the length does not parse.
std::optional<uint64_t> HttpSession::DeclaredBodyLength() const {
  const auto& req = parser_->get();
  if (req.find(http::field::transfer_encoding) != req.end()) return std::nullopt;
  if (req.find(http::field::content_length) == req.end()) return uint64_t{0};
  const std::string_view cl = req[http::field::content_length];
  uint64_t declared = 0;
  auto [end, perr] = std::from_chars(cl.data(), cl.data() + cl.size(), declared);
  if (perr == std::errc() && end == cl.data() + cl.size() && !cl.empty()) return declared;
  return std::nullopt;
}

// The peer may not use this listener: 403 to its first request, whose body is then
// discarded by the lingering close (see the top of the file).
void HttpSession::Refuse() {
  linger_ = true;
  linger_declared_ = DeclaredBodyLength();
  parser_.reset();
  Send(403, "application/json", std::string(kProxyForbidden), false);
}

void HttpSession::OnReadError(const error_code& ec) {
  if (ec == http::error::body_limit) {
    ++metrics::ProcessNetStats().http_body_too_large;
    linger_ = true;
    // Beast checks a Content-Length against the limit right after the header: what the
    // buffer holds now is the start of the body.
    linger_declared_ = DeclaredBodyLength();
    return Send(
        413, "application/json",
        JsonError("payload_too_large",
                  "request body exceeds " + std::to_string(endpoint_->body_limit) + " bytes"),
        false);
  }
  const auto& opts = server_->options();
  if (ec == http::error::header_limit) {
    ++metrics::ProcessNetStats().http_headers_too_large;
    return Send(431, "application/json",
                JsonError("headers_too_large",
                          "request headers exceed " + std::to_string(opts.header_limit) + " bytes"),
                false);
  }
  if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
      ec != http::error::partial_message && ec != http::error::end_of_stream) {
    ++metrics::ProcessNetStats().http_malformed;
    return Send(400, "application/json",
                JsonError("invalid_argument", "malformed HTTP request: " + ec.message()), false);
  }
  // Timeout, EOF in the middle of a request, reset, cancellation: nobody to answer.
  Close();
}

void HttpSession::Handle() {
  http::request<RequestBody> msg = parser_->release();
  parser_.reset();
  HttpRequest req = HeadOf(msg);
  req.body = whole_body_ ? std::move(*whole_body_) : std::move(msg.body());
  if (whole_body_ && watched_ == req.body.size()) req.body_watch = std::move(body_watch_);
  whole_body_.reset();
  body_watch_.reset();
  req.peer_uid = peer_.uid;
  req.peer_pid = peer_.pid;
  req.listener = endpoint_->listener;
  req.head_read_at = head_read_at_;
  request_keep_alive_ = msg.keep_alive();
  request_version_ = msg.version();

  std::string what = req.method + " " + req.target;
  auto exchange = std::make_shared<Exchange>(weak_from_this(), server_->gate(), ++request_id_,
                                             server_->options().stream_buffer_bytes, what);
  awaiting_answer_ = true;
  bool threw = false;
  try {
    endpoint_->handler(std::move(req), exchange);
  } catch (const std::exception& e) {
    spdlog::error("handler for {} threw: {}", what, e.what());
    threw = true;
  } catch (...) {
    spdlog::error("handler for {} threw an unknown exception", what);
    threw = true;
  }
  if (threw) {
    exchange->SendIfUnanswered(
        HttpResponse{500, "application/json",
                     JsonError("internal", "internal error while handling the request")});
  }
}

// ---------------------------------------------------------------------------------------
// Answering with one response.

void HttpSession::OnAnswer(uint64_t request_id, HttpResponse response) {
  if (closed_ || !awaiting_answer_ || request_id != request_id_) return;
  awaiting_answer_ = false;
  const bool keep_alive = request_keep_alive_ && !server_->stopping();
  Send(response.status, std::move(response.content_type), std::move(response.body), keep_alive,
       std::move(response.headers));
}

void HttpSession::Send(int status, std::string content_type, std::string body, bool keep_alive,
                       HttpHeaderList headers) {
  busy_ = true;
  response_.emplace(static_cast<http::status>(status), 11);
  response_->set(http::field::server, "missyd");
  if (!content_type.empty()) response_->set(http::field::content_type, content_type);
  response_->body() = std::move(body);
  response_->keep_alive(keep_alive);
  response_->prepare_payload();
  for (const auto& [name, value] : headers) {
    if (SendExtraHeader(name, value, endpoint_->listener)) response_->insert(name, value);
  }
  // A peer that does not read its response is dropped after one timeout too.
  stream_.expires_after(endpoint_->read_timeout);
  http::async_write(stream_, *response_,
                    [self = shared_from_this(), keep_alive](const error_code& ec, size_t) {
                      self->OnWrite(ec, keep_alive);
                    });
}

void HttpSession::OnWrite(const error_code& ec, bool keep_alive) {
  response_.reset();
  busy_ = false;
  if (!ec && linger_) return Linger();
  if (ec || !keep_alive) return Close();
  WaitForRequest();
}

// ---------------------------------------------------------------------------------------
// Lingering close.

void HttpSession::Linger() {
  if (closed_) return;
  if (server_->stopping()) return Close();  // not busy_: a stop that begins now closes too
  ++metrics::ProcessNetStats().http_lingering_closes;
  error_code ignored;
  stream_.socket().shutdown(Generic::socket::shutdown_send, ignored);  // the answer, then EOF
  linger_budget_ = kLingerBytes;
  if (linger_declared_) linger_left_ = *linger_declared_;
  const size_t buffered = buffer_.size();
  buffer_.consume(buffered);
  Discarded(buffered);
  stream_.expires_after(std::min(kLingerTime, ReadTimeout()));
  linger_buf_ = std::make_unique<char[]>(kLingerReadBytes);
  LingerRead();
}

void HttpSession::Discarded(size_t n) {
  metrics::ProcessNetStats().http_lingering_bytes += n;
  linger_budget_ -= std::min<uint64_t>(linger_budget_, n);
  if (linger_left_) *linger_left_ -= std::min<uint64_t>(*linger_left_, n);
}

void HttpSession::LingerRead() {
  if (closed_) return;
  uint64_t want = std::min<uint64_t>(kLingerReadBytes, linger_budget_);
  if (linger_left_) want = std::min(want, *linger_left_);
  if (want == 0) return Close();  // the whole declared body, or as much as we take
  stream_.async_read_some(
      asio::buffer(linger_buf_.get(), static_cast<size_t>(want)),
      [self = shared_from_this()](const error_code& ec, size_t n) { self->OnLingerRead(ec, n); });
}

void HttpSession::OnLingerRead(const error_code& ec, size_t n) {
  Discarded(n);
  if (ec) return Close();  // EOF (the client is done), the time bound, a reset, a stop
  LingerRead();
}

// ---------------------------------------------------------------------------------------
// Answering with a stream.

void HttpSession::OnBeginStream(uint64_t request_id, std::shared_ptr<StreamState> state, int status,
                                std::string content_type, HttpHeaderList headers) {
  if (closed_ || !awaiting_answer_ || request_id != request_id_) {
    state->MarkDead();
    return;
  }
  awaiting_answer_ = false;
  out_state_ = std::move(state);
  // HTTP/1.0 has no chunked encoding: the body then ends with the connection.
  out_chunked_ = request_version_ >= 11;
  out_keep_alive_ = out_chunked_ && request_keep_alive_ && !server_->stopping();
  http::response<http::empty_body> head{static_cast<http::status>(status), 11};
  head.set(http::field::server, "missyd");
  if (!content_type.empty()) head.set(http::field::content_type, content_type);
  if (content_type.rfind("text/event-stream", 0) == 0) {
    head.set(http::field::cache_control, "no-cache");
  }
  if (out_chunked_) head.chunked(true);
  head.keep_alive(out_keep_alive_);
  for (const auto& [name, value] : headers) {
    if (SendExtraHeader(name, value, endpoint_->listener)) head.insert(name, value);
  }
  std::ostringstream os;
  os << head.base();
  out_head_ = std::move(os).str();
  WatchPeer();
  FlushStream();
}

void HttpSession::FlushStream() {
  if (closed_ || !out_state_ || out_writing_) return;
  StreamState::Batch batch = out_state_->Take(kStreamWriteBytes);
  if (batch.cut) return Close();
  out_parts_.clear();
  const bool has_head = !out_head_.empty();
  if (has_head) out_parts_.push_back(std::move(out_head_));
  out_head_.clear();
  static const std::string kCrlf = "\r\n";
  static const std::string kLastChunk = "0\r\n\r\n";
  if (out_chunked_) {
    for (const auto& chunk : batch.chunks) out_parts_.push_back(ChunkSizeLine(chunk->size()));
  }
  // Buffers are taken once out_parts_ stopped growing (moving a short string moves its
  // bytes); the chunks' bytes are written from where the producer left them.
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(batch.chunks.size() * 3 + 2);
  if (has_head) buffers.push_back(asio::buffer(out_parts_[0]));
  for (size_t c = 0; c < batch.chunks.size(); ++c) {
    if (out_chunked_) buffers.push_back(asio::buffer(out_parts_[c + (has_head ? 1 : 0)]));
    buffers.push_back(asio::buffer(*batch.chunks[c]));
    if (out_chunked_) buffers.push_back(asio::buffer(kCrlf));
  }
  out_chunks_ = std::move(batch.chunks);
  if (batch.last && out_chunked_) buffers.push_back(asio::buffer(kLastChunk));
  if (buffers.empty()) {
    if (batch.last) FinishStream();
    return;
  }
  out_writing_ = true;
  // A peer that stops reading is dropped after one timeout.
  stream_.expires_after(endpoint_->read_timeout);
  // All of the batch a call, as much as the socket takes: asio's default condition hands it
  // 64 KB at a time, and each of those completions could run on the other I/O thread (a
  // wake-up, up to a millisecond on a busy 2-core machine, between every 64 KB).
  asio::async_write(stream_, buffers,
                    [](const error_code& ec, size_t) -> size_t {
                      return ec ? 0 : std::numeric_limits<size_t>::max();
                    },
                    [self = shared_from_this(), bytes = batch.bytes, last = batch.last](
                        const error_code& ec, size_t) { self->OnStreamWrite(ec, bytes, last); });
}

void HttpSession::OnStreamWrite(const error_code& ec, size_t payload_bytes, bool last) {
  out_writing_ = false;
  out_parts_.clear();
  out_chunks_.clear();
  if (out_state_) out_state_->Written(payload_bytes);
  if (ec) return Close();
  if (last) return FinishStream();
  FlushStream();
}

void HttpSession::FinishStream() {
  out_state_.reset();
  StopWatching();
  busy_ = false;
  if (!out_keep_alive_) return Close();
  WaitForRequest();
}

// While a stream is open nothing is read; a wait for readability notices a peer that
// closed its end, so that closed() turns true even when the producer is idle.
void HttpSession::WatchPeer() {
  watching_ = true;
  const uint64_t generation = ++watch_generation_;
  stream_.socket().async_wait(Generic::socket::wait_read,
                              [self = shared_from_this(), generation](const error_code& ec) {
                                self->OnPeerReadable(ec, generation);
                              });
}

void HttpSession::OnPeerReadable(const error_code& ec, uint64_t generation) {
  if (generation != watch_generation_ || closed_) return;
  watching_ = false;
  if (ec) return;
  char byte;
  ssize_t n = recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return WatchPeer();
  if (n <= 0) {  // EOF or reset: the peer went away
    spdlog::debug("stream peer went away");
    return Close();
  }
  // n > 0: the next request arrived early; it waits in the socket until the stream ends.
}

void HttpSession::StopWatching() {
  if (!watching_) return;
  watching_ = false;
  ++watch_generation_;
  error_code ignored;
  stream_.socket().cancel(ignored);  // nothing else is pending on the socket now
}

std::chrono::milliseconds HttpSession::ReadTimeout() const {
  return refuse_peer_ ? std::min(kRefusedWait, endpoint_->read_timeout) : endpoint_->read_timeout;
}

void HttpSession::Close() {
  if (closed_) return;
  closed_ = true;
  ++watch_generation_;
  if (out_state_) {
    out_state_->MarkDead();
    out_state_.reset();
  }
  error_code ignored;
  stream_.socket().shutdown(Generic::socket::shutdown_send, ignored);
  stream_.close();
  server_->ConnectionClosed(this);
}

}  // namespace

std::shared_ptr<Connection> MakeHttpSession(asio::io_context& io, ServerContext* server, int fd,
                                            PeerCred peer,
                                            std::shared_ptr<const HttpEndpoint> endpoint,
                                            bool refuse_peer) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    spdlog::warn("cannot use an accepted connection: {}", strerror(errno));
    close(fd);
    return nullptr;
  }
  const int family = addr.ss_family;
  Generic::socket socket(asio::make_strand(io));
  error_code ec;
  socket.assign(Generic(family, family == AF_UNIX ? 0 : IPPROTO_TCP), fd, ec);
  if (ec) {
    close(fd);
    spdlog::warn("cannot use an accepted connection: {}", ec.message());
    return nullptr;
  }
  return std::make_shared<HttpSession>(server, std::move(socket), peer, std::move(endpoint),
                                       refuse_peer);
}

}  // namespace missy::net

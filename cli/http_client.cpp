#include "cli/http_client.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <thread>
#include <utility>

namespace missy {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kMaxBodyBytes = size_t{1} << 30;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<long long>(left, 1 << 30));
}

Status TimedOut(const char* what) { return Status::Unavailable(std::string("timed out ") + what); }

// Waits until `fd` is ready for `events`; kUnavailable on timeout.
Status WaitFor(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, RemainingMs(deadline));
    if (rc > 0) return Status::Ok();
    if (rc == 0) return TimedOut(what);
    if (errno != EINTR) return Status::Unavailable(std::string("poll: ") + strerror(errno));
  }
}

// "tcp:127.0.0.1:PORT" or "tcp:[::1]:PORT": a loopback TCP server (the proxy listener).
Result<int> ConnectTcp(const std::string& spec, Clock::time_point deadline) {
  std::string rest = spec.substr(4);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("no port in " + spec);
  std::string host = rest.substr(0, colon);
  const int port = std::atoi(rest.c_str() + colon + 1);
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (host.size() > 2 && host.front() == '[') {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a6->sin6_addr) != 1) {
      return Status::InvalidArgument("bad address in " + spec);
    }
    len = sizeof(sockaddr_in6);
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &a4->sin_addr) != 1) {
      return Status::InvalidArgument("bad address in " + spec);
    }
    len = sizeof(sockaddr_in);
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket(): ") + strerror(errno));
  if (connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    const int err = errno;
    close(fd);
    return Status::Unavailable("cannot connect to " + spec.substr(4) + ": " + strerror(err));
  }
  pollfd p{fd, POLLOUT, 0};
  const int ms = static_cast<int>(std::max<int64_t>(0, RemainingMs(deadline)));
  if (poll(&p, 1, ms) != 1) {
    close(fd);
    return Status::Unavailable("timed out connecting to " + spec.substr(4));
  }
  int err = 0;
  socklen_t err_len = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len);
  if (err != 0) {
    close(fd);
    return Status::Unavailable("cannot connect to " + spec.substr(4) + ": " + strerror(err));
  }
  return fd;
}

Result<int> ConnectUnix(const std::string& path, Clock::time_point deadline) {
  if (path.starts_with("tcp:")) return ConnectTcp(path, deadline);
  sockaddr_un addr{};
  if (path.empty()) return Status::InvalidArgument("socket path is empty");
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("socket path is too long: " + path);
  }
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket(): ") + strerror(errno));
  for (;;) {
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN && RemainingMs(deadline) > 0) {  // listen backlog full: retry
      std::this_thread::sleep_for(milliseconds(5));
      continue;
    }
    close(fd);
    std::string msg = "cannot connect to " + path + ": " + strerror(err);
    if (err == ENOENT || err == ECONNREFUSED) msg += " (is missyd running?)";
    if (err == EAGAIN) msg = "timed out connecting to " + path + " (listen backlog full)";
    return Status::Unavailable(msg);
  }
}

// Writes everything. If the peer closes while we write, stops and sets *peer_closed: the
// caller may still read an answer the server sent before closing (413).
Status WriteAll(int fd, std::string_view data, Clock::time_point deadline, bool* peer_closed) {
  *peer_closed = false;
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      MISSY_RETURN_IF_ERROR(WaitFor(fd, POLLOUT, deadline, "writing the request"));
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      *peer_closed = true;
      return Status::Ok();
    }
    return Status::Unavailable(std::string("send: ") + strerror(errno));
  }
  return Status::Ok();
}

// Appends what is available to `buf`; returns the number of bytes read, 0 on EOF.
Result<size_t> ReadSome(int fd, std::string* buf, Clock::time_point deadline, const char* what) {
  char tmp[16384];
  for (;;) {
    ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
    if (n > 0) {
      buf->append(tmp, static_cast<size_t>(n));
      return static_cast<size_t>(n);
    }
    if (n == 0) return size_t{0};
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) return size_t{0};
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      Status s = WaitFor(fd, POLLIN, deadline, what);
      if (!s.ok()) return s;
      continue;
    }
    return Status::Unavailable(std::string("recv: ") + strerror(errno));
  }
}

std::string BuildRequest(const std::string& method, const std::string& target,
                         const std::string& body, bool close, const std::string& extra = {}) {
  std::string req;
  req.reserve(160 + target.size() + body.size());
  req += method;
  req += ' ';
  req += target;
  req += " HTTP/1.1\r\nHost: localhost\r\nUser-Agent: missyctl\r\n";
  if (!body.empty()) req += "Content-Type: application/json\r\n";
  if (body.size() > 0 || method == "POST" || method == "PUT" || method == "PATCH") {
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  if (close) req += "Connection: close\r\n";
  req += extra;
  req += "\r\n";
  req += body;
  return req;
}

bool ParseHex(std::string_view s, size_t* out) {
  s = Trim(s.substr(0, s.find(';')));  // chunk extensions are ignored
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

using BodyState = UnixHttpConnection::BodyState;

// Reads until `buf` holds a "\r\n"; returns its offset. `limit` bounds the line.
Result<size_t> ReadLineEnd(int fd, std::string* buf, Clock::time_point deadline, size_t limit,
                           const char* where) {
  size_t le;
  while ((le = buf->find("\r\n")) == std::string::npos) {
    if (buf->size() > limit) return Status::Corruption(std::string(where) + ": line too long");
    auto n = ReadSome(fd, buf, deadline, "reading a chunked body");
    if (!n.ok()) return n.status();
    if (*n == 0) return Status::Corruption(std::string("connection closed inside ") + where);
  }
  return le;
}

// Reads the status line and headers of one response from `fd` (bytes already read are
// in *buf, bytes read past the headers stay there) and how its body is delimited.
// *nothing_received: the connection ended before any byte.
Result<ClientResponse> ReadHead(int fd, std::string* buf, Clock::time_point deadline,
                                bool* nothing_received, BodyState* body) {
  *nothing_received = false;
  for (;;) {
    size_t end = buf->find("\r\n\r\n");
    while (end == std::string::npos) {
      if (buf->size() > kMaxHeaderBytes) return Status::Corruption("response headers too large");
      auto n = ReadSome(fd, buf, deadline, "waiting for the response");
      if (!n.ok()) return n.status();
      if (*n == 0) {
        if (buf->empty()) {
          *nothing_received = true;
          return Status::Unavailable("connection closed before a response arrived");
        }
        return Status::Corruption("connection closed in the middle of the response headers");
      }
      end = buf->find("\r\n\r\n");
    }
    std::string_view head(buf->data(), end);
    ClientResponse res;
    size_t line_end = head.find("\r\n");
    std::string_view status_line = head.substr(0, line_end);
    if (status_line.size() < 12 || status_line.substr(0, 5) != "HTTP/") {
      return Status::Corruption("bad status line: " + std::string(status_line.substr(0, 80)));
    }
    const bool http10 = status_line.substr(0, 8) == "HTTP/1.0";
    auto [p, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, res.status);
    if (ec != std::errc() || p != status_line.data() + 12) {
      return Status::Corruption("bad status line: " + std::string(status_line.substr(0, 80)));
    }
    std::string_view rest =
        line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
    while (!rest.empty()) {
      size_t e = rest.find("\r\n");
      std::string_view line = rest.substr(0, e);
      rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 2);
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) return Status::Corruption("bad header line");
      std::string name = Lower(Trim(line.substr(0, colon)));
      std::string value(Trim(line.substr(colon + 1)));
      auto [it, inserted] = res.headers.emplace(name, value);
      if (!inserted) it->second += ", " + value;
    }
    buf->erase(0, end + 4);
    if (res.status >= 100 && res.status < 200) continue;  // 100 Continue: the real one follows

    std::string connection =
        Lower(res.headers.count("connection") ? res.headers["connection"] : "");
    *body = BodyState();
    body->active = true;
    body->must_close = connection.find("close") != std::string::npos ||
                       (http10 && connection.find("keep-alive") == std::string::npos);
    auto te = res.headers.find("transfer-encoding");
    auto cl = res.headers.find("content-length");
    if (te != res.headers.end() && Lower(te->second).find("chunked") != std::string::npos) {
      body->kind = BodyState::Kind::kChunked;
    } else if (cl != res.headers.end()) {
      size_t len = 0;
      auto [q, cec] =
          std::from_chars(cl->second.data(), cl->second.data() + cl->second.size(), len);
      if (cec != std::errc() || q != cl->second.data() + cl->second.size() || len > kMaxBodyBytes) {
        return Status::Corruption("bad Content-Length: " + cl->second);
      }
      body->kind = BodyState::Kind::kLength;
      body->remaining = len;
      body->active = len > 0;
    } else if (res.status == 204 || res.status == 304) {
      body->kind = BodyState::Kind::kLength;
      body->active = false;
    } else {
      body->kind = BodyState::Kind::kUntilEof;
      body->must_close = true;
    }
    return res;
  }
}

// Reads the next piece of an active body into *piece (one chunk's data for a chunked
// body). Returns false, with body->active cleared, once the body ended.
Result<bool> ReadBodyPiece(int fd, std::string* buf, Clock::time_point deadline, BodyState* body,
                           std::string* piece) {
  constexpr size_t kPieceBytes = 64 * 1024;
  piece->clear();
  if (!body->active) return false;
  switch (body->kind) {
    case BodyState::Kind::kLength: {
      if (buf->empty()) {
        auto n = ReadSome(fd, buf, deadline, "reading the response body");
        if (!n.ok()) return n.status();
        if (*n == 0) return Status::Corruption("connection closed inside the response body");
      }
      size_t take = std::min({body->remaining, buf->size(), kPieceBytes});
      piece->assign(*buf, 0, take);
      buf->erase(0, take);
      body->remaining -= take;
      if (body->remaining == 0) body->active = false;
      return true;
    }
    case BodyState::Kind::kUntilEof: {
      if (buf->empty()) {
        auto n = ReadSome(fd, buf, deadline, "reading the response body");
        if (!n.ok()) return n.status();
        if (*n == 0) {
          body->active = false;
          return false;
        }
      }
      piece->swap(*buf);
      buf->clear();
      return true;
    }
    case BodyState::Kind::kChunked: {
      auto le = ReadLineEnd(fd, buf, deadline, 4096, "a chunk size line");
      if (!le.ok()) return le.status();
      size_t size = 0;
      if (!ParseHex(std::string_view(*buf).substr(0, *le), &size)) {
        return Status::Corruption("bad chunk size");
      }
      buf->erase(0, *le + 2);
      if (size == 0) {  // trailers, then an empty line
        for (;;) {
          auto te = ReadLineEnd(fd, buf, deadline, kMaxHeaderBytes, "chunk trailers");
          if (!te.ok()) return te.status();
          buf->erase(0, *te + 2);
          if (*te == 0) break;
        }
        body->active = false;
        return false;
      }
      if (size > kMaxBodyBytes) return Status::Corruption("chunk too large");
      while (buf->size() < size + 2) {
        auto n = ReadSome(fd, buf, deadline, "reading a chunked body");
        if (!n.ok()) return n.status();
        if (*n == 0) return Status::Corruption("connection closed inside a chunk");
      }
      if (buf->compare(size, 2, "\r\n") != 0) {
        return Status::Corruption("chunk data not followed by CRLF");
      }
      piece->assign(*buf, 0, size);
      buf->erase(0, size + 2);
      return true;
    }
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------------------

Result<ClientResponse> UnixHttpCall(const std::string& socket_path, const std::string& method,
                                    const std::string& target, const std::string& body,
                                    std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  UnixHttpConnection conn;
  MISSY_RETURN_IF_ERROR(conn.Connect(socket_path, timeout));
  return conn.SendRaw(BuildRequest(method, target, body, /*close=*/true),
                      std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

UnixHttpConnection::~UnixHttpConnection() { Close(); }

UnixHttpConnection::UnixHttpConnection(UnixHttpConnection&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      buf_(std::move(other.buf_)),
      reused_(other.reused_),
      body_(std::exchange(other.body_, BodyState())),
      line_buf_(std::move(other.line_buf_)) {}

UnixHttpConnection& UnixHttpConnection::operator=(UnixHttpConnection&& other) noexcept {
  if (this != &other) {
    Close();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    buf_ = std::move(other.buf_);
    reused_ = other.reused_;
    body_ = std::exchange(other.body_, BodyState());
    line_buf_ = std::move(other.line_buf_);
  }
  return *this;
}

void UnixHttpConnection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  buf_.clear();
  reused_ = false;
  body_ = BodyState();
  line_buf_.clear();
}

Status UnixHttpConnection::Connect(const std::string& socket_path,
                                   std::chrono::milliseconds timeout) {
  Close();
  path_ = socket_path;
  auto fd = ConnectUnix(path_, Clock::now() + timeout);
  if (!fd.ok()) return fd.status();
  fd_ = *fd;
  return Status::Ok();
}

Result<ClientResponse> UnixHttpConnection::RoundTrip(std::string_view bytes,
                                                     Clock::time_point deadline,
                                                     bool* nothing_received, bool head_only) {
  bool peer_closed = false;
  *nothing_received = false;
  Status w = WriteAll(fd_, bytes, deadline, &peer_closed);
  if (!w.ok()) {
    Close();
    return w;
  }
  auto res = ReadHead(fd_, &buf_, deadline, nothing_received, &body_);
  if (!res.ok()) {
    Close();
    return res;
  }
  if (peer_closed) body_.must_close = true;
  if (head_only) {
    if (!body_.active) BodyEnded();
    return res;
  }
  std::string piece;
  for (;;) {
    auto more = ReadBodyPiece(fd_, &buf_, deadline, &body_, &piece);
    if (!more.ok()) {
      Close();
      return more.status();
    }
    if (!*more) break;
    if (res->body.size() + piece.size() > kMaxBodyBytes) {
      Close();
      return Status::Corruption("response too large");
    }
    res->body += piece;
  }
  BodyEnded();
  return res;
}

void UnixHttpConnection::BodyEnded() {
  body_.active = false;
  if (body_.must_close) {
    std::string unread_lines = std::move(line_buf_);  // still to be returned by ReadBodyLine
    Close();
    line_buf_ = std::move(unread_lines);
  } else {
    reused_ = true;
  }
}

Result<ClientResponse> UnixHttpConnection::SendRaw(std::string_view bytes,
                                                   std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  if (body_.active) Close();  // a streamed body was left unread
  if (fd_ < 0) {
    if (path_.empty()) return Status::InvalidArgument("not connected");
    MISSY_RETURN_IF_ERROR(Connect(path_, timeout));
  }
  bool nothing = false;
  return RoundTrip(bytes, deadline, &nothing, /*head_only=*/false);
}

Result<ClientResponse> UnixHttpConnection::Exchange(const std::string& request,
                                                    Clock::time_point deadline, bool head_only) {
  if (body_.active) Close();  // a streamed body was left unread
  for (int attempt = 0;; ++attempt) {
    if (fd_ < 0) {
      if (path_.empty()) return Status::InvalidArgument("not connected");
      MISSY_RETURN_IF_ERROR(
          Connect(path_, std::chrono::duration_cast<milliseconds>(deadline - Clock::now())));
    }
    const bool was_reused = reused_;
    bool nothing = false;
    auto res = RoundTrip(request, deadline, &nothing, head_only);
    // A reused connection the server had already closed (idle timeout): the request was
    // not seen, so sending it again on a fresh connection is safe.
    if (res.ok() || !was_reused || !nothing || attempt > 0) return res;
  }
}

Result<ClientResponse> UnixHttpConnection::Call(const std::string& method,
                                                const std::string& target, const std::string& body,
                                                std::chrono::milliseconds timeout) {
  return Exchange(BuildRequest(method, target, body, /*close=*/false, extra_headers_), Clock::now() + timeout,
                  /*head_only=*/false);
}

Result<ClientResponse> UnixHttpConnection::Start(const std::string& method,
                                                 const std::string& target, const std::string& body,
                                                 std::chrono::milliseconds timeout) {
  line_buf_.clear();
  return Exchange(BuildRequest(method, target, body, /*close=*/false, extra_headers_), Clock::now() + timeout,
                  /*head_only=*/true);
}

Result<std::optional<std::string>> UnixHttpConnection::ReadBodyChunk(
    std::chrono::milliseconds timeout) {
  if (!line_buf_.empty()) return std::optional<std::string>(std::exchange(line_buf_, {}));
  if (!body_.active || fd_ < 0) return std::optional<std::string>();
  std::string piece;
  auto more = ReadBodyPiece(fd_, &buf_, Clock::now() + timeout, &body_, &piece);
  if (!more.ok()) {
    Close();
    return more.status();
  }
  if (!*more) {
    BodyEnded();
    return std::optional<std::string>();
  }
  if (!body_.active) BodyEnded();  // the last bytes of a Content-Length body
  return std::optional<std::string>(std::move(piece));
}

Result<std::optional<std::string>> UnixHttpConnection::ReadBodyLine(
    std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    size_t nl = line_buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = line_buf_.substr(0, nl);
      line_buf_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return std::optional<std::string>(std::move(line));
    }
    if (!body_.active || fd_ < 0) {
      if (line_buf_.empty()) return std::optional<std::string>();
      return std::optional<std::string>(std::exchange(line_buf_, {}));
    }
    std::string piece;
    auto more = ReadBodyPiece(fd_, &buf_, deadline, &body_, &piece);
    if (!more.ok()) {
      Close();
      return more.status();
    }
    line_buf_ += piece;
    if (!body_.active) BodyEnded();
  }
}

// ---------------------------------------------------------------------------------------

LineSubscriber::~LineSubscriber() { Close(); }

LineSubscriber::LineSubscriber(LineSubscriber&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      buf_(std::move(other.buf_)),
      eof_(other.eof_),
      timed_out_(other.timed_out_) {}

LineSubscriber& LineSubscriber::operator=(LineSubscriber&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    buf_ = std::move(other.buf_);
    eof_ = other.eof_;
    timed_out_ = other.timed_out_;
  }
  return *this;
}

void LineSubscriber::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  buf_.clear();
}

Status LineSubscriber::Connect(const std::string& socket_path, const std::string& first_line,
                               std::chrono::milliseconds timeout) {
  Close();
  eof_ = false;
  timed_out_ = false;
  auto deadline = Clock::now() + timeout;
  auto fd = ConnectUnix(socket_path, deadline);
  if (!fd.ok()) return fd.status();
  fd_ = *fd;
  if (!first_line.empty()) {
    bool peer_closed = false;
    Status s = WriteAll(fd_, first_line + "\n", deadline, &peer_closed);
    if (!s.ok()) {
      Close();
      return s;
    }
  }
  return Status::Ok();
}

Result<std::string> LineSubscriber::ReadLine(std::chrono::milliseconds timeout) {
  timed_out_ = false;
  auto deadline = Clock::now() + timeout;
  for (;;) {
    size_t nl = buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    if (fd_ < 0 || eof_) {
      eof_ = true;
      return Status::Unavailable("connection closed by the server");
    }
    auto n = ReadSome(fd_, &buf_, deadline, "waiting for a line");
    if (!n.ok()) {
      timed_out_ = n.status().message().rfind("timed out", 0) == 0;
      return n.status();
    }
    if (*n == 0) {
      eof_ = true;
      buf_.clear();
      return Status::Unavailable("connection closed by the server");
    }
  }
}

}  // namespace missy

#include "cli/http_client.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <thread>
#include <utility>

namespace missy {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr uint64_t kMaxBodyBytes = uint64_t{1} << 30;  // a whole answer read by Call()

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

milliseconds Until(Clock::time_point deadline) {
  return std::max(milliseconds(0),
                  std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

// A failure of the shared client as the Status this client's callers know.
Status ToStatus(const httpclient::Failure& f, const std::string& path) {
  switch (f.kind) {
    case httpclient::FailureKind::kInvalidArgument:
      return Status::InvalidArgument(f.message);
    case httpclient::FailureKind::kTruncated:
    case httpclient::FailureKind::kMalformed:
    case httpclient::FailureKind::kTooLarge:
      return Status::Corruption(f.message);
    default:
      if (f.refused && !path.starts_with("tcp:")) {
        return Status::Unavailable(f.message + " (is missyd running?)");
      }
      return Status::Unavailable(f.message);
  }
}

// `lines` ("Name: value\r\n" each) as a header list.
void AppendHeaderLines(std::string_view lines, httpclient::HeaderList* out) {
  while (!lines.empty()) {
    const size_t nl = lines.find('\n');
    std::string_view line = Trim(lines.substr(0, nl));
    lines = nl == std::string_view::npos ? std::string_view() : lines.substr(nl + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    out->emplace_back(std::string(Trim(line.substr(0, colon))),
                      std::string(Trim(line.substr(colon + 1))));
  }
}

std::string BuildRequest(const std::string& method, const std::string& target,
                         const std::string& body, bool close, const std::string& extra = {}) {
  httpclient::HeaderList headers = {{"Host", "localhost"}, {"User-Agent", "missyctl"}};
  if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    headers.emplace_back("Content-Length", std::to_string(body.size()));
  }
  if (close) headers.emplace_back("Connection", "close");
  AppendHeaderLines(extra, &headers);
  return httpclient::FormatRequest(method, target, headers, body);
}

httpclient::ReadOptions OptionsFor(std::string_view method, bool streamed) {
  httpclient::ReadOptions options;
  if (!streamed) options.body_limit = kMaxBodyBytes;
  options.no_body = method == "HEAD";
  return options;
}

}  // namespace

// ---------------------------------------------------------------------------------------

Result<ClientResponse> UnixHttpCall(const std::string& socket_path, const std::string& method,
                                    const std::string& target, const std::string& body,
                                    std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  UnixHttpConnection conn;
  MISSY_RETURN_IF_ERROR(conn.Connect(socket_path, timeout));
  return conn.SendRaw(BuildRequest(method, target, body, /*close=*/true), Until(deadline));
}

UnixHttpConnection::~UnixHttpConnection() = default;
UnixHttpConnection::UnixHttpConnection(UnixHttpConnection&& other) noexcept = default;
UnixHttpConnection& UnixHttpConnection::operator=(UnixHttpConnection&& other) noexcept = default;

void UnixHttpConnection::Close() {
  conn_.Close();
  line_buf_.clear();
}

Status UnixHttpConnection::Connect(const std::string& socket_path,
                                   std::chrono::milliseconds timeout) {
  Close();
  path_ = socket_path;
  auto endpoint = httpclient::Endpoint::Parse(path_);
  if (!endpoint.ok()) return endpoint.status();
  if (auto failure = conn_.Connect(*endpoint, timeout, timeout, Clock::now() + timeout)) {
    return ToStatus(*failure, path_);
  }
  return Status::Ok();
}

Result<ClientResponse> UnixHttpConnection::RoundTrip(std::string_view bytes,
                                                     Clock::time_point deadline, bool head_only,
                                                     const httpclient::ReadOptions& options,
                                                     bool* before_answer) {
  *before_answer = false;
  const auto fail = [&](const httpclient::Failure& failure) {
    *before_answer = failure.before_answer;
    return ToStatus(failure, path_);
  };
  if (auto failure = conn_.Write(bytes, deadline)) return fail(*failure);
  httpclient::ResponseHead head;
  if (auto failure = conn_.ReadHead(deadline, options, &head)) return fail(*failure);
  ClientResponse res;
  res.status = head.status;
  for (auto& [name, value] : head.headers) {
    auto [it, inserted] = res.headers.emplace(Lower(name), value);
    if (!inserted) it->second += ", " + value;
  }
  if (head_only) return res;
  std::string piece;
  while (conn_.body_pending()) {
    if (auto failure = conn_.ReadBody(deadline, httpclient::BodyPiece::kArrived, &piece)) {
      return fail(*failure);
    }
    res.body += piece;
  }
  return res;
}

Result<ClientResponse> UnixHttpConnection::SendRaw(std::string_view bytes,
                                                   std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  if (conn_.body_pending()) Close();  // a streamed body was left unread
  if (!conn_.open()) {
    if (path_.empty()) return Status::InvalidArgument("not connected");
    MISSY_RETURN_IF_ERROR(Connect(path_, timeout));
  }
  bool before_answer = false;
  return RoundTrip(bytes, deadline, /*head_only=*/false, OptionsFor("", false), &before_answer);
}

Result<ClientResponse> UnixHttpConnection::Exchange(const std::string& request,
                                                    const std::string& method,
                                                    Clock::time_point deadline, bool head_only) {
  if (conn_.body_pending()) Close();  // a streamed body was left unread
  for (int attempt = 0;; ++attempt) {
    if (!conn_.open()) {
      if (path_.empty()) return Status::InvalidArgument("not connected");
      MISSY_RETURN_IF_ERROR(Connect(path_, Until(deadline)));
    }
    const bool was_reused = conn_.reused();
    bool before_answer = false;
    auto res =
        RoundTrip(request, deadline, head_only, OptionsFor(method, head_only), &before_answer);
    // A reused connection the server had already closed (idle timeout): the request was
    // not seen, so sending it again on a fresh connection is safe.
    if (res.ok() || !was_reused || !before_answer || attempt > 0) return res;
  }
}

Result<ClientResponse> UnixHttpConnection::Call(const std::string& method,
                                                const std::string& target, const std::string& body,
                                                std::chrono::milliseconds timeout) {
  return Exchange(BuildRequest(method, target, body, /*close=*/false, extra_headers_), method,
                  Clock::now() + timeout, /*head_only=*/false);
}

Result<ClientResponse> UnixHttpConnection::Start(const std::string& method,
                                                 const std::string& target, const std::string& body,
                                                 std::chrono::milliseconds timeout) {
  line_buf_.clear();
  return Exchange(BuildRequest(method, target, body, /*close=*/false, extra_headers_), method,
                  Clock::now() + timeout, /*head_only=*/true);
}

Result<std::optional<std::string>> UnixHttpConnection::ReadBodyChunk(
    std::chrono::milliseconds timeout) {
  if (!line_buf_.empty()) return std::optional<std::string>(std::exchange(line_buf_, {}));
  std::string piece;
  if (auto failure =
          conn_.ReadBody(Clock::now() + timeout, httpclient::BodyPiece::kWholeChunk, &piece)) {
    return ToStatus(*failure, path_);
  }
  if (piece.empty()) return std::optional<std::string>();  // the body ended
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
    if (!conn_.body_pending()) {
      if (line_buf_.empty()) return std::optional<std::string>();
      return std::optional<std::string>(std::exchange(line_buf_, {}));
    }
    std::string piece;
    if (auto failure = conn_.ReadBody(deadline, httpclient::BodyPiece::kArrived, &piece)) {
      line_buf_.clear();
      return ToStatus(*failure, path_);
    }
    line_buf_ += piece;
  }
}

// ---------------------------------------------------------------------------------------
// LineSubscriber: the audit socket speaks NDJSON, not HTTP; plain POSIX calls.

namespace {

int RemainingMs(Clock::time_point deadline) {
  return static_cast<int>(std::min<long long>(Until(deadline).count(), 1 << 30));
}

// Waits until `fd` is ready for `events`; kUnavailable on timeout.
Status WaitFor(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, RemainingMs(deadline));
    if (rc > 0) return Status::Ok();
    if (rc == 0) return Status::Unavailable(std::string("timed out ") + what);
    if (errno != EINTR) return Status::Unavailable(std::string("poll: ") + strerror(errno));
  }
}

Result<int> ConnectUnix(const std::string& path, Clock::time_point deadline) {
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

Status WriteAll(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      MISSY_RETURN_IF_ERROR(WaitFor(fd, POLLOUT, deadline, "writing"));
      continue;
    }
    return Status::Unavailable(std::string("send: ") + strerror(errno));
  }
  return Status::Ok();
}

// Appends what is available to `buf`; returns the number of bytes read, 0 on EOF.
Result<size_t> ReadSome(int fd, std::string* buf, Clock::time_point deadline) {
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
      MISSY_RETURN_IF_ERROR(WaitFor(fd, POLLIN, deadline, "waiting for a line"));
      continue;
    }
    return Status::Unavailable(std::string("recv: ") + strerror(errno));
  }
}

}  // namespace

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
    Status s = WriteAll(fd_, first_line + "\n", deadline);
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
    auto n = ReadSome(fd_, &buf_, deadline);
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

// The only translation unit that includes Asio and Beast. See net.h for the contract.
//
// Threading: one io_context run by options.handler_threads threads. The acceptors, the
// grace timer and the signal set live on one control strand; each HTTP session, each
// subscriber and each repeating timer has its own strand. Publish() only takes short
// mutexes and posts; it never touches a socket.
#include "daemon/net.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <deque>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

namespace missy {

bool PeerAllowed(uint32_t peer_uid, uint32_t self_uid) { return peer_uid == self_uid; }

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using Local = asio::local::stream_protocol;
using error_code = boost::system::error_code;

std::string Errno(int err) { return std::string(strerror(err)); }

std::string JsonError(std::string_view code, std::string_view message) {
  json::object err;
  err["code"] = code;
  err["message"] = message;
  err["field"] = "";
  json::object root;
  root["error"] = std::move(err);
  return json::serialize(root);
}

// ---------------------------------------------------------------------------------------
// Socket files.

// Creates the missing components of `dir` with mode 0700.
Status PrepareDirectory(const std::filesystem::path& dir) {
  if (dir.empty()) return Status::Ok();
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(dir.string() + " is not a directory");
    if ((st.st_mode & 0077) != 0) {
      spdlog::warn("socket directory {} is accessible by other users (mode {:o})", dir.string(),
                   st.st_mode & 07777);
    }
    return Status::Ok();
  }
  MISSY_RETURN_IF_ERROR(PrepareDirectory(dir.parent_path()));
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::Internal("cannot create directory " + dir.string() + ": " + Errno(errno));
  }
  if (chmod(dir.c_str(), 0700) != 0) {
    return Status::Internal("cannot chmod 0700 " + dir.string() + ": " + Errno(errno));
  }
  return Status::Ok();
}

// True if something accepts connections on `path`.
bool SomethingListens(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int err = errno;
  close(fd);
  // EAGAIN: a listener whose backlog is full is still a live listener.
  return rc == 0 || err == EAGAIN || err == EINPROGRESS;
}

// A bound, listening socket file and the identity of the inode we created, so that we
// only ever unlink our own file.
struct SocketFile {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  bool bound = false;

  void Unlink() {
    if (!bound) return;
    bound = false;
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && st.st_dev == dev && st.st_ino == ino) {
      unlink(path.c_str());
    }
  }
};

Result<int> BindUnixListener(const std::string& path, SocketFile* file) {
  sockaddr_un addr{};
  if (path.empty()) return Status::InvalidArgument("socket path is empty");
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("socket path is too long (" + std::to_string(path.size()) +
                                   " bytes, at most " + std::to_string(sizeof(addr.sun_path) - 1) +
                                   "): " + path);
  }
  MISSY_RETURN_IF_ERROR(PrepareDirectory(std::filesystem::path(path).parent_path()));

  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::AlreadyExists(path + " exists and is not a socket; refusing to replace it");
    }
    if (SomethingListens(path)) {
      return Status::AlreadyExists("another missyd is listening on " + path);
    }
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::Internal("cannot remove stale socket " + path + ": " + Errno(errno));
    }
    spdlog::info("replaced stale socket file {}", path);
  }

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Internal("socket(): " + Errno(errno));
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(fd);
    if (err == EADDRINUSE) return Status::AlreadyExists("another missyd is listening on " + path);
    return Status::Internal("cannot bind " + path + ": " + Errno(err));
  }
  // The directory is 0700 already; the chmod happens before listen(), so nobody can
  // connect while the file still has the umask's mode.
  if (chmod(path.c_str(), 0600) != 0 || lstat(path.c_str(), &st) != 0) {
    int err = errno;
    close(fd);
    unlink(path.c_str());
    return Status::Internal("cannot chmod 0600 " + path + ": " + Errno(err));
  }
  if (listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    close(fd);
    unlink(path.c_str());
    return Status::Internal("cannot listen on " + path + ": " + Errno(err));
  }
  file->path = path;
  file->dev = st.st_dev;
  file->ino = st.st_ino;
  file->bound = true;
  return fd;
}

struct PeerCred {
  bool ok = false;
  uint32_t uid = std::numeric_limits<uint32_t>::max();
  int32_t pid = 0;
};

PeerCred GetPeerCred(int fd) {
  PeerCred out;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof(cred)) {
    out.ok = true;
    out.uid = cred.uid;
    out.pid = cred.pid;
  }
  return out;
}

// One published line shared by every subscriber's queue.
struct Published {
  int64_t seq;
  std::string type;
  std::string line;
  size_t bytes() const { return line.size() + 1; }
};
using PublishedPtr = std::shared_ptr<const Published>;

class ServerImpl;

// ---------------------------------------------------------------------------------------
// HTTP session: one per connection, on its own strand.

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ServerImpl* server, Local::socket socket, PeerCred peer)
      : server_(server), stream_(std::move(socket)), peer_(peer) {}

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->WaitForRequest(); });
  }
  // Thread-safe. Idle connections close now; a request in progress finishes first.
  void OnServerStopping() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->Close();
    });
  }
  // Thread-safe. Cancels whatever is in progress.
  void ForceClose() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->Close(); });
  }

 private:
  using Stream = beast::basic_stream<Local, asio::any_io_executor, beast::unlimited_rate_policy>;

  void WaitForRequest();
  void OnIdleRead(const error_code& ec, size_t n);
  void StartRequest();
  void OnHeader(const error_code& ec);
  void ReadBody();
  void OnRead(const error_code& ec);
  void OnReadError(const error_code& ec);
  void Handle();
  void Send(int status, std::string content_type, std::string body, bool keep_alive);
  void OnWrite(const error_code& ec, bool keep_alive);
  void Close();

  ServerImpl* server_;
  Stream stream_;
  PeerCred peer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  bool busy_ = false;  // a request has started arriving and is not answered yet
  bool closed_ = false;
};

// ---------------------------------------------------------------------------------------
// Broadcast subscriber: one per audit connection, on its own strand.

class Subscriber : public std::enable_shared_from_this<Subscriber> {
 public:
  Subscriber(ServerImpl* server, Local::socket socket)
      : server_(server), socket_(std::move(socket)), timer_(socket_.get_executor()) {}

  void Start() {
    asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->ReadFirstLine(); });
  }
  // Any thread; never blocks on the socket.
  void Offer(const PublishedPtr& p);
  // Any thread.
  void Close() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
  }

 private:
  enum class Phase { kHandshake, kBacklog, kLive, kCutting, kClosed };

  void ReadFirstLine();
  void OnFirstLine(const error_code& ec, size_t n);
  void Begin(const SubscribeRequest& req);
  void Drain();
  void GoLive();
  // Drops everything queued, sends `notice` (best effort) and closes. mu_ held.
  void CutLocked(std::string notice);
  void ScheduleWriteLocked();  // mu_ held
  void DoWrite();
  void OnWrite(const error_code& ec);
  bool WantedLocked(const Published& p) const;
  void CloseNow();

  ServerImpl* server_;
  Local::socket socket_;
  asio::steady_timer timer_;

  // Strand only.
  std::string first_line_;
  bool first_line_timed_out_ = false;
  std::array<char, 512> drain_buf_{};
  std::vector<std::string> backlog_;
  size_t backlog_pos_ = 0;
  bool writing_ = false;
  bool notice_in_flight_ = false;
  bool closed_ = false;
  std::vector<PublishedPtr> in_flight_;
  size_t in_flight_bytes_ = 0;

  // Guarded by mu_ (Offer runs on publisher threads).
  std::mutex mu_;
  Phase phase_ = Phase::kHandshake;
  SubscribeRequest request_;
  int64_t live_floor_ = std::numeric_limits<int64_t>::min();  // live lines need seq > floor
  std::deque<PublishedPtr> pending_;                          // arrived before the backlog was sent
  std::deque<PublishedPtr> queue_;                            // live lines waiting to be written
  size_t queued_bytes_ = 0;                                   // pending_ + queue_ + in flight
  bool write_scheduled_ = false;
  std::string notice_;  // gap or error line to send before closing
};

// ---------------------------------------------------------------------------------------
// Repeating timer for Every().

class RepeatingTimer : public std::enable_shared_from_this<RepeatingTimer> {
 public:
  RepeatingTimer(asio::io_context& io, std::chrono::milliseconds period, std::function<void()> fn)
      : timer_(asio::make_strand(io)), period_(period), fn_(std::move(fn)) {}

  void Arm() {
    timer_.expires_after(period_);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec || self->canceled_) return;
      try {
        self->fn_();
      } catch (const std::exception& e) {
        spdlog::error("periodic task failed: {}", e.what());
      } catch (...) {
        spdlog::error("periodic task failed with an unknown exception");
      }
      self->Arm();
    });
  }
  void Cancel() {
    asio::post(timer_.get_executor(), [self = shared_from_this()] {
      self->canceled_ = true;
      self->timer_.cancel();
    });
  }

 private:
  asio::steady_timer timer_;
  std::chrono::milliseconds period_;
  std::function<void()> fn_;
  bool canceled_ = false;  // strand only
};

// ---------------------------------------------------------------------------------------
// The server.

class ServerImpl final : public NetServer {
 public:
  ServerImpl(const NetOptions& options, HttpHandler handler, BacklogProvider backlog)
      : io_(std::max(1, options.handler_threads)),
        work_(asio::make_work_guard(io_)),
        ctl_(asio::make_strand(io_)),
        options_(options),
        handler_(std::move(handler)),
        backlog_(std::move(backlog)),
        grace_timer_(ctl_) {
    if (options_.handler_threads < 1) options_.handler_threads = 1;
  }

  ~ServerImpl() override {
    error_code ignored;
    if (api_acceptor_) api_acceptor_->close(ignored);
    if (audit_acceptor_) audit_acceptor_->close(ignored);
    api_file_.Unlink();
    audit_file_.Unlink();
    io_.stop();
    // Remaining handlers (and the sessions they own) are destroyed with io_, which is
    // declared first and therefore destroyed last.
    {
      std::lock_guard<std::mutex> lock(subs_mu_);
      subscribers_.clear();
    }
  }

  Status Init() {
    auto api_fd = BindUnixListener(options_.api_socket_path, &api_file_);
    if (!api_fd.ok()) return api_fd.status();
    api_acceptor_.emplace(ctl_);
    error_code ec;
    api_acceptor_->assign(Local(), *api_fd, ec);
    if (ec) {
      close(*api_fd);
      return Status::Internal("cannot use listening socket " + options_.api_socket_path + ": " +
                              ec.message());
    }
    if (!options_.audit_socket_path.empty()) {
      if (options_.audit_socket_path == options_.api_socket_path) {
        return Status::InvalidArgument("the audit socket path equals the API socket path: " +
                                       options_.audit_socket_path);
      }
      auto audit_fd = BindUnixListener(options_.audit_socket_path, &audit_file_);
      if (!audit_fd.ok()) return audit_fd.status();
      audit_acceptor_.emplace(ctl_);
      audit_acceptor_->assign(Local(), *audit_fd, ec);
      if (ec) {
        close(*audit_fd);
        return Status::Internal("cannot use listening socket " + options_.audit_socket_path + ": " +
                                ec.message());
      }
    }
    asio::dispatch(ctl_, [this] {
      AcceptApi();
      if (audit_acceptor_) AcceptAudit();
    });
    return Status::Ok();
  }

  void Run() override {
    std::vector<std::thread> threads;
    for (int i = 1; i < options_.handler_threads; ++i) {
      threads.emplace_back([this] { RunLoop(); });
    }
    RunLoop();
    for (auto& t : threads) t.join();
  }

  void Stop(std::chrono::milliseconds grace) override {
    if (stop_requested_.exchange(true)) return;
    asio::post(ctl_, [this, grace] { BeginShutdown(grace); });
  }

  void HandleSignals(std::function<void()> on_reload) override {
    if (stop_requested_) return;
    on_reload_ = std::move(on_reload);
    signals_.emplace(ctl_, SIGINT, SIGTERM, SIGHUP);
    WaitSignal();
  }

  void Publish(int64_t seq, const std::string& event_type, std::string line) override {
    if (stopping_.load(std::memory_order_relaxed)) return;
    std::vector<std::shared_ptr<Subscriber>> subs;
    {
      std::lock_guard<std::mutex> lock(subs_mu_);
      if (subscribers_.empty()) return;
      subs.reserve(subscribers_.size());
      for (auto& [ptr, sub] : subscribers_) subs.push_back(sub);
    }
    auto p = std::make_shared<const Published>(Published{seq, event_type, std::move(line)});
    for (auto& sub : subs) sub->Offer(p);
  }

  size_t SubscriberCount() const override {
    std::lock_guard<std::mutex> lock(subs_mu_);
    return subscribers_.size();
  }

  void Every(std::chrono::milliseconds period, std::function<void()> fn) override {
    if (period.count() <= 0) period = std::chrono::milliseconds(1);
    auto timer = std::make_shared<RepeatingTimer>(io_, period, std::move(fn));
    {
      std::lock_guard<std::mutex> lock(timers_mu_);
      if (stopping_) return;
      timers_.push_back(timer);
    }
    timer->Arm();
  }

  // For sessions and subscribers.
  const NetOptions& options() const { return options_; }
  bool stopping() const { return stopping_.load(); }
  const HttpHandler& handler() const { return handler_; }

  std::vector<std::string> FetchBacklog(const SubscribeRequest& req) {
    if (!backlog_) return {};
    try {
      return backlog_(req);
    } catch (const std::exception& e) {
      spdlog::error("audit backlog failed: {}", e.what());
    } catch (...) {
      spdlog::error("audit backlog failed with an unknown exception");
    }
    return {};
  }

  void SessionClosed(HttpSession* s) {
    bool drained = false;
    {
      std::lock_guard<std::mutex> lock(sessions_mu_);
      sessions_.erase(s);
      drained = stopping_ && sessions_.empty();
    }
    if (drained) Finish();
  }

  void SubscriberClosed(Subscriber* s) {
    std::shared_ptr<Subscriber> keep;  // destroyed outside the lock
    std::lock_guard<std::mutex> lock(subs_mu_);
    auto it = subscribers_.find(s);
    if (it != subscribers_.end()) {
      keep = std::move(it->second);
      subscribers_.erase(it);
    }
  }

 private:
  void RunLoop() {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("event loop: unexpected exception: {}", e.what());
      } catch (...) {
        spdlog::error("event loop: unexpected unknown exception");
      }
    }
  }

  // Returns false (and reports) when the peer is not allowed.
  bool CheckPeer(Local::socket& sock, PeerCred* cred) {
    *cred = GetPeerCred(sock.native_handle());
    if (cred->ok && PeerAllowed(cred->uid, static_cast<uint32_t>(geteuid()))) return true;
    const char* what = cred->ok ? "peer uid mismatch" : "peer credentials unavailable";
    spdlog::warn("{} on {}: uid {} pid {}", what, options_.api_socket_path, cred->uid, cred->pid);
    error_code ignored;
    sock.close(ignored);
    if (options_.on_security_event) {
      try {
        options_.on_security_event(what, cred->uid, cred->pid);
      } catch (...) {
        spdlog::error("on_security_event threw");
      }
    }
    return false;
  }

  // Accept errors other than cancellation (EMFILE, ...) are retried after a pause, so a
  // full descriptor table does not spin the loop.
  void RetryAcceptLater(bool api) {
    auto timer = std::make_shared<asio::steady_timer>(ctl_, std::chrono::milliseconds(100));
    timer->async_wait([this, timer, api](const error_code& ec) {
      if (ec || stopping_) return;
      api ? AcceptApi() : AcceptAudit();
    });
  }

  void AcceptApi() {
    api_acceptor_->async_accept(
        asio::make_strand(io_), [this](const error_code& ec, Local::socket sock) {
          if (ec == asio::error::operation_aborted || stopping_) return;
          if (ec) {
            spdlog::warn("accept on {}: {}", options_.api_socket_path, ec.message());
            return RetryAcceptLater(true);
          }
          PeerCred cred;
          if (CheckPeer(sock, &cred)) {
            auto session = std::make_shared<HttpSession>(this, std::move(sock), cred);
            {
              std::lock_guard<std::mutex> lock(sessions_mu_);
              sessions_.emplace(session.get(), session);
            }
            session->Start();
          }
          AcceptApi();
        });
  }

  void AcceptAudit() {
    audit_acceptor_->async_accept(
        asio::make_strand(io_), [this](const error_code& ec, Local::socket sock) {
          if (ec == asio::error::operation_aborted || stopping_) return;
          if (ec) {
            spdlog::warn("accept on {}: {}", options_.audit_socket_path, ec.message());
            return RetryAcceptLater(false);
          }
          PeerCred cred;
          if (CheckPeer(sock, &cred)) {
            auto sub = std::make_shared<Subscriber>(this, std::move(sock));
            {
              std::lock_guard<std::mutex> lock(subs_mu_);
              subscribers_.emplace(sub.get(), sub);
            }
            sub->Start();
          }
          AcceptAudit();
        });
  }

  void WaitSignal() {
    signals_->async_wait([this](const error_code& ec, int signo) {
      if (ec) return;
      if (signo == SIGHUP) {
        spdlog::info("SIGHUP: reloading");
        if (on_reload_) {
          try {
            on_reload_();
          } catch (const std::exception& e) {
            spdlog::error("reload failed: {}", e.what());
          } catch (...) {
            spdlog::error("reload failed with an unknown exception");
          }
        }
        WaitSignal();
        return;
      }
      spdlog::info("{}: shutting down", signo == SIGINT ? "SIGINT" : "SIGTERM");
      Stop(options_.shutdown_grace);
    });
  }

  // On ctl_.
  void BeginShutdown(std::chrono::milliseconds grace) {
    {
      // Taken so that Every() racing with Stop() either registers before or sees stopping_.
      std::lock_guard<std::mutex> lock(timers_mu_);
      stopping_ = true;
    }
    error_code ignored;
    if (api_acceptor_) api_acceptor_->close(ignored);
    if (audit_acceptor_) audit_acceptor_->close(ignored);
    api_file_.Unlink();
    audit_file_.Unlink();
    if (signals_) signals_->cancel(ignored);
    {
      std::lock_guard<std::mutex> lock(timers_mu_);
      for (auto& t : timers_) t->Cancel();
      timers_.clear();
    }
    std::vector<std::shared_ptr<Subscriber>> subs;
    {
      std::lock_guard<std::mutex> lock(subs_mu_);
      for (auto& [ptr, sub] : subscribers_) subs.push_back(sub);
    }
    for (auto& s : subs) s->Close();

    bool drained = false;
    for (auto& s : SessionSnapshot(&drained)) s->OnServerStopping();
    if (drained) return Finish();
    grace_timer_.expires_after(grace);
    grace_timer_.async_wait([this](const error_code& ec) {
      if (ec) return;
      bool none = false;
      auto sessions = SessionSnapshot(&none);
      if (!sessions.empty()) {
        spdlog::warn("shutdown grace expired; closing {} connection(s)", sessions.size());
      }
      for (auto& s : sessions) s->ForceClose();
      Finish();
    });
  }

  std::vector<std::shared_ptr<HttpSession>> SessionSnapshot(bool* empty) {
    std::vector<std::shared_ptr<HttpSession>> out;
    std::lock_guard<std::mutex> lock(sessions_mu_);
    for (auto& [ptr, weak] : sessions_) {
      if (auto s = weak.lock()) out.push_back(std::move(s));
    }
    *empty = sessions_.empty();
    return out;
  }

  // Any thread, once: lets io_.run() return as soon as the cancelled operations drained.
  void Finish() {
    if (finished_.exchange(true)) return;
    asio::post(ctl_, [this] { grace_timer_.cancel(); });
    work_.reset();
  }

  // Declared first: destroyed last, after every I/O object below.
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::strand<asio::io_context::executor_type> ctl_;
  NetOptions options_;
  HttpHandler handler_;
  BacklogProvider backlog_;
  std::function<void()> on_reload_;

  std::optional<Local::acceptor> api_acceptor_;
  std::optional<Local::acceptor> audit_acceptor_;
  SocketFile api_file_;
  SocketFile audit_file_;
  std::optional<asio::signal_set> signals_;
  asio::steady_timer grace_timer_;

  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> finished_{false};

  std::mutex sessions_mu_;
  std::unordered_map<HttpSession*, std::weak_ptr<HttpSession>> sessions_;
  mutable std::mutex subs_mu_;
  std::unordered_map<Subscriber*, std::shared_ptr<Subscriber>> subscribers_;
  std::mutex timers_mu_;
  std::vector<std::shared_ptr<RepeatingTimer>> timers_;
};

// ---------------------------------------------------------------------------------------
// HttpSession implementation.

void HttpSession::WaitForRequest() {
  if (closed_) return;
  if (server_->stopping()) return Close();
  if (buffer_.size() > 0) return StartRequest();  // pipelined bytes already here
  // Idle keep-alive connections get the same timeout as a request.
  stream_.expires_after(server_->options().read_timeout);
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
  parser_->body_limit(server_->options().body_limit);
  parser_->header_limit(static_cast<std::uint32_t>(std::min<size_t>(
      server_->options().header_limit, std::numeric_limits<std::uint32_t>::max())));
  // The whole request (headers and body) must arrive within one read timeout.
  stream_.expires_after(server_->options().read_timeout);
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](const error_code& ec, size_t) { self->OnHeader(ec); });
}

void HttpSession::OnHeader(const error_code& ec) {
  if (ec) return OnReadError(ec);
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
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](const error_code& ec, size_t) { self->OnRead(ec); });
}

void HttpSession::OnRead(const error_code& ec) {
  if (ec) return OnReadError(ec);
  Handle();
}

void HttpSession::OnReadError(const error_code& ec) {
  const auto& opts = server_->options();
  if (ec == http::error::body_limit) {
    return Send(413, "application/json",
                JsonError("payload_too_large",
                          "request body exceeds " + std::to_string(opts.body_limit) + " bytes"),
                false);
  }
  if (ec == http::error::header_limit) {
    return Send(431, "application/json",
                JsonError("headers_too_large",
                          "request headers exceed " + std::to_string(opts.header_limit) + " bytes"),
                false);
  }
  if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
      ec != http::error::partial_message && ec != http::error::end_of_stream) {
    return Send(400, "application/json",
                JsonError("invalid_argument", "malformed HTTP request: " + ec.message()), false);
  }
  // Timeout, EOF in the middle of a request, reset, cancellation: nobody to answer.
  Close();
}

void HttpSession::Handle() {
  http::request<http::string_body> msg = parser_->release();
  parser_.reset();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  for (const auto& field : msg) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto [it, inserted] = req.headers.emplace(name, std::string(field.value()));
    if (!inserted) {
      it->second += ", ";
      it->second += std::string(field.value());
    }
  }
  req.body = std::move(msg.body());
  req.peer_uid = peer_.uid;
  req.peer_pid = peer_.pid;

  HttpResponse res;
  try {
    res = server_->handler()(req);
  } catch (const std::exception& e) {
    spdlog::error("handler for {} {} threw: {}", req.method, req.target, e.what());
    res = HttpResponse{500, "application/json",
                       JsonError("internal", "internal error while handling the request")};
  } catch (...) {
    spdlog::error("handler for {} {} threw an unknown exception", req.method, req.target);
    res = HttpResponse{500, "application/json",
                       JsonError("internal", "internal error while handling the request")};
  }
  const bool keep_alive = msg.keep_alive() && !server_->stopping();
  Send(res.status, std::move(res.content_type), std::move(res.body), keep_alive);
}

void HttpSession::Send(int status, std::string content_type, std::string body, bool keep_alive) {
  busy_ = true;
  response_.emplace(static_cast<http::status>(status), 11);
  response_->set(http::field::server, "missyd");
  if (!content_type.empty()) response_->set(http::field::content_type, content_type);
  response_->body() = std::move(body);
  response_->keep_alive(keep_alive);
  response_->prepare_payload();
  // A peer that does not read its response is dropped after one timeout too.
  stream_.expires_after(server_->options().read_timeout);
  http::async_write(stream_, *response_,
                    [self = shared_from_this(), keep_alive](const error_code& ec, size_t) {
                      self->OnWrite(ec, keep_alive);
                    });
}

void HttpSession::OnWrite(const error_code& ec, bool keep_alive) {
  response_.reset();
  busy_ = false;
  if (ec || !keep_alive) return Close();
  WaitForRequest();
}

void HttpSession::Close() {
  if (closed_) return;
  closed_ = true;
  error_code ignored;
  stream_.socket().shutdown(Local::socket::shutdown_send, ignored);
  stream_.close();
  server_->SessionClosed(this);
}

// ---------------------------------------------------------------------------------------
// Subscriber implementation.

constexpr std::chrono::seconds kFirstLineWait(1);
constexpr size_t kFirstLineMax = 4096;
constexpr std::chrono::milliseconds kNoticeWait(500);
constexpr size_t kWriteChunk = 256 * 1024;

std::string NoticeLine(std::string_view type, json::object detail) {
  json::object o;
  o["event_type"] = type;
  o["detail"] = std::move(detail);
  return json::serialize(o);
}

// Parses the optional first line of a subscriber.
Result<SubscribeRequest> ParseSubscribeLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n' || line.back() == ' ')) {
    line.remove_suffix(1);
  }
  SubscribeRequest req;
  if (line.empty()) return req;
  error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return Status::InvalidArgument("first line is not a JSON object");
  const json::object& o = v.get_object();
  for (const auto& [key, value] : o) {
    if (key == "since") {
      if (value.is_int64()) {
        req.since = value.get_int64();
      } else if (value.is_uint64() &&
                 value.get_uint64() <= uint64_t(std::numeric_limits<int64_t>::max())) {
        req.since = static_cast<int64_t>(value.get_uint64());
      } else {
        return Status::InvalidArgument("since must be an integer", "since");
      }
      if (req.since < -1) return Status::InvalidArgument("since must be >= -1", "since");
    } else if (key == "types") {
      if (!value.is_array()) return Status::InvalidArgument("types must be an array", "types");
      for (const auto& t : value.get_array()) {
        if (!t.is_string()) {
          return Status::InvalidArgument("types must be an array of strings", "types");
        }
        req.types.emplace_back(t.get_string());
      }
    } else {
      return Status::InvalidArgument("unknown key '" + std::string(key) + "'", std::string(key));
    }
  }
  return req;
}

int64_t SeqOfLine(const std::string& line) {
  error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return std::numeric_limits<int64_t>::min();
  const json::value* seq = v.get_object().if_contains("seq");
  if (seq && seq->is_int64()) return seq->get_int64();
  if (seq && seq->is_uint64()) return static_cast<int64_t>(seq->get_uint64());
  return std::numeric_limits<int64_t>::min();
}

void Subscriber::ReadFirstLine() {
  timer_.expires_after(kFirstLineWait);
  timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->closed_) return;
    std::lock_guard<std::mutex> lock(self->mu_);
    if (self->phase_ != Phase::kHandshake) return;
    self->first_line_timed_out_ = true;
    error_code ignored;
    self->socket_.cancel(ignored);
  });
  asio::async_read_until(
      socket_, asio::dynamic_buffer(first_line_, kFirstLineMax), '\n',
      [self = shared_from_this()](const error_code& ec, size_t n) { self->OnFirstLine(ec, n); });
}

void Subscriber::OnFirstLine(const error_code& ec, size_t n) {
  if (closed_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (phase_ != Phase::kHandshake) return;  // cut off while waiting
  }
  timer_.cancel();
  if (ec == asio::error::operation_aborted && first_line_timed_out_) return Begin({});
  if (ec == asio::error::not_found) {
    std::lock_guard<std::mutex> lock(mu_);
    json::object d;
    d["reason"] = "first line longer than " + std::to_string(kFirstLineMax) + " bytes";
    CutLocked(NoticeLine("audit.error", std::move(d)));
    return;
  }
  if (ec) return CloseNow();
  auto req = ParseSubscribeLine(std::string_view(first_line_).substr(0, n));
  first_line_.clear();
  if (!req.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    json::object d;
    d["reason"] = req.status().ToString();
    CutLocked(NoticeLine("audit.error", std::move(d)));
    return;
  }
  Begin(*req);
}

void Subscriber::Begin(const SubscribeRequest& req) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (phase_ != Phase::kHandshake) return;
    request_ = req;
    phase_ = Phase::kBacklog;
  }
  Drain();
  // Lines published from now on are held in pending_; everything persisted before is in
  // the backlog. live_floor_ removes the overlap.
  int64_t floor = req.since >= 0 ? req.since : std::numeric_limits<int64_t>::min();
  if (req.since >= 0) {
    backlog_ = server_->FetchBacklog(req);
    for (const auto& line : backlog_) floor = std::max(floor, SeqOfLine(line));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_floor_ = floor;
  }
  if (backlog_.empty()) return GoLive();
  DoWrite();
}

// Detects the peer going away; whatever it sends after the first line is ignored.
void Subscriber::Drain() {
  socket_.async_read_some(asio::buffer(drain_buf_),
                          [self = shared_from_this()](const error_code& ec, size_t) {
                            if (ec) return self->CloseNow();
                            self->Drain();
                          });
}

void Subscriber::GoLive() {
  backlog_.clear();
  backlog_pos_ = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (phase_ != Phase::kBacklog) return;
    phase_ = Phase::kLive;
    for (auto& p : pending_) {
      if (WantedLocked(*p)) {
        queue_.push_back(std::move(p));
      } else {
        queued_bytes_ -= p->bytes();
      }
    }
    pending_.clear();
  }
  DoWrite();
}

bool Subscriber::WantedLocked(const Published& p) const {
  if (p.seq <= live_floor_) return false;
  if (request_.types.empty()) return true;
  return std::find(request_.types.begin(), request_.types.end(), p.type) != request_.types.end();
}

void Subscriber::Offer(const PublishedPtr& p) {
  std::lock_guard<std::mutex> lock(mu_);
  switch (phase_) {
    case Phase::kCutting:
    case Phase::kClosed:
      return;
    case Phase::kHandshake:
    case Phase::kBacklog:
      pending_.push_back(p);
      break;
    case Phase::kLive:
      if (!WantedLocked(*p)) return;
      queue_.push_back(p);
      break;
  }
  queued_bytes_ += p->bytes();
  if (queued_bytes_ > server_->options().subscriber_buffer_bytes) {
    int64_t dropped_from = !queue_.empty()     ? queue_.front()->seq
                           : !pending_.empty() ? pending_.front()->seq
                                               : p->seq;
    json::object d;
    d["reason"] = "subscriber too slow";
    d["dropped_from_seq"] = dropped_from;
    CutLocked(NoticeLine("audit.gap", std::move(d)));
    return;
  }
  if (phase_ == Phase::kLive) ScheduleWriteLocked();
}

void Subscriber::CutLocked(std::string notice) {
  phase_ = Phase::kCutting;
  for (const auto& p : queue_) queued_bytes_ -= p->bytes();
  for (const auto& p : pending_) queued_bytes_ -= p->bytes();
  queue_.clear();
  pending_.clear();
  notice_ = std::move(notice);
  ScheduleWriteLocked();
  // Best effort: if the notice cannot be written within kNoticeWait, close anyway.
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->timer_.expires_after(kNoticeWait);
    self->timer_.async_wait([self](const error_code& ec) {
      if (!ec) self->CloseNow();
    });
  });
}

void Subscriber::ScheduleWriteLocked() {
  if (write_scheduled_) return;
  write_scheduled_ = true;
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->DoWrite(); });
}

void Subscriber::DoWrite() {
  static const char kNewline = '\n';
  if (closed_ || writing_) return;
  std::vector<asio::const_buffer> bufs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    write_scheduled_ = false;
    switch (phase_) {
      case Phase::kClosed:
      case Phase::kHandshake:
        return;
      case Phase::kCutting:
        if (notice_.empty() || notice_in_flight_) return;
        notice_ += '\n';
        notice_in_flight_ = true;
        bufs.push_back(asio::buffer(notice_));
        break;
      case Phase::kBacklog: {
        size_t bytes = 0;
        while (backlog_pos_ < backlog_.size() && bytes < kWriteChunk) {
          const std::string& line = backlog_[backlog_pos_++];
          bufs.push_back(asio::buffer(line));
          bufs.push_back(asio::buffer(&kNewline, 1));
          bytes += line.size() + 1;
        }
        break;
      }
      case Phase::kLive:
        while (!queue_.empty() && in_flight_bytes_ < kWriteChunk) {
          PublishedPtr p = std::move(queue_.front());
          queue_.pop_front();
          bufs.push_back(asio::buffer(p->line));
          bufs.push_back(asio::buffer(&kNewline, 1));
          in_flight_bytes_ += p->bytes();
          in_flight_.push_back(std::move(p));
        }
        break;
    }
  }
  if (bufs.empty()) return;
  writing_ = true;
  asio::async_write(socket_, bufs, [self = shared_from_this()](const error_code& ec, size_t) {
    self->OnWrite(ec);
  });
}

void Subscriber::OnWrite(const error_code& ec) {
  writing_ = false;
  if (ec || closed_) return CloseNow();
  if (notice_in_flight_) return CloseNow();  // the notice was the last line
  bool backlog_done = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_bytes_ -= in_flight_bytes_;
    in_flight_bytes_ = 0;
    in_flight_.clear();
    backlog_done = phase_ == Phase::kBacklog && backlog_pos_ >= backlog_.size();
  }
  if (backlog_done) return GoLive();
  DoWrite();
}

void Subscriber::CloseNow() {
  if (closed_) return;
  closed_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    phase_ = Phase::kClosed;
    queue_.clear();
    pending_.clear();
  }
  timer_.cancel();
  error_code ignored;
  socket_.shutdown(Local::socket::shutdown_both, ignored);
  socket_.close(ignored);
  server_->SubscriberClosed(this);
}

}  // namespace

Result<std::unique_ptr<NetServer>> NetServer::Create(const NetOptions& options, HttpHandler handler,
                                                     BacklogProvider backlog) {
  if (!handler) return Status::InvalidArgument("NetServer needs an HTTP handler");
  try {
    auto server = std::make_unique<ServerImpl>(options, std::move(handler), std::move(backlog));
    MISSY_RETURN_IF_ERROR(server->Init());
    return std::unique_ptr<NetServer>(std::move(server));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot start the network server: ") + e.what());
  }
}

}  // namespace missy

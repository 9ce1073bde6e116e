// NetServer: the acceptors, shutdown, signals, timers and the backlog thread. See
// server.h for the contract; connections live in http_session.cpp and broadcast.cpp.
//
// Threading: one io_context run by options.handler_threads threads. The acceptors, the
// peer checks, the grace timer and the signal set live on one control strand; each HTTP
// session, each subscriber and each repeating timer has its own strand. Publish() only
// takes short mutexes and posts; it never touches a socket. BacklogProvider calls run on
// one separate thread.
//
// Every listener (the API socket, the audit socket, each proxy listener) is a generic
// stream acceptor, Unix or TCP. A Unix peer is checked with SO_PEERCRED at once; a TCP
// peer through the kernel's socket table (tcp_peer.h), retried for a moment when its row
// is not listed yet.
#include "daemon/net/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

#include "daemon/net/connection.h"
#include "daemon/net/listen_options.h"
#include "daemon/net/tcp_listener.h"
#include "daemon/net/tcp_peer.h"
#include "daemon/net/unix_listener.h"

namespace missy {

HttpHandler SyncHandler(std::function<HttpResponse(const HttpRequest&)> fn) {
  return [fn = std::move(fn)](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    exchange->Send(fn(request));
  };
}

namespace net {
namespace {

namespace asio = boost::asio;
using Generic = asio::generic::stream_protocol;
using GenericAcceptor = asio::basic_socket_acceptor<Generic>;
using error_code = boost::system::error_code;

// A TCP peer whose row is not in the socket table yet is looked up again this often, at
// most this many times in all (about 50 ms), before it is refused.
constexpr std::chrono::milliseconds kTcpPeerRetry{10};
constexpr int kTcpPeerAttempts = 6;

// The protocol of a socket descriptor: a Unix or a TCP stream socket.
Generic ProtocolOf(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return Generic(AF_UNIX, 0);
  const int family = addr.ss_family;
  return Generic(family, family == AF_UNIX ? 0 : IPPROTO_TCP);
}

// One listening socket and what its connections are for.
struct Listener {
  enum class Role { kApi, kAudit, kProxy };
  Role role = Role::kApi;
  std::string name;  // in logs: the socket path or the address as bound
  bool tcp = false;
  std::optional<GenericAcceptor> acceptor;
  SocketFile file;                               // a socket file we bound (not adopted)
  std::shared_ptr<const HttpEndpoint> endpoint;  // kApi, kProxy
};

// Runs a function every period on its own strand, until cancelled.
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

class ServerImpl final : public NetServer, public ServerContext {
 public:
  ServerImpl(const NetOptions& options, HttpHandler handler, BacklogProvider backlog)
      : io_(std::max(1, options.handler_threads)),
        work_(asio::make_work_guard(io_)),
        ctl_(asio::make_strand(io_)),
        options_(options),
        backlog_(std::move(backlog)),
        gate_(std::make_shared<LoopGate>()),
        grace_timer_(ctl_) {
    if (options_.handler_threads < 1) options_.handler_threads = 1;
    if (options_.backlog_page_lines < 1) options_.backlog_page_lines = 1;
    if (backlog_) backlog_thread_.emplace(1);
    api_endpoint_ = std::make_shared<const HttpEndpoint>(
        HttpEndpoint{std::move(handler), "api", options_.body_limit, options_.read_timeout});
  }

  ~ServerImpl() override {
    {
      // From here on no late answer or stream write reaches the loop.
      std::lock_guard<std::mutex> lock(gate_->mu);
      gate_->open = false;
    }
    StopBacklogThread();
    CloseListeners();
    io_.stop();
    // Connections are destroyed here or with io_ (their pending handlers), which is
    // declared first and therefore destroyed last.
    {
      std::lock_guard<std::mutex> lock(sessions_mu_);
      sessions_.clear();
    }
    {
      std::lock_guard<std::mutex> lock(subs_mu_);
      subscribers_.clear();
    }
  }

  Status Init() {
    // Adopted descriptors are ours from the call on: each one a listener took closes with
    // it; the others (Init failed before their turn) close when Init returns.
    AdoptedFds adopted(options_);
    MISSY_RETURN_IF_ERROR(ValidateListenOptions(options_));
    MISSY_RETURN_IF_ERROR(AddUnixListener(Listener::Role::kApi,
                                          adopted.Take(options_.api_listen_fd),
                                          options_.api_socket_path, api_endpoint_));
    if (options_.audit_listen_fd >= 0 || !options_.audit_socket_path.empty()) {
      MISSY_RETURN_IF_ERROR(AddUnixListener(Listener::Role::kAudit,
                                            adopted.Take(options_.audit_listen_fd),
                                            options_.audit_socket_path, nullptr));
    }
    for (const ListenAddress& address : options_.proxy_listen) {
      MISSY_RETURN_IF_ERROR(AddProxyListener(address));
    }
    for (int fd : options_.proxy_listen_fds) {
      MISSY_RETURN_IF_ERROR(AddAdoptedProxyListener(adopted.Take(fd)));
    }
    for (const ListenAddress& address : options_.ui_listen) {
      MISSY_RETURN_IF_ERROR(AddUiListener(address));
    }
    asio::dispatch(ctl_, [this] {
      for (auto& listener : listeners_) Accept(listener.get());
    });
    return Status::Ok();
  }

  // NetServer.

  void Run() override {
    std::vector<std::thread> threads;
    for (int i = 1; i < options_.handler_threads; ++i) {
      threads.emplace_back([this] { RunLoop(); });
    }
    RunLoop();
    for (auto& t : threads) t.join();
    StopBacklogThread();
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
    std::vector<std::shared_ptr<BroadcastSubscriber>> subs;
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

  std::vector<std::string> ProxyAddresses() const override { return proxy_addresses_; }
  std::vector<std::string> UiAddresses() const override { return ui_addresses_; }

  // ServerContext.

  const NetOptions& options() const override { return options_; }
  bool stopping() const override { return stopping_.load(); }
  const std::shared_ptr<LoopGate>& gate() const override { return gate_; }
  bool has_backlog() const override { return static_cast<bool>(backlog_); }

  void FetchBacklogPage(const SubscribeRequest& request, int64_t after_seq,
                        std::function<void(BacklogPage)> done) override {
    if (!backlog_thread_) {
      BacklogPage empty;
      empty.last_seq_seen = after_seq;
      return done(std::move(empty));
    }
    asio::post(*backlog_thread_, [this, request, after_seq, done = std::move(done)] {
      BacklogPage page;
      page.last_seq_seen = after_seq;
      try {
        page.lines = backlog_(request, after_seq, options_.backlog_page_lines, &page.last_seq_seen);
      } catch (const std::exception& e) {
        spdlog::error("audit backlog failed: {}", e.what());
        page.failed = true;
        page.error = e.what();
      } catch (...) {
        spdlog::error("audit backlog failed with an unknown exception");
        page.failed = true;
        page.error = "unknown exception";
      }
      done(std::move(page));
    });
  }

  void ConnectionClosed(Connection* c) override {
    std::shared_ptr<Connection> keep;  // destroyed outside the locks
    bool drained = false;
    {
      std::lock_guard<std::mutex> lock(sessions_mu_);
      auto it = sessions_.find(c);
      if (it != sessions_.end()) {
        keep = std::move(it->second);
        sessions_.erase(it);
        drained = stopping_ && sessions_.empty();
      }
    }
    if (!keep) {
      std::lock_guard<std::mutex> lock(subs_mu_);
      auto it = subscribers_.find(c);
      if (it != subscribers_.end()) {
        keep = std::move(it->second);
        subscribers_.erase(it);
      }
    }
    if (drained) Finish();
  }

 private:
  // Adopts `adopted` (>= 0, socket activation) or binds `path`.
  Status AddUnixListener(Listener::Role role, int adopted, const std::string& path,
                         std::shared_ptr<const HttpEndpoint> endpoint) {
    auto listener = std::make_unique<Listener>();
    listener->role = role;
    listener->name = path;
    listener->endpoint = std::move(endpoint);
    int fd = adopted;
    if (fd < 0) {
      auto bound = BindUnixListener(path, &listener->file);
      if (!bound.ok()) return bound.status();
      fd = *bound;
    }
    return Adopt(std::move(listener), fd);
  }

  Status AddProxyListener(const ListenAddress& address) {
    auto listener = std::make_unique<Listener>();
    listener->role = Listener::Role::kProxy;
    int fd = -1;
    if (address.kind == ListenAddress::Kind::kUnix) {
      listener->name = address.ToString();
      auto bound = BindUnixListener(address.path, &listener->file);
      if (!bound.ok()) return bound.status();
      fd = *bound;
    } else {
      auto bound = BindTcpListener(address);
      if (!bound.ok()) return bound.status();
      listener->name = bound->address;
      listener->tcp = true;
      fd = bound->fd;
    }
    return ServeProxy(std::move(listener), fd, "");
  }

  // Serves `fd`, a listening TCP socket bound by someone else (socket activation), like a
  // TCP proxy listener bound here. Closes `fd` when it is refused.
  Status AddAdoptedProxyListener(int fd) {
    // Checked again here (missyd's socket activation checked it already): a proxy
    // listener receives API keys and must never be reachable from another machine.
    Result<TcpListener> checked = AdoptTcpListener(fd);
    if (!checked.ok()) {
      close(fd);
      return checked.status();
    }
    auto listener = std::make_unique<Listener>();
    listener->role = Listener::Role::kProxy;
    listener->name = checked->address;
    listener->tcp = true;
    return ServeProxy(std::move(listener), fd, " (adopted socket)");
  }

  // A proxy listener, bound or adopted, gets the proxy's endpoint and is listed.
  Status ServeProxy(std::unique_ptr<Listener> listener, int fd, std::string_view how) {
    listener->endpoint = std::make_shared<const HttpEndpoint>(
        HttpEndpoint{options_.proxy_handler, listener->name, options_.proxy_body_limit,
                     options_.proxy_read_timeout, options_.proxy_body_watch});
    const std::string name = listener->name;
    MISSY_RETURN_IF_ERROR(Adopt(std::move(listener), fd));
    proxy_addresses_.push_back(name);
    spdlog::info("proxy listening on {}{}", name, how);
    return Status::Ok();
  }

  // The inspector page's own listener: loopback TCP, checked like a proxy listener.
  Status AddUiListener(const ListenAddress& address) {
    if (address.kind == ListenAddress::Kind::kUnix) {
      return Status::InvalidArgument("the inspector listens on loopback TCP only, not " +
                                     address.ToString());
    }
    auto bound = BindTcpListener(address);
    if (!bound.ok()) return bound.status();
    auto listener = std::make_unique<Listener>();
    listener->role = Listener::Role::kProxy;
    listener->name = bound->address;
    listener->tcp = true;
    listener->endpoint = std::make_shared<const HttpEndpoint>(HttpEndpoint{
        options_.ui_handler, listener->name, size_t{1} << 20, options_.proxy_read_timeout});
    const std::string name = listener->name;
    MISSY_RETURN_IF_ERROR(Adopt(std::move(listener), bound->fd));
    ui_addresses_.push_back(name);
    spdlog::info("inspector listening on {}", name);
    return Status::Ok();
  }

  // Takes `fd` (listening) into the listener's acceptor and keeps the listener.
  Status Adopt(std::unique_ptr<Listener> listener, int fd) {
    listener->acceptor.emplace(ctl_);
    error_code ec;
    listener->acceptor->assign(ProtocolOf(fd), fd, ec);
    if (ec) {
      close(fd);
      listener->file.Unlink();
      return Status::Internal("cannot use listening socket " + listener->name + ": " +
                              ec.message());
    }
    listeners_.push_back(std::move(listener));
    return Status::Ok();
  }

  // Stops accepting and removes the socket files we bound. Idempotent.
  void CloseListeners() {
    error_code ignored;
    for (auto& listener : listeners_) {
      if (listener->acceptor) listener->acceptor->close(ignored);
      listener->file.Unlink();
    }
  }

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

  // A call in progress finishes; queued ones are dropped. Idempotent.
  void StopBacklogThread() {
    if (!backlog_thread_) return;
    backlog_thread_->stop();
    backlog_thread_->join();
  }

  void ReportRefusal(const std::string& what, uint32_t uid, int32_t pid) {
    if (!options_.on_security_event) return;
    try {
      options_.on_security_event(what, uid, pid);
    } catch (...) {
      spdlog::error("on_security_event threw");
    }
  }

  // A Unix peer: returns false (and reports) when it is not allowed.
  bool CheckPeer(int fd, const std::string& path, PeerCred* cred) {
    *cred = GetPeerCred(fd);
    if (cred->ok && PeerAllowed(cred->uid, static_cast<uint32_t>(geteuid()))) return true;
    const char* what = cred->ok ? "peer uid mismatch" : "peer credentials unavailable";
    spdlog::warn("{} on {}: uid {} pid {}", what, path, cred->uid, cred->pid);
    ReportRefusal(what, cred->uid, cred->pid);
    return false;
  }

  // A TCP peer (on ctl_): its uid from the socket table, looked up again a few times
  // while its row is missing. A peer that is not allowed gets a session that answers 403.
  void CheckTcpPeer(Listener* listener, std::shared_ptr<OwnedFd> fd, int attempt) {
    std::optional<uint32_t> uid = TcpPeerUid(fd->get());
    if (!uid && attempt + 1 < kTcpPeerAttempts) {
      auto timer = std::make_shared<asio::steady_timer>(ctl_, kTcpPeerRetry);
      timer->async_wait([this, timer, listener, fd, attempt](const error_code& ec) {
        if (ec || stopping_) return;  // `fd` closes with its last reference
        CheckTcpPeer(listener, fd, attempt + 1);
      });
      return;
    }
    PeerCred cred;
    cred.ok = uid.has_value();
    if (uid) cred.uid = *uid;
    const bool allowed = uid && PeerAllowed(*uid, static_cast<uint32_t>(geteuid()));
    if (!allowed) {
      const std::string what =
          std::string(uid ? "peer uid mismatch on " : "peer uid not found on ") + listener->name;
      spdlog::warn("{}: uid {}", what, cred.uid);
      ReportRefusal(what, cred.uid, 0);
    }
    const int one = 1;  // streamed answers go out chunk by chunk
    setsockopt(fd->get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Register(MakeHttpSession(io_, this, fd->release(), cred, listener->endpoint, !allowed));
  }

  // Accept errors other than cancellation (EMFILE, ...) are retried after a pause, so a
  // full descriptor table does not spin the loop.
  void RetryAcceptLater(Listener* listener) {
    auto timer = std::make_shared<asio::steady_timer>(ctl_, std::chrono::milliseconds(100));
    timer->async_wait([this, timer, listener](const error_code& ec) {
      if (ec || stopping_) return;
      Accept(listener);
    });
  }

  void Accept(Listener* listener) {
    listener->acceptor->async_accept(
        ctl_, [this, listener](const error_code& ec, Generic::socket sock) {
          if (ec == asio::error::operation_aborted || stopping_) return;
          if (ec) {
            spdlog::warn("accept on {}: {}", listener->name, ec.message());
            return RetryAcceptLater(listener);
          }
          error_code rec;
          int fd = sock.release(rec);
          if (rec) {
            spdlog::warn("accept on {}: {}", listener->name, rec.message());
          } else {
            Admit(listener, fd);
          }
          Accept(listener);
        });
  }

  // Checks the peer of an accepted connection, then serves it.
  void Admit(Listener* listener, int fd) {
    if (listener->tcp) return CheckTcpPeer(listener, std::make_shared<OwnedFd>(fd), 0);
    PeerCred cred;
    if (!CheckPeer(fd, listener->name, &cred)) {
      close(fd);
      return;
    }
    if (listener->role == Listener::Role::kAudit) {
      Register(MakeSubscriber(io_, this, fd));
    } else {
      Register(MakeHttpSession(io_, this, fd, cred, listener->endpoint));
    }
  }

  void Register(std::shared_ptr<Connection> session) {
    if (!session) return;
    {
      std::lock_guard<std::mutex> lock(sessions_mu_);
      sessions_.emplace(session.get(), session);
    }
    session->Start();
  }

  void Register(std::shared_ptr<BroadcastSubscriber> sub) {
    if (!sub) return;
    {
      std::lock_guard<std::mutex> lock(subs_mu_);
      subscribers_.emplace(sub.get(), sub);
    }
    sub->Start();
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
    CloseListeners();
    error_code ignored;
    if (signals_) signals_->cancel(ignored);
    {
      std::lock_guard<std::mutex> lock(timers_mu_);
      for (auto& t : timers_) t->Cancel();
      timers_.clear();
    }
    if (options_.on_stopping) {
      try {
        options_.on_stopping();
      } catch (const std::exception& e) {
        spdlog::error("on_stopping failed: {}", e.what());
      } catch (...) {
        spdlog::error("on_stopping failed with an unknown exception");
      }
    }
    std::vector<std::shared_ptr<BroadcastSubscriber>> subs;
    {
      std::lock_guard<std::mutex> lock(subs_mu_);
      for (auto& [ptr, sub] : subscribers_) subs.push_back(sub);
    }
    for (auto& s : subs) s->OnServerStopping();

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

  std::vector<std::shared_ptr<Connection>> SessionSnapshot(bool* empty) {
    std::vector<std::shared_ptr<Connection>> out;
    std::lock_guard<std::mutex> lock(sessions_mu_);
    for (auto& [ptr, s] : sessions_) out.push_back(s);
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
  BacklogProvider backlog_;
  std::shared_ptr<const HttpEndpoint> api_endpoint_;
  std::shared_ptr<LoopGate> gate_;
  std::function<void()> on_reload_;
  std::optional<asio::thread_pool> backlog_thread_;  // one thread; set when backlog_ is

  std::vector<std::unique_ptr<Listener>> listeners_;  // set by Init(), then fixed
  std::vector<std::string> ui_addresses_;             // set by Init(), then fixed
  std::vector<std::string> proxy_addresses_;          // set by Init(), then fixed
  std::optional<asio::signal_set> signals_;
  asio::steady_timer grace_timer_;

  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> finished_{false};

  std::mutex sessions_mu_;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> sessions_;
  mutable std::mutex subs_mu_;
  std::unordered_map<Connection*, std::shared_ptr<BroadcastSubscriber>> subscribers_;
  std::mutex timers_mu_;
  std::vector<std::shared_ptr<RepeatingTimer>> timers_;
};

}  // namespace
}  // namespace net

Result<std::unique_ptr<NetServer>> NetServer::Create(const NetOptions& options, HttpHandler handler,
                                                     BacklogProvider backlog) {
  if (!handler) {
    net::AdoptedFds adopted(options);  // ours from the call on: closed
    return Status::InvalidArgument("NetServer needs an HTTP handler");
  }
  try {
    auto server =
        std::make_unique<net::ServerImpl>(options, std::move(handler), std::move(backlog));
    MISSY_RETURN_IF_ERROR(server->Init());
    return std::unique_ptr<NetServer>(std::move(server));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot start the network server: ") + e.what());
  }
}

}  // namespace missy

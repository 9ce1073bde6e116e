// What the server, its HTTP sessions and its broadcast subscribers share (internal to
// daemon/net). No Asio here: connections are built from a native descriptor on an
// io_context that is only forward-declared.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/net/server.h"
#include "daemon/net/unix_listener.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace missy::net {

// Threads that do not run the event loop (handlers answering late) reach a connection
// only while holding `mu` with `open` true; the server closes the gate before it tears
// the loop down, so no post ever reaches a destroyed io_context.
struct LoopGate {
  std::mutex mu;
  bool open = true;
};

// {"error":{"code":...,"message":...,"field":""}}
std::string JsonError(std::string_view code, std::string_view message);

// One published line, shared by every subscriber's queue.
struct Published {
  int64_t seq;
  std::string type;
  std::string line;
  size_t bytes() const { return line.size() + 1; }
};
using PublishedPtr = std::shared_ptr<const Published>;

// One page from the BacklogProvider, as handed back to a subscriber.
struct BacklogPage {
  std::vector<std::string> lines;
  int64_t last_seq_seen = 0;
  bool failed = false;  // the provider threw; `error` says what
  std::string error;
};

// What the HTTP sessions of one listener share: whom they call, with which limits.
struct HttpEndpoint {
  HttpHandler handler;
  std::string listener;  // HttpRequest::listener: "api", "127.0.0.1:8788", "unix:/p"
  size_t body_limit = 0;
  std::chrono::milliseconds read_timeout{0};  // also bounds each response write
  // NetOptions::proxy_body_watch, for the proxy listeners (else empty).
  std::function<std::shared_ptr<BodyWatch>(const HttpRequest& head)> body_watch{};
};

// An accepted connection the server tracks until it reports itself closed.
class Connection {
 public:
  virtual ~Connection() = default;
  // Begins serving. Called once, after the server registered the connection.
  virtual void Start() = 0;
  // Thread-safe. The server stops: close when idle, let work in progress finish.
  virtual void OnServerStopping() = 0;
  // Thread-safe. Cancels whatever is in progress.
  virtual void ForceClose() = 0;
};

class BroadcastSubscriber : public Connection {
 public:
  // Any thread; never blocks on the socket.
  virtual void Offer(const PublishedPtr& line) = 0;
};

// The server as its connections see it. Every method is thread-safe.
class ServerContext {
 public:
  virtual ~ServerContext() = default;
  virtual const NetOptions& options() const = 0;
  virtual bool stopping() const = 0;
  virtual const std::shared_ptr<LoopGate>& gate() const = 0;
  virtual bool has_backlog() const = 0;
  // Calls the BacklogProvider for one page on the backlog thread, then `done` there.
  virtual void FetchBacklogPage(const SubscribeRequest& request, int64_t after_seq,
                                std::function<void(BacklogPage)> done) = 0;
  // A connection closed itself (once, on its strand); the server forgets it.
  virtual void ConnectionClosed(Connection* connection) = 0;
};

// Both take ownership of the connected descriptor `fd` (a Unix or TCP stream socket);
// each connection gets its own strand of `io`. Call Start() on the result; null when `fd`
// cannot be used (it is closed then).
// A session with `refuse_peer` reads one request's header, answers it 403 (the JSON
// permission_error of the proxy, Connection: close) without calling the handler, and
// closes after a lingering close; it waits at most 5 s for that header.
std::shared_ptr<Connection> MakeHttpSession(boost::asio::io_context& io, ServerContext* server,
                                            int fd, PeerCred peer,
                                            std::shared_ptr<const HttpEndpoint> endpoint,
                                            bool refuse_peer = false);
std::shared_ptr<BroadcastSubscriber> MakeSubscriber(boost::asio::io_context& io,
                                                    ServerContext* server, int fd);

}  // namespace missy::net

// The network edge of the daemon: an HTTP/1.1 server and an NDJSON broadcast server,
// both on Unix sockets, both running on one event loop. Asio and Beast are confined to
// net.cpp; nothing else in the tree includes them.
//
// Guarantees:
//  - The socket's directory is created 0700 and the socket chmod 0600. A stale socket
//    file (nothing accepting on it) is replaced; a live one is refused (kAlreadyExists).
//  - Every accepted connection's peer uid (SO_PEERCRED) must equal the daemon's euid;
//    others are closed at once (and reported through on_security_event).
//  - HTTP: keep-alive, read timeout per request, header limit (431) and body limit
//    (413) answered with the JSON error shape before the connection is closed.
//  - Broadcast: each subscriber has a bounded outgoing buffer; one that falls behind is
//    sent a gap notice line (best effort) and disconnected. Publish never blocks.
//  - Stop(): stop accepting, let in-flight requests finish for up to `grace`, then
//    cancel everything; Run() returns after that. Socket files are removed on shutdown
//    (only if they are still the ones this server bound).
//  - Handlers run on the event-loop threads, one request at a time per connection; they
//    may block briefly. An exception escaping a handler becomes a 500 JSON error.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace missy {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // "/v1/sessions?limit=5" (path plus query, undecoded)
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  uint32_t peer_uid = 0;
  int32_t peer_pid = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// A subscriber's first line (optional, within 1 s of connecting) may be a JSON object
// {"since": SEQ, "types": ["context.built", ...]} (an empty line or `{}`: live only, no
// wait). The callback returns the backlog lines to send first: events with seq > since,
// oldest first, already filtered by `types`; each line is a JSON object with a top-level
// "seq". Lines published later are filtered by `types` and sent only if their seq is
// greater than both `since` and the last backlog seq, so there is no duplicate and no gap.
// A malformed first line gets one {"event_type":"audit.error",...} line and is closed.
struct SubscribeRequest {
  int64_t since = -1;              // -1: live only; 0: everything retained
  std::vector<std::string> types;  // empty: all
};
using BacklogProvider = std::function<std::vector<std::string>(const SubscribeRequest&)>;

struct NetOptions {
  std::string api_socket_path;
  std::string audit_socket_path;  // empty: no broadcast server
  size_t body_limit = 8 * 1024 * 1024;
  size_t header_limit = 16 * 1024;
  std::chrono::milliseconds read_timeout{30000};
  size_t subscriber_buffer_bytes = 4 * 1024 * 1024;
  int handler_threads = 2;                         // event-loop threads (handlers run on them)
  std::chrono::milliseconds shutdown_grace{5000};  // Stop() grace used on SIGINT/SIGTERM
  std::function<void(const std::string& what, uint32_t uid, int32_t pid)> on_security_event;
};

class NetServer {
 public:
  // Binds both sockets (or fails with a clear Status naming the path): kAlreadyExists
  // when a server is live on a path or the path is not a socket, kInvalidArgument for
  // a path that is empty or too long for sockaddr_un (107 bytes).
  static Result<std::unique_ptr<NetServer>> Create(const NetOptions& options, HttpHandler handler,
                                                   BacklogProvider backlog = {});
  // Closes everything and removes the socket files. Run() must have returned.
  virtual ~NetServer() = default;

  // Runs the event loop on options.handler_threads threads; returns after Stop()
  // completed (or after SIGINT/SIGTERM if HandleSignals() was called).
  virtual void Run() = 0;
  // Thread-safe; idempotent.
  virtual void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000)) = 0;
  // SIGINT/SIGTERM -> Stop(options.shutdown_grace); SIGHUP -> on_reload (called on a
  // loop thread). Call before Run(); signals are caught from this call on.
  virtual void HandleSignals(std::function<void()> on_reload) = 0;

  // Broadcast one line (no trailing newline) with its event type (for filtering) and
  // seq. Thread-safe, never blocks. A subscriber receives the lines published after it
  // was accepted, in Publish() order; callers publish in seq order.
  virtual void Publish(int64_t seq, const std::string& event_type, std::string line) = 0;
  virtual size_t SubscriberCount() const = 0;

  // Runs `fn` every `period` on the loop (watchdog, maintenance), until Stop().
  virtual void Every(std::chrono::milliseconds period, std::function<void()> fn) = 0;
};

// The peer-credential rule applied to every accepted connection.
bool PeerAllowed(uint32_t peer_uid, uint32_t self_uid);

}  // namespace missy

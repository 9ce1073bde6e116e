// The network edge of the daemon: an HTTP/1.1 server and an NDJSON broadcast server,
// both on Unix sockets, plus optional proxy listeners (loopback TCP or Unix sockets) whose
// requests go to a handler of their own, all running on one event loop. Asio and Beast are
// confined to daemon/net/*.cpp; no header includes them.
//
// Guarantees:
//  - The socket's directory is created 0700 and the socket chmod 0600. A stale socket
//    file (nothing accepting on it) is replaced; a live one is refused (kAlreadyExists).
//  - Every accepted connection's peer uid (SO_PEERCRED) must equal the daemon's euid;
//    others are closed at once (and reported through on_security_event).
//  - Proxy listeners on TCP bind loopback addresses only. A TCP peer's uid is the one the
//    kernel's socket table (/proc/net/tcp, tcp6) lists for the client's end, as identd
//    finds it; a peer of another uid, or one not found, is answered 403 (a JSON
//    permission_error, Connection: close), closed, and reported through
//    on_security_event.
//  - HTTP: keep-alive, read timeout per request, header limit (431) and body limit
//    (413) answered with the JSON error shape before the connection is closed.
//  - The event loop never waits for a handler's work: a handler is called on a loop
//    thread and answers through its HttpExchange, at once or later from any thread.
//    One request at a time per connection: the next request of a keep-alive connection
//    is read once the previous answer was written, so answers keep request order.
//  - Broadcast: each subscriber has a bounded outgoing buffer; one that falls behind is
//    sent a gap notice line (best effort) and disconnected. Publish never blocks. A
//    backlog is paged from the BacklogProvider, never held whole in memory.
//  - Stop(grace): stop accepting and close idle connections; requests still arriving,
//    answers still pending and streams still open get up to `grace` to complete, then
//    everything is cancelled (a later Send is dropped, a stream's closed() turns true).
//    Run() returns after that. Socket files are removed on shutdown (only if they are
//    still the ones this server bound).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/listen_address.h"
#include "core/status.h"

namespace missy {

// Sees a large request body as it arrives, read by read, on the connection's loop thread
// (so it must be quick: the proxy compares each read with the previous turn's body while
// the sender refills the socket). See NetOptions::proxy_body_watch.
class BodyWatch {
 public:
  virtual ~BodyWatch() = default;
  // The body's next bytes, starting at `offset`: called in order, without gaps.
  virtual void Arrived(size_t offset, std::string_view bytes) = 0;
};

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // "/v1/sessions?limit=5" (path plus query, undecoded)
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  uint32_t peer_uid = 0;
  int32_t peer_pid = 0;  // 0 on TCP (the socket table does not say)
  // The listener the request arrived on: "api" for the API socket, else the proxy
  // listener's address as NetServer::ProxyAddresses() lists it ("127.0.0.1:8788",
  // "[::1]:8788", "unix:/run/user/1000/missy/proxy.sock").
  std::string listener;
  // When its head was read (its body is read after): how long a body took to arrive.
  std::chrono::steady_clock::time_point head_read_at{};
  // The watch that saw every byte of the body (NetOptions::proxy_body_watch), or null.
  std::shared_ptr<BodyWatch> body_watch;
};

// Extra response headers, sent in this order after the ones the server sets. Entries
// named Content-Type, Content-Length, Transfer-Encoding or Connection (any case) are
// ignored: the server owns those. An entry whose name is not an HTTP token or whose
// value holds CR, LF or NUL is dropped (and logged).
using HttpHeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  HttpHeaderList headers{};  // e.g. {"retry-after", "3"}; see HttpHeaderList
};

// The body of a streamed (chunked) response. Thread-safe; no call but WaitSent blocks:
// writes are queued and sent in order on the connection's strand. A producer that may run
// ahead of its peer by more than NetOptions::stream_buffer_bytes paces itself with
// buffered().
class BodyStream {
 public:
  // Ends the body if End() was not called.
  virtual ~BodyStream() = default;
  // Queues `chunk` as one HTTP chunk (an empty chunk is ignored). Dropped once closed().
  // When the unsent bytes exceed NetOptions::stream_buffer_bytes the peer is too slow:
  // the connection is closed and closed() turns true.
  virtual void Write(std::string chunk) = 0;
  // The same for bytes the caller keeps too (a relay reads them back later): sent without
  // a copy where the stream allows it (this default copies).
  virtual void WriteShared(std::shared_ptr<const std::string> chunk) { Write(*chunk); }
  // Bytes written and not yet handed to the socket.
  virtual size_t buffered() const = 0;
  // Waits, at most `max`, until buffered() is 0 or the peer is gone; true when nothing is
  // left unsent. The only call that blocks (this default does not: it has no socket).
  virtual bool WaitSent(std::chrono::milliseconds /*max*/) { return buffered() == 0; }
  // Sends the last chunk; the connection then serves its next request (keep-alive).
  // Idempotent.
  virtual void End() = 0;
  // True once writes are no longer delivered: the peer went away (it closed its end or
  // a write failed), the stream was cut (too slow, shutdown grace expired) or End() was
  // called. A producer polls it to stop producing.
  virtual bool closed() const = 0;
};

// One request's answer. Thread-safe; the handler may complete it later from any thread.
// Exactly one of Send()/Stream() takes effect (later calls are ignored and logged);
// dropping the last reference without either answers
// 500 {"error":{"code":"internal","message":"the handler did not answer","field":""}}
// (bmcweb's AsyncResp). The exchange never keeps the connection or the server alive:
// an answer given after the connection closed, or after the server was destroyed, is
// dropped.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual void Send(HttpResponse response) = 0;
  // Starts a chunked response now (status and headers), e.g. "text/event-stream" for
  // SSE (sent with Cache-Control: no-cache) or "application/x-ndjson". Returns the body
  // writer. For an HTTP/1.0 request the body is not chunked and ends by closing the
  // connection. Called after the exchange was answered: returns a stream that is
  // already closed().
  virtual std::shared_ptr<BodyStream> Stream(int status, std::string content_type) = 0;
  // The same with extra headers (see HttpHeaderList), e.g. retry-after or request-id.
  // Exchanges that forward to another exchange override both overloads; this default,
  // for exchanges written before headers existed, calls Stream(status, content_type)
  // and drops the headers (logged).
  virtual std::shared_ptr<BodyStream> Stream(int status, std::string content_type,
                                             HttpHeaderList headers);
};

// Called on an event-loop thread with the request moved in (the body is never copied).
// It must not block: slow work holds `exchange` and completes it from another thread.
// An exception escaping the handler answers 500 {"error":{"code":"internal",...}} unless
// the exchange was already answered.
using HttpHandler =
    std::function<void(HttpRequest request, std::shared_ptr<HttpExchange> exchange)>;

// Adapter for code that answers at once (tests, trivial routes): calls `fn` on the loop
// thread and sends its result.
HttpHandler SyncHandler(std::function<HttpResponse(const HttpRequest&)> fn);

// A subscriber's first line (optional, within 1 s of connecting) may be a JSON object
// {"since": SEQ, "types": ["context.built", ...]} (an empty line or `{}`: live only, no
// wait). A malformed first line gets one {"event_type":"audit.error",...} line and is
// closed.
struct SubscribeRequest {
  int64_t since = -1;              // -1: live only; 0: everything retained
  std::vector<std::string> types;  // empty: all
};

// The retained events a subscriber asked for (since >= 0), one page per call:
//  - The first call gets after_seq = request.since; each next call gets the previous
//    call's *last_seq_seen (or the seq of its last line, if that is larger).
//  - A call returns at most max_lines lines (NetOptions::backlog_page_lines): events
//    with seq > after_seq, oldest first, already filtered by request.types; each line is
//    a JSON object with a top-level "seq".
//  - *last_seq_seen arrives set to after_seq; the provider sets it to the highest seq it
//    examined, including events the type filter skipped, so that a page where nothing
//    matched can still advance (return no line with *last_seq_seen > after_seq).
//  - The backlog ends with the first call that returns no line and leaves
//    *last_seq_seen at after_seq. A call returning lines without advancing ends it too
//    (logged as a provider bug).
//  - Calls run on the server's backlog thread: never on an event-loop thread, never
//    concurrently with each other (subscribers share the thread, so a call should read
//    one page and return). An exception ends the subscription with an audit.error line.
// Live lines published meanwhile are held by seq and sent after the backlog when their
// seq is greater than both `since` and the last seq the backlog covered: no duplicate
// and no gap. Publish() must follow persistence (an event is visible to the provider
// before its line is published): while a subscriber pages, the live lines it holds are
// bounded by subscriber_buffer_bytes, and on overflow they are dropped and paged back
// from the provider instead.
using BacklogProvider = std::function<std::vector<std::string>(
    const SubscribeRequest& request, int64_t after_seq, size_t max_lines, int64_t* last_seq_seen)>;

struct NetOptions {
  std::string api_socket_path;
  std::string audit_socket_path;  // empty: no broadcast server (unless audit_listen_fd)
  // Listening sockets bound by someone else (socket activation): the server takes
  // ownership and serves them as they are; their socket files are neither created nor
  // removed, and the *_socket_path above only names them in logs. -1: bind the path.
  int api_listen_fd = -1;
  int audit_listen_fd = -1;
  size_t body_limit = 8 * 1024 * 1024;
  size_t header_limit = 16 * 1024;
  std::chrono::milliseconds read_timeout{30000};  // also bounds each response write
  size_t subscriber_buffer_bytes = 4 * 1024 * 1024;
  size_t stream_buffer_bytes = 4 * 1024 * 1024;    // unsent bytes of one BodyStream
  size_t backlog_page_lines = 512;                 // max_lines passed to the provider
  int handler_threads = 2;                         // event-loop threads (handlers run on them)
  std::chrono::milliseconds shutdown_grace{5000};  // Stop() grace used on SIGINT/SIGTERM
  std::function<void(const std::string& what, uint32_t uid, int32_t pid)> on_security_event;
  // Extra listeners whose requests go to proxy_handler instead of the API handler. TCP
  // ones must be loopback (127.0.0.0/8, ::1; port 0 binds a free port, see
  // ProxyAddresses()); unix ones are bound like the API socket (the path is absolute,
  // "~" already expanded).
  std::vector<ListenAddress> proxy_listen;
  // Proxy listeners bound by someone else (socket activation: missyd-proxy.socket):
  // listening TCP sockets, served exactly like proxy_listen's TCP listeners (same handler,
  // limits and peer-uid check). Each must be bound to a loopback address (checked again
  // here: one that is not fails Create). The server owns them from the Create call on,
  // whatever its outcome.
  std::vector<int> proxy_listen_fds;
  HttpHandler proxy_handler;  // required when proxy_listen or proxy_listen_fds is not empty
  // Optional: asked, with the head of a proxy request whose body is large (a declared
  // length over 64 KB; `head` has no body), for a watch to see that body as it arrives.
  std::function<std::shared_ptr<BodyWatch>(const HttpRequest& head)> proxy_body_watch;
  // Listeners of the inspector page alone (context.ui.listen): loopback TCP only, with the
  // proxy listeners' peer-uid check and read timeout, a 1 MiB body limit, and ui_handler.
  std::vector<ListenAddress> ui_listen;
  HttpHandler ui_handler;  // required when ui_listen is not empty
  size_t proxy_body_limit = size_t{256} << 20;           // agents resend their whole conversation
  std::chrono::milliseconds proxy_read_timeout{120000};  // per request, as read_timeout
  // Called once on a loop thread when Stop() begins, e.g. to End() open event streams so
  // that they do not hold the shutdown for the whole grace.
  std::function<void()> on_stopping;
};

class NetServer {
 public:
  // Binds both sockets and the proxy listeners, or adopts the listening descriptors given
  // in `options` (or fails with a clear Status naming the path or address):
  // kAlreadyExists when a server is live on a path, the path is not a socket or a TCP
  // port is in use, kInvalidArgument for a path that is empty or too long for
  // sockaddr_un (107 bytes), a TCP address that is not loopback, an adopted proxy
  // descriptor that is not a listening loopback TCP socket (or is given twice), or proxy
  // listeners without a proxy_handler. Adopted descriptors are closed on failure.
  static Result<std::unique_ptr<NetServer>> Create(const NetOptions& options, HttpHandler handler,
                                                   BacklogProvider backlog = {});
  // Closes everything and removes the socket files. Run() must have returned.
  virtual ~NetServer() = default;

  // Runs the event loop on options.handler_threads threads; returns after Stop()
  // completed (or after SIGINT/SIGTERM if HandleSignals() was called), once no backlog
  // call is running any more.
  virtual void Run() = 0;
  // Thread-safe; idempotent.
  virtual void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000)) = 0;
  // SIGINT/SIGTERM -> Stop(options.shutdown_grace); SIGHUP -> on_reload (called on a
  // loop thread). Call before Run(); signals are caught from this call on.
  virtual void HandleSignals(std::function<void()> on_reload) = 0;

  // Broadcast one line (no trailing newline) with its event type (for filtering) and
  // seq. Thread-safe, never blocks. A subscriber receives the lines published after it
  // was accepted, in Publish() order; callers publish in seq order, after persisting.
  virtual void Publish(int64_t seq, const std::string& event_type, std::string line) = 0;
  virtual size_t SubscriberCount() const = 0;

  // Runs `fn` every `period` on the loop (watchdog, maintenance), until Stop().
  virtual void Every(std::chrono::milliseconds period, std::function<void()> fn) = 0;

  // The proxy listeners as bound, in NetOptions::proxy_listen order, then the adopted
  // ones in proxy_listen_fds order: "127.0.0.1:41234" (the actual port when 0 was asked
  // for; an adopted socket's from getsockname), "[::1]:8788", "unix:/path". Thread-safe.
  virtual std::vector<std::string> ProxyAddresses() const = 0;
  // The inspector's own listeners as bound, in NetOptions::ui_listen order. Thread-safe.
  virtual std::vector<std::string> UiAddresses() const = 0;
};

// The peer-credential rule applied to every accepted connection.
bool PeerAllowed(uint32_t peer_uid, uint32_t self_uid);

}  // namespace missy

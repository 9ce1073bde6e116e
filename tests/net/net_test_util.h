// Helpers shared by the tests of daemon/net: a server running on its own thread, a raw
// client socket, JSON accessors.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "cli/http_client.h"
#include "daemon/net/server.h"
#include "test_util.h"

namespace missy::net_test {

namespace json = boost::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using missy::testing::TempDir;

inline HttpResponse Echo(const HttpRequest& r) {
  json::object o;
  o["method"] = r.method;
  o["target"] = r.target;
  o["body"] = r.body;
  o["peer_uid"] = r.peer_uid;
  o["peer_pid"] = r.peer_pid;
  auto it = r.headers.find("x-custom");
  o["x_custom"] = it == r.headers.end() ? "" : it->second;
  return {200, "application/json", json::serialize(o)};
}

inline json::object ParseObject(const std::string& s) {
  boost::system::error_code ec;
  json::value v = json::parse(s, ec);
  EXPECT_FALSE(ec) << "not JSON: " << s;
  if (ec || !v.is_object()) return {};
  return v.get_object();
}

inline std::string Str(const json::object& o, const char* key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string("<missing>");
}

inline std::string ErrorCode(const ClientResponse& r) {
  auto o = ParseObject(r.body);
  auto* err = o.if_contains("error");
  if (!err || !err->is_object()) return "<no error object>";
  return Str(err->get_object(), "code");
}

// A NetServer running on its own thread; stopped and joined on destruction.
class RunningServer {
 public:
  RunningServer(NetOptions options, HttpHandler handler, BacklogProvider backlog = {}) {
    auto r = NetServer::Create(options, std::move(handler), std::move(backlog));
    status_ = r.status();
    if (!r.ok()) return;
    server_ = std::move(r).value();
    thread_ = std::thread([this] {
      server_->Run();
      returned_ = true;
    });
  }
  ~RunningServer() { StopAndJoin(1s); }

  const Status& status() const { return status_; }
  NetServer* operator->() { return server_.get(); }
  NetServer& server() { return *server_; }
  bool returned() const { return returned_; }

  // Stops and waits for Run() to return; returns how long it took.
  Clock::duration StopAndJoin(std::chrono::milliseconds grace) {
    auto start = Clock::now();
    if (server_ && thread_.joinable()) {
      server_->Stop(grace);
      thread_.join();
    }
    return Clock::now() - start;
  }

 private:
  Status status_;
  std::unique_ptr<NetServer> server_;
  std::thread thread_;
  std::atomic<bool> returned_{false};
};

inline NetOptions Options(const TempDir& dir) {
  NetOptions o;
  o.api_socket_path = dir.Join("run/missyd.sock");
  o.audit_socket_path = dir.Join("run/audit.sock");
  return o;
}

// Waits (bounded) until `pred` holds.
template <typename Pred>
bool WaitUntil(Pred pred, std::chrono::milliseconds timeout = 5s) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

// A plain client socket for byte-level tests.
class RawSocket {
 public:
  explicit RawSocket(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawSocket() { Close(); }
  bool ok() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Reads until `needle` was received, EOF or the timeout; returns everything read.
  std::string ReadUntil(const std::string& needle, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    while (received_.find(needle) == std::string::npos && !eof_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        eof_ = true;
      } else {
        received_.append(buf, static_cast<size_t>(n));
      }
    }
    return received_;
  }
  bool eof() const { return eof_; }

 private:
  int fd_ = -1;
  std::string received_;
  bool eof_ = false;
};

// An audit event line as the daemon publishes it.
inline std::string EventLine(int64_t seq, const std::string& type, size_t pad = 0) {
  json::object o;
  o["seq"] = seq;
  o["event_type"] = type;
  if (pad) o["pad"] = std::string(pad, 'p');
  return json::serialize(o);
}

inline int64_t SeqOf(const std::string& line) {
  auto o = ParseObject(line);
  auto* s = o.if_contains("seq");
  return s && s->is_int64() ? s->get_int64() : -999;
}

}  // namespace missy::net_test

// HttpExchange and BodyStream as handed to handlers (internal to daemon/net; no Asio).
//
// An exchange reaches its connection through a weak reference and the server's LoopGate,
// so it never keeps a connection or the event loop alive: an answer that arrives after
// the connection closed, or after the server went away, is dropped. A stream's chunks
// wait in a StreamState that the connection drains on its strand.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/net/connection.h"
#include "daemon/net/server.h"
#include "daemon/net/stream_state.h"

namespace missy::net {

// The connection side of an exchange. Thread-safe: each call posts to the strand.
class ExchangeTarget {
 public:
  virtual ~ExchangeTarget() = default;
  virtual void Answer(uint64_t request_id, HttpResponse response) = 0;
  virtual void BeginStream(uint64_t request_id, std::shared_ptr<StreamState> state, int status,
                           std::string content_type, HttpHeaderList headers) = 0;
  // Chunks were queued, End() was called or the stream was cut.
  virtual void StreamActivity(std::shared_ptr<StreamState> state) = 0;
};

class Exchange final : public HttpExchange {
 public:
  // `what` ("POST /v1/x") names the request in logs.
  Exchange(std::weak_ptr<ExchangeTarget> target, std::shared_ptr<LoopGate> gate,
           uint64_t request_id, size_t stream_limit, std::string what);
  // Answers 500 "the handler did not answer" if nothing was sent.
  ~Exchange() override;

  void Send(HttpResponse response) override;
  std::shared_ptr<BodyStream> Stream(int status, std::string content_type) override;
  std::shared_ptr<BodyStream> Stream(int status, std::string content_type,
                                     HttpHeaderList headers) override;
  // Sends `response` unless the exchange was answered already (quietly).
  void SendIfUnanswered(HttpResponse response);

 private:
  bool Deliver(HttpResponse response);

  std::weak_ptr<ExchangeTarget> target_;
  std::shared_ptr<LoopGate> gate_;
  const uint64_t request_id_;
  const size_t stream_limit_;
  const std::string what_;
  std::atomic<bool> answered_{false};
};

// Runs fn(target) while the gate is open and the target alive; false otherwise.
template <typename Fn>
bool WithTarget(const std::shared_ptr<LoopGate>& gate, const std::weak_ptr<ExchangeTarget>& target,
                Fn&& fn) {
  std::lock_guard<std::mutex> lock(gate->mu);
  if (!gate->open) return false;
  std::shared_ptr<ExchangeTarget> t = target.lock();
  if (!t) return false;
  fn(*t);
  return true;
}

}  // namespace missy::net

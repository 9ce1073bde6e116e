// HttpExchange and BodyStream implementations. See http_exchange.h.
#include "daemon/net/http_exchange.h"

#include <spdlog/spdlog.h>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <utility>

namespace missy {
namespace net {

std::string JsonError(std::string_view code, std::string_view message) {
  boost::json::object err;
  err["code"] = code;
  err["message"] = message;
  err["field"] = "";
  boost::json::object root;
  root["error"] = std::move(err);
  return boost::json::serialize(root);
}

// ---------------------------------------------------------------------------------------
// BodyStream.

namespace {

class BodyStreamImpl final : public BodyStream {
 public:
  BodyStreamImpl(std::weak_ptr<ExchangeTarget> target, std::shared_ptr<LoopGate> gate,
                 std::shared_ptr<StreamState> state)
      : target_(std::move(target)), gate_(std::move(gate)), state_(std::move(state)) {}
  ~BodyStreamImpl() override { End(); }

  void Write(std::string chunk) override {
    if (chunk.empty()) return;
    WriteShared(std::make_shared<const std::string>(std::move(chunk)));
  }
  void WriteShared(std::shared_ptr<const std::string> chunk) override {
    if (state_->Write(std::move(chunk))) Notify();
  }
  void End() override {
    if (state_->End()) Notify();
  }
  bool closed() const override { return state_->closed(); }
  size_t buffered() const override { return state_->unsent(); }
  bool WaitSent(std::chrono::milliseconds max) override { return state_->WaitSent(max); }

 private:
  void Notify() {
    bool delivered =
        gate_ && WithTarget(gate_, target_, [&](ExchangeTarget& t) { t.StreamActivity(state_); });
    if (!delivered) state_->MarkDead();
  }

  std::weak_ptr<ExchangeTarget> target_;
  std::shared_ptr<LoopGate> gate_;
  std::shared_ptr<StreamState> state_;
};

}  // namespace

// ---------------------------------------------------------------------------------------
// Exchange.

Exchange::Exchange(std::weak_ptr<ExchangeTarget> target, std::shared_ptr<LoopGate> gate,
                   uint64_t request_id, size_t stream_limit, std::string what)
    : target_(std::move(target)),
      gate_(std::move(gate)),
      request_id_(request_id),
      stream_limit_(stream_limit),
      what_(std::move(what)) {}

Exchange::~Exchange() {
  if (answered_.exchange(true)) return;
  spdlog::error("handler for {} dropped its exchange without answering", what_);
  Deliver(
      HttpResponse{500, "application/json", JsonError("internal", "the handler did not answer")});
}

bool Exchange::Deliver(HttpResponse response) {
  return WithTarget(gate_, target_,
                    [&](ExchangeTarget& t) { t.Answer(request_id_, std::move(response)); });
}

void Exchange::Send(HttpResponse response) {
  if (answered_.exchange(true)) {
    spdlog::warn("handler for {} answered twice; the second answer is ignored", what_);
    return;
  }
  if (!Deliver(std::move(response))) {
    spdlog::debug("answer to {} dropped: the connection is gone", what_);
  }
}

void Exchange::SendIfUnanswered(HttpResponse response) {
  if (answered_.exchange(true)) return;
  Deliver(std::move(response));
}

std::shared_ptr<BodyStream> Exchange::Stream(int status, std::string content_type) {
  return Stream(status, std::move(content_type), {});
}

std::shared_ptr<BodyStream> Exchange::Stream(int status, std::string content_type,
                                             HttpHeaderList headers) {
  auto state = std::make_shared<StreamState>(stream_limit_);
  if (answered_.exchange(true)) {
    spdlog::warn("handler for {} answered twice; the stream is ignored", what_);
    state->MarkDead();
    return std::make_shared<BodyStreamImpl>(std::weak_ptr<ExchangeTarget>(), nullptr, state);
  }
  bool delivered = WithTarget(gate_, target_, [&](ExchangeTarget& t) {
    t.BeginStream(request_id_, state, status, std::move(content_type), std::move(headers));
  });
  if (!delivered) state->MarkDead();
  return std::make_shared<BodyStreamImpl>(target_, gate_, std::move(state));
}

}  // namespace net

std::shared_ptr<BodyStream> HttpExchange::Stream(int status, std::string content_type,
                                                 HttpHeaderList headers) {
  if (!headers.empty()) {
    spdlog::warn("this exchange does not forward stream headers; {} header(s) dropped",
                 headers.size());
  }
  return Stream(status, std::move(content_type));
}

}  // namespace missy

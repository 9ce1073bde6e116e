#include "daemon/http/api.h"

#include <condition_variable>
#include <mutex>

#include "daemon/service/services.h"

namespace missy::http {

namespace {

// Collects one answer for HandleSync.
class SyncExchange final : public HttpExchange {
 public:
  void Send(HttpResponse response) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    response_ = std::move(response);
    done_ = true;
    cv_.notify_all();
  }
  std::shared_ptr<BodyStream> Stream(int status, std::string content_type) override;

  HttpResponse Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return response_;
  }

 private:
  class Collector;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  HttpResponse response_;
};

class SyncExchange::Collector final : public BodyStream {
 public:
  Collector(std::shared_ptr<SyncExchange> owner, int status, std::string type)
      : owner_(std::move(owner)) {
    response_.status = status;
    response_.content_type = std::move(type);
  }
  ~Collector() override { End(); }
  void Write(std::string chunk) override { response_.body += chunk; }
  size_t buffered() const override { return 0; }
  void End() override {
    if (owner_) owner_->Send(std::move(response_));
    owner_.reset();
  }
  bool closed() const override { return false; }

 private:
  std::shared_ptr<SyncExchange> owner_;
  HttpResponse response_;
};

std::shared_ptr<BodyStream> SyncExchange::Stream(int status, std::string content_type) {
  // The collector keeps no owning reference cycle: it answers on End().
  return std::make_shared<Collector>(
      std::shared_ptr<SyncExchange>(std::shared_ptr<SyncExchange>{}, this), status,
      std::move(content_type));
}

}  // namespace

Api::Api(Services& services, std::string version)
    : services_(services),
      version_(std::move(version)),
      router_(services.deps.audit, &services.metrics) {
  AddAdminRoutes();
  AddMetricsRoutes();
  AddSessionRoutes();
  AddContextRoutes();
  AddMemoryRoutes();
  AddInspectRoutes();
}

void Api::Handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
  ++requests_;
  // A request that comes once an agent has its answer sees that answer stored.
  services_.barrier.WhenSettled(
      [this, request = std::make_shared<HttpRequest>(std::move(request)), exchange]() mutable {
        router_.Handle(std::move(*request), std::move(exchange));
      });
}

HttpResponse Api::HandleSync(HttpRequest request) {
  auto exchange = std::make_shared<SyncExchange>();
  Handle(std::move(request), exchange);
  return exchange->Wait();
}

}  // namespace missy::http

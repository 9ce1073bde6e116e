// In-process HTTP tests: the service fixture plus an http::Api over it, and an
// exchange that collects one answer with a bounded wait.
#pragma once

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "daemon/http/api.h"
#include "daemon/net/server.h"
#include "daemon/service/service_fixture.h"

namespace missy::testing {

// Collects the first answer; counts every Send so a test can see double answers.
class TestExchange final : public HttpExchange {
 public:
  void Send(HttpResponse response) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (sends_++ == 0) promise_.set_value(std::move(response));
  }
  std::shared_ptr<BodyStream> Stream(int, std::string) override {
    ADD_FAILURE() << "no /v1 route streams";
    return nullptr;
  }
  std::optional<HttpResponse> Wait(std::chrono::milliseconds limit = kWaitLimit) {
    if (future_.wait_for(limit) != std::future_status::ready) {
      ADD_FAILURE() << "the request was not answered within " << limit.count() << " ms";
      return std::nullopt;
    }
    return future_.get();
  }
  int sends() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sends_;
  }

 private:
  mutable std::mutex mu_;
  int sends_ = 0;
  std::promise<HttpResponse> promise_;
  std::future<HttpResponse> future_ = promise_.get_future();
};

struct ApiReply {
  int status = 0;  // 0: no answer
  std::string content_type;
  std::string raw;
  boost::json::value body;  // null unless the body is JSON
};

inline ApiReply ToReply(const std::optional<HttpResponse>& response) {
  ApiReply r;
  if (!response) return r;
  r.status = response->status;
  r.content_type = response->content_type;
  r.raw = response->body;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(r.raw, ec);
  if (!ec) r.body = std::move(v);
  return r;
}

// The error shape every failure has: {"error":{"code","message","field"}} and the
// status; `extra_keys` are top-level keys allowed beside "error" (e.g. "warnings").
inline ::testing::AssertionResult IsError(const ApiReply& r, int status, std::string_view code,
                                          std::string_view field, size_t extra_keys = 0) {
  if (r.status != status) {
    return ::testing::AssertionFailure()
           << "status " << r.status << ", want " << status << ": " << r.raw;
  }
  if (!r.body.is_object() || !r.body.as_object().contains("error")) {
    return ::testing::AssertionFailure() << "no error object: " << r.raw;
  }
  if (r.body.as_object().size() != 1 + extra_keys) {
    return ::testing::AssertionFailure() << "unexpected top-level keys: " << r.raw;
  }
  const boost::json::value& e = r.body.at("error");
  if (!e.is_object() || e.as_object().size() != 3 || !e.as_object().contains("code") ||
      !e.as_object().contains("message") || !e.as_object().contains("field")) {
    return ::testing::AssertionFailure() << "error is not {code,message,field}: " << r.raw;
  }
  if (!e.at("code").is_string() || e.at("code").as_string() != code) {
    return ::testing::AssertionFailure() << "code, want " << code << ": " << r.raw;
  }
  if (!e.at("message").is_string() || e.at("message").as_string().empty()) {
    return ::testing::AssertionFailure() << "message is not a non-empty string: " << r.raw;
  }
  if (!e.at("field").is_string() || e.at("field").as_string() != field) {
    return ::testing::AssertionFailure() << "field, want '" << field << "': " << r.raw;
  }
  return ::testing::AssertionSuccess();
}

inline std::string ErrorMessage(const ApiReply& r) {
  if (!r.body.is_object() || !r.body.as_object().contains("error")) return {};
  const boost::json::value* m = r.body.at("error").as_object().if_contains("message");
  return m && m->is_string() ? std::string(m->as_string()) : std::string();
}

inline int64_t Int(const boost::json::value& v, std::string_view key) {
  return v.at(key).to_number<int64_t>();
}

class ApiFixture : public ServiceFixture {
 protected:
  static constexpr const char* kVersion = "9.9.9-test";

  void OnOpened() override { api_ = std::make_unique<http::Api>(*services_, kVersion); }
  void OnClosing() override { api_.reset(); }

  ApiReply Call(std::string method, std::string target, std::string body = {}) {
    HttpRequest request;
    request.method = std::move(method);
    request.target = std::move(target);
    request.body = std::move(body);
    auto exchange = std::make_shared<TestExchange>();
    api_->Handle(std::move(request), exchange);
    return ToReply(exchange->Wait());
  }

  std::unique_ptr<http::Api> api_;
};

}  // namespace missy::testing

// Status and Result<T>: the one error type used across every layer.
// A Status is either ok or carries a code, a human message and, when a request
// field is to blame, the field's path ("messages[3].role"). Codes map one-to-one
// to API error codes and HTTP statuses (see HttpStatusOf / ApiCodeOf).
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace missy {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // 400: the request is malformed or a value is wrong.
  kNotFound,         // 404
  kAlreadyExists,    // 409
  kConflict,         // 409: state does not allow the operation.
  kPayloadTooLarge,  // 413
  kUnprocessable,    // 422: well-formed but refused (strict mode, invariants).
  kContextOverflow,  // 422: even the minimum context does not fit the budget.
  kUnavailable,      // 503: temporarily cannot serve (disk full, read-only DB).
  kCorruption,       // 500: stored data is damaged or from a newer version.
  kInternal,         // 500
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message, std::string field = {})
      : code_(code), message_(std::move(message)), field_(std::move(field)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg, std::string field = {}) {
    return {StatusCode::kInvalidArgument, std::move(msg), std::move(field)};
  }
  static Status NotFound(std::string msg, std::string field = {}) {
    return {StatusCode::kNotFound, std::move(msg), std::move(field)};
  }
  static Status AlreadyExists(std::string msg, std::string field = {}) {
    return {StatusCode::kAlreadyExists, std::move(msg), std::move(field)};
  }
  static Status Conflict(std::string msg, std::string field = {}) {
    return {StatusCode::kConflict, std::move(msg), std::move(field)};
  }
  static Status PayloadTooLarge(std::string msg) {
    return {StatusCode::kPayloadTooLarge, std::move(msg)};
  }
  static Status Unprocessable(std::string msg, std::string field = {}) {
    return {StatusCode::kUnprocessable, std::move(msg), std::move(field)};
  }
  static Status ContextOverflow(std::string msg) {
    return {StatusCode::kContextOverflow, std::move(msg)};
  }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& field() const { return field_; }

  // "invalid_argument: messages[0].role: unknown role 'bot'"
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

// HTTP status for a code (200 for ok).
int HttpStatusOf(StatusCode code);
// Stable snake_case name used as the API's error.code ("not_found").
std::string_view ApiCodeOf(StatusCode code);

// Result<T>: a value or a non-ok Status. Accessing value() of an error aborts in debug.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace missy

// Early-return helpers for code that propagates errors.
#define MISSY_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::missy::Status missy_status_ = (expr);        \
    if (!missy_status_.ok()) return missy_status_; \
  } while (0)

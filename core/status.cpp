#include "core/status.h"

namespace missy {

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(ApiCodeOf(code_));
  out += ": ";
  if (!field_.empty()) {
    out += field_;
    out += ": ";
  }
  out += message_;
  return out;
}

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kConflict:
      return 409;
    case StatusCode::kPayloadTooLarge:
      return 413;
    case StatusCode::kUnprocessable:
      return 422;
    case StatusCode::kContextOverflow:
      return 422;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kCorruption:
      return 500;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

std::string_view ApiCodeOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kAlreadyExists:
      return "already_exists";
    case StatusCode::kConflict:
      return "conflict";
    case StatusCode::kPayloadTooLarge:
      return "payload_too_large";
    case StatusCode::kUnprocessable:
      return "unprocessable";
    case StatusCode::kContextOverflow:
      return "context_overflow";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kCorruption:
      return "corruption";
    case StatusCode::kInternal:
      return "internal";
  }
  return "internal";
}

}  // namespace missy

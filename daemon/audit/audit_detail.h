// AuditDetail: the `detail` object of an audit event, built without a JSON library in
// the caller's headers (the service layer stays JSON-free). Values are encoded as JSON
// when added; keys keep their insertion order. Secrets must never be added.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace missy {

class AuditDetail {
 public:
  AuditDetail& Add(std::string_view key, std::string_view value);
  AuditDetail& Add(std::string_view key, const char* value) {
    return Add(key, std::string_view(value));
  }
  AuditDetail& Add(std::string_view key, const std::string& value) {
    return Add(key, std::string_view(value));
  }
  AuditDetail& Add(std::string_view key, int64_t value);
  AuditDetail& Add(std::string_view key, int value) {
    return Add(key, static_cast<int64_t>(value));
  }
  AuditDetail& Add(std::string_view key, size_t value) {
    return Add(key, static_cast<int64_t>(value));
  }
  AuditDetail& Add(std::string_view key, double value);
  AuditDetail& Add(std::string_view key, bool value);
  AuditDetail& Add(std::string_view key, const std::vector<std::string>& values);
  // `json` must be one valid JSON value (an object or array built by the caller).
  AuditDetail& AddJson(std::string_view key, std::string json);

  // {"key":value,...}
  std::string ToJson() const;
  bool empty() const { return fields_.empty(); }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;  // key, encoded value
};

// A JSON string literal for `text` (quotes and escapes included).
std::string JsonQuote(std::string_view text);

}  // namespace missy

#include "daemon/audit/audit_detail.h"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include "core/utf8.h"

namespace missy {

std::string JsonQuote(std::string_view text) {
  // An audit line must stay valid JSON whatever a client sent (a path, a method).
  if (InvalidUtf8At(text) != std::string_view::npos) {
    return boost::json::serialize(boost::json::string(ToValidUtf8(text)));
  }
  return boost::json::serialize(boost::json::string(text));
}

AuditDetail& AuditDetail::Add(std::string_view key, std::string_view value) {
  fields_.emplace_back(std::string(key), JsonQuote(value));
  return *this;
}

AuditDetail& AuditDetail::Add(std::string_view key, int64_t value) {
  fields_.emplace_back(std::string(key), std::to_string(value));
  return *this;
}

AuditDetail& AuditDetail::Add(std::string_view key, double value) {
  fields_.emplace_back(std::string(key), boost::json::serialize(boost::json::value(value)));
  return *this;
}

AuditDetail& AuditDetail::Add(std::string_view key, bool value) {
  fields_.emplace_back(std::string(key), value ? "true" : "false");
  return *this;
}

AuditDetail& AuditDetail::Add(std::string_view key, const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += JsonQuote(values[i]);
  }
  out += ']';
  fields_.emplace_back(std::string(key), std::move(out));
  return *this;
}

AuditDetail& AuditDetail::AddJson(std::string_view key, std::string json) {
  fields_.emplace_back(std::string(key), std::move(json));
  return *this;
}

std::string AuditDetail::ToJson() const {
  std::string out = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i > 0) out += ',';
    out += JsonQuote(fields_[i].first);
    out += ':';
    out += fields_[i].second;
  }
  out += '}';
  return out;
}

}  // namespace missy

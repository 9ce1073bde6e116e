#include "daemon/provider/retry_policy.h"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace missy::provider {

bool IsRetryable(ProviderErrorKind kind) {
  switch (kind) {
    case ProviderErrorKind::kRateLimited:
    case ProviderErrorKind::kServer:
    case ProviderErrorKind::kTimeout:
    case ProviderErrorKind::kNetwork:
      return true;
    default:
      return false;
  }
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A non-negative decimal number ("3", "0.25"), scaled to milliseconds by `unit_ms`.
std::optional<std::chrono::milliseconds> ParseNumber(std::string_view s, double unit_ms) {
  s = Trim(s);
  if (s.empty() || s.size() > 32) return std::nullopt;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return std::nullopt;
  }
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  const double ms = std::min(value * unit_ms, 1e12);  // a day is plenty; avoid overflow
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(ms)));
}

}  // namespace

std::optional<std::chrono::milliseconds> ParseRetryAfter(
    std::string_view value, std::chrono::system_clock::time_point now) {
  value = Trim(value);
  if (auto seconds = ParseNumber(value, 1000.0)) return seconds;
  const std::string text(value);
  for (const char* format : {"%a, %d %b %Y %H:%M:%S GMT",  // IMF-fixdate
                             "%A, %d-%b-%y %H:%M:%S GMT",  // RFC 850
                             "%a %b %e %H:%M:%S %Y"}) {    // asctime
    struct tm tm = {};
    const char* end = strptime(text.c_str(), format, &tm);
    if (end == nullptr || *end != '\0') continue;
    const time_t when = timegm(&tm);
    if (when == static_cast<time_t>(-1)) continue;
    const auto at = std::chrono::system_clock::from_time_t(when);
    if (at <= now) return std::chrono::milliseconds(0);
    return std::chrono::ceil<std::chrono::milliseconds>(at - now);
  }
  return std::nullopt;
}

std::optional<std::chrono::milliseconds> ParseRetryAfterMs(std::string_view value) {
  return ParseNumber(value, 1.0);
}

std::chrono::milliseconds BackoffDelay(int failed_attempts, std::chrono::milliseconds base,
                                       std::chrono::milliseconds max, double unit) {
  const int doublings = std::clamp(failed_attempts - 1, 0, 30);
  const double d = std::min(static_cast<double>(max.count()),
                            static_cast<double>(base.count()) * std::ldexp(1.0, doublings));
  const double jittered = d * (1.0 - std::clamp(unit, 0.0, 1.0) / 2.0);
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, jittered)));
}

std::string Redact(std::string_view text, std::string_view secret) {
  if (secret.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (size_t hit; (hit = text.find(secret, pos)) != std::string_view::npos;) {
    out.append(text.substr(pos, hit - pos));
    out.append("***");
    pos = hit + secret.size();
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace missy::provider

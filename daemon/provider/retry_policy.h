// When to retry a provider call and how long to wait first. Pure: time and randomness are
// passed in.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/provider/provider_client.h"

namespace missy::provider {

// Whether a failure of this kind may succeed when tried again.
bool IsRetryable(ProviderErrorKind kind);

// A Retry-After value: delay-seconds ("120", and as an extension a fraction "0.25") or an
// HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT", RFC 850 and asctime forms too), relative to
// now; a date in the past is zero. nullopt when the value is neither.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value,
                                                         std::chrono::system_clock::time_point now);
// A retry-after-ms value (OpenAI, Azure): a non-negative number of milliseconds.
std::optional<std::chrono::milliseconds> ParseRetryAfterMs(std::string_view value);

// The wait before the attempt after `failed_attempts` (>= 1) failed ones:
// d = min(max, base * 2^(failed_attempts - 1)), jittered to d * (1 - unit / 2) with unit in
// [0, 1), so between d/2 and d.
std::chrono::milliseconds BackoffDelay(int failed_attempts, std::chrono::milliseconds base,
                                       std::chrono::milliseconds max, double unit);

// `text` with every occurrence of `secret` replaced by "***" (unchanged when secret is empty).
std::string Redact(std::string_view text, std::string_view secret);

}  // namespace missy::provider

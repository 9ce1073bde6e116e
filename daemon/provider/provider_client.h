// ProviderClient: a blocking client for an LLM provider's chat API, used by the background
// summarizer. Two wire formats: OpenAI-compatible `/v1/chat/completions` (OpenAI, Ollama,
// llama.cpp server, vLLM) and Anthropic `/v1/messages`, over http:// or https:// (peer
// certificate and host name verified, SNI sent).
//
// Thread safety: a client is immutable after MakeProviderClient; Complete may be called from
// several threads at once. Complete blocks (network I/O, backoff sleeps) for at most
// ProviderOptions::total_timeout: call it from a worker thread, never from the event loop.
// Errors: Complete never throws; it returns a ProviderFailure whose kind says what the
// caller may do (split the request on kContextLength, try later on kRateLimited, ...).
// Secrets: the API key never appears in a failure message, a log line or Describe().
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "config/config.h"
#include "core/status.h"

namespace missy::provider {

// The wire format. Detected from the provider's name and base_url unless set explicitly.
enum class ProviderKind { kOpenAi, kAnthropic };
std::string_view ProviderKindName(ProviderKind kind);  // "openai" | "anthropic"
// "anthropic" in the name or the base_url's host → kAnthropic, else kOpenAi.
ProviderKind DetectProviderKind(std::string_view name, std::string_view base_url);

struct ProviderOptions {
  // Wire format; unset: DetectProviderKind(name, base_url).
  std::optional<ProviderKind> kind;
  // Name resolution plus TCP connect, per attempt (a lookup stuck inside getaddrinfo is
  // bounded by the system resolver's own timeouts, not by this).
  std::chrono::milliseconds connect_timeout{5000};
  // TLS handshake, per attempt.
  std::chrono::milliseconds handshake_timeout{5000};
  // From sending the request to the whole response header, per attempt.
  std::chrono::milliseconds first_byte_timeout{60000};
  // The whole call: every attempt and every backoff wait. ProviderConfig::timeout_s (when
  // positive) further bounds each single attempt.
  std::chrono::milliseconds total_timeout{120000};
  // Attempts in all (1 + retries) for retryable failures.
  int max_attempts = 4;
  // Backoff before attempt n+1: min(backoff_max, backoff_base * 2^(n-1)), jittered down to
  // half at most. A Retry-After (or retry-after-ms) header replaces it; a wait that would
  // pass total_timeout is not made and the failure is returned at once.
  std::chrono::milliseconds backoff_base{500};
  std::chrono::milliseconds backoff_max{8000};
  // PEM file of trusted CAs for https; empty: the system's default trust store.
  std::string ca_file;
  // Largest response body accepted; a larger one fails with kBadResponse.
  std::size_t max_response_bytes = 8 << 20;
};

struct CompletionRequest {
  std::string system;  // empty: no system prompt
  // (role, text) in order; role is "user" or "assistant".
  std::vector<std::pair<std::string, std::string>> messages;
  int64_t max_tokens = 1024;
  double temperature = 0.0;
};

struct CompletionResult {
  std::string text;
  int64_t input_tokens = 0;  // as the provider reported them (0 when it did not)
  int64_t output_tokens = 0;
  std::string model;        // the model the provider says answered
  std::string stop_reason;  // "stop"/"length" (OpenAI), "end_turn"/"max_tokens" (Anthropic)
  bool truncated = false;   // the answer stopped at max_tokens
  int attempts = 1;         // HTTP attempts made, retries included
};

enum class ProviderErrorKind {
  kNone,
  kContextLength,  // the request does not fit the model's window: split it (never retried)
  kRateLimited,    // 429 (retried, honouring Retry-After, unless the quota is exhausted)
  kServer,         // 5xx, 529 (retried)
  kTimeout,        // connect, handshake, first byte or total timeout (retried while time is left)
  kNetwork,        // resolve/connect failure, connection reset or closed early (retried)
  kTls,            // certificate or handshake refused (not retried)
  kAuth,           // 401/403 (not retried)
  kBadResponse,    // unparseable, unexpected or oversized answer (not retried)
  kBadRequest,     // other 4xx (not retried)
};
std::string_view ProviderErrorKindName(ProviderErrorKind kind);  // "context_length", ...

struct ProviderFailure {
  ProviderErrorKind kind = ProviderErrorKind::kNone;
  int http_status = 0;  // 0 when no HTTP answer was received
  std::string message;  // human text, provider's error message included; API key redacted
  int attempts = 0;
};

// The failure as a Status: kContextLength → kContextOverflow, anything else → kUnavailable.
Status ToStatus(const ProviderFailure& failure);

using CompletionOutcome = std::variant<CompletionResult, ProviderFailure>;

class ProviderClient {
 public:
  virtual ~ProviderClient() = default;
  // One chat completion, retried per ProviderOptions. Blocking; thread-safe.
  virtual CompletionOutcome Complete(const CompletionRequest& request) = 0;
  // "openai gpt-4o-mini at https://api.openai.com/v1" (no key, no credentials).
  virtual std::string Describe() const = 0;
  virtual ProviderKind kind() const = 0;
};

// Builds a client for providers.<name>. Fails with kInvalidArgument on an empty model, a
// base_url that is not http(s)://host[:port][/prefix] (no credentials, query or fragment),
// or a ca_file that cannot be loaded. Messages never echo the key.
Result<std::unique_ptr<ProviderClient>> MakeProviderClient(std::string_view name,
                                                           const ProviderConfig& config,
                                                           const ProviderOptions& options = {});

// The provider to use: providers.<name>, or providers.<default_provider> when name is empty.
// kNotFound when there is no such provider (or no default), naming it.
Result<std::pair<std::string, ProviderConfig>> SelectProvider(const DaemonConfig& config,
                                                              std::string_view name = {});

}  // namespace missy::provider

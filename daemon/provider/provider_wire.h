// The two wire formats: OpenAI chat completions and Anthropic messages. Encodes requests,
// decodes answers and classifies error answers. Pure (no I/O); JSON stays in the .cpp.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "daemon/provider/provider_client.h"

namespace missy::provider {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// "/v1/chat/completions" or "/v1/messages" (see BaseUrl::Target).
std::string_view EndpointOf(ProviderKind kind);

// The JSON body: OpenAI {"model","messages":[system?, ...],"max_tokens","temperature"};
// Anthropic {"model","system"?,"messages","max_tokens","temperature"}.
std::string EncodeRequestBody(ProviderKind kind, std::string_view model,
                              const CompletionRequest& request);

// Authentication and version headers: OpenAI "Authorization: Bearer KEY" (none when the key
// is empty, as for Ollama); Anthropic "x-api-key" and "anthropic-version: 2023-06-01".
HeaderList AuthHeaders(ProviderKind kind, std::string_view api_key);

// A 2xx answer's body → the result, or a message saying what is wrong with it.
struct DecodeError {
  std::string message;
};
std::variant<CompletionResult, DecodeError> DecodeCompletion(ProviderKind kind,
                                                             std::string_view body);

// What a non-2xx answer means. `message` is the provider's error message when the body has
// one (else the body's start), prefixed with the status; not yet redacted or shortened.
struct ErrorVerdict {
  ProviderErrorKind kind = ProviderErrorKind::kBadResponse;
  bool retryable = false;
  std::string message;
};
ErrorVerdict ClassifyErrorAnswer(ProviderKind kind, int http_status, std::string_view body);

// Whether an error text says the prompt exceeded the model's context window (OpenAI,
// Anthropic, vLLM, llama.cpp server and Ollama phrasings).
bool MentionsContextLength(std::string_view text);

}  // namespace missy::provider

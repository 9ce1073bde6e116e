#include "daemon/provider/provider_wire.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cmath>

namespace missy::provider {
namespace {

namespace json = boost::json;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

const json::value* Find(const json::value& v, std::string_view key) {
  const json::object* o = v.if_object();
  if (o == nullptr) return nullptr;
  auto it = o->find(key);
  return it == o->end() ? nullptr : &it->value();
}

std::string StringAt(const json::value* v) {
  if (v == nullptr) return {};
  if (const json::string* s = v->if_string()) return std::string(*s);
  if (v->is_int64()) return std::to_string(v->as_int64());
  return {};
}

int64_t IntAt(const json::value* v) {
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->as_uint64());
  if (v->is_double()) return static_cast<int64_t>(v->as_double());
  return 0;
}

// Text of an OpenAI content: a string, or an array of {"type":"text","text"} parts.
bool ContentText(const json::value& content, std::string* out) {
  if (const json::string* s = content.if_string()) {
    *out = std::string(*s);
    return true;
  }
  const json::array* parts = content.if_array();
  if (parts == nullptr) return false;
  out->clear();
  for (const json::value& part : *parts) {
    if (StringAt(Find(part, "type")) == "text") *out += StringAt(Find(part, "text"));
  }
  return true;
}

std::variant<CompletionResult, DecodeError> DecodeOpenAi(const json::value& root) {
  CompletionResult result;
  const json::value* choices = Find(root, "choices");
  if (choices == nullptr || !choices->is_array() || choices->as_array().empty()) {
    return DecodeError{"the answer has no choices"};
  }
  const json::value& choice = choices->as_array().front();
  const json::value* message = Find(choice, "message");
  const json::value* content = message == nullptr ? nullptr : Find(*message, "content");
  if (content == nullptr || !ContentText(*content, &result.text)) {
    return DecodeError{"the answer has no choices[0].message.content text"};
  }
  result.stop_reason = StringAt(Find(choice, "finish_reason"));
  result.truncated = result.stop_reason == "length";
  if (const json::value* usage = Find(root, "usage")) {
    result.input_tokens = IntAt(Find(*usage, "prompt_tokens"));
    result.output_tokens = IntAt(Find(*usage, "completion_tokens"));
  }
  result.model = StringAt(Find(root, "model"));
  return result;
}

std::variant<CompletionResult, DecodeError> DecodeAnthropic(const json::value& root) {
  CompletionResult result;
  const json::value* content = Find(root, "content");
  if (content == nullptr || !content->is_array()) {
    return DecodeError{"the answer has no content array"};
  }
  bool any_text = false;
  for (const json::value& block : content->as_array()) {
    if (StringAt(Find(block, "type")) != "text") continue;
    const json::value* text = Find(block, "text");
    if (text == nullptr || !text->is_string()) return DecodeError{"a text block has no text"};
    result.text += std::string(text->as_string());
    any_text = true;
  }
  if (!any_text && !content->as_array().empty()) {
    return DecodeError{"the answer has no text block"};
  }
  result.stop_reason = StringAt(Find(root, "stop_reason"));
  result.truncated = result.stop_reason == "max_tokens";
  if (const json::value* usage = Find(root, "usage")) {
    // Cached prompt tokens are reported apart from input_tokens; the prompt is their sum.
    result.input_tokens = IntAt(Find(*usage, "input_tokens")) +
                          IntAt(Find(*usage, "cache_creation_input_tokens")) +
                          IntAt(Find(*usage, "cache_read_input_tokens"));
    result.output_tokens = IntAt(Find(*usage, "output_tokens"));
  }
  result.model = StringAt(Find(root, "model"));
  return result;
}

// The provider's error fields: OpenAI/vLLM/llama.cpp {"error":{"message","type","code"}},
// Anthropic {"type":"error","error":{"type","message"}}, Ollama {"error":"text"}.
struct ErrorFields {
  std::string message, type, code;
};

ErrorFields ErrorFieldsOf(std::string_view body) {
  ErrorFields fields;
  boost::system::error_code ec;
  json::value root = json::parse(body, ec);
  if (ec) return fields;
  const json::value* error = Find(root, "error");
  if (error == nullptr) {
    fields.message = StringAt(Find(root, "message"));
    fields.type = StringAt(Find(root, "type"));
    return fields;
  }
  if (error->is_string()) {
    fields.message = std::string(error->as_string());
    return fields;
  }
  fields.message = StringAt(Find(*error, "message"));
  fields.type = StringAt(Find(*error, "type"));
  fields.code = StringAt(Find(*error, "code"));
  return fields;
}

}  // namespace

std::string_view EndpointOf(ProviderKind kind) {
  return kind == ProviderKind::kAnthropic ? "/v1/messages" : "/v1/chat/completions";
}

std::string EncodeRequestBody(ProviderKind kind, std::string_view model,
                              const CompletionRequest& request) {
  json::object body;
  body["model"] = model;
  json::array messages;
  if (kind == ProviderKind::kOpenAi && !request.system.empty()) {
    messages.push_back(json::object{{"role", "system"}, {"content", request.system}});
  }
  for (const auto& [role, text] : request.messages) {
    messages.push_back(json::object{{"role", role}, {"content", text}});
  }
  if (kind == ProviderKind::kAnthropic && !request.system.empty()) {
    body["system"] = request.system;
  }
  body["messages"] = std::move(messages);
  body["max_tokens"] = request.max_tokens;
  // Boost.JSON writes 0.0 as "0E0" (valid JSON); a whole temperature is written as an integer.
  if (std::abs(request.temperature) < 1e6 &&
      request.temperature == std::trunc(request.temperature)) {
    body["temperature"] = static_cast<int64_t>(request.temperature);
  } else {
    body["temperature"] = request.temperature;
  }
  return json::serialize(body);
}

HeaderList AuthHeaders(ProviderKind kind, std::string_view api_key) {
  HeaderList headers;
  if (kind == ProviderKind::kAnthropic) {
    if (!api_key.empty()) headers.emplace_back("x-api-key", std::string(api_key));
    headers.emplace_back("anthropic-version", "2023-06-01");
  } else if (!api_key.empty()) {
    headers.emplace_back("Authorization", "Bearer " + std::string(api_key));
  }
  return headers;
}

std::variant<CompletionResult, DecodeError> DecodeCompletion(ProviderKind kind,
                                                             std::string_view body) {
  boost::system::error_code ec;
  json::value root = json::parse(body, ec);
  if (ec) return DecodeError{"the answer is not valid JSON (" + ec.message() + ")"};
  if (!root.is_object()) return DecodeError{"the answer is not a JSON object"};
  if (Find(root, "error") != nullptr && Find(root, "choices") == nullptr &&
      Find(root, "content") == nullptr) {
    return DecodeError{"the answer is an error: " + ErrorFieldsOf(body).message};
  }
  return kind == ProviderKind::kAnthropic ? DecodeAnthropic(root) : DecodeOpenAi(root);
}

bool MentionsContextLength(std::string_view text) {
  const std::string lower = Lower(text);
  for (std::string_view needle :
       {"context_length_exceeded", "maximum context length", "context length", "context window",
        "context size", "exceeds the context", "exceed_context_size", "prompt is too long",
        "too many tokens", "input is too long", "too many input tokens"}) {
    if (lower.find(needle) != std::string::npos) return true;
  }
  return false;
}

ErrorVerdict ClassifyErrorAnswer(ProviderKind /*kind*/, int http_status, std::string_view body) {
  const ErrorFields fields = ErrorFieldsOf(body);
  std::string detail = fields.message;
  if (detail.empty()) detail = std::string(body.substr(0, 1024));
  ErrorVerdict verdict;
  verdict.message = "HTTP " + std::to_string(http_status) + ": " + detail;
  const bool context_length = fields.code == "context_length_exceeded" ||
                              fields.type == "exceed_context_size_error" ||
                              fields.type == "request_too_large" || MentionsContextLength(detail);
  if (http_status == 401 || http_status == 403) {
    verdict.kind = ProviderErrorKind::kAuth;
  } else if (http_status == 429) {
    verdict.kind = ProviderErrorKind::kRateLimited;
    // An exhausted quota or billing limit does not pass by waiting.
    verdict.retryable = fields.code != "insufficient_quota" && fields.type != "insufficient_quota";
  } else if (http_status == 413 || (http_status >= 400 && context_length)) {
    verdict.kind = ProviderErrorKind::kContextLength;
  } else if (http_status == 408) {
    verdict.kind = ProviderErrorKind::kTimeout;
    verdict.retryable = true;
  } else if (http_status >= 400 && http_status < 500) {
    verdict.kind = ProviderErrorKind::kBadRequest;
  } else if (http_status >= 500 && http_status < 600) {
    verdict.kind = ProviderErrorKind::kServer;
    verdict.retryable = http_status == 500 || http_status == 502 || http_status == 503 ||
                        http_status == 504 || http_status == 529;
  } else {
    verdict.kind = ProviderErrorKind::kBadResponse;
    verdict.message = "unexpected HTTP status " + std::to_string(http_status);
  }
  return verdict;
}

}  // namespace missy::provider

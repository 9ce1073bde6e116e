#include "daemon/provider/provider_wire.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace missy::provider {
namespace {

namespace json = boost::json;

CompletionRequest Request() {
  CompletionRequest request;
  request.system = "sys";
  request.messages = {{"user", "u1"}, {"assistant", "a1"}, {"user", "u2 \"quoted\"\n"}};
  request.max_tokens = 300;
  request.temperature = 0.2;
  return request;
}

TEST(ProviderWireTest, OpenAiBody) {
  const json::value body = json::parse(EncodeRequestBody(ProviderKind::kOpenAi, "m", Request()));
  EXPECT_EQ(body.at("model"), "m");
  EXPECT_EQ(body.at("max_tokens"), 300);
  EXPECT_DOUBLE_EQ(body.at("temperature").to_number<double>(), 0.2);
  EXPECT_FALSE(body.as_object().contains("system"));
  const json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0], (json::value{{"role", "system"}, {"content", "sys"}}));
  EXPECT_EQ(messages[2], (json::value{{"role", "assistant"}, {"content", "a1"}}));
  EXPECT_EQ(messages[3].at("content"), "u2 \"quoted\"\n");
}

TEST(ProviderWireTest, AnthropicBodyAndNoEmptySystem) {
  const json::value body =
      json::parse(EncodeRequestBody(ProviderKind::kAnthropic, "claude", Request()));
  EXPECT_EQ(body.at("system"), "sys");
  EXPECT_EQ(body.at("messages").as_array().size(), 3u);
  CompletionRequest no_system = Request();
  no_system.system.clear();
  no_system.temperature = 0;
  const std::string text = EncodeRequestBody(ProviderKind::kAnthropic, "claude", no_system);
  EXPECT_FALSE(json::parse(text).as_object().contains("system"));
  EXPECT_NE(text.find(R"("temperature":0)"), std::string::npos) << text;
  const json::value openai = json::parse(EncodeRequestBody(ProviderKind::kOpenAi, "m", no_system));
  EXPECT_EQ(openai.at("messages").as_array().size(), 3u);
}

TEST(ProviderWireTest, AuthHeaders) {
  EXPECT_EQ(AuthHeaders(ProviderKind::kOpenAi, "k"), (HeaderList{{"Authorization", "Bearer k"}}));
  EXPECT_TRUE(AuthHeaders(ProviderKind::kOpenAi, "").empty());
  EXPECT_EQ(AuthHeaders(ProviderKind::kAnthropic, "k"),
            (HeaderList{{"x-api-key", "k"}, {"anthropic-version", "2023-06-01"}}));
  EXPECT_EQ(EndpointOf(ProviderKind::kOpenAi), "/v1/chat/completions");
  EXPECT_EQ(EndpointOf(ProviderKind::kAnthropic), "/v1/messages");
}

TEST(ProviderWireTest, DecodesOpenAiVariants) {
  auto parts = DecodeCompletion(
      ProviderKind::kOpenAi,
      R"({"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"length"}]})");
  ASSERT_TRUE(std::holds_alternative<CompletionResult>(parts));
  EXPECT_EQ(std::get<CompletionResult>(parts).text, "ab");
  EXPECT_TRUE(std::get<CompletionResult>(parts).truncated);
  EXPECT_EQ(std::get<CompletionResult>(parts).input_tokens, 0);  // no usage reported

  for (const char* bad :
       {R"({"choices":[]})", R"({"choices":[{"message":{"content":null}}]})", R"([1,2])",
        R"({"error":{"message":"overloaded"}})", "", "{\"choices\":[{\"message\":"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(std::holds_alternative<DecodeError>(DecodeCompletion(ProviderKind::kOpenAi, bad)));
  }
}

TEST(ProviderWireTest, DecodesAnthropicVariants) {
  auto result = DecodeCompletion(
      ProviderKind::kAnthropic,
      R"({"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"x"}],"stop_reason":"max_tokens","usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":3}})");
  ASSERT_TRUE(std::holds_alternative<CompletionResult>(result));
  const auto& r = std::get<CompletionResult>(result);
  EXPECT_EQ(r.text, "x");
  EXPECT_EQ(r.input_tokens, 115);
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_TRUE(r.truncated);
  EXPECT_TRUE(std::holds_alternative<DecodeError>(
      DecodeCompletion(ProviderKind::kAnthropic, R"({"content":"x"})")));
  EXPECT_TRUE(std::holds_alternative<DecodeError>(
      DecodeCompletion(ProviderKind::kAnthropic, R"({"content":[{"type":"tool_use"}]})")));
}

struct ErrorCase {
  ProviderKind kind;
  int status;
  const char* body;
  ProviderErrorKind want;
  bool retryable;
};

TEST(ProviderWireTest, ClassifiesErrorAnswers) {
  using K = ProviderErrorKind;
  const auto kOpenAi = ProviderKind::kOpenAi;
  const auto kAnthropic = ProviderKind::kAnthropic;
  const ErrorCase cases[] = {
      // Context length, every dialect: never retried.
      {kOpenAi, 400, R"({"error":{"message":"x","code":"context_length_exceeded"}})",
       K::kContextLength, false},
      {kOpenAi, 400,
       R"({"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens","type":"BadRequestError","code":400})",
       K::kContextLength, false},  // vLLM
      {kOpenAi, 400,
       R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}})",
       K::kContextLength, false},  // llama.cpp server
      {kOpenAi, 500, R"({"error":"input length exceeds the context length"})", K::kContextLength,
       false},  // Ollama
      {kAnthropic, 400,
       R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}})",
       K::kContextLength, false},
      {kAnthropic, 413, R"({"type":"error","error":{"type":"request_too_large","message":"big"}})",
       K::kContextLength, false},
      // Auth.
      {kOpenAi, 401, R"({"error":{"message":"Incorrect API key"}})", K::kAuth, false},
      {kAnthropic, 403, R"({"type":"error","error":{"type":"permission_error"}})", K::kAuth, false},
      // Rate limits: retried unless the quota is gone.
      {kOpenAi, 429, R"({"error":{"message":"Rate limit reached"}})", K::kRateLimited, true},
      {kOpenAi, 429, R"({"error":{"message":"quota","code":"insufficient_quota"}})",
       K::kRateLimited, false},
      // Server side.
      {kOpenAi, 500, "oops", K::kServer, true},
      {kOpenAi, 502, "", K::kServer, true},
      {kOpenAi, 503, "", K::kServer, true},
      {kOpenAi, 504, "", K::kServer, true},
      {kAnthropic, 529, R"({"type":"error","error":{"type":"overloaded_error"}})", K::kServer,
       true},
      {kOpenAi, 501, "", K::kServer, false},
      {kOpenAi, 408, "", K::kTimeout, true},
      // Other client errors.
      {kOpenAi, 400, R"({"error":{"message":"temperature out of range"}})", K::kBadRequest, false},
      {kOpenAi, 404, R"({"error":"model not found"})", K::kBadRequest, false},
      {kOpenAi, 422, "nope", K::kBadRequest, false},
      {kOpenAi, 302, "", K::kBadResponse, false},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(testing::Message() << c.status << " " << c.body);
    const ErrorVerdict verdict = ClassifyErrorAnswer(c.kind, c.status, c.body);
    EXPECT_EQ(verdict.kind, c.want) << ProviderErrorKindName(verdict.kind);
    EXPECT_EQ(verdict.retryable, c.retryable);
  }
}

TEST(ProviderWireTest, ErrorMessageIsTheProvidersOrTheBodysStart) {
  EXPECT_EQ(
      ClassifyErrorAnswer(ProviderKind::kOpenAi, 400, R"({"error":{"message":"bad x"}})").message,
      "HTTP 400: bad x");
  EXPECT_EQ(ClassifyErrorAnswer(ProviderKind::kOpenAi, 502, "<html>Bad gateway</html>").message,
            "HTTP 502: <html>Bad gateway</html>");
  EXPECT_EQ(ClassifyErrorAnswer(ProviderKind::kOpenAi, 500, std::string(5000, 'x')).message.size(),
            std::string("HTTP 500: ").size() + 1024);
}

TEST(ProviderWireTest, ContextLengthPhrasings) {
  EXPECT_TRUE(MentionsContextLength("This model's Maximum Context Length is 8192 tokens"));
  EXPECT_TRUE(MentionsContextLength("prompt is too long"));
  EXPECT_TRUE(MentionsContextLength("Too many tokens in the request"));
  EXPECT_TRUE(MentionsContextLength("input exceeds the context window"));
  EXPECT_FALSE(MentionsContextLength("invalid temperature"));
  EXPECT_FALSE(MentionsContextLength(""));
}

}  // namespace
}  // namespace missy::provider

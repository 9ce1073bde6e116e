// ProviderClient against a scripted fake provider on loopback (plain HTTP): answers, the
// request it sends, timeouts, retries and Retry-After, error kinds, key redaction.
#include "daemon/provider/provider_client.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <sstream>
#include <thread>

#include "provider/fake_provider_server.h"

namespace missy::provider {
namespace {

namespace json = boost::json;
using missy::provider_test::AnthropicAnswer;
using missy::provider_test::FakeProviderServer;
using missy::provider_test::Json;
using missy::provider_test::OpenAiAnswer;
using missy::provider_test::Reply;
using std::chrono::milliseconds;
using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

constexpr char kKey[] = "sk-test-4f1e0c9a7b3d2e8f6a5b4c3d";

// Short timeouts and backoff so the suite stays fast.
ProviderOptions FastOptions() {
  ProviderOptions options;
  options.connect_timeout = 1000ms;
  options.handshake_timeout = 1000ms;
  options.first_byte_timeout = 1000ms;
  options.total_timeout = 5000ms;
  options.max_attempts = 4;
  options.backoff_base = 10ms;
  options.backoff_max = 40ms;
  return options;
}

std::unique_ptr<ProviderClient> MakeClient(const std::string& name, const std::string& base_url,
                                           const std::string& key = kKey,
                                           const ProviderOptions& options = FastOptions()) {
  ProviderConfig config;
  config.model = name == "anthropic" ? "claude-test" : "gpt-test";
  config.base_url = base_url;
  config.api_key = key;
  auto client = MakeProviderClient(name, config, options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

CompletionRequest SampleRequest() {
  CompletionRequest request;
  request.system = "You summarize.";
  request.messages = {{"user", "Summarize: the build failed."}};
  request.max_tokens = 256;
  return request;
}

// The result (a copy: outcomes are temporaries), or an empty one and a test failure.
CompletionResult Ok(const CompletionOutcome& outcome) {
  if (const auto* failure = std::get_if<ProviderFailure>(&outcome)) {
    ADD_FAILURE() << "failed: " << ProviderErrorKindName(failure->kind) << ": " << failure->message;
    return {};
  }
  return std::get<CompletionResult>(outcome);
}

ProviderFailure Failed(const CompletionOutcome& outcome) {
  if (const auto* failure = std::get_if<ProviderFailure>(&outcome)) return *failure;
  ADD_FAILURE() << "succeeded: " << std::get<CompletionResult>(outcome).text;
  return {};
}

int64_t MillisSince(SteadyClock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(SteadyClock::now() - start).count();
}

TEST(ProviderClientTest, OpenAiAnswerAndTheRequestSent) {
  FakeProviderServer server({Json(200, OpenAiAnswer("The build failed in step 3."))});
  auto client = MakeClient("openai", server.Url("/v1"));
  ASSERT_NE(client, nullptr);
  const CompletionResult result = Ok(client->Complete(SampleRequest()));
  EXPECT_EQ(result.text, "The build failed in step 3.");
  EXPECT_EQ(result.input_tokens, 42);
  EXPECT_EQ(result.output_tokens, 7);
  EXPECT_EQ(result.model, "gpt-test");
  EXPECT_EQ(result.stop_reason, "stop");
  EXPECT_FALSE(result.truncated);
  EXPECT_EQ(result.attempts, 1);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/chat/completions");
  EXPECT_EQ(requests[0].headers.at("authorization"), std::string("Bearer ") + kKey);
  EXPECT_EQ(requests[0].headers.at("content-type"), "application/json");
  EXPECT_EQ(requests[0].headers.at("host"), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(requests[0].headers.count("x-api-key"), 0u);
  const json::value body = json::parse(requests[0].body);
  EXPECT_EQ(body.at("model"), "gpt-test");
  EXPECT_EQ(body.at("max_tokens"), 256);
  EXPECT_EQ(body.at("temperature").to_number<double>(), 0.0);
  const json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].at("role"), "system");
  EXPECT_EQ(messages[0].at("content"), "You summarize.");
  EXPECT_EQ(messages[1].at("role"), "user");
  EXPECT_EQ(messages[1].at("content"), "Summarize: the build failed.");
}

TEST(ProviderClientTest, OllamaStyleWithoutKeyOrV1SendsNoAuthorization) {
  FakeProviderServer server({Json(200, OpenAiAnswer("ok", "llama3"))});
  auto client = MakeClient("ollama", server.Url(), /*key=*/"");
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(Ok(client->Complete(SampleRequest())).model, "llama3");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "/v1/chat/completions");
  EXPECT_EQ(requests[0].headers.count("authorization"), 0u);
}

TEST(ProviderClientTest, AnthropicAnswerAndTheRequestSent) {
  FakeProviderServer server({Json(200, AnthropicAnswer("Summary."))});
  auto client = MakeClient("anthropic", server.Url());
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->kind(), ProviderKind::kAnthropic);
  const CompletionResult result = Ok(client->Complete(SampleRequest()));
  EXPECT_EQ(result.text, "Summary. (end)");  // text blocks joined
  EXPECT_EQ(result.input_tokens, 30);
  EXPECT_EQ(result.output_tokens, 5);
  EXPECT_EQ(result.model, "claude-test");
  EXPECT_EQ(result.stop_reason, "end_turn");

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "/v1/messages");
  EXPECT_EQ(requests[0].headers.at("x-api-key"), kKey);
  EXPECT_EQ(requests[0].headers.at("anthropic-version"), "2023-06-01");
  EXPECT_EQ(requests[0].headers.count("authorization"), 0u);
  const json::value body = json::parse(requests[0].body);
  EXPECT_EQ(body.at("model"), "claude-test");
  EXPECT_EQ(body.at("system"), "You summarize.");
  const json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].at("role"), "user");
}

TEST(ProviderClientTest, SlowFirstByteTimesOutWithinTheTimeout) {
  Reply slow = Json(200, OpenAiAnswer("late"));
  slow.delay = 2000ms;
  FakeProviderServer server({slow});
  ProviderOptions options = FastOptions();
  options.first_byte_timeout = 200ms;
  options.max_attempts = 1;
  auto client = MakeClient("openai", server.Url("/v1"), kKey, options);
  const auto start = SteadyClock::now();
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  const int64_t elapsed = MillisSince(start);
  EXPECT_EQ(failure.kind, ProviderErrorKind::kTimeout) << failure.message;
  EXPECT_EQ(failure.http_status, 0);
  EXPECT_EQ(failure.attempts, 1);
  EXPECT_GE(elapsed, 190);
  EXPECT_LT(elapsed, 800);
}

TEST(ProviderClientTest, ConfiguredTimeoutBoundsEachAttempt) {
  Reply slow = Json(200, OpenAiAnswer("late"));
  slow.delay = 3000ms;
  FakeProviderServer server({slow});
  ProviderConfig config{"gpt-test", server.Url("/v1"), kKey, /*timeout_s=*/1};
  ProviderOptions options = FastOptions();
  options.first_byte_timeout = 5000ms;
  options.max_attempts = 1;
  auto client = MakeProviderClient("openai", config, options);
  ASSERT_TRUE(client.ok());
  const auto start = SteadyClock::now();
  const ProviderFailure failure = Failed((*client)->Complete(SampleRequest()));
  const int64_t elapsed = MillisSince(start);
  EXPECT_EQ(failure.kind, ProviderErrorKind::kTimeout) << failure.message;
  EXPECT_GE(elapsed, 990);
  EXPECT_LT(elapsed, 1600);
}

TEST(ProviderClientTest, TimeoutIsRetried) {
  Reply slow = Json(200, OpenAiAnswer("late"));
  slow.delay = 2000ms;
  FakeProviderServer server({slow, Json(200, OpenAiAnswer("on time"))});
  ProviderOptions options = FastOptions();
  options.first_byte_timeout = 150ms;
  auto client = MakeClient("openai", server.Url("/v1"), kKey, options);
  const CompletionResult result = Ok(client->Complete(SampleRequest()));
  EXPECT_EQ(result.text, "on time");
  EXPECT_EQ(result.attempts, 2);
}

TEST(ProviderClientTest, TotalTimeoutBoundsAllAttempts) {
  Reply slow = Json(200, OpenAiAnswer("late"));
  slow.delay = 2000ms;
  FakeProviderServer server({slow, slow, slow, slow, slow, slow, slow, slow});
  ProviderOptions options = FastOptions();
  options.first_byte_timeout = 150ms;
  options.total_timeout = 400ms;
  options.max_attempts = 8;
  auto client = MakeClient("openai", server.Url("/v1"), kKey, options);
  const auto start = SteadyClock::now();
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  const int64_t elapsed = MillisSince(start);
  EXPECT_EQ(failure.kind, ProviderErrorKind::kTimeout);
  EXPECT_GE(failure.attempts, 2);
  EXPECT_LT(failure.attempts, 8);
  EXPECT_GE(elapsed, 390);
  EXPECT_LT(elapsed, 800);
}

TEST(ProviderClientTest, RateLimitedHonoursRetryAfterSeconds) {
  Reply limited = Json(429, R"({"error":{"message":"Rate limit reached","type":"requests"}})");
  limited.headers = {{"Retry-After", "1"}};
  FakeProviderServer server({limited, Json(200, OpenAiAnswer("after the wait"))});
  auto client = MakeClient("openai", server.Url("/v1"));
  const auto start = SteadyClock::now();
  const CompletionResult result = Ok(client->Complete(SampleRequest()));
  EXPECT_EQ(result.text, "after the wait");
  EXPECT_EQ(result.attempts, 2);
  EXPECT_GE(MillisSince(start), 950);  // the backoff alone would be 10 ms
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_GE(std::chrono::duration_cast<milliseconds>(requests[1].at - requests[0].at).count(), 950);
}

TEST(ProviderClientTest, RateLimitedHonoursRetryAfterMs) {
  Reply limited = Json(429, R"({"error":{"message":"slow down"}})");
  limited.headers = {{"retry-after-ms", "300"}, {"Retry-After", "30"}};
  FakeProviderServer server({limited, Json(200, OpenAiAnswer("ok"))});
  auto client = MakeClient("openai", server.Url("/v1"));
  const auto start = SteadyClock::now();
  EXPECT_EQ(Ok(client->Complete(SampleRequest())).attempts, 2);
  const int64_t elapsed = MillisSince(start);
  EXPECT_GE(elapsed, 295);
  EXPECT_LT(elapsed, 2000);
}

TEST(ProviderClientTest, RetryAfterBeyondTheTotalTimeoutFailsAtOnce) {
  Reply limited = Json(429, R"({"error":{"message":"come back in a minute"}})");
  limited.headers = {{"Retry-After", "60"}};
  FakeProviderServer server({limited, Json(200, OpenAiAnswer("never asked"))});
  auto client = MakeClient("openai", server.Url("/v1"));
  const auto start = SteadyClock::now();
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  EXPECT_LT(MillisSince(start), 500);
  EXPECT_EQ(failure.kind, ProviderErrorKind::kRateLimited);
  EXPECT_EQ(failure.http_status, 429);
  EXPECT_EQ(failure.attempts, 1);
  EXPECT_NE(failure.message.find("come back in a minute"), std::string::npos) << failure.message;
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProviderClientTest, ServerErrorsAreRetriedThenSucceed) {
  FakeProviderServer server({Json(500, R"({"error":{"message":"boom"}})"),
                             Json(503, "<html>unavailable</html>"),
                             Json(200, OpenAiAnswer("third time"))});
  auto client = MakeClient("openai", server.Url("/v1"));
  const CompletionResult result = Ok(client->Complete(SampleRequest()));
  EXPECT_EQ(result.text, "third time");
  EXPECT_EQ(result.attempts, 3);
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(ProviderClientTest, ServerErrorEveryTimeFailsAfterMaxAttempts) {
  const Reply error = Json(500, R"({"error":{"message":"internal failure"}})");
  FakeProviderServer server({error, error, error, error, error, error});
  auto client = MakeClient("openai", server.Url("/v1"));
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  EXPECT_EQ(failure.kind, ProviderErrorKind::kServer);
  EXPECT_EQ(failure.http_status, 500);
  EXPECT_EQ(failure.attempts, 4);
  EXPECT_NE(failure.message.find("internal failure"), std::string::npos) << failure.message;
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST(ProviderClientTest, AnthropicOverloaded529IsRetried) {
  FakeProviderServer server(
      {Json(529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"),
       Json(200, AnthropicAnswer("fine"))});
  auto client = MakeClient("anthropic", server.Url());
  EXPECT_EQ(Ok(client->Complete(SampleRequest())).attempts, 2);
}

TEST(ProviderClientTest, MalformedJsonIsABadResponseNotRetried) {
  FakeProviderServer server(
      {Json(200, R"({"choices":[{"message":)"), Json(200, OpenAiAnswer("x"))});
  auto client = MakeClient("openai", server.Url("/v1"));
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  EXPECT_EQ(failure.kind, ProviderErrorKind::kBadResponse);
  EXPECT_EQ(failure.http_status, 200);
  EXPECT_EQ(failure.attempts, 1);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProviderClientTest, ConnectionResetMidResponseIsRetried) {
  Reply reset;
  reset.action = Reply::Action::kResetMidBody;
  FakeProviderServer server({reset, Json(200, OpenAiAnswer("second try"))});
  auto client = MakeClient("openai", server.Url("/v1"));
  const CompletionResult result = Ok(client->Complete(SampleRequest()));
  EXPECT_EQ(result.text, "second try");
  EXPECT_EQ(result.attempts, 2);
}

TEST(ProviderClientTest, ConnectionClosedWithoutAnswerIsANetworkFailure) {
  Reply close;
  close.action = Reply::Action::kCloseNoAnswer;
  FakeProviderServer server({close, close});
  ProviderOptions options = FastOptions();
  options.max_attempts = 2;
  auto client = MakeClient("openai", server.Url("/v1"), kKey, options);
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  EXPECT_EQ(failure.kind, ProviderErrorKind::kNetwork) << failure.message;
  EXPECT_EQ(failure.attempts, 2);
}

TEST(ProviderClientTest, ConnectionRefusedIsANetworkFailureAfterRetries) {
  std::string url;
  {
    FakeProviderServer gone({});
    url = gone.Url("/v1");
  }
  auto client = MakeClient("openai", url);
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  EXPECT_EQ(failure.kind, ProviderErrorKind::kNetwork) << failure.message;
  EXPECT_EQ(failure.attempts, 4);
  EXPECT_NE(failure.message.find("connect"), std::string::npos) << failure.message;
}

TEST(ProviderClientTest, OpenAiContextLengthErrorIsDistinctAndNotRetried) {
  FakeProviderServer server(
      {Json(
           400,
           R"({"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})"),
       Json(200, OpenAiAnswer("never asked"))});
  auto client = MakeClient("openai", server.Url("/v1"));
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  EXPECT_EQ(failure.kind, ProviderErrorKind::kContextLength);
  EXPECT_EQ(failure.http_status, 400);
  EXPECT_EQ(failure.attempts, 1);
  EXPECT_NE(failure.message.find("maximum context length is 8192"), std::string::npos);
  EXPECT_EQ(ToStatus(failure).code(), StatusCode::kContextOverflow);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProviderClientTest, AnthropicPromptTooLongIsAContextLengthError) {
  FakeProviderServer server({Json(
      400,
      R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}})")});
  auto client = MakeClient("anthropic", server.Url());
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  EXPECT_EQ(failure.kind, ProviderErrorKind::kContextLength);
  EXPECT_EQ(failure.attempts, 1);
}

TEST(ProviderClientTest, OtherBadRequestIsNotRetried) {
  FakeProviderServer server({Json(404, R"({"error":"model 'gpt-test' not found"})")});
  auto client = MakeClient("ollama", server.Url(), "");
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  EXPECT_EQ(failure.kind, ProviderErrorKind::kBadRequest);
  EXPECT_EQ(failure.http_status, 404);
  EXPECT_EQ(failure.attempts, 1);
  EXPECT_NE(failure.message.find("not found"), std::string::npos) << failure.message;
  EXPECT_EQ(ToStatus(failure).code(), StatusCode::kUnavailable);
}

TEST(ProviderClientTest, ResponseLargerThanTheLimitIsABadResponse) {
  FakeProviderServer server({Json(200, OpenAiAnswer(std::string(4096, 'x')))});
  ProviderOptions options = FastOptions();
  options.max_response_bytes = 1024;
  auto client = MakeClient("openai", server.Url("/v1"), kKey, options);
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  EXPECT_EQ(failure.kind, ProviderErrorKind::kBadResponse);
  EXPECT_EQ(failure.attempts, 1);
  EXPECT_NE(failure.message.find("1024"), std::string::npos) << failure.message;
}

// The key must not escape through failures, Describe() or the log, even when the provider
// echoes it (whole or in part) in its error text.
TEST(ProviderClientTest, KeyNeverAppearsInFailuresDescribeOrLogs) {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);

  const std::string partial = std::string(kKey).substr(3, 20);
  FakeProviderServer server(
      {Json(500, std::string(R"({"error":{"message":"bad key )") + kKey + R"("}})"),
       Json(502, std::string("upstream said: ") + partial),
       Json(401, std::string(R"({"error":{"message":"Incorrect API key provided: )") + kKey +
                     R"(","type":"invalid_request_error","code":"invalid_api_key"}})")});
  auto client = MakeClient("openai", server.Url("/v1"));
  const ProviderFailure failure = Failed(client->Complete(SampleRequest()));
  spdlog::set_default_logger(previous);

  EXPECT_EQ(failure.kind, ProviderErrorKind::kAuth);
  EXPECT_EQ(failure.http_status, 401);
  EXPECT_EQ(failure.attempts, 3);
  EXPECT_EQ(failure.message.find(kKey), std::string::npos) << failure.message;
  EXPECT_NE(failure.message.find("Incorrect API key provided: ***"), std::string::npos)
      << failure.message;
  EXPECT_EQ(ToStatus(failure).ToString().find(kKey), std::string::npos);
  EXPECT_EQ(client->Describe(), "openai gpt-test at " + server.Url("/v1"));
  const std::string logged = log.str();
  EXPECT_NE(logged.find("attempt 1/4 failed"), std::string::npos) << logged;  // it did log
  EXPECT_NE(logged.find("attempt 2/4 failed"), std::string::npos) << logged;
  EXPECT_EQ(logged.find(kKey), std::string::npos) << logged;
  EXPECT_EQ(logged.find(partial), std::string::npos) << logged;
  EXPECT_EQ(logged.find(partial.substr(0, 12)), std::string::npos) << logged;
}

// A compaction sends one request per leaf: they share one kept-alive connection.
TEST(ProviderClientTest, RequestsReuseTheKeptAliveConnection) {
  std::vector<Reply> script(5, Json(200, OpenAiAnswer("same")));
  FakeProviderServer server(script);
  auto client = MakeClient("openai", server.Url("/v1"));
  for (int i = 0; i < 5; ++i) {
    const CompletionResult result = Ok(client->Complete(SampleRequest()));
    EXPECT_EQ(result.text, "same");
    EXPECT_EQ(result.attempts, 1);
  }
  EXPECT_EQ(server.requests().size(), 5u);
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(server.requests()[4].headers.count("connection"), 0u);  // HTTP/1.1: keep-alive
}

// A server that closes an idle connection (its keep-alive timeout) costs nothing: the
// next request finds the pooled connection closed and goes out on a new one at once, in
// the same attempt. An answer that says "close" is not pooled at all.
TEST(ProviderClientTest, APooledConnectionTheServerClosedIsReplacedInTheSameAttempt) {
  Reply closes_after = Json(200, OpenAiAnswer("first"));
  closes_after.close_after = true;
  Reply says_close = Json(200, OpenAiAnswer("second"));
  says_close.headers = {{"Connection", "close"}};
  FakeProviderServer server({closes_after, says_close, Json(200, OpenAiAnswer("third"))});
  auto client = MakeClient("openai", server.Url("/v1"));
  EXPECT_EQ(Ok(client->Complete(SampleRequest())).text, "first");
  std::this_thread::sleep_for(50ms);  // the server's close reaches the pooled socket
  const CompletionResult second = Ok(client->Complete(SampleRequest()));
  EXPECT_EQ(second.text, "second");
  EXPECT_EQ(second.attempts, 1);
  const CompletionResult third = Ok(client->Complete(SampleRequest()));
  EXPECT_EQ(third.text, "third");
  EXPECT_EQ(third.attempts, 1);
  EXPECT_EQ(server.requests().size(), 3u);  // the lost resend never reached a handler
  EXPECT_EQ(server.connections(), 3);
}

TEST(ProviderClientTest, ConcurrentCallsShareOneClient) {
  std::vector<Reply> script(6, Json(200, OpenAiAnswer("same")));
  FakeProviderServer server(script);
  auto client = MakeClient("openai", server.Url("/v1"));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      if (std::holds_alternative<CompletionResult>(client->Complete(SampleRequest()))) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 6);
  EXPECT_EQ(server.requests().size(), 6u);
}

TEST(ProviderClientTest, DetectsTheKind) {
  EXPECT_EQ(DetectProviderKind("anthropic", ""), ProviderKind::kAnthropic);
  EXPECT_EQ(DetectProviderKind("my-Anthropic-proxy", "https://gw.example"),
            ProviderKind::kAnthropic);
  EXPECT_EQ(DetectProviderKind("claude", "https://api.anthropic.com"), ProviderKind::kAnthropic);
  EXPECT_EQ(DetectProviderKind("openai", "https://api.openai.com/v1"), ProviderKind::kOpenAi);
  EXPECT_EQ(DetectProviderKind("ollama", "http://127.0.0.1:11434/v1"), ProviderKind::kOpenAi);
  EXPECT_EQ(DetectProviderKind("local", "not a url"), ProviderKind::kOpenAi);
}

TEST(ProviderClientTest, MakeValidatesAndDescribesWithoutTheKey) {
  ProviderConfig config{"gpt-4o-mini", "https://api.openai.com/v1", kKey, 60};
  auto client = MakeProviderClient("openai", config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ((*client)->Describe(), "openai gpt-4o-mini at https://api.openai.com/v1");

  config.base_url = "";  // the official endpoints by default
  EXPECT_EQ((*MakeProviderClient("anthropic", {"claude-x", "", kKey, 60}))->Describe(),
            "anthropic claude-x at https://api.anthropic.com");
  EXPECT_EQ((*MakeProviderClient("openai", config))->Describe(),
            "openai gpt-4o-mini at https://api.openai.com/v1");

  ProviderOptions forced;
  forced.kind = ProviderKind::kAnthropic;
  EXPECT_EQ((*MakeProviderClient("proxy", {"m", "http://gw:8080", "", 60}, forced))->kind(),
            ProviderKind::kAnthropic);

  auto no_model = MakeProviderClient("openai", {"", "https://api.openai.com", kKey, 60});
  ASSERT_FALSE(no_model.ok());
  EXPECT_EQ(no_model.status().field(), "providers.openai.model");
  auto bad_url =
      MakeProviderClient("openai", {"m", std::string("https://u:") + kKey + "@h", kKey, 60});
  ASSERT_FALSE(bad_url.ok());
  EXPECT_EQ(bad_url.status().field(), "providers.openai.base_url");
  EXPECT_EQ(bad_url.status().ToString().find(kKey), std::string::npos);
  ProviderOptions bad_ca;
  bad_ca.ca_file = "/nonexistent/ca.pem";
  auto no_ca = MakeProviderClient("openai", {"m", "https://h", kKey, 60}, bad_ca);
  ASSERT_FALSE(no_ca.ok());
  EXPECT_EQ(no_ca.status().code(), StatusCode::kInvalidArgument);
  ProviderOptions zero_attempts;
  zero_attempts.max_attempts = 0;
  EXPECT_FALSE(MakeProviderClient("openai", {"m", "https://h", kKey, 60}, zero_attempts).ok());
}

TEST(ProviderClientTest, SelectsTheNamedOrDefaultProvider) {
  DaemonConfig config;
  config.providers["openai"] = {"gpt-4o-mini", "https://api.openai.com/v1", kKey, 60};
  config.providers["local"] = {"llama3", "http://127.0.0.1:11434/v1", "", 30};
  EXPECT_EQ(SelectProvider(config).status().code(), StatusCode::kNotFound);  // no default
  config.default_provider = "local";
  auto chosen = SelectProvider(config);
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->first, "local");
  EXPECT_EQ(chosen->second.model, "llama3");
  EXPECT_EQ(SelectProvider(config, "openai")->second.model, "gpt-4o-mini");
  auto missing = SelectProvider(config, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
}

}  // namespace
}  // namespace missy::provider

// The llm summary backend against a scripted provider on loopback (tests/provider's fake
// server): the checkpoint prompt and transcript it sends, the trail appended to the answer,
// escalation (normal → aggressive → extractive), the fallback on provider errors, the
// split of a request too long for the model, and, through SummarizationService, the
// backend each stored summary's audit event names, with the API key nowhere.
#include "daemon/service/summary_backend.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/service/summarization_service.h"
#include "provider/fake_provider_server.h"
#include "service_fixture.h"

namespace missy::testing {
namespace {

using namespace std::chrono_literals;
using provider_test::FakeProviderServer;
using provider_test::Json;
using provider_test::OpenAiAnswer;
using provider_test::Reply;

constexpr char kKey[] = "sk-test-SECRET-7d1c2b3a4e5f";

provider::ProviderOptions FastOptions() {
  provider::ProviderOptions options;
  options.connect_timeout = 1000ms;
  options.first_byte_timeout = 2000ms;
  options.total_timeout = 5000ms;
  options.max_attempts = 2;
  options.backoff_base = 5ms;
  options.backoff_max = 10ms;
  return options;
}

ProviderConfig Provider(const FakeProviderServer& server) {
  return ProviderConfig{"gpt-test", server.Url("/v1"), kKey, /*timeout_s=*/5};
}

std::shared_ptr<provider::ProviderClient> Client(const FakeProviderServer& server) {
  auto client = provider::MakeProviderClient("local", Provider(server), FastOptions());
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::shared_ptr<provider::ProviderClient>(std::move(client).value())
                     : nullptr;
}

MessageTokenCounter Counter() {
  return MessageTokenCounter(std::make_shared<HeuristicTokenCounter>());
}

// `count` tool rounds, each about `words` words of tool output, as stored messages.
std::vector<StoredMessage> Chunk(int count, int words = 300) {
  std::vector<StoredMessage> out;
  const MessageTokenCounter counter = Counter();
  const auto add = [&](Message m) {
    StoredMessage s;
    s.seq = static_cast<int64_t>(out.size()) + 1;
    s.tokens = counter.CountMessage(m);
    s.message = std::move(m);
    out.push_back(std::move(s));
  };
  for (int i = 1; i <= count; ++i) {
    const std::string n = std::to_string(i);
    add(Message::User("step " + n + ": fix src/module_" + n + ".cc"));
    add(CallMessage("call_" + n, "bash", R"({"command":"make test_)" + n + R"("})"));
    add(Message::ToolResult(
        "call_" + n, Words(words, "log" + n + "_") + "\nerror: test_" + n + " failed", "bash"));
    add(Message::Assistant("fixed module " + n));
  }
  return out;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SummaryBackendTest, TheCheckpointAnswerGetsTheTrailAppended) {
  FakeProviderServer server({Json(200, OpenAiAnswer("Goal: fix the modules. State: done."))});
  LlmBackend backend(Client(server));
  const std::vector<StoredMessage> chunk = Chunk(3);
  const BackendSummary sum = backend.Leaf(chunk, "earlier: set up the repo", 300, Counter());
  EXPECT_EQ(sum.backend, "llm");
  EXPECT_TRUE(sum.fallback.empty()) << sum.fallback;
  EXPECT_EQ(sum.llm_requests, 1);
  EXPECT_TRUE(Has(sum.text, "Goal: fix the modules. State: done.\nArtifacts:")) << sum.text;
  EXPECT_TRUE(Has(sum.text, "src/module_2.cc")) << sum.text;
  EXPECT_TRUE(Has(sum.text, "make test_3")) << sum.text;
  EXPECT_TRUE(Has(sum.text, "error: test_1 failed")) << sum.text;
  EXPECT_TRUE(sum.Shrinks());
  EXPECT_EQ(sum.artifacts, ExtractArtifacts(chunk));

  ASSERT_EQ(server.requests().size(), 1u);
  const std::string body = server.requests()[0].body;
  for (const char* part :
       {"Goal and constraints", "Progress and decisions", "Files touched", "Errors and fixes",
        "Current state", "Next steps", "\"max_tokens\":300", "earlier: set up the repo",
        "user: step 1: fix src/module_1.cc", "assistant called bash(", "tool bash: log1_0",
        "assistant: fixed module 3"}) {
    EXPECT_TRUE(Has(body, part)) << part << "\n" << body.substr(0, 3000);
  }
  EXPECT_EQ(server.requests()[0].headers.at("authorization"), std::string("Bearer ") + kKey);
}

TEST(SummaryBackendTest, ToolResultsAreCutToHeadAndTail) {
  std::vector<StoredMessage> chunk = Chunk(1, 3000);
  LlmBackendOptions options;
  options.tool_result_chars = 100;
  const std::vector<std::string> units = RenderTranscript(chunk, options);
  ASSERT_EQ(units.size(), 3u);  // user, the call with its result, the answer
  EXPECT_TRUE(Has(units[1], "bytes omitted")) << units[1];
  EXPECT_TRUE(Has(units[1], "error: test_1 failed")) << units[1];
  EXPECT_LT(units[1].size(), 400u);
}

TEST(SummaryBackendTest, AnAnswerLongerThanItsSourceIsRetriedShorterThenReplaced) {
  std::string rambling = Words(3000, "blah");
  for (char& c : rambling) {
    if (c == '\n') c = ' ';  // one JSON string line
  }
  FakeProviderServer server({Json(200, OpenAiAnswer(rambling)), Json(200, OpenAiAnswer(rambling))});
  LlmBackend backend(Client(server));
  const std::vector<StoredMessage> chunk = Chunk(2, 200);
  const BackendSummary sum = backend.Leaf(chunk, "", 400, Counter());
  EXPECT_EQ(sum.backend, "extractive");
  EXPECT_TRUE(Has(sum.fallback, "not smaller")) << sum.fallback;
  EXPECT_EQ(sum.llm_requests, 2);
  EXPECT_TRUE(sum.Shrinks());
  const std::vector<provider_test::RecordedRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_TRUE(Has(requests[0].body, "\"max_tokens\":400"));
  EXPECT_FALSE(Has(requests[0].body, "much shorter"));
  EXPECT_TRUE(Has(requests[1].body, "\"max_tokens\":200"));
  EXPECT_TRUE(Has(requests[1].body, "much shorter"));
}

TEST(SummaryBackendTest, AServerErrorFallsBackAtOnce) {
  FakeProviderServer server({});  // every request: 500
  LlmBackend backend(Client(server));
  const BackendSummary sum = backend.Leaf(Chunk(2), "", 300, Counter());
  EXPECT_EQ(sum.backend, "extractive");
  EXPECT_TRUE(Has(sum.fallback, "provider server_error: HTTP 500")) << sum.fallback;
  EXPECT_EQ(sum.llm_requests, 1);           // not escalated: a shorter target won't help
  EXPECT_EQ(server.requests().size(), 2u);  // the client's own retry
  EXPECT_TRUE(sum.Shrinks());
}

Reply ContextLength() {
  return Json(400, R"({"error":{"message":"This model's maximum context length is 8192 tokens.",)"
                   R"("type":"invalid_request_error","code":"context_length_exceeded"}})");
}

TEST(SummaryBackendTest, ARequestTooLongForTheModelIsSplitOnGroupBoundaries) {
  FakeProviderServer server({ContextLength(), Json(200, OpenAiAnswer("first half done")),
                             Json(200, OpenAiAnswer("second half done"))});
  LlmBackend backend(Client(server));
  const BackendSummary sum = backend.Leaf(Chunk(4), "", 400, Counter());
  EXPECT_EQ(sum.backend, "llm") << sum.fallback;
  EXPECT_EQ(sum.llm_requests, 3);
  EXPECT_TRUE(Has(sum.text, "first half done\n\nsecond half done\nArtifacts:")) << sum.text;
  const std::vector<provider_test::RecordedRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_LT(requests[1].body.size(), requests[0].body.size() * 2 / 3);
  EXPECT_LT(requests[2].body.size(), requests[0].body.size() * 2 / 3);
  // Halves of whole rounds: the first has rounds 1-2 (each call with its result).
  EXPECT_TRUE(Has(requests[1].body, "make test_2") && Has(requests[1].body, "log2_0"));
  EXPECT_FALSE(Has(requests[1].body, "step 3"));
  EXPECT_TRUE(Has(requests[2].body, "make test_4") && Has(requests[2].body, "log4_0"));
  EXPECT_TRUE(Has(requests[1].body, "\"max_tokens\":200"));
}

TEST(SummaryBackendTest, AKnownSmallWindowSplitsBeforeSending) {
  FakeProviderServer server({Json(200, OpenAiAnswer("a")), Json(200, OpenAiAnswer("b"))});
  const std::vector<StoredMessage> chunk = Chunk(4, 300);
  int64_t transcript = 0;
  for (const std::string& unit : RenderTranscript(chunk, {})) {
    transcript += Counter().CountText(unit);
  }
  LlmBackendOptions options;
  // Room for the prompt and margin plus three quarters of the transcript: halves fit.
  options.max_input_tokens = transcript * 3 / 4 + 700;
  LlmBackend backend(Client(server), options);
  BackendSummary sum = backend.Leaf(chunk, "", 300, Counter());
  EXPECT_EQ(sum.backend, "llm") << sum.fallback;
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_TRUE(Has(sum.text, "a\n\nb\nArtifacts:")) << sum.text;
  // Where even one group does not fit: extractive, nothing sent.
  options.max_input_tokens = 300;
  LlmBackend tiny(Client(server), options);
  sum = tiny.Leaf(chunk, "", 300, Counter());
  EXPECT_EQ(sum.backend, "extractive");
  EXPECT_TRUE(Has(sum.fallback, "cannot be split")) << sum.fallback;
  EXPECT_EQ(sum.llm_requests, 0);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(SummaryBackendTest, TheTrailShowsTheErrorsThatReportOneFirst) {
  ArtifactTrail trail;
  trail.files = {"src/a.py"};
  trail.errors = {"TypeError: bad operand", "ValueError: empty name"};
  for (int i = 0; i < 10; ++i)
    trail.errors.push_back("handle_error(reason_" + std::to_string(i) + ")");
  EXPECT_EQ(RenderTrail(trail),
            "Artifacts:\nfiles: src/a.py\nerrors: (4 omitted) | TypeError: bad operand | "
            "ValueError: empty name | handle_error(reason_4) | handle_error(reason_5) | "
            "handle_error(reason_6) | handle_error(reason_7) | handle_error(reason_8) | "
            "handle_error(reason_9)");
  trail.errors.resize(2);
  EXPECT_EQ(RenderTrail(trail),
            "Artifacts:\nfiles: src/a.py\nerrors: TypeError: bad operand | ValueError: empty name");
}

TEST(SummaryBackendTest, ChildSummariesAreMergedWithTheirTrails) {
  FakeProviderServer server({Json(200, OpenAiAnswer("merged checkpoint"))});
  LlmBackend backend(Client(server));
  std::vector<ChildSummary> children;
  for (int i = 0; i < 4; ++i) {
    ArtifactTrail trail;
    trail.files = {"src/child_" + std::to_string(i) + ".cc"};
    children.push_back({"child summary " + std::to_string(i) + " " + Words(150), trail, 0});
  }
  const BackendSummary sum = backend.Condense(children, 300, Counter());
  EXPECT_EQ(sum.backend, "llm") << sum.fallback;
  EXPECT_TRUE(Has(sum.text, "merged checkpoint\nArtifacts:\nfiles: src/child_0.cc")) << sum.text;
  EXPECT_EQ(sum.artifacts.files.size(), 4u);
  EXPECT_TRUE(Has(server.requests()[0].body, "child summary 3"));
  EXPECT_TRUE(Has(server.requests()[0].body, "merge"));
}

TEST(SummaryBackendTest, NoRequestStartsAfterTheDeadline) {
  FakeProviderServer server({Json(200, OpenAiAnswer("never"))});
  LlmBackendOptions options;
  options.deadline = std::chrono::steady_clock::now() - 1ms;
  LlmBackend backend(Client(server), options);
  const BackendSummary sum = backend.Leaf(Chunk(2), "", 300, Counter());
  EXPECT_EQ(sum.backend, "extractive");
  EXPECT_TRUE(Has(sum.fallback, "deadline")) << sum.fallback;
  EXPECT_TRUE(server.requests().empty());
}

// --- Through SummarizationService -------------------------------------------------------

class LlmSummarizationTest : public ServiceFixture {
 protected:
  void UseLlm(const FakeProviderServer& server) {
    SetConfig([&](DaemonConfig& c) {
      c.summarizer.leaf_chunk_tokens = 3000;
      c.summarizer_backend.backend = "llm";
      c.summarizer_backend.provider = "local";
      c.providers["local"] = Provider(server);
    });
    service_ = std::make_unique<SummarizationService>(services_->deps, FastOptions());
  }
  void OnClosing() override { service_.reset(); }

  Result<SummarizeOutcome> Run(const std::string& id) {
    SummarizeRequest r;
    r.session_id = id;
    r.reason = "test";
    return service_->Summarize(r);
  }

  std::unique_ptr<SummarizationService> service_;
};

std::vector<Message> Rounds(int count) {
  std::vector<Message> out;
  for (const StoredMessage& m : Chunk(count, 200)) out.push_back(m.message);
  return out;
}

TEST_F(LlmSummarizationTest, SummariesAreStoredWithTheLlmBackendAndTheTrail) {
  std::vector<Reply> script(16, Json(200, OpenAiAnswer("checkpoint: modules fixed")));
  FakeProviderServer server(script);
  UseLlm(server);
  ASSERT_TRUE(Create("s").ok());
  ASSERT_TRUE(Append("s", Rounds(20)).status.ok());
  Result<SummarizeOutcome> out = Run("s");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->backend, "llm");
  EXPECT_GE(out->leaves, 1);
  EXPECT_EQ(out->fallbacks, 0);
  Result<std::vector<SummaryRecord>> all = stores_->summaries.List("s", false);
  ASSERT_TRUE(all.ok());
  ASSERT_FALSE(all->empty());
  EXPECT_TRUE(Has(all->front().content, "checkpoint: modules fixed\nArtifacts:"))
      << all->front().content;
  EXPECT_TRUE(Has(all->front().artifacts_json, "src/module_1.cc"));
  const std::vector<AuditEvent> done = Events("summarization.completed");
  ASSERT_EQ(static_cast<int64_t>(done.size()), out->leaves + out->condensed);
  EXPECT_TRUE(Has(done[0].detail_json, R"("backend":"llm")")) << done[0].detail_json;
  EXPECT_FALSE(Has(done[0].detail_json, "fallback")) << done[0].detail_json;
  // The second leaf continues the first: its request carries the first's summary.
  if (out->leaves >= 2) {
    EXPECT_TRUE(Has(server.requests()[1].body, "checkpoint: modules fixed"));
  }
}

TEST_F(LlmSummarizationTest, AFailingProviderFallsBackAndTheKeyIsNowhere) {
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  const std::string echo =
      R"({"error":{"message":"upstream broke for key )" + std::string(kKey) + R"("}})";
  std::vector<Reply> script(16, Json(500, echo));
  FakeProviderServer server(script);
  UseLlm(server);
  ASSERT_TRUE(Create("s").ok());
  ASSERT_TRUE(Append("s", Rounds(20)).status.ok());
  Result<SummarizeOutcome> out = Run("s");
  spdlog::default_logger()->sinks().pop_back();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_GE(out->leaves, 1);
  EXPECT_EQ(out->fallbacks, out->leaves + out->condensed);
  const std::vector<AuditEvent> done = Events("summarization.completed");
  ASSERT_FALSE(done.empty());
  for (const AuditEvent& e : done) {
    EXPECT_TRUE(Has(e.detail_json, R"("backend":"extractive")")) << e.detail_json;
    EXPECT_TRUE(Has(e.detail_json, R"("requested_backend":"llm")")) << e.detail_json;
    EXPECT_TRUE(Has(e.detail_json, "HTTP 500")) << e.detail_json;
    EXPECT_FALSE(Has(e.detail_json, kKey)) << e.detail_json;
  }
  for (const AuditEvent& e : Events("")) EXPECT_FALSE(Has(e.detail_json, kKey)) << e.detail_json;
  EXPECT_TRUE(Has(log.str(), "extractive")) << log.str();
  EXPECT_FALSE(Has(log.str(), kKey)) << log.str();
}

TEST_F(LlmSummarizationTest, AnUnusableProviderMeansTheExtractiveBackend) {
  FakeProviderServer server({});
  UseLlm(server);
  SetConfig([](DaemonConfig& c) { c.providers["local"].base_url = "ftp://nowhere"; });
  ASSERT_TRUE(Create("s").ok());
  ASSERT_TRUE(Append("s", Rounds(20)).status.ok());
  Result<SummarizeOutcome> out = Run("s");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_GE(out->leaves, 1);
  const std::vector<AuditEvent> done = Events("summarization.completed");
  ASSERT_FALSE(done.empty());
  EXPECT_TRUE(Has(done[0].detail_json, R"("fallback_reason":"no llm provider)"))
      << done[0].detail_json;
  EXPECT_TRUE(server.requests().empty());
}

// The session's choice: configured extractive, one session asks for the llm on provider
// "local"; another session keeps the configured backend. Bad choices are refused by name.
TEST_F(LlmSummarizationTest, ASessionChoosesItsOwnBackendAndProvider) {
  std::vector<Reply> script(16, Json(200, OpenAiAnswer("checkpoint: per session")));
  FakeProviderServer server(script);
  UseLlm(server);
  SetConfig([&](DaemonConfig& c) {
    c.summarizer_backend.backend = "extractive";
    c.summarizer_backend.provider = "";
    c.default_provider = "";
  });
  Session chooser;
  chooser.id = "llm-session";
  chooser.summarizer_backend = "llm";
  chooser.summarizer_provider = "local";
  ASSERT_TRUE(Create(chooser).ok());
  ASSERT_TRUE(Create("plain").ok());
  ASSERT_TRUE(Append("llm-session", Rounds(20)).status.ok());
  ASSERT_TRUE(Append("plain", Rounds(20)).status.ok());
  Result<SummarizeOutcome> chosen = Run("llm-session");
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->backend, "llm");
  EXPECT_EQ(chosen->fallbacks, 0);
  const size_t requests = server.requests().size();
  EXPECT_GE(requests, 1u);
  Result<SummarizeOutcome> plain = Run("plain");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->backend, "extractive");
  EXPECT_EQ(server.requests().size(), requests);  // the other session made no llm call

  Session bad_backend;
  bad_backend.id = "b1";
  bad_backend.summarizer_backend = "fast";
  Result<Session> r1 = Create(bad_backend);
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(r1.status().field(), "summarizer.backend");
  Session bad_provider;
  bad_provider.id = "b2";
  bad_provider.summarizer_provider = "nope";
  Result<Session> r2 = Create(bad_provider);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().field(), "summarizer.provider");
  EXPECT_TRUE(Has(r2.status().message(), "configured: local")) << r2.status().message();
  // Kept across a restart.
  Reopen();
  Result<Session> again = stores_->sessions.Get("llm-session");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->summarizer_backend, "llm");
  EXPECT_EQ(again->summarizer_provider, "local");
}

}  // namespace
}  // namespace missy::testing

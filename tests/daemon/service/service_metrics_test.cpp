// The counters the use cases bump (Services::metrics): context builds by zone with the
// messages they evicted, pruned and truncated; summarization jobs and the summaries they
// stored; provider requests and errors counted by the llm summary backend.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <memory>
#include <thread>

#include "daemon/metrics/daemon_metrics.h"
#include "daemon/service/summary_backend.h"
#include "service_fixture.h"

namespace missy::testing {
namespace {

class ServiceMetricsTest : public ServiceFixture {
 protected:
  metrics::DaemonMetrics& m() { return services_->metrics; }
};

TEST_F(ServiceMetricsTest, ContextBuildsCountByZoneWithWhatTheyLeftOut) {
  ASSERT_TRUE(Create("w").ok());
  ASSERT_TRUE(Append("w", ErrorRounds(1, 50, 400)).status.ok());
  Result<ContextOutcome> small = Context("w", 32000, 4000);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  const ContextReport& r = small->context.report;
  ASSERT_GT(r.dropped_messages, 0);  // the history does not fit: something was evicted
  ASSERT_NE(r.zone, "safe");

  EXPECT_EQ(m().context_builds.With({r.zone}).value(), 1u);
  EXPECT_EQ(m().context_builds.With({"safe"}).value(), 0u);
  EXPECT_EQ(m().context_evicted_messages.value(), static_cast<uint64_t>(r.dropped_messages));
  EXPECT_EQ(m().context_truncated_messages.value(), r.truncated.size());
  EXPECT_EQ(m().context_pruned_messages.value(), r.newly_pruned_seqs.size());

  Result<ContextOutcome> large = Context("w", 1'000'000, 4000);
  ASSERT_TRUE(large.ok()) << large.status().ToString();
  EXPECT_EQ(large->context.report.zone, "safe");
  EXPECT_EQ(m().context_builds.With({"safe"}).value(), 1u);
  EXPECT_EQ(m().context_builds.With({r.zone}).value(), 1u);
  EXPECT_EQ(m().context_evicted_messages.value(),
            static_cast<uint64_t>(r.dropped_messages + large->context.report.dropped_messages));
}

TEST_F(ServiceMetricsTest, AJobCountsAsCompletedWithTheSummariesItStored) {
  SetConfig([](DaemonConfig& c) {
    c.summarizer.leaf_chunk_tokens = 3000;
    c.summarizer.condensed_fanout = 4;
  });
  ASSERT_TRUE(Create("r").ok());
  ASSERT_TRUE(Append("r", ErrorRounds(1, 40, 200)).status.ok());
  ASSERT_TRUE(stores_->jobs.Enqueue("summarize", "r", "{}", clock_.NowMs()).ok());
  services_->summarizer.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (services_->summarizer.finished() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(services_->summarizer.finished(), 1);
  services_->summarizer.Stop();

  Result<std::vector<SummaryRecord>> all = stores_->summaries.List("r", false);
  ASSERT_TRUE(all.ok());
  uint64_t leaves = 0, condensed = 0;
  for (const SummaryRecord& s : *all) (s.depth == 0 ? leaves : condensed) += 1;
  ASSERT_GT(leaves, 0u);

  EXPECT_EQ(m().summarization_jobs.With({"extractive", "completed"}).value(), 1u);
  EXPECT_EQ(m().summarization_jobs.With({"extractive", "failed"}).value(), 0u);
  EXPECT_EQ(m().summarization_job_duration.With({"extractive"}).Read().count, 1u);
  EXPECT_EQ(m().summaries.With({"extractive", "leaf"}).value(), leaves);
  EXPECT_EQ(m().summaries.With({"extractive", "condensed"}).value(), condensed);
  EXPECT_EQ(m().summary_fallbacks.value(), 0u);
}

// Answers from a script: each Complete() takes the next outcome.
class ScriptedClient final : public provider::ProviderClient {
 public:
  explicit ScriptedClient(std::deque<provider::CompletionOutcome> script)
      : script_(std::move(script)) {}
  provider::CompletionOutcome Complete(const provider::CompletionRequest&) override {
    if (script_.empty()) return provider::ProviderFailure{provider::ProviderErrorKind::kServer};
    provider::CompletionOutcome next = std::move(script_.front());
    script_.pop_front();
    return next;
  }
  std::string Describe() const override { return "scripted"; }
  provider::ProviderKind kind() const override { return provider::ProviderKind::kOpenAi; }

 private:
  std::deque<provider::CompletionOutcome> script_;
};

TEST(ProviderMetricsTest, TheLlmBackendCountsRequestsAndErrorsByKind) {
  metrics::DaemonMetrics m;
  const MessageTokenCounter counter(std::make_shared<HeuristicTokenCounter>());
  std::vector<StoredMessage> chunk;
  for (int i = 1; i <= 4; ++i) {
    StoredMessage s;
    s.seq = i;
    s.message = i % 2 ? Message::User(Words(300, "question" + std::to_string(i) + "_"))
                      : Message::Assistant(Words(300, "answer" + std::to_string(i) + "_"));
    s.tokens = counter.CountMessage(s.message);
    chunk.push_back(std::move(s));
  }

  LlmBackendOptions options;
  options.metrics = &m;
  options.provider = "local";
  provider::CompletionResult ok;
  ok.text = "The user asked four questions; all were answered.";
  LlmBackend good(std::make_shared<ScriptedClient>(std::deque<provider::CompletionOutcome>{ok}),
                  options);
  BackendSummary sum = good.Leaf(chunk, "", 200, counter);
  EXPECT_EQ(sum.backend, "llm") << sum.fallback;
  EXPECT_EQ(m.provider_requests.With({"local"}).value(), 1u);
  EXPECT_EQ(m.provider_duration.With({"local"}).Read().count, 1u);

  // A rate limit is not cured by a shorter target: one failed request, then extractive.
  provider::ProviderFailure limited{provider::ProviderErrorKind::kRateLimited, 429, "slow down", 2};
  LlmBackend bad(std::make_shared<ScriptedClient>(std::deque<provider::CompletionOutcome>{limited}),
                 options);
  BackendSummary fallback = bad.Leaf(chunk, "", 200, counter);
  EXPECT_EQ(fallback.backend, "extractive");
  EXPECT_EQ(m.provider_requests.With({"local"}).value(), 2u);
  EXPECT_EQ(m.provider_errors.With({"local", "rate_limited"}).value(), 1u);
  EXPECT_EQ(m.provider_errors.With({"local", "server"}).value(), 0u);
  EXPECT_EQ(std::string(provider::ProviderErrorKindName(provider::ProviderErrorKind::kRateLimited)),
            "rate_limited");
}

}  // namespace
}  // namespace missy::testing

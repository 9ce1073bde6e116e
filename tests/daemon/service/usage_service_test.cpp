#include "daemon/service/usage_service.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>

#include "service_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

class ServiceUsageTest : public ServiceFixture {
 protected:
  // A session of model `model` with a short history, and one context issued for it.
  std::string IssueContext(const std::string& session_id, const std::string& model) {
    Session s;
    s.id = session_id;
    s.model = model;
    EXPECT_TRUE(Create(std::move(s)).ok());
    EXPECT_TRUE(Append(session_id, {Message::User(Words(200, "u")), Message::Assistant(Words(100))})
                    .status.ok());
    Result<ContextOutcome> out = Context(session_id);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) return {};
    estimated_ = out->estimated_tokens;
    return out->context_id;
  }
  Result<UsageOutcome> Report(const std::string& session_id, const std::string& context_id,
                              int64_t prompt_tokens, int64_t completion_tokens = 10) {
    UsageReport report;
    report.session_id = session_id;
    report.context_id = context_id;
    report.prompt_tokens = prompt_tokens;
    report.completion_tokens = completion_tokens;
    return Usage(std::move(report));
  }

  int64_t estimated_ = 0;
};

TEST_F(ServiceUsageTest, ReportForAnIssuedContextCalibratesItsModel) {
  const std::string ctx = IssueContext("s", "acme-1");
  ASSERT_FALSE(ctx.empty());
  ASSERT_GT(estimated_, 100);
  EXPECT_EQ(stores_->calibration.Get("acme-1").status().code(), StatusCode::kNotFound);

  // The provider counted 25% more than we did: the first sample sets the ratio.
  const int64_t prompt = estimated_ + estimated_ / 4;
  const double sample = static_cast<double>(prompt) / static_cast<double>(estimated_);
  clock_.Set(kStartMs + 42);
  Result<UsageOutcome> out = Report("s", ctx, prompt);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->model, "acme-1");
  EXPECT_EQ(out->estimated_tokens, estimated_);
  EXPECT_DOUBLE_EQ(out->before.ratio, 1.0);
  EXPECT_EQ(out->before.samples, 0);
  EXPECT_DOUBLE_EQ(out->after.ratio, sample);
  EXPECT_EQ(out->after.samples, 1);

  Result<Calibration> stored = stores_->calibration.Get("acme-1");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_DOUBLE_EQ(stored->ratio, sample);
  EXPECT_EQ(stored->samples, 1);
  EXPECT_EQ(stored->updated_at_ms, kStartMs + 42);

  // A second report moves the ratio toward its own sample by alpha (0.2).
  const int64_t lower = estimated_ - estimated_ / 10;
  const double sample2 = static_cast<double>(lower) / static_cast<double>(estimated_);
  Result<UsageOutcome> again = Report("s", ctx, lower);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  const double want = sample + 0.2 * (sample2 - sample);
  EXPECT_DOUBLE_EQ(again->before.ratio, sample);
  EXPECT_NEAR(again->after.ratio, want, 1e-12);
  EXPECT_EQ(again->after.samples, 2);
  EXPECT_NEAR(stores_->calibration.Get("acme-1")->ratio, want, 1e-12);

  // The next context budgets in calibrated units.
  Result<ContextOutcome> next = Context("s");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->calibration.samples, 2);
  EXPECT_NEAR(next->calibration.ratio, want, 1e-12);
  EXPECT_EQ(next->calibrated_total,
            static_cast<int64_t>(static_cast<double>(next->raw_total) / next->calibration.ratio));

  std::vector<AuditEvent> events = Events("calibration.updated");
  ASSERT_EQ(events.size(), 2u);
  json::value detail = json::parse(events[0].detail_json);
  EXPECT_EQ(detail.at("context_id").as_string(), ctx);
  EXPECT_EQ(detail.at("prompt_tokens").to_number<int64_t>(), prompt);
  EXPECT_EQ(detail.at("samples").to_number<int64_t>(), 1);
}

TEST_F(ServiceUsageTest, ModelsAreCalibratedSeparately) {
  const std::string a = IssueContext("a", "acme-1");
  const int64_t estimated_a = estimated_;
  const std::string b = IssueContext("b", "");  // no model: the "default" key
  ASSERT_TRUE(Report("a", a, estimated_a * 3 / 2).ok());
  Result<UsageOutcome> out = Report("b", b, estimated_);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->model, "default");
  EXPECT_DOUBLE_EQ(stores_->calibration.Get("default")->ratio, 1.0);
  EXPECT_DOUBLE_EQ(stores_->calibration.Get("acme-1")->ratio,
                   static_cast<double>(estimated_a * 3 / 2) / static_cast<double>(estimated_a));
}

TEST_F(ServiceUsageTest, UnknownContextIdIsNotFoundNamingContextId) {
  const std::string ctx = IssueContext("s", "acme-1");
  Result<UsageOutcome> out = Report("s", "ctx_never_issued", 500);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(out.status().field(), "context_id");
  EXPECT_NE(out.status().message().find("'ctx_never_issued'"), std::string::npos)
      << out.status().message();
  EXPECT_EQ(stores_->calibration.Get("acme-1").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Events("calibration.updated").empty());
}

TEST_F(ServiceUsageTest, ContextOfAnotherSessionIsNotFound) {
  const std::string mine = IssueContext("mine", "acme-1");
  ASSERT_TRUE(Create("other").ok());
  Result<UsageOutcome> out = Report("other", mine, 500);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(out.status().field(), "context_id");
  EXPECT_EQ(stores_->calibration.Get("acme-1").status().code(), StatusCode::kNotFound);
  // The owner can still report it.
  EXPECT_TRUE(Report("mine", mine, 500).ok());
}

TEST_F(ServiceUsageTest, ConcurrentReportsForOneModelAreAllCounted) {
  const std::string ctx = IssueContext("s", "acme-1");
  constexpr int kReports = 20;
  std::vector<Awaiter<Result<UsageOutcome>>> waits(kReports);
  for (int i = 0; i < kReports; ++i) {
    UsageReport report;
    report.session_id = "s";
    report.context_id = ctx;
    report.prompt_tokens = estimated_;
    services_->usage.Report(std::move(report), waits[i].Callback());
  }
  std::set<int64_t> samples;
  for (auto& w : waits) {
    std::optional<Result<UsageOutcome>> out = w.Wait();
    ASSERT_TRUE(out && out->ok());
    samples.insert((*out)->after.samples);
  }
  // Serialised read-modify-write: every report saw the one before it.
  EXPECT_EQ(samples.size(), static_cast<size_t>(kReports));
  EXPECT_EQ(*samples.begin(), 1);
  EXPECT_EQ(*samples.rbegin(), kReports);
  EXPECT_EQ(stores_->calibration.Get("acme-1")->samples, kReports);
}

}  // namespace
}  // namespace missy::testing

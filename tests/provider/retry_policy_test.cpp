#include "daemon/provider/retry_policy.h"

#include <gtest/gtest.h>

namespace missy::provider {
namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

// 2015-10-21 07:28:00 UTC.
const auto kNow = std::chrono::system_clock::from_time_t(1445412480);

TEST(RetryPolicyTest, RetryAfterSecondsAndFractions) {
  EXPECT_EQ(ParseRetryAfter("1", kNow), 1000ms);
  EXPECT_EQ(ParseRetryAfter(" 120 ", kNow), 120000ms);
  EXPECT_EQ(ParseRetryAfter("0", kNow), 0ms);
  EXPECT_EQ(ParseRetryAfter("0.25", kNow), 250ms);
  EXPECT_EQ(ParseRetryAfter("99999999999999", kNow), milliseconds(1000000000000));  // capped
}

TEST(RetryPolicyTest, RetryAfterHttpDates) {
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", kNow), 30000ms);
  EXPECT_EQ(ParseRetryAfter("Wednesday, 21-Oct-15 07:29:00 GMT", kNow), 60000ms);
  EXPECT_EQ(ParseRetryAfter("Wed Oct 21 07:28:05 2015", kNow), 5000ms);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:00:00 GMT", kNow), 0ms);  // past
}

TEST(RetryPolicyTest, RetryAfterGarbage) {
  for (const char* bad : {"", "soon", "-1", "1s", "1e3", "Wed, 21 Oct 2015", "..", "0x10"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParseRetryAfter(bad, kNow).has_value());
  }
}

TEST(RetryPolicyTest, RetryAfterMs) {
  EXPECT_EQ(ParseRetryAfterMs("300"), 300ms);
  EXPECT_EQ(ParseRetryAfterMs("12.2"), 13ms);
  EXPECT_FALSE(ParseRetryAfterMs("x").has_value());
}

TEST(RetryPolicyTest, BackoffDoublesUpToTheCapWithJitterDownToHalf) {
  struct Case {
    int failed;
    double unit;
    int64_t want_ms;
  };
  const Case cases[] = {{1, 0.0, 500},  {2, 0.0, 1000}, {3, 0.0, 2000},  {4, 0.0, 4000},
                        {5, 0.0, 8000}, {6, 0.0, 8000}, {60, 0.0, 8000}, {1, 0.999, 250},
                        {5, 0.5, 6000}, {0, 0.0, 500}};
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "failed=" << c.failed << " unit=" << c.unit);
    EXPECT_EQ(BackoffDelay(c.failed, 500ms, 8000ms, c.unit).count(), c.want_ms);
  }
}

TEST(RetryPolicyTest, RetryableKinds) {
  EXPECT_TRUE(IsRetryable(ProviderErrorKind::kRateLimited));
  EXPECT_TRUE(IsRetryable(ProviderErrorKind::kServer));
  EXPECT_TRUE(IsRetryable(ProviderErrorKind::kTimeout));
  EXPECT_TRUE(IsRetryable(ProviderErrorKind::kNetwork));
  EXPECT_FALSE(IsRetryable(ProviderErrorKind::kContextLength));
  EXPECT_FALSE(IsRetryable(ProviderErrorKind::kAuth));
  EXPECT_FALSE(IsRetryable(ProviderErrorKind::kTls));
  EXPECT_FALSE(IsRetryable(ProviderErrorKind::kBadResponse));
  EXPECT_FALSE(IsRetryable(ProviderErrorKind::kBadRequest));
}

TEST(RetryPolicyTest, Redact) {
  EXPECT_EQ(Redact("key sk-1 and sk-1!", "sk-1"), "key *** and ***!");
  EXPECT_EQ(Redact("nothing here", "sk-1"), "nothing here");
  EXPECT_EQ(Redact("no key set", ""), "no key set");
}

}  // namespace
}  // namespace missy::provider

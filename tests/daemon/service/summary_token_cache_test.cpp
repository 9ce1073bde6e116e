// SummaryTokenCache: each summary's context message is counted once per counter, and
// the cached count is the count.
#include "daemon/service/summary_token_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/assembler.h"
#include "core/message.h"

namespace missy::testing {
namespace {

// One token per byte; remembers how often it was asked.
class CallCountingCounter final : public TokenCounter {
 public:
  explicit CallCountingCounter(std::string name) : name_(std::move(name)) {}
  int64_t Count(std::string_view text) const override {
    ++calls;
    return static_cast<int64_t>(text.size());
  }
  std::string Name() const override { return name_; }
  mutable std::atomic<int> calls{0};

 private:
  std::string name_;
};

SummaryView View(const std::string& id, const std::string& text) {
  SummaryView v;
  v.id = id;
  v.first_seq = 1;
  v.last_seq = 10;
  v.message_count = 10;
  v.text = text;
  v.tokens = static_cast<int64_t>(text.size());
  return v;
}

TEST(SummaryTokenCacheTest, CountsEachSummaryOncePerCounter) {
  auto bytes = std::make_shared<CallCountingCounter>("bytes");
  const MessageTokenCounter counter(bytes);
  SummaryTokenCache cache;
  std::vector<SummaryView> views = {View("sum_a", "files: a.cpp"), View("sum_b", "errors: none")};
  cache.Fill(views, counter);
  const int calls = bytes->calls.load();
  ASSERT_GT(calls, 0);
  for (const SummaryView& v : views) {
    EXPECT_EQ(v.message_tokens,
              counter.CountMessage(Message::User(SummaryHeader(v) + "\n" + v.text)))
        << v.id;
  }
  bytes->calls = 0;

  // Known now: nothing is counted, the counts are the same.
  std::vector<SummaryView> again = {View("sum_b", "errors: none"), View("sum_a", "files: a.cpp")};
  cache.Fill(again, counter);
  EXPECT_EQ(bytes->calls.load(), 0);
  EXPECT_EQ(again[0].message_tokens, views[1].message_tokens);
  EXPECT_EQ(again[1].message_tokens, views[0].message_tokens);

  // Another counter (another encoding, or a factor) counts for itself.
  auto other = std::make_shared<CallCountingCounter>("other");
  MessageCountingOptions doubled;
  doubled.factor = 2.0;
  std::vector<SummaryView> scaled = {View("sum_a", "files: a.cpp")};
  cache.Fill(scaled, MessageTokenCounter(other, doubled));
  EXPECT_GT(other->calls.load(), 0);
  EXPECT_GT(scaled[0].message_tokens, views[0].message_tokens);
  EXPECT_EQ(cache.size(), 3u);
}

TEST(SummaryTokenCacheTest, StaysWithinItsBound) {
  auto bytes = std::make_shared<CallCountingCounter>("bytes");
  const MessageTokenCounter counter(bytes);
  SummaryTokenCache cache;
  for (size_t i = 0; i < SummaryTokenCache::kMaxEntries + 10; ++i) {
    std::vector<SummaryView> one = {View("sum_" + std::to_string(i), "text")};
    cache.Fill(one, counter);
    ASSERT_GT(one[0].message_tokens, 0);
  }
  EXPECT_LE(cache.size(), SummaryTokenCache::kMaxEntries);
}

}  // namespace
}  // namespace missy::testing

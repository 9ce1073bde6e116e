#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <string>

#include "core/token_counter.h"
#include "test_util.h"

namespace missy {
namespace {

// Samples of prose, code, JSON, logs and CJK with their exact token counts, written by
// scripts/gen-token-goldens (tiktoken@1.0.22).
TEST(HeuristicTest, NeverUndercountsTheCorpusByMoreThan15Percent) {
  auto doc = boost::json::parse(
      missy::testing::ReadFileOrDie(missy::testing::TestDataPath("tokens/heuristic.json")));
  HeuristicTokenCounter heuristic;
  std::map<std::string, int> per_category;
  for (const auto& c : doc.at("cases").as_array()) {
    std::string category(c.at("category").as_string());
    std::string text(c.at("text").as_string());
    const double exact = static_cast<double>(c.at("o200k_base").to_number<int64_t>());
    const double estimate = static_cast<double>(heuristic.Count(text));
    SCOPED_TRACE(category + " " + std::string(c.at("name").as_string()));
    EXPECT_GE(estimate, 0.85 * exact);
    // Conservative, but not wasteful: under 1.5x everywhere.
    EXPECT_LE(estimate, 1.5 * exact);
    // Against cl100k as well (older OpenAI models).
    EXPECT_GE(estimate, 0.85 * c.at("cl100k_base").to_number<double>());
    ++per_category[category];
  }
  for (const char* category : {"prose", "code", "json", "logs", "cjk"}) {
    EXPECT_GE(per_category[category], 2) << category;
  }
}

TEST(HeuristicTest, Formula) {
  HeuristicTokenCounter h;
  EXPECT_EQ(h.Count(""), 0);
  EXPECT_EQ(h.Count("hello world"), 3);     // 2 * 0.5 + 10 / 6 = 2.67
  EXPECT_EQ(h.Count("1234567"), 3);         // digit groups of 3
  EXPECT_EQ(h.Count("x 1234567"), 5);       // 0.67 + 1 (space, digit) + 3
  EXPECT_EQ(h.Count("{\"a\":1}"), 7);       // 5 * 0.9 + 0.67 + 1 = 6.17
  EXPECT_EQ(h.Count("中文字符"), 4);        // one per CJK character
  EXPECT_EQ(h.Count("a\r\n\r\n\r\nb"), 2);  // 0.67 + 0.5 + 0.67
  EXPECT_EQ(h.Count("        x"), 2);       // indentation run + letter
  EXPECT_EQ(h.Name(), "heuristic");
}

TEST(HeuristicTest, DenseLogLinesAreNotUndercounted) {
  // o200k counts this line at 36 tokens (tiktoken@1.0.22); chars/4 would say 17.
  const std::string line = "2026-11-21T16:38:12.123Z WARN [w-1] retry 2/5: HTTP 429 (12.3ms)\n";
  HeuristicTokenCounter h;
  EXPECT_EQ(h.Count(line), 35);
  EXPECT_GE(h.Count(line), 36 * 0.85);
}

}  // namespace
}  // namespace missy

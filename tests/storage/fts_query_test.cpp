// Query quoting for FTS5 MATCH (storage/fts_query.cpp).
#include "storage/fts_query.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

TEST(FtsQueryTest, QuotesEveryWordAndDropsSyntax) {
  struct Case {
    std::string raw;
    std::string all;  // AND form
  };
  const Case cases[] = {
      {"hello world", R"("hello" AND "world")"},
      {"NEAR(a b", R"("NEAR" AND "a" AND "b")"},
      {"foo* -bar ^baz col:qux", R"("foo" AND "bar" AND "baz" AND "col" AND "qux")"},
      {"say \"hi\" there", R"("say" AND "hi" AND "there")"},
      {"Hello hello HELLO", R"("Hello")"},
      {"'; DROP TABLE messages; --", R"("DROP" AND "TABLE" AND "messages")"},
      {"caf\xC3\xA9 na\xC3\xAFve", "\"caf\xC3\xA9\" AND \"na\xC3\xAFve\""},
      {"bad\xFF\xFEutf8 \xC0\xAF over", R"("bad" AND "utf8" AND "over")"},
      {"tab\tnew\nline\x01\x7f", R"("tab" AND "new" AND "line")"},
      {"((( ))) ** -- \"\"", ""},
      {"", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.raw);
    EXPECT_EQ(fts::BuildMatchExpression(fts::QueryTerms(c.raw), true), c.all);
  }
  EXPECT_EQ(fts::BuildMatchExpression(fts::QueryTerms("a b"), false), R"("a" OR "b")");
}

TEST(FtsQueryTest, BoundsTermsAndTermLength) {
  std::string many;
  for (int i = 0; i < 100; ++i) many += "w" + std::to_string(i) + " ";
  auto terms = fts::QueryTerms(many);
  ASSERT_EQ(terms.size(), 32u);
  EXPECT_EQ(terms.front(), "w0");
  EXPECT_EQ(terms.back(), "w31");
  auto long_word = fts::QueryTerms(std::string(10000, 'x') + " tail");
  ASSERT_EQ(long_word.size(), 2u);
  EXPECT_EQ(long_word[0].size(), 128u);
  EXPECT_EQ(long_word[1], "tail");
  // A cut never splits a UTF-8 sequence.
  std::string euros;
  for (int i = 0; i < 100; ++i) euros += "\xE2\x82\xAC";
  auto cut = fts::QueryTerms(euros);
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].size(), 126u);
}

}  // namespace
}  // namespace missy

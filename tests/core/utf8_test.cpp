#include "core/utf8.h"

#include <gtest/gtest.h>

namespace missy {
namespace {

TEST(Utf8Test, FindsTheFirstInvalidSequence) {
  struct Case {
    std::string text;
    size_t bad;
  };
  const Case cases[] = {
      {"plain ascii", std::string_view::npos},
      {"d\xC3\xA9j\xC3\xA0 \xE2\x82\xAC \xF0\x9F\x98\x80", std::string_view::npos},
      {"ab\x86", 2},            // a lone continuation byte
      {"\xC0\xAF", 0},          // overlong '/'
      {"x\xED\xA0\x80", 1},     // a UTF-16 surrogate
      {"\xF4\x90\x80\x80", 0},  // above U+10FFFF
      {"ok\xE2\x82", 2},        // truncated at the end
  };
  for (const Case& c : cases) EXPECT_EQ(InvalidUtf8At(c.text), c.bad) << c.text;
}

TEST(Utf8Test, ReplacesEachInvalidByteWithTheReplacementCharacter) {
  EXPECT_EQ(ToValidUtf8("a\x86"
                        "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(ToValidUtf8("d\xC3\xA9j\xC3\xA0"), "d\xC3\xA9j\xC3\xA0");
  EXPECT_EQ(InvalidUtf8At(ToValidUtf8("m\xa5odel\xff")), std::string_view::npos);
}

}  // namespace
}  // namespace missy

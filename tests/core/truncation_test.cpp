#include "core/truncation.h"

#include <gtest/gtest.h>

#include "context_test_helpers.h"

namespace missy {
namespace {

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

TEST(TruncationTest, ShortTextIsUnchanged) {
  const MessageTokenCounter counter = testing::BytesCounter();
  TruncatedText t = TruncateMiddleOut("hello", 5, counter);
  EXPECT_FALSE(t.truncated);
  EXPECT_EQ(t.text, "hello");
  EXPECT_EQ(t.tokens, 5);
}

TEST(TruncationTest, MarkerHeadAndTailWithExactCounts) {
  const MessageTokenCounter counter = testing::BytesCounter();
  std::string text(1000, 'x');
  text.replace(0, 4, "HEAD");
  text.replace(996, 4, "TAIL");
  TruncatedText t = TruncateMiddleOut(text, 200, counter);
  ASSERT_TRUE(t.truncated);
  EXPECT_LE(t.tokens, 200);
  EXPECT_EQ(t.tokens, static_cast<int64_t>(t.text.size()));
  EXPECT_EQ(t.text.substr(0, 4), "HEAD");
  EXPECT_EQ(t.text.substr(t.text.size() - 4), "TAIL");
  const std::string marker = "\n" + TruncationMarker(t.removed_tokens) + "\n";
  const size_t at = t.text.find(marker);
  ASSERT_NE(at, std::string::npos) << t.text;
  // N is what was removed: head + tail + N == original.
  EXPECT_EQ(static_cast<int64_t>(t.text.size() - marker.size()) + t.removed_tokens, 1000);
  EXPECT_EQ(TruncationMarker(812), "[...truncated 812 tokens...]");
}

TEST(TruncationTest, CutsOnUtf8Boundaries) {
  const MessageTokenCounter counter = testing::BytesCounter();
  // Code points of 2, 3 and 4 bytes; every budget must give valid UTF-8.
  std::string text;
  for (int i = 0; i < 200; ++i) text += "é€😀a";
  for (int64_t max = 40; max < 300; max += 7) {
    SCOPED_TRACE("max_tokens=" + std::to_string(max));
    TruncatedText t = TruncateMiddleOut(text, max, counter);
    ASSERT_TRUE(t.truncated);
    EXPECT_TRUE(ValidUtf8(t.text)) << t.text;
    EXPECT_LE(t.tokens, max);
  }
}

TEST(TruncationTest, SnapsToLineBoundaries) {
  const MessageTokenCounter counter = testing::BytesCounter();
  std::string text;
  for (int i = 0; i < 100; ++i) text += "line " + std::to_string(i) + " of the log output\n";
  TruncatedText t = TruncateMiddleOut(text, 400, counter);
  ASSERT_TRUE(t.truncated);
  // Head ends with a whole line, tail starts with a whole line.
  const size_t marker = t.text.find("[...truncated");
  ASSERT_NE(marker, std::string::npos);
  EXPECT_EQ(t.text[marker - 1], '\n');
  EXPECT_EQ(t.text.substr(0, 5), "line ");
  const size_t tail = t.text.find('\n', marker) + 1;
  EXPECT_EQ(t.text.substr(tail, 5), "line ") << t.text.substr(tail);
  EXPECT_LE(t.tokens, 400);
}

TEST(TruncationTest, HeuristicCounterStaysWithinBudget) {
  const MessageTokenCounter counter(std::make_shared<HeuristicTokenCounter>());
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "{\"k\": " + std::to_string(i) + ", \"v\": \"日本語\"}\n";
  for (int64_t max : {100, 500, 2500}) {
    SCOPED_TRACE("max_tokens=" + std::to_string(max));
    TruncatedText t = TruncateMiddleOut(text, max, counter);
    ASSERT_TRUE(t.truncated);
    EXPECT_LE(t.tokens, max);
    EXPECT_GE(t.tokens, max * 8 / 10) << "should use most of the budget";
    EXPECT_TRUE(ValidUtf8(t.text));
  }
}

TEST(TruncationTest, BudgetSmallerThanMarker) {
  const MessageTokenCounter counter = testing::BytesCounter();
  TruncatedText t = TruncateMiddleOut(std::string(500, 'x'), 10, counter);
  EXPECT_TRUE(t.truncated);
  EXPECT_EQ(t.text, "[...truncated 500 tokens...]");
}

// A build log with its one failing step in the middle: cut to a tenth, the marker lists the
// step's error lines as printed (once each, not a line the kept tail shows), and the
// result still fits.
TEST(TruncationTest, TheCutPartsErrorReportsAreListedInTheMarker) {
  const MessageTokenCounter counter = testing::BytesCounter();
  std::string log;
  for (int i = 0; i < 300; ++i) log += "[ " + std::to_string(i / 3) + "%] Building CXX object\n";
  const std::string error = "src/mesh.cpp:118:22: error: no member named 'push'";
  const std::string linker = "io.cpp:(.text+0x1a4): undefined reference to `parse_header'";
  for (int k = 0; k < 3; ++k) log += error + "\n  118 |   v.push(x);\n" + linker + "\n";
  log += "    logger.error(\"retrying\")\n";  // a mention: not listed
  for (int i = 0; i < 300; ++i) log += "[ " + std::to_string(i / 3) + "%] Linking\n";
  log += "collect2: error: ld returned 1 exit status\n";
  const std::string again = "collect2: error: ld returned 1 exit status\n";
  const std::string text = log.substr(0, log.size() / 2) + again + log.substr(log.size() / 2);

  const TruncatedText listed = TruncateMiddleOut(text, 1200, counter, true);
  ASSERT_TRUE(listed.truncated);
  EXPECT_LE(listed.tokens, 1200);
  const std::string marker = "[...truncated " + std::to_string(listed.removed_tokens) +
                             " tokens; the cut part reported:\n" + error + "\n" + linker + "\n...]";
  EXPECT_NE(listed.text.find("\n" + marker + "\n"), std::string::npos) << listed.text;
  EXPECT_EQ(listed.text.find("logger.error"), std::string::npos);

  const TruncatedText plain = TruncateMiddleOut(text, 1200, counter);
  EXPECT_EQ(plain.text.find(error), std::string::npos);
  EXPECT_NE(plain.text.find("\n" + TruncationMarker(plain.removed_tokens) + "\n"),
            std::string::npos);
  // Nothing reported in the cut part: the plain marker.
  const std::string quiet(4000, 'x');
  EXPECT_EQ(TruncateMiddleOut(quiet, 400, counter, true).text,
            TruncateMiddleOut(quiet, 400, counter).text);
}

}  // namespace
}  // namespace missy

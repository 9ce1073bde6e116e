#include "cli/table.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace missy::cli {
namespace {

using missy::testing::SplitLines;

TEST(TableTest, EllipsizeCutsByCodePointsAndKeepsOneLine) {
  struct Case {
    std::string in;
    size_t width;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"short", 10, "short"},
      {"exactly10!", 10, "exactly10!"},
      {"eleven-char", 10, "eleven-ch…"},
      {"héllo wörld", 6, "héllo…"},  // 2-byte letters count one column each
      {"a\nb\tc", 10, "a b c"},      // control characters become spaces
      {"abc", 1, "…"},
      {"abc", 0, ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Ellipsize(c.in, c.width), c.want) << "input '" << c.in << "' width " << c.width;
    EXPECT_LE(DisplayWidth(Ellipsize(c.in, c.width)), c.width) << c.in;
  }
  EXPECT_EQ(DisplayWidth("héllo…"), 6u);
  EXPECT_EQ(DisplayWidth("\xff\xfe"), 2u);  // invalid bytes count one each
}

TEST(TableTest, PaddingAndNumberFormats) {
  EXPECT_EQ(PadRight("ab", 4), "ab  ");
  EXPECT_EQ(PadLeft("ab", 4), "  ab");
  EXPECT_EQ(PadRight("abcdef", 4), "abc…");
  EXPECT_EQ(Thousands(0), "0");
  EXPECT_EQ(Thousands(999), "999");
  EXPECT_EQ(Thousands(1000), "1,000");
  EXPECT_EQ(Thousands(1234567), "1,234,567");
  EXPECT_EQ(Thousands(-45000), "-45,000");
  EXPECT_EQ(HumanDuration(850), "850 ms");
  EXPECT_EQ(HumanDuration(12345), "12.3 s");
  EXPECT_EQ(HumanDuration(245'000), "4m 05s");
  EXPECT_EQ(HumanDuration(7'380'000), "2h 03m");
  EXPECT_EQ(HumanDuration(3 * 86'400'000LL + 4 * 3'600'000LL), "3d 04h");
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(2355), "2.3 KiB");
  EXPECT_EQ(HumanBytes(33030144), "31.5 MiB");
  EXPECT_EQ(ShortTimestamp("2026-11-21T17:03:44.276Z"), "2026-11-21 17:03:44");
  EXPECT_EQ(ShortTimestamp("yesterday"), "yesterday");
  EXPECT_EQ(Count(1, "message"), "1 message");
  EXPECT_EQ(Count(3, "message"), "3 messages");
  EXPECT_EQ(Count(2, "summary", "summaries"), "2 summaries");
  EXPECT_EQ(Count(12000, "event"), "12,000 events");
}

TEST(TableTest, NarrowTablesKeepNaturalWidthsAndAlignNumbersRight) {
  Table t({{"ID", Align::kLeft, true}, {"MSGS", Align::kRight}, {"WHEN", Align::kLeft}});
  t.AddRow({"demo", "3", "2026-11-21 17:03:44"});
  t.AddRow({"a-longer-id", "1,204", "2026-11-21 17:04:00"});
  EXPECT_EQ(t.Render(),
            "ID            MSGS  WHEN\n"
            "demo             3  2026-11-21 17:03:44\n"
            "a-longer-id  1,204  2026-11-21 17:04:00\n");
}

TEST(TableTest, WideTablesShrinkFlexibleColumnsToFitAndCutWithEllipsis) {
  Table t({{"ID", Align::kLeft, true, 8},
           {"MODEL", Align::kLeft, true, 6},
           {"TOKENS", Align::kRight},
           {"UPDATED", Align::kLeft}});
  const std::string long_id(100, 'x');
  t.AddRow(
      {long_id, "claude-3-5-sonnet-20241022-with-a-long-suffix", "123,456", "2026-11-21 17:03:44"});
  t.AddRow({"short", "gpt-4o", "7", "2026-11-21 17:03:45"});
  const std::string out = t.Render(80);
  std::vector<std::string> lines = SplitLines(out);
  ASSERT_EQ(lines.size(), 3u) << out;
  for (const std::string& line : lines) EXPECT_LE(DisplayWidth(line), 80u) << line;
  EXPECT_EQ(DisplayWidth(lines[1]), 80u) << lines[1];  // the long row fills the width
  EXPECT_NE(lines[1].find("xxx…"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("123,456  2026-11-21 17:03:44"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[2].rfind("short ", 0), 0u) << lines[2];
  EXPECT_NE(lines[2].find("gpt-4o"), std::string::npos);  // short cells are not cut
  // Fixed columns are never cut, even below their natural width.
  const std::string narrow = t.Render(30);
  EXPECT_NE(narrow.find("2026-11-21 17:03:44"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("123,456"), std::string::npos) << narrow;
}

TEST(TableTest, NoTrailingSpacesAndMissingCellsAreEmpty) {
  Table t({{"A", Align::kLeft}, {"B", Align::kLeft}});
  t.AddRow({"one"});
  t.AddRow({"two", "2"});
  EXPECT_EQ(t.Render(), "A    B\none\ntwo  2\n");
  EXPECT_EQ(t.rows(), 2u);
}

}  // namespace
}  // namespace missy::cli

#include "cli/args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace missy::cli {
namespace {

const std::vector<OptionSpec> kOptions = {{"--json", false, ""},
                                          {"--limit", true, "-n"},
                                          {"--type", true, ""},
                                          {"--follow", false, "-f"}};

TEST(ArgsTest, PositionalsValuesAndSwitchesInAnyOrder) {
  Result<ParsedArgs> p = ParseArgs(
      {"show", "--limit", "5", "demo", "--json", "--type=a.b", "--type", "c.d"}, kOptions);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->positional, (std::vector<std::string>{"show", "demo"}));
  EXPECT_EQ(p->Get("--limit"), "5");
  EXPECT_TRUE(p->Has("--json"));
  EXPECT_FALSE(p->Has("--follow"));
  EXPECT_EQ(p->All("--type"), (std::vector<std::string>{"a.b", "c.d"}));
  EXPECT_EQ(p->Get("--type"), "c.d");  // the last one wins for single values
  EXPECT_EQ(p->Get("--missing", "dflt"), "dflt");
  EXPECT_EQ(p->Arg(1), "demo");
  EXPECT_EQ(p->Arg(7), "");
  EXPECT_FALSE(p->help);
}

TEST(ArgsTest, AliasesDashDashStdinAndNegativeNumbers) {
  Result<ParsedArgs> p = ParseArgs({"-f", "-n", "20", "-", "-3", "--", "--json", "-x"}, kOptions);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->Has("--follow"));
  EXPECT_EQ(p->Get("--limit"), "20");
  EXPECT_FALSE(p->Has("--json"));  // after "--": text
  EXPECT_EQ(p->positional, (std::vector<std::string>{"-", "-3", "--json", "-x"}));
}

TEST(ArgsTest, HelpAnywhere) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"rm", "-h"}, {"--json", "--help", "x"}}) {
    Result<ParsedArgs> p = ParseArgs(args, kOptions);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->help) << ::testing::PrintToString(args);
  }
}

TEST(ArgsTest, MistakesAreUsageErrorsNamingTheOption) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"-z"}, "unknown option '-z'"},
      {{"--bogus=1"}, "unknown option '--bogus'"},
      {{"ls", "--limit"}, "option --limit needs a value"},
      {{"--json=yes"}, "option --json takes no value"},
  };
  for (const Case& c : cases) {
    Result<ParsedArgs> p = ParseArgs(c.args, kOptions);
    ASSERT_FALSE(p.ok()) << ::testing::PrintToString(c.args);
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(p.status().message(), c.message) << ::testing::PrintToString(c.args);
  }
}

TEST(ArgsTest, IntOptionChecksRangeAndSyntax) {
  auto parse = [](std::vector<std::string> args) { return *ParseArgs(args, kOptions); };
  EXPECT_EQ(*IntOption(parse({}), "--limit", 1, 1000, 100), 100);
  EXPECT_EQ(*IntOption(parse({"--limit", "1000"}), "--limit", 1, 1000, 100), 1000);
  for (const char* bad : {"0", "1001", "ten", "5x", "", "-1"}) {
    Result<int64_t> r = IntOption(parse({"--limit", bad}), "--limit", 1, 1000, 100);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(),
              std::string("--limit: expected an integer from 1 to 1000, got '") + bad + "'");
  }
}

TEST(ArgsTest, UrlEncodeKeepsUnreservedCharactersOnly) {
  EXPECT_EQ(UrlEncode("abc-_.~09"), "abc-_.~09");
  EXPECT_EQ(UrlEncode("a b/c?d&e=f"), "a%20b%2Fc%3Fd%26e%3Df");
  EXPECT_EQ(UrlEncode("é"), "%C3%A9");
}

}  // namespace
}  // namespace missy::cli

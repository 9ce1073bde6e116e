// The proxy token file (config/token_file.cpp).
#include "config/token_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"

namespace missy {
namespace {

TEST(TokenFile, TheTokenIsTrimmedAndAnEmptyOrMissingFileIsAnErrorThatNeverQuotesIt) {
  testing::TempDir dir;
  const std::string path = dir.Join("token");
  std::ofstream(path) << "  s3cret-token\n\n";
  Result<std::string> token = ReadTokenFile(path);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(*token, "s3cret-token");
  EXPECT_EQ(*ReadTokenFile(""), "");

  std::ofstream(path, std::ios::trunc) << " \n";
  EXPECT_FALSE(ReadTokenFile(path).ok());
  Result<std::string> missing = ReadTokenFile(dir.Join("absent"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("context.proxy.token_file"), std::string::npos);
}

TEST(TokenFile, TokensAreEqualOnlyWhenEveryByteIs) {
  EXPECT_TRUE(TokenEquals("abc", "abc"));
  EXPECT_FALSE(TokenEquals("abd", "abc"));
  EXPECT_FALSE(TokenEquals("ab", "abc"));
  EXPECT_FALSE(TokenEquals("", "abc"));
  EXPECT_TRUE(TokenEquals("", ""));
}

}  // namespace
}  // namespace missy

#include "core/bpe_encoding.h"

#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace missy {
namespace {

std::shared_ptr<const BpeEncoding> Load(const std::string& name) {
  std::string contents =
      missy::testing::ReadFileOrDie(std::string(MISSY_DATA_DIR) + "/" + name + ".tiktoken");
  auto enc = BpeEncoding::FromTiktoken(name, contents);
  EXPECT_TRUE(enc.ok()) << enc.status().ToString();
  return enc.ok() ? *enc : nullptr;
}

const BpeEncoding& O200k() {
  static auto enc = Load("o200k_base");
  return *enc;
}
const BpeEncoding& Cl100k() {
  static auto enc = Load("cl100k_base");
  return *enc;
}

TEST(BpeEncodingTest, HelloWorld) {
  EXPECT_EQ(Cl100k().Encode("hello world"), (std::vector<uint32_t>{15339, 1917}));
  EXPECT_EQ(O200k().Encode("hello world"), (std::vector<uint32_t>{24912, 2375}));
  EXPECT_EQ(O200k().Count("hello world"), 2);
}

TEST(BpeEncodingTest, Gpl3) {
  std::string gpl = missy::testing::ReadFileOrDie("/usr/share/common-licenses/GPL-3");
  EXPECT_EQ(Cl100k().Count(gpl), 7455);
  EXPECT_EQ(O200k().Count(gpl), 7446);
  EXPECT_EQ(O200k().Encode(gpl).size(), 7446u);
}

}  // namespace
}  // namespace missy

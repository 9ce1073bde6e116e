#include "config/tokenizers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "test_util.h"

namespace missy {
namespace {

using missy::testing::TempDir;

TEST(TokenizerRegistryTest, LoadsFromTheBuildDataDirOnceAndShares) {
  TokenizerRegistry registry;
  EXPECT_EQ(registry.data_dir(), TokenizerRegistry::DefaultDataDir());
  auto a = registry.Get("o200k_base");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)->Name(), "o200k_base");
  EXPECT_EQ((*a)->Count("hello world"), 2);
  auto b = registry.Get("o200k_base");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());
  auto cl = registry.Get("cl100k_base");
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  EXPECT_EQ((*cl)->Count("hello world"), 2);
  EXPECT_NE(cl->get(), a->get());
  EXPECT_TRUE(registry.LoadAll().ok());
}

TEST(TokenizerRegistryTest, HeuristicNeedsNoFile) {
  TempDir empty;
  TokenizerRegistry registry(empty.path());
  auto h = registry.Get("heuristic");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)->Name(), "heuristic");
  EXPECT_EQ((*h)->Count("hello world"), 3);
}

TEST(TokenizerRegistryTest, UnknownEncoding) {
  TokenizerRegistry registry;
  auto r = registry.Get("p50k_base");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("p50k_base"), std::string::npos);
}

TEST(TokenizerRegistryTest, MissingFileNamesThePath) {
  TempDir empty;
  TokenizerRegistry registry(empty.path());
  auto r = registry.Get("o200k_base");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(empty.Join("o200k_base.tiktoken")), std::string::npos)
      << r.status().message();
  Status all = registry.LoadAll();
  EXPECT_EQ(all.code(), StatusCode::kNotFound);
}

TEST(TokenizerRegistryTest, CorruptFileNamesThePathAndHash) {
  TempDir dir;
  std::string real =
      missy::testing::ReadFileOrDie(TokenizerRegistry::DefaultDataDir() + "/cl100k_base.tiktoken");
  // Truncated: parses, but the sha256 check refuses it.
  missy::testing::WriteFileOrDie(dir.Join("cl100k_base.tiktoken"), real.substr(0, real.size() / 2));
  TokenizerRegistry registry(dir.path());
  auto r = registry.Get("cl100k_base");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find(dir.Join("cl100k_base.tiktoken")), std::string::npos);
  EXPECT_NE(r.status().message().find("sha256"), std::string::npos);
  // A failed load is retried: once the right file is in place, Get succeeds.
  missy::testing::WriteFileOrDie(dir.Join("cl100k_base.tiktoken"), real);
  auto ok = registry.Get("cl100k_base");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)->Count("hello world"), 2);
}

TEST(TokenizerRegistryTest, ConcurrentFirstUseLoadsOnce) {
  TokenizerRegistry registry;
  std::vector<const TokenCounter*> seen(6, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      auto r = registry.Get(t % 2 ? "o200k_base" : "cl100k_base");
      if (r.ok()) seen[t] = r->get();
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 6; ++t) {
    ASSERT_NE(seen[t], nullptr);
    EXPECT_EQ(seen[t], seen[t % 2]);
  }
  EXPECT_NE(seen[0], seen[1]);
}

}  // namespace
}  // namespace missy

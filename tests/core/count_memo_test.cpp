// CountMemo (core/count_memo.h): counts of large texts kept, confirmed on the whole text.
#include "core/count_memo.h"

#include <gtest/gtest.h>

#include <string>

namespace missy {
namespace {

TEST(CountMemo, ALargeTextIsFoundOnlyByItsWholeText) {
  CountMemo memo;
  const std::string text(CountMemo::kMinBytes, 'a');
  EXPECT_FALSE(memo.Find(text));
  memo.Put(text, 42);
  EXPECT_EQ(memo.Find(text), 42);
  std::string other = text;
  other[other.size() / 2] = 'b';  // same length, one byte apart
  EXPECT_FALSE(memo.Find(other));
  memo.Put("short", 1);  // under kMinBytes: never kept
  EXPECT_FALSE(memo.Find("short"));
}

TEST(CountMemo, TheLeastRecentlyUsedGoFirstPastTheBound) {
  CountMemo memo;
  const auto text = [](size_t i) { return std::string(CountMemo::kMinBytes, 'a') + std::to_string(i); };
  for (size_t i = 0; i < CountMemo::kMaxEntries; ++i) memo.Put(text(i), static_cast<int64_t>(i));
  EXPECT_EQ(memo.Find(text(0)), 0);  // used: now the most recent
  memo.Put(text(100), 100);          // one over: text(1) goes
  EXPECT_FALSE(memo.Find(text(1)));
  EXPECT_EQ(memo.Find(text(0)), 0);
  EXPECT_EQ(memo.Find(text(100)), 100);
}

}  // namespace
}  // namespace missy

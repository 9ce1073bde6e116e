// Journal lines carry the sd-daemon priority prefix on every line and no timestamp;
// stderr counts as the journal only when JOURNAL_STREAM names its device and inode.
#include "daemon/ops/logging.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>

namespace missy::ops {
namespace {

std::string Drain(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

TEST(JournalLoggingTest, EachLevelGetsItsPriorityPrefix) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  auto logger = MakeJournalLogger("t", f);
  logger->set_level(spdlog::level::trace);
  logger->critical("down");
  logger->error("disk {}", "full");
  logger->warn("slow");
  logger->info("hello");
  logger->debug("detail");
  logger->trace("noise");
  EXPECT_EQ(Drain(f), "<2>down\n<3>disk full\n<4>slow\n<6>hello\n<7>detail\n<7>noise\n");
  std::fclose(f);
}

TEST(JournalLoggingTest, EveryLineOfAMultiLineMessageKeepsThePriority) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  auto logger = MakeJournalLogger("t", f);
  logger->error("first\nsecond");
  EXPECT_EQ(Drain(f), "<3>first\n<3>second\n");
  std::fclose(f);
}

TEST(JournalLoggingTest, LevelFiltersBeforeThePrefix) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  auto logger = MakeJournalLogger("t", f);
  logger->set_level(spdlog::level::warn);
  logger->info("hidden");
  logger->warn("shown");
  EXPECT_EQ(Drain(f), "<4>shown\n");
  std::fclose(f);
}

TEST(JournalLoggingTest, StderrIsTheJournalOnlyWhenJournalStreamMatchesIt) {
  struct stat st;
  ASSERT_EQ(fstat(2, &st), 0);
  const std::string match = std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
                            std::to_string(static_cast<unsigned long long>(st.st_ino));
  const std::string other = std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
                            std::to_string(static_cast<unsigned long long>(st.st_ino) + 1);
  const char* saved = getenv("JOURNAL_STREAM");
  const std::string saved_value = saved != nullptr ? saved : "";
  setenv("JOURNAL_STREAM", match.c_str(), 1);
  EXPECT_TRUE(StderrIsJournal());
  setenv("JOURNAL_STREAM", other.c_str(), 1);  // inherited by a child whose stderr moved
  EXPECT_FALSE(StderrIsJournal());
  setenv("JOURNAL_STREAM", "garbage", 1);
  EXPECT_FALSE(StderrIsJournal());
  unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(StderrIsJournal());
  if (saved != nullptr) setenv("JOURNAL_STREAM", saved_value.c_str(), 1);
}

TEST(JournalLoggingTest, PrefixesFollowSdDaemonPriorities) {
  EXPECT_EQ(JournalPrefix(spdlog::level::err), "<3>");
  EXPECT_EQ(JournalPrefix(spdlog::level::warn), "<4>");
  EXPECT_EQ(JournalPrefix(spdlog::level::info), "<6>");
  EXPECT_EQ(JournalPrefix(spdlog::level::debug), "<7>");
}

}  // namespace
}  // namespace missy::ops

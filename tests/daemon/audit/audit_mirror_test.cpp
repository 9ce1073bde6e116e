// The JSONL audit mirror (daemon/audit/audit_mirror.cpp): lines in order, mode 0600,
// rotation by size keeping N files, whole lines only.
#include "daemon/audit/audit_mirror.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::TempDir;

std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string Event(int seq) {
  // 42 bytes with its newline: {"seq":0001,"type":"context.built","x":1}
  char buf[64];
  std::snprintf(buf, sizeof buf, "{\"seq\":%04d,\"type\":\"context.built\",\"x\":1}", seq);
  return buf;
}

TEST(AuditMirrorTest, LinesArriveInOrderInAPrivateFile) {
  TempDir dir;
  AuditMirrorOptions o;
  o.path = dir.Join("audit.jsonl");
  auto mirror = AuditMirror::Open(o);
  ASSERT_TRUE(mirror.ok()) << mirror.status().ToString();
  for (int i = 1; i <= 100; ++i) (*mirror)->Write(Event(i));
  (*mirror)->Flush();
  const std::vector<std::string> lines = Lines(o.path);
  ASSERT_EQ(lines.size(), 100u);
  for (int i = 1; i <= 100; ++i) EXPECT_EQ(lines[static_cast<size_t>(i - 1)], Event(i));
  struct stat st{};
  ASSERT_EQ(::stat(o.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ((*mirror)->Stats().lines, 100);
  EXPECT_EQ((*mirror)->Stats().rotations, 0);
}

// Files of at most 420 bytes hold 10 lines of 42 bytes; 3 rotated files are kept. After
// 55 lines: the current file has 5 (51..55), .1 has 41..50, .2 31..40, .3 21..30, and
// 1..20 are gone.
TEST(AuditMirrorTest, RotatesBySizeKeepingNFilesOfWholeLines) {
  TempDir dir;
  AuditMirrorOptions o;
  o.path = dir.Join("audit.jsonl");
  o.max_bytes = 420;
  o.files = 3;
  {
    auto mirror = AuditMirror::Open(o);
    ASSERT_TRUE(mirror.ok());
    ASSERT_EQ(Event(1).size() + 1, 42u);
    for (int i = 1; i <= 55; ++i) {
      (*mirror)->Write(Event(i));
      if (i % 7 == 0) (*mirror)->Flush();  // rotation points fall inside batches too
    }
    (*mirror)->Flush();
    EXPECT_EQ((*mirror)->Stats().rotations, 5);
  }
  auto expect_range = [&](const std::string& path, int first, int last) {
    const std::vector<std::string> lines = Lines(path);
    ASSERT_EQ(lines.size(), static_cast<size_t>(last - first + 1)) << path;
    for (int i = first; i <= last; ++i) EXPECT_EQ(lines[static_cast<size_t>(i - first)], Event(i));
  };
  expect_range(o.path, 51, 55);
  expect_range(o.path + ".1", 41, 50);
  expect_range(o.path + ".2", 31, 40);
  expect_range(o.path + ".3", 21, 30);
  EXPECT_FALSE(std::filesystem::exists(o.path + ".4"));
  for (const char* suffix : {"", ".1", ".2", ".3"}) {
    EXPECT_LE(std::filesystem::file_size(o.path + suffix), 420u) << suffix;
  }
}

// Restarting appends to the existing file (and counts its size toward the rotation); a
// line longer than a whole file still goes out, alone.
TEST(AuditMirrorTest, ReopenAppendsAndAnOversizedLineIsWrittenAlone) {
  TempDir dir;
  AuditMirrorOptions o;
  o.path = dir.Join("audit.jsonl");
  o.max_bytes = 100;
  o.files = 2;
  {
    auto mirror = AuditMirror::Open(o);
    ASSERT_TRUE(mirror.ok());
    (*mirror)->Write(Event(1));
  }  // the destructor writes out what was queued
  {
    auto mirror = AuditMirror::Open(o);
    ASSERT_TRUE(mirror.ok());
    (*mirror)->Write(Event(2));
    (*mirror)->Write(std::string(250, 'x'));
    (*mirror)->Write(Event(3));
    (*mirror)->Flush();
  }
  EXPECT_EQ(Lines(o.path + ".2"), (std::vector<std::string>{Event(1), Event(2)}));
  EXPECT_EQ(Lines(o.path + ".1"), (std::vector<std::string>{std::string(250, 'x')}));
  EXPECT_EQ(Lines(o.path), (std::vector<std::string>{Event(3)}));
}

TEST(AuditMirrorTest, AnUnwritablePathIsAnErrorNamingIt) {
  TempDir dir;
  AuditMirrorOptions o;
  o.path = dir.Join("no/such/dir/audit.jsonl");
  auto mirror = AuditMirror::Open(o);
  ASSERT_FALSE(mirror.ok());
  EXPECT_NE(mirror.status().message().find(o.path), std::string::npos)
      << mirror.status().message();
}

}  // namespace
}  // namespace missy

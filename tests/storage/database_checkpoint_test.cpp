// The writer's neighbours (storage/database.cpp): the checkpoint thread that copies the
// WAL back into the database file outside the write transactions, and the wake-up tree
// that releases the callers of one transaction.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "storage/database.h"
#include "storage/stores.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::New;
using ::missy::testing::OpenDbOrDie;
using ::missy::testing::SimpleSession;
using ::missy::testing::TempDir;

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? -1 : static_cast<int64_t>(size);
}

// Appends `rounds` messages of `bytes` each, one transaction per append.
void AppendRounds(testing::TestDb& db, int rounds, size_t bytes) {
  for (int i = 0; i < rounds; ++i) {
    std::vector<NewMessage> batch;
    batch.push_back(New(Message::User(std::string(bytes, static_cast<char>('a' + i % 26))), 9));
    auto r = db->messages.Append("s", std::move(batch), 1000 + i);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
}

// 400 appends of 16 KiB (stored twice: the content and its plain text) write ~20 MB of
// WAL frames. With a checkpoint every 64 pages (256 KiB) the WAL is copied back and
// started over again and again, so the file stays a fraction of what was written (the
// checkpoint thread lags the writer by a few appends); without checkpoints, or if the
// WAL were never started over, it would hold all 20 MB.
TEST(DatabaseCheckpointTest, TheWalIsCheckpointedAndReusedOnceItCrossesTheThreshold) {
  TempDir dir;
  DatabaseOptions options;
  options.checkpoint_pages = 64;
  const std::string path = dir.Join("c.db");
  auto db = OpenDbOrDie(path, options);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  AppendRounds(db, 400, 16 * 1024);
  // The checkpoint thread runs beside the writer: give it a moment to catch up.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (db.db->GetWriterStats().checkpoints < 5 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const WriterStats stats = db.db->GetWriterStats();
  EXPECT_GE(stats.checkpoints, 5);
  EXPECT_EQ(stats.failed_checkpoints, 0);
  const int64_t wal = FileSize(path + "-wal");
  EXPECT_GT(wal, 0);
  EXPECT_LT(wal, 5 * 1024 * 1024) << "the WAL was not started over";
  // What the checkpoints copied is in the database file.
  EXPECT_GT(FileSize(path), 12 * 1024 * 1024);
  auto loaded = db->messages.Load("s");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 400u);
  EXPECT_EQ(loaded->back().message.text, std::string(16 * 1024, static_cast<char>('a' + 399 % 26)));
}

// The copy in the database file is complete: a reopened database (its WAL deleted on
// the clean close) holds every message.
TEST(DatabaseCheckpointTest, EverythingIsThereAfterReopening) {
  TempDir dir;
  DatabaseOptions options;
  options.checkpoint_pages = 16;
  const std::string path = dir.Join("c.db");
  {
    auto db = OpenDbOrDie(path, options);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
    AppendRounds(db, 120, 8 * 1024);
  }
  auto db = OpenDbOrDie(path, options);
  ASSERT_TRUE(db);
  auto session = db->sessions.Get("s");
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(session->message_count, 120);
  EXPECT_EQ(db->messages.Load("s")->size(), 120u);
}

// 48 concurrent callers, each appending 50 times to its own session: every call returns
// with its own result (the wake-up tree loses nobody and wakes nobody early), in far
// fewer transactions than calls.
TEST(DatabaseCheckpointTest, EveryCallerOfAGroupTransactionIsWokenWithItsOwnResult) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("w.db"));
  ASSERT_TRUE(db);
  constexpr int kWriters = 48, kRounds = 50;
  for (int w = 0; w < kWriters; ++w) {
    ASSERT_TRUE(db->sessions.Create(SimpleSession("s" + std::to_string(w))).ok());
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      const std::string id = "s" + std::to_string(w);
      for (int i = 1; i <= kRounds; ++i) {
        std::vector<NewMessage> batch;
        batch.push_back(New(Message::User(id + ":" + std::to_string(i)), 3));
        auto r = db->messages.Append(id, std::move(batch), i);
        // The answer is this caller's: its session's next seq and its own text.
        if (!r.ok() || r->size() != 1 || (*r)[0].seq != i ||
            (*r)[0].message.text != id + ":" + std::to_string(i)) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  const WriterStats stats = db.db->GetWriterStats();
  EXPECT_GE(stats.writes, kWriters * kRounds);
  EXPECT_EQ(stats.queue_depth, 0);
  for (int w = 0; w < kWriters; ++w) {
    auto s = db->sessions.Get("s" + std::to_string(w));
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->message_count, kRounds);
  }
}

}  // namespace
}  // namespace missy

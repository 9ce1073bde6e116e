// Import from Missy's memory.db (storage/missy_import.cpp), against a fixture built
// here with Missy's schema (DESIGN.md §11).
#include "storage/missy_import.h"

#include <gtest/gtest.h>

#include "storage/search.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawExec;
using ::missy::testing::ReadFileOrDie;
using ::missy::testing::SimpleSession;
using ::missy::testing::TempDir;

constexpr char kMissySchema[] = R"sql(
PRAGMA journal_mode = WAL;
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, name TEXT, created_at TEXT, updated_at TEXT,
                       turn_count INTEGER DEFAULT 0, provider TEXT, channel TEXT);
CREATE TABLE turns (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, timestamp TEXT NOT NULL, role TEXT NOT NULL,
                    content TEXT NOT NULL, provider TEXT, metadata TEXT DEFAULT '{}');
CREATE VIRTUAL TABLE turns_fts USING fts5(content, content='turns', content_rowid='rowid');
CREATE TABLE summaries (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, depth INTEGER NOT NULL DEFAULT 0,
                        content TEXT NOT NULL, token_estimate INTEGER DEFAULT 0, source_turn_ids TEXT DEFAULT '[]',
                        source_summary_ids TEXT DEFAULT '[]', parent_id TEXT, time_range_start TEXT,
                        time_range_end TEXT, descendant_count INTEGER DEFAULT 0, file_refs TEXT DEFAULT '[]',
                        created_at TEXT);
CREATE VIRTUAL TABLE summaries_fts USING fts5(content, content='summaries', content_rowid='rowid');
CREATE TABLE learnings (id INTEGER PRIMARY KEY AUTOINCREMENT, task_type TEXT, outcome TEXT, lesson TEXT,
                        approach TEXT, timestamp TEXT);
CREATE TABLE costs (id INTEGER PRIMARY KEY, session_id TEXT, cost REAL);
CREATE TABLE large_content (id TEXT PRIMARY KEY, content TEXT);
INSERT INTO sessions VALUES ('s1', 'refactor', '2025-03-01T10:00:00+00:00', '2025-03-01T11:00:00+00:00', 5,
                             'anthropic', 'cli');
INSERT INTO sessions VALUES ('s2', 'chat', '2025-03-02T09:00:00Z', '2025-03-02T09:05:00Z', 2, 'openai', 'discord');
INSERT INTO turns VALUES ('t1', 's1', '2025-03-01T10:00:01.250+00:00', 'user', 'rename Foo to Bar', 'anthropic', '{}');
INSERT INTO turns VALUES ('t2', 's1', '2025-03-01T10:00:05+00:00', 'assistant', 'renamed in 3 files', 'anthropic', '{}');
INSERT INTO turns VALUES ('t3', 's1', '2025-03-01T10:01:00+00:00', 'user', 'run the tests', 'anthropic', '{}');
INSERT INTO turns VALUES ('t4', 's1', '2025-03-01T10:02:00+00:00', 'assistant', 'all 42 tests pass', 'anthropic', '{}');
INSERT INTO turns VALUES ('t5', 's1', '2025-03-01T10:03:00+00:00', 'user', 'commit it', 'anthropic', '{}');
INSERT INTO turns VALUES ('u1', 's2', '2025-03-02 09:00:10', 'user', 'hello', 'openai', '{}');
INSERT INTO turns VALUES ('u2', 's2', '2025-03-02 09:00:12', 'assistant', 'hi there', 'openai', '{}');
INSERT INTO summaries VALUES ('sum_aaaaaaaaaaaaaaaa', 's1', 0, 'Renamed Foo to Bar.', 6, '["t1","t2"]', '[]',
                              'sum_cccccccccccccccc', '2025-03-01T10:00:01+00:00', '2025-03-01T10:00:05+00:00', 2,
                              '["src/foo.py"]', '2025-03-01T10:05:00+00:00');
INSERT INTO summaries VALUES ('sum_bbbbbbbbbbbbbbbb', 's1', 0, 'Tests pass (42).', 5, '["t3","t4"]', '[]',
                              'sum_cccccccccccccccc', '2025-03-01T10:01:00+00:00', '2025-03-01T10:02:00+00:00', 2,
                              '[]', '2025-03-01T10:05:00+00:00');
INSERT INTO summaries VALUES ('sum_cccccccccccccccc', 's1', 1, 'Rename done and tested.', 5, '[]',
                              '["sum_aaaaaaaaaaaaaaaa","sum_bbbbbbbbbbbbbbbb"]', NULL, '2025-03-01T10:00:01+00:00',
                              '2025-03-01T10:02:00+00:00', 4, '["src/foo.py"]', '2025-03-01T10:06:00+00:00');
INSERT INTO learnings (task_type, outcome, lesson, approach, timestamp)
  VALUES ('refactor', 'success', 'grep before renaming', '["grep","sed","pytest"]', '2025-03-01T10:07:00+00:00');
INSERT INTO learnings (task_type, outcome, lesson, approach, timestamp)
  VALUES ('chat', 'success', 'be brief', '[]', '2025-03-02T09:06:00+00:00');
)sql";

class MissyImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    missy_path_ = dir_.Join("memory.db");
    RawExec(missy_path_, kMissySchema);
    db_ = OpenDbOrDie(dir_.Join("missyd.db"));
    ASSERT_TRUE(db_);
  }
  TempDir dir_;
  std::string missy_path_;
  testing::TestDb db_;
};

TEST_F(MissyImportTest, ImportsEverythingOnceAndLeavesTheSourceAlone) {
  const std::string before = ReadFileOrDie(missy_path_);
  auto report = ImportMissy(*db_.db, missy_path_, nullptr, 1);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->sessions, 2);
  EXPECT_EQ(report->messages, 7);
  EXPECT_EQ(report->summaries, 3);
  EXPECT_EQ(report->learnings, 2);
  EXPECT_EQ(report->skipped, 0);
  EXPECT_EQ(ReadFileOrDie(missy_path_), before);

  auto s1 = db_->sessions.Get("s1");
  ASSERT_TRUE(s1.ok());
  EXPECT_EQ(s1->message_count, 5);
  EXPECT_EQ(s1->last_seq, 5);
  EXPECT_GT(s1->total_tokens, 5 * 4);
  EXPECT_EQ(s1->created_at_ms, 1740823200000);  // 2025-03-01T10:00:00Z
  EXPECT_NE(s1->metadata_json.find(R"("imported_from":"missy")"), std::string::npos)
      << s1->metadata_json;
  EXPECT_NE(s1->metadata_json.find(R"("channel":"cli")"), std::string::npos);

  auto msgs = db_->messages.Load("s1");
  ASSERT_EQ(msgs->size(), 5u);
  EXPECT_EQ((*msgs)[0].message.role, Role::kUser);
  EXPECT_EQ((*msgs)[0].message.text, "rename Foo to Bar");
  EXPECT_EQ((*msgs)[0].created_at_ms, 1740823201250);
  EXPECT_EQ((*msgs)[3].message.role, Role::kAssistant);
  EXPECT_EQ((*msgs)[3].message.text, "all 42 tests pass");
  EXPECT_GT((*msgs)[0].tokens, 0);
  EXPECT_EQ(db_->messages.Load("s2")->size(), 2u);

  auto top = db_->summaries.List("s1", true);
  ASSERT_EQ(top->size(), 1u);
  const SummaryRecord& root = top->front();
  EXPECT_EQ(root.id, "sum_cccccccccccccccc");
  EXPECT_EQ(root.depth, 1);
  EXPECT_EQ(root.first_seq, 1);
  EXPECT_EQ(root.last_seq, 4);
  EXPECT_EQ(root.descendant_count, 4);
  EXPECT_EQ(root.child_ids,
            (std::vector<std::string>{"sum_aaaaaaaaaaaaaaaa", "sum_bbbbbbbbbbbbbbbb"}));
  EXPECT_NE(root.artifacts_json.find("src/foo.py"), std::string::npos);
  auto children = db_->summaries.Children(root.id);
  ASSERT_EQ(children->size(), 2u);
  EXPECT_EQ((*children)[0].first_seq, 1);
  EXPECT_EQ((*children)[0].last_seq, 2);
  EXPECT_EQ((*children)[1].first_seq, 3);
  EXPECT_EQ((*children)[1].parent_id, root.id);
  EXPECT_EQ((*children)[1].last_seq, 4);  // the leaves cover messages 1..2 and 3..4

  auto learnings = db_->memory.ListLearnings({});
  ASSERT_EQ(learnings->size(), 2u);
  EXPECT_EQ((*learnings)[1].lesson, "grep before renaming");
  EXPECT_EQ((*learnings)[1].approach, (std::vector<std::string>{"grep", "sed", "pytest"}));

  SearchOptions o;
  o.query = "renaming";
  EXPECT_EQ(Search(*db_.db, o)->size(), 0u);  // learnings are not in the search index
  o.query = "tested";
  ASSERT_EQ(Search(*db_.db, o)->size(), 1u);  // summaries are

  // Second import: nothing new.
  auto again = ImportMissy(*db_.db, missy_path_, nullptr, 2);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->sessions, 0);
  EXPECT_EQ(again->messages, 0);
  EXPECT_EQ(again->summaries, 0);
  EXPECT_EQ(again->learnings, 0);
  EXPECT_EQ(again->skipped, 14);
  EXPECT_EQ(db_->messages.Load("s1")->size(), 5u);
  EXPECT_EQ(db_->summaries.List("s1")->size(), 3u);
  EXPECT_EQ(db_->memory.ListLearnings({})->size(), 2u);
}

TEST_F(MissyImportTest, NewTurnsInMissyAreAppendedOnReimport) {
  ASSERT_TRUE(ImportMissy(*db_.db, missy_path_, nullptr, 1).ok());
  RawExec(missy_path_,
          "INSERT INTO turns VALUES ('t6', 's1', '2025-03-01T10:04:00+00:00', 'assistant', "
          "'committed', "
          "'anthropic', '{}')");
  auto r = ImportMissy(*db_.db, missy_path_, nullptr, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->messages, 1);
  auto msgs = db_->messages.Load("s1");
  ASSERT_EQ(msgs->size(), 6u);
  EXPECT_EQ(msgs->back().seq, 6);
  EXPECT_EQ(msgs->back().message.text, "committed");
  EXPECT_EQ(db_->sessions.Get("s1")->message_count, 6);
}

TEST_F(MissyImportTest, ASessionIdAlreadyInUseGetsAPrefixedId) {
  ASSERT_TRUE(db_->sessions.Create(SimpleSession("s1")).ok());
  auto r = ImportMissy(*db_.db, missy_path_, nullptr, 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(db_->sessions.Get("s1")->message_count, 0);  // ours is untouched
  EXPECT_EQ(db_->messages.Load("missy-s1")->size(), 5u);
  EXPECT_EQ(db_->summaries.List("missy-s1")->size(), 3u);
}

TEST_F(MissyImportTest, RefusesWhatIsNotAMissyDatabase) {
  RawExec(dir_.Join("other.db"), "CREATE TABLE x (a);");
  auto r = ImportMissy(*db_.db, dir_.Join("other.db"));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  auto missing = ImportMissy(*db_.db, dir_.Join("absent.db"));
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(db_->sessions.List({})->size(), 0u);
}

TEST(ParseIsoTimestampMsTest, Forms) {
  struct Case {
    const char* text;
    std::optional<int64_t> ms;
  };
  const Case cases[] = {
      {"1970-01-01T00:00:00Z", 0},
      {"2025-03-01T10:00:00+00:00", 1740823200000},
      {"2025-03-01T10:00:00.5Z", 1740823200500},
      {"2025-03-01T12:00:00+02:00", 1740823200000},
      {"2025-03-01T05:30:00-0430", 1740823200000},
      {"2025-03-01 10:00:00.123456", 1740823200123},
      {"2025-03-01", 1740787200000},
      {"1740823200.25", 1740823200250},
      {"garbage", std::nullopt},
      {"2025-13-01", std::nullopt},
      {"", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseIsoTimestampMs(c.text), c.ms);
  }
}

}  // namespace
}  // namespace missy

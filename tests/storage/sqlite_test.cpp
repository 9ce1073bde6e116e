// The SQLite layer (storage/sqlite.cpp): statements, typed steps, status mapping, SHA-256.
#include "storage/sqlite.h"

#include <gtest/gtest.h>

#include "core/digest.h"

#include <memory>
#include <string>
#include <vector>

#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::TempDir;

TEST(Sha256HexTest, MatchesTheStandardVector) {
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

class SqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conn =
        sqlite::Connection::Open(dir_.Join("t.db"), sqlite::Connection::Mode::kReadWriteCreate);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    conn_ = std::move(*conn);
    ASSERT_TRUE(conn_
                    ->Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE, n INTEGER "
                           "NOT NULL CHECK (n >= 0), note TEXT);"
                           "INSERT INTO t (name, n) VALUES ('a', 1), ('b', 2), ('c', 3);")
                    .ok());
  }
  TempDir dir_;
  std::unique_ptr<sqlite::Connection> conn_;
};

TEST_F(SqliteTest, NextStepsRowsThenReportsDone) {
  auto q = conn_->Prepare("SELECT name, n FROM t WHERE n >= ?1 ORDER BY n");
  ASSERT_TRUE(q.ok());
  q->Bind(1, 2);
  std::vector<std::string> names;
  for (;;) {
    auto row = q->Next();
    ASSERT_TRUE(row.ok()) << row.status().ToString();
    if (!*row) break;
    names.push_back(q->Text(0));
    EXPECT_EQ(q->TextView(0), names.back());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"b", "c"}));
  // Stepped again after done, SQLite starts over with the same bindings.
  auto again = q->Next();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again);
  EXPECT_EQ(q->Text(0), "b");
}

TEST_F(SqliteTest, AStatementIsResetWhenItGoesOutOfScope) {
  const std::string sql = "SELECT name FROM t WHERE n >= ?1 ORDER BY n";
  {
    auto q = conn_->Prepare(sql);
    ASSERT_TRUE(q.ok());
    q->Bind(1, 1);
    ASSERT_TRUE(*q->Next());
    EXPECT_EQ(q->Text(0), "a");
  }                              // left in the middle of its rows, with ?1 bound
  auto q = conn_->Prepare(sql);  // the same cached statement
  ASSERT_TRUE(q.ok());
  auto row = q->Next();  // from the start, and ?1 is NULL again: no row matches
  ASSERT_TRUE(row.ok());
  EXPECT_FALSE(*row);
  EXPECT_FALSE(conn_->InTransaction());
}

TEST_F(SqliteTest, ResetKeepsTheStatementForTheNextBinding) {
  auto insert = conn_->Prepare("INSERT INTO t (name, n, note) VALUES (?1, ?2, ?3)");
  ASSERT_TRUE(insert.ok());
  for (int i = 0; i < 3; ++i) {
    insert->Bind(1, "x" + std::to_string(i)).Bind(2, 10 + i).BindOrNull(3, i == 1 ? "" : "note");
    ASSERT_TRUE(insert->Run("insert").ok());
    EXPECT_EQ(conn_->Changes(), 1);
    EXPECT_EQ(conn_->LastInsertRowId(), 4 + i);
    insert->Reset();
  }
  auto count = conn_->QueryInt("SELECT count(*) FROM t WHERE note IS NULL");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 4);  // a, b, c and x1 (empty text bound as NULL)
  EXPECT_EQ(*conn_->QueryInt("SELECT n FROM t WHERE name = 'x2'"), 12);
  EXPECT_EQ(conn_->QueryInt("SELECT n FROM t WHERE name = 'none'").status().code(),
            StatusCode::kNotFound);
}

TEST_F(SqliteTest, ErrorsAreStatusesNamedByTheCaller) {
  auto insert = conn_->Prepare("INSERT INTO t (name, n) VALUES (?1, ?2)");
  ASSERT_TRUE(insert.ok());
  insert->Bind(1, "a").Bind(2, 5);
  Status dup = insert->Run("add row 'a'");
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists);  // UNIQUE
  EXPECT_EQ(dup.message().rfind("add row 'a': ", 0), 0u) << dup.message();
  insert->Reset();
  insert->Bind(1, "neg").Bind(2, -1);
  auto row = insert->Next("add row 'neg'");
  ASSERT_FALSE(row.ok());
  EXPECT_EQ(row.status().code(), StatusCode::kConflict);  // CHECK
  insert->Reset();
  insert->Bind(1, "null-n").BindNull(2);
  EXPECT_EQ(insert->Run().code(), StatusCode::kConflict);  // NOT NULL
  auto bad = conn_->Prepare("SELECT nope FROM t");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(*conn_->QueryInt("SELECT count(*) FROM t"), 3);
}

TEST_F(SqliteTest, ReadOnlyConnectionsRefuseWritesAsUnavailable) {
  auto ro = sqlite::Connection::Open(dir_.Join("t.db"), sqlite::Connection::Mode::kReadOnly);
  ASSERT_TRUE(ro.ok());
  Status st = (*ro)->Exec("INSERT INTO t (name, n) VALUES ('z', 1)", "insert z");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("read-only"), std::string::npos) << st.message();
  auto missing =
      sqlite::Connection::Open(dir_.Join("absent.db"), sqlite::Connection::Mode::kReadWrite);
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace missy

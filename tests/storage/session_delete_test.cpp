// SessionStore::Delete: a session goes with its messages, summaries, scoped memory items
// and jobs; the FTS indexes stay consistent whether its messages were indexed yet or not,
// and message ids freed at the top of the table are reused without corrupting them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "storage/search.h"
#include "storage/session_store.h"
#include "storage_test_util.h"

namespace missy {
namespace {

using ::missy::testing::ExpectIndexConsistent;
using ::missy::testing::MaxMessageId;
using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawQuery;
using ::missy::testing::SimpleSession;
using ::missy::testing::TempDir;
using ::missy::testing::Watermark;

std::vector<std::string> HitIds(Database& db, const std::string& query) {
  SearchOptions o;
  o.query = query;
  o.max_results = 100;
  Result<std::vector<MemoryHit>> hits = Search(db, o);
  EXPECT_TRUE(hits.ok()) << hits.status().ToString();
  std::vector<std::string> ids;
  if (hits.ok()) {
    for (const MemoryHit& h : *hits) ids.push_back(h.source + "/" + h.id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string Count(const std::string& path, const std::string& table, const std::string& where) {
  return RawQuery(path, "SELECT count(*) FROM " + table + " WHERE " + where);
}

TEST(SessionDeleteTest, RemovesTheSessionAndWhatBelongsToItOnly) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("alpha")).ok());
  ASSERT_TRUE(db->sessions.Create(SimpleSession("beta")).ok());
  ASSERT_TRUE(db->messages
                  .Append("alpha",
                          {NewMessage{Message::User("the walrus deploy failed"), 5, 0, {}},
                           NewMessage{Message::Assistant("checking walrus logs"), 4, 0, {}},
                           NewMessage{Message::User("and the otter service too"), 5, 0, {}}},
                          10)
                  .ok());
  ASSERT_TRUE(
      db->messages
          .Append("beta", {NewMessage{Message::User("beta talks about walrus"), 5, 0, {}}}, 11)
          .ok());
  MemoryItem scoped;
  scoped.text = "alpha walrus memory";
  scoped.session_id = "alpha";
  ASSERT_TRUE(db->memory.Add(scoped).ok());
  MemoryItem global;
  global.text = "global walrus memory";
  Result<MemoryItem> global_added = db->memory.Add(global);
  ASSERT_TRUE(global_added.ok());
  SummaryRecord sum;
  sum.session_id = "alpha";
  sum.content = "walrus summary of alpha";
  sum.first_seq = 1;
  sum.last_seq = 2;
  ASSERT_TRUE(db->summaries.Insert(sum).ok());
  ASSERT_TRUE(db->jobs.Enqueue("summarize", "alpha", "{}", 12).ok());
  ASSERT_TRUE(db->jobs.Enqueue("summarize", "beta", "{}", 12).ok());
  LearningRecord learning;
  learning.lesson = "walrus lessons outlive sessions";
  learning.session_id = "alpha";
  ASSERT_TRUE(db->memory.AddLearning(learning).ok());
  // Everything indexed (the search catches the message index up).
  ASSERT_EQ(HitIds(*db.db, "walrus").size(), 6u);
  ASSERT_EQ(Watermark(path), MaxMessageId(path));

  Result<SessionDeletion> removed = db->sessions.Delete("alpha");
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(removed->messages, 3);
  EXPECT_EQ(removed->summaries, 1);
  EXPECT_EQ(removed->memory_items, 1);
  EXPECT_EQ(removed->jobs, 1);

  Result<Session> gone = db->sessions.Get("alpha");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Count(path, "messages", "session_id = 'alpha'"), "0");
  EXPECT_EQ(Count(path, "message_digests", "1"), "1");  // beta's, of its one message
  EXPECT_EQ(Count(path, "message_digests", "id IN (SELECT id FROM messages)"), "1");
  EXPECT_EQ(Count(path, "summaries", "session_id = 'alpha'"), "0");
  EXPECT_EQ(Count(path, "memory_items", "session_id = 'alpha'"), "0");
  EXPECT_EQ(Count(path, "jobs", "session_id = 'alpha'"), "0");
  EXPECT_EQ(Count(path, "learnings", "session_id = 'alpha'"), "1");  // kept
  // beta and the global item are untouched, and only they are found.
  EXPECT_EQ(db->sessions.Get("beta")->message_count, 1);
  EXPECT_EQ(Count(path, "jobs", "session_id = 'beta'"), "1");
  EXPECT_EQ(HitIds(*db.db, "walrus"),
            (std::vector<std::string>{"memory/" + global_added->id, "message/beta:1"}));
  EXPECT_TRUE(HitIds(*db.db, "otter").empty());
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'walrus'"),
            "1");
  ExpectIndexConsistent(path);

  // A second delete: not found, naming the field.
  Result<SessionDeletion> again = db->sessions.Delete("alpha");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(again.status().field(), "session_id");
  EXPECT_NE(again.status().message().find("'alpha'"), std::string::npos);
}

TEST(SessionDeleteTest, UnindexedMessagesGoWithoutTouchingTheIndexAndIdsAreReused) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  DatabaseOptions options;
  options.index_idle_ms = 1000000;  // the writer never indexes on its own here
  auto db = OpenDbOrDie(path, options);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("keep")).ok());
  ASSERT_TRUE(db->sessions.Create(SimpleSession("drop")).ok());
  ASSERT_TRUE(
      db->messages.Append("keep", {NewMessage{Message::User("indexed heron"), 2, 0, {}}}, 1).ok());
  ASSERT_EQ(HitIds(*db.db, "heron"), (std::vector<std::string>{"message/keep:1"}));
  ASSERT_EQ(Watermark(path), "1");
  // Pending rows (ids 2-3) of the session that goes, and they are the highest ids.
  ASSERT_TRUE(db->messages
                  .Append("drop",
                          {NewMessage{Message::User("pending lynx"), 2, 0, {}},
                           NewMessage{Message::User("pending ibis"), 2, 0, {}}},
                          2)
                  .ok());
  ASSERT_EQ(Watermark(path), "1");
  ASSERT_EQ(MaxMessageId(path), "3");

  Result<SessionDeletion> removed = db->sessions.Delete("drop");
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(removed->messages, 2);
  ExpectIndexConsistent(path);
  EXPECT_EQ(MaxMessageId(path), "1");

  // The next rows reuse ids 2-3 (above the watermark: pending, indexed on search).
  ASSERT_TRUE(db->sessions.Create(SimpleSession("drop")).ok());  // same id, fresh session
  auto again =
      db->messages.Append("drop", {NewMessage{Message::User("reborn puffin"), 2, 0, {}}}, 3);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].seq, 1);  // seqs start over with the new session
  EXPECT_EQ(RawQuery(path, "SELECT id FROM messages WHERE session_id = 'drop'"), "2");
  EXPECT_TRUE(HitIds(*db.db, "lynx").empty());
  EXPECT_EQ(HitIds(*db.db, "puffin"), (std::vector<std::string>{"message/drop:1"}));
  ExpectIndexConsistent(path);

  // Now delete indexed rows at the top: the reused id is below the watermark and is
  // indexed at once by the insert trigger.
  ASSERT_EQ(Watermark(path), "2");
  ASSERT_TRUE(db->sessions.Delete("drop").ok());
  ExpectIndexConsistent(path);
  EXPECT_TRUE(HitIds(*db.db, "puffin").empty());
  ASSERT_TRUE(
      db->messages.Append("keep", {NewMessage{Message::User("late gannet"), 2, 0, {}}}, 4).ok());
  EXPECT_EQ(RawQuery(path, "SELECT id FROM messages WHERE text = 'late gannet'"), "2");
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'gannet'"),
            "1");  // indexed by the trigger, before any search
  EXPECT_EQ(HitIds(*db.db, "gannet"), (std::vector<std::string>{"message/keep:2"}));
  ExpectIndexConsistent(path);
}

}  // namespace
}  // namespace missy

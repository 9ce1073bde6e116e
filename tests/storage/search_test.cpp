// Full-text search (storage/search.cpp) over memory items, summaries and messages.
#include "storage/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "storage/database.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::ExpectIndexConsistent;
using ::missy::testing::MaxMessageId;
using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawExec;
using ::missy::testing::RawQuery;
using ::missy::testing::SimpleSession;
using ::missy::testing::TempDir;
using ::missy::testing::Watermark;

class SearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("m.db");
    db_ = OpenDbOrDie(path_);
    ASSERT_TRUE(db_);
    ASSERT_TRUE(db_->sessions.Create(SimpleSession("alpha")).ok());
    ASSERT_TRUE(db_->sessions.Create(SimpleSession("beta")).ok());
    ASSERT_TRUE(
        db_->messages
            .Append("alpha",
                    {NewMessage{Message::User("the deploy script failed on staging"), 8, 0, {}},
                     NewMessage{Message::Assistant("I will check the nginx config"), 8, 0, {}}},
                    10)
            .ok());
    ASSERT_TRUE(db_->messages
                    .Append("beta",
                            {NewMessage{Message::User("rotate the postgres password"), 6, 0, {}},
                             NewMessage{Message::ToolResult(
                                            "c1", "nginx: configuration file test is successful"),
                                        9,
                                        0,
                                        {}}},
                            11)
                    .ok());
    MemoryItem global;
    global.text = "The production database is postgres 15 on db1";
    global.tags = {"infra", "database"};
    global.created_at_ms = 5;
    auto added = db_->memory.Add(global);
    ASSERT_TRUE(added.ok()) << added.status().ToString();
    global_id_ = added->id;
    MemoryItem scoped;
    scoped.text = "alpha prefers nginx over apache";
    scoped.session_id = "alpha";
    ASSERT_TRUE(db_->memory.Add(scoped).ok());
    SummaryRecord sum;
    sum.session_id = "beta";
    sum.content = "Rotated credentials; postgres password changed; nginx reloaded";
    sum.first_seq = 1;
    sum.last_seq = 2;
    auto s = db_->summaries.Insert(sum);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    summary_id_ = s->id;
  }

  std::vector<MemoryHit> SearchOk(SearchOptions o) {
    auto r = Search(*db_.db, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString() << " for query: " << o.query;
    return r.ok() ? *r : std::vector<MemoryHit>{};
  }

  // Session "noisy" with `count` messages of text(i), then alpha's third message, the only
  // one with "quokka".
  void StoreNoiseAndAQuokka(int count, const std::function<std::string(int)>& text) {
    ASSERT_TRUE(db_->sessions.Create(SimpleSession("noisy")).ok());
    std::vector<NewMessage> batch;
    for (int i = 0; i < count; ++i) batch.push_back(NewMessage{Message::User(text(i)), 3, 0, {}});
    ASSERT_TRUE(db_->messages.Append("noisy", std::move(batch), 12).ok());
    ASSERT_TRUE(
        db_->messages
            .Append("alpha", {NewMessage{Message::User("the quokka migration"), 3, 0, {}}}, 13)
            .ok());
  }

  static SearchOptions MessagesOnly() {
    SearchOptions o;
    o.memory = false;
    o.summaries = false;
    return o;
  }

  static std::vector<std::string> Ids(const std::vector<MemoryHit>& hits) {
    std::vector<std::string> ids;
    for (const auto& h : hits) ids.push_back(h.source + "/" + h.id);
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  TempDir dir_;
  std::string path_;
  testing::TestDb db_;
  std::string global_id_;
  std::string summary_id_;
};

TEST_F(SearchTest, FindsAcrossMemorySummariesAndMessages) {
  SearchOptions o;
  o.query = "nginx";
  auto hits = SearchOk(o);
  ASSERT_EQ(hits.size(), 4u) << ::testing::PrintToString(Ids(hits));
  auto ids = Ids(hits);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "message/alpha:2"), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "message/beta:2"), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "summary/" + summary_id_), 1);
  EXPECT_EQ(std::count_if(hits.begin(), hits.end(),
                          [](const MemoryHit& h) { return h.source == "memory"; }),
            1);
  for (size_t i = 1; i < hits.size(); ++i) EXPECT_GE(hits[i - 1].score, hits[i].score);
  o.max_results = 2;
  EXPECT_EQ(SearchOk(o).size(), 2u);
}

TEST_F(SearchTest, FiltersBySessionAndExcludesASession) {
  SearchOptions o;
  o.query = "nginx";
  o.session_id = "alpha";
  auto scoped = SearchOk(o);
  ASSERT_EQ(scoped.size(), 2u) << ::testing::PrintToString(Ids(scoped));
  EXPECT_EQ(Ids(scoped)[1], "message/alpha:2");
  EXPECT_EQ(Ids(scoped)[0].substr(0, 7), "memory/");
  o.session_id = "gamma";  // no such rows
  EXPECT_TRUE(SearchOk(o).empty());
  SearchOptions ex;
  ex.query = "postgres";
  ex.exclude_session_id = "beta";
  auto hits = SearchOk(ex);
  ASSERT_EQ(hits.size(),
            1u);  // only the global memory item: beta's message and summary are excluded
  EXPECT_EQ(hits[0].id, global_id_);
  EXPECT_EQ(hits[0].text, "The production database is postgres 15 on db1");
}

TEST_F(SearchTest, AllWordsFirstThenAnyWord) {
  SearchOptions o;
  o.query = "postgres password";
  o.memory = false;
  auto hits = SearchOk(o);
  // Both words: beta's message and the summary, not the memory item (disabled) nor alpha.
  EXPECT_EQ(Ids(hits), (std::vector<std::string>{"message/beta:1", "summary/" + summary_id_}));
  o.query = "postgres zebra";  // no row has both: falls back to any word
  hits = SearchOk(o);
  EXPECT_EQ(Ids(hits), (std::vector<std::string>{"message/beta:1", "summary/" + summary_id_}));
  o.query = "zebra";
  EXPECT_TRUE(SearchOk(o).empty());
  // A long message: the any-word fallback keeps its rarest words, "postgres" among them.
  o.query = "b c d e f g h j k l m n postgres";
  EXPECT_EQ(Ids(SearchOk(o)),
            (std::vector<std::string>{"message/beta:1", "summary/" + summary_id_}));
}

// A word in more than 5,000 messages is left out of the all-words query (its posting list
// would cost as much as the index is large), so a rare word alone decides the match.
TEST_F(SearchTest, CommonWordsDoNotJoinTheAllWordsQuery) {
  ASSERT_NO_FATAL_FAILURE(
      StoreNoiseAndAQuokka(5100, [](int i) { return "status update " + std::to_string(i); }));
  SearchOptions o = MessagesOnly();
  o.query = "update quokka";  // no message has both; "update" is in 5,100
  EXPECT_EQ(Ids(SearchOk(o)), (std::vector<std::string>{"message/alpha:3"}));
  o.query = "status update";  // only common words: the two rarest, together
  EXPECT_EQ(SearchOk(o).size(), 10u);
}

// Common is relative to the index: a word in more than 1 message of 20 (and in more than
// 200) is common too, long before 5,000.
TEST_F(SearchTest, AWordInOneMessageOfTwentyIsCommon) {
  ASSERT_NO_FATAL_FAILURE(StoreNoiseAndAQuokka(4100, [](int i) {
    return (i % 10 == 0 ? "routine check " : "idle ") + std::to_string(i);
  }));
  SearchOptions o = MessagesOnly();
  o.query = "routine quokka";  // "routine" is in 410 of about 4,100 messages
  EXPECT_EQ(Ids(SearchOk(o)), (std::vector<std::string>{"message/alpha:3"}));
  o.query = "routine check";  // only common words: the two rarest, together
  EXPECT_EQ(SearchOk(o).size(), 10u);
}

TEST_F(SearchTest, SnippetsAreBounded) {
  ASSERT_TRUE(
      db_->messages
          .Append("alpha",
                  {NewMessage{Message::User(std::string("lorem ipsum ") + std::string(200, ' ') +
                                            "one two three four five six seven eight nine ten "
                                            "eleven twelve thirteen kubernetes fourteen fifteen "
                                            "sixteen seventeen eighteen nineteen twenty"),
                              30,
                              0,
                              {}}},
                  20)
          .ok());
  SearchOptions o;
  o.query = "kubernetes";
  o.snippet_tokens = 5;
  auto hits = SearchOk(o);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_NE(hits[0].text.find("kubernetes"), std::string::npos);
  EXPECT_LT(hits[0].text.size(), 60u) << hits[0].text;
}

TEST_F(SearchTest, HostileInputNeverFails) {
  const std::string hostile[] = {
      "\"",
      "\"\"\"",
      "NEAR(",
      "NEAR(nginx postgres, 2)",
      "nginx*",
      "*",
      "-nginx",
      "- -- ---",
      "((nginx",
      "nginx))",
      ")(",
      "nginx AND OR NOT",
      "AND",
      "OR NOT NEAR",
      "'; DROP TABLE messages; --",
      "1=1 OR 'a'='a'",
      "text:nginx",
      "{text}: nginx",
      "^nginx",
      "nginx + postgres",
      std::string(10 * 1024, 'a'),
      std::string(10 * 1024, '"'),
      [] {
        std::string s;
        for (int i = 0; i < 2000; ++i) s += "w" + std::to_string(i) + " (";
        return s;
      }(),
      "bad\xFF\xFE utf8 \xC0\xAF nginx \xED\xA0\x80",
      std::string("nul\0byte nginx", 14),
      "\x01\x02\x03\x1b[31m",
      "\xE2\x80\xBD \xE3\x80\x80 \xF0\x9F\x98\x80",  // interrobang, ideographic space, emoji
      "",
      "   ",
  };
  for (const std::string& q : hostile) {
    SCOPED_TRACE(::testing::PrintToString(q.substr(0, 40)));
    SearchOptions o;
    o.query = q;
    auto r = Search(*db_.db, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_LE(r->size(), 10u);
  }
  SearchOptions o;
  o.query = "NEAR(nginx";
  EXPECT_FALSE(SearchOk(o).empty());  // the words still search
  o.query = "bad\xFF nginx";
  EXPECT_FALSE(SearchOk(o).empty());
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM messages"), "4");  // and nothing was dropped
}

TEST_F(SearchTest, IndexFollowsInsertUpdateDelete) {
  SearchOptions o;
  o.query = "kangaroo";
  EXPECT_TRUE(SearchOk(o).empty());
  MemoryItem item;
  item.text = "the kangaroo lives in the garden";
  item.tags = {"animals"};
  auto added = db_->memory.Add(item);
  ASSERT_TRUE(added.ok());
  ASSERT_EQ(SearchOk(o).size(), 1u);
  o.query = "animals";  // tags are indexed too
  ASSERT_EQ(SearchOk(o).size(), 1u);

  MemoryItem updated = *added;
  updated.text = "the wombat lives in the garden";
  updated.tags = {};
  ASSERT_TRUE(db_->memory.Update(updated).ok());
  o.query = "kangaroo";
  EXPECT_TRUE(SearchOk(o).empty());
  o.query = "animals";
  EXPECT_TRUE(SearchOk(o).empty());
  o.query = "wombat";
  ASSERT_EQ(SearchOk(o).size(), 1u);

  ASSERT_TRUE(db_->memory.Delete(added->id).ok());
  EXPECT_TRUE(SearchOk(o).empty());
  EXPECT_EQ(db_->memory.Delete(added->id).code(), StatusCode::kNotFound);

  // Messages and summaries are kept in sync by triggers as well (edited here directly).
  testing::RawExec(
      path_,
      "UPDATE messages SET text = 'platypus sighting' WHERE session_id = 'alpha' AND seq = 1;"
      "UPDATE summaries SET content = 'echidna summary' WHERE id = '" +
          summary_id_ + "';");
  o.query = "platypus";
  EXPECT_EQ(Ids(SearchOk(o)), (std::vector<std::string>{"message/alpha:1"}));
  o.query = "deploy";
  EXPECT_TRUE(SearchOk(o).empty());
  o.query = "echidna";
  EXPECT_EQ(Ids(SearchOk(o)), (std::vector<std::string>{"summary/" + summary_id_}));
  o.query = "rotated";
  EXPECT_TRUE(SearchOk(o).empty());
  testing::RawExec(path_, "DELETE FROM messages WHERE session_id = 'alpha' AND seq = 1;");
  o.query = "platypus";
  EXPECT_TRUE(SearchOk(o).empty());
  EXPECT_EQ(
      RawQuery(path_, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'platypus'"),
      "0");
  // The index passes FTS5's own consistency check.
  testing::RawExec(path_,
                   "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check');"
                   "INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check');"
                   "INSERT INTO summaries_fts (summaries_fts) VALUES ('integrity-check');");
}

TEST_F(SearchTest, AnAppendedMessageIsFoundByTheVeryNextSearch) {
  for (int i = 0; i < 40; ++i) {
    const std::string word = "zebra" + std::to_string(i) + "x";
    auto r = db_->messages.Append(
        "alpha", {NewMessage{Message::User("a " + word + " was seen"), 3, 0, {}}}, 20 + i);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    SearchOptions o;
    o.query = word;
    EXPECT_EQ(Ids(SearchOk(o)),
              (std::vector<std::string>{"message/alpha:" + std::to_string((*r)[0].seq)}))
        << word;
  }
  EXPECT_EQ(Watermark(path_), MaxMessageId(path_));
  ExpectIndexConsistent(path_);
}

}  // namespace
}  // namespace missy

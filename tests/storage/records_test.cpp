// Summaries, memory items, learnings, calibration and message flags (storage/database.cpp).
#include <gtest/gtest.h>

#include "storage/database.h"
#include "storage/search.h"
#include "storage/schema.h"
#include "storage/sqlite.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawQuery;
using ::missy::testing::SimpleSession;
using ::missy::testing::TempDir;

class RecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("m.db");
    db_ = OpenDbOrDie(path_);
    ASSERT_TRUE(db_);
    ASSERT_TRUE(db_->sessions.Create(SimpleSession("s")).ok());
    std::vector<NewMessage> batch;
    for (int i = 1; i <= 12; ++i) batch.push_back(NewMessage{Message::User("message " + std::to_string(i)), 10, 0});
    ASSERT_TRUE(db_->messages.Append("s", std::move(batch), 100).ok());
  }

  SummaryRecord Leaf(int64_t first, int64_t last, std::string text) {
    SummaryRecord s;
    s.session_id = "s";
    s.depth = 0;
    s.content = std::move(text);
    s.tokens = 20;
    s.first_seq = first;
    s.last_seq = last;
    s.start_ms = first * 10;
    s.end_ms = last * 10;
    s.descendant_count = last - first + 1;
    s.artifacts_json = R"({"files":["src/a.cpp"],"commands":["make"],"errors":[]})";
    s.created_at_ms = 500;
    return s;
  }

  TempDir dir_;
  std::string path_;
  testing::TestDb db_;
};

TEST_F(RecordsTest, LeafSummaryMarksItsMessagesCovered) {
  auto leaf = db_->summaries.Insert(Leaf(1, 4, "first four"));
  ASSERT_TRUE(leaf.ok()) << leaf.status().ToString();
  EXPECT_EQ(leaf->id.substr(0, 4), "sum_");
  EXPECT_EQ(leaf->id.size(), 20u);
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM messages WHERE summary_id = '" + leaf->id + "'"), "4");
  EXPECT_EQ(RawQuery(path_, "SELECT min(seq) || '-' || max(seq) FROM messages WHERE summary_id IS NOT NULL"), "1-4");
  auto got = db_->summaries.Get(leaf->id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->content, "first four");
  EXPECT_EQ(got->artifacts_json, R"({"files":["src/a.cpp"],"commands":["make"],"errors":[]})");
  EXPECT_EQ(got->descendant_count, 4);
  EXPECT_EQ(got->start_ms, 10);
  EXPECT_EQ(got->end_ms, 40);
  auto covered = db_->summaries.Messages(leaf->id);
  ASSERT_TRUE(covered.ok());
  ASSERT_EQ(covered->size(), 4u);
  EXPECT_EQ(covered->front().message.text, "message 1");
  EXPECT_EQ(covered->back().seq, 4);
  SummaryView view = ToSummaryView(*got);
  EXPECT_EQ(view.message_count, 4);
  EXPECT_EQ(view.text, "first four");
}

TEST_F(RecordsTest, CondensingSetsParentsAndHidesChildren) {
  std::vector<std::string> leaves;
  for (int i = 0; i < 4; ++i) {
    auto l = db_->summaries.Insert(Leaf(i * 3 + 1, i * 3 + 3, "leaf " + std::to_string(i)));
    ASSERT_TRUE(l.ok());
    leaves.push_back(l->id);
  }
  SummaryRecord parent;
  parent.session_id = "s";
  parent.depth = 1;
  parent.content = "all twelve";
  parent.first_seq = 1;
  parent.last_seq = 12;
  parent.child_ids = leaves;
  parent.descendant_count = 12;
  auto p = db_->summaries.Insert(parent);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto all = db_->summaries.List("s");
  ASSERT_EQ(all->size(), 5u);
  auto top = db_->summaries.List("s", true);
  ASSERT_EQ(top->size(), 1u);
  EXPECT_EQ(top->front().id, p->id);
  EXPECT_EQ(top->front().child_ids, leaves);
  auto children = db_->summaries.Children(p->id);
  ASSERT_EQ(children->size(), 4u);
  EXPECT_EQ((*children)[0].id, leaves[0]);
  EXPECT_EQ((*children)[0].parent_id, p->id);
  EXPECT_TRUE(db_->summaries.Children(leaves[0])->empty());
  // A child can be condensed only once, and must exist.
  SummaryRecord twice = parent;
  twice.id = "";
  twice.child_ids = {leaves[0]};
  EXPECT_EQ(db_->summaries.Insert(twice).status().code(), StatusCode::kConflict);
  twice.child_ids = {"sum_nope"};
  EXPECT_EQ(db_->summaries.Insert(twice).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(db_->summaries.List("s")->size(), 5u);  // neither failure left a row
}

TEST_F(RecordsTest, SummaryErrors) {
  SummaryRecord bad = Leaf(1, 2, "x");
  bad.session_id = "ghost";
  EXPECT_EQ(db_->summaries.Insert(bad).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(db_->summaries.Insert(Leaf(5, 2, "x")).status().code(), StatusCode::kInvalidArgument);
  SummaryRecord named = Leaf(1, 2, "x");
  named.id = "sum_fixed";
  ASSERT_TRUE(db_->summaries.Insert(named).ok());
  EXPECT_EQ(db_->summaries.Insert(named).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(db_->summaries.Get("sum_none").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(db_->summaries.List("ghost").status().code(), StatusCode::kNotFound);
}

TEST_F(RecordsTest, PrunedFlagIsStickyAndAddsToExistingFlags) {
  ASSERT_TRUE(db_->messages.AddFlags("s", {2, 3}, kFlagPruned).ok());
  ASSERT_TRUE(db_->messages.AddFlags("s", {3}, kFlagOrphanResult).ok());
  auto msgs = db_->messages.Load("s");
  EXPECT_EQ((*msgs)[0].flags, kFlagNone);
  EXPECT_EQ((*msgs)[1].flags, kFlagPruned);
  EXPECT_EQ((*msgs)[2].flags, kFlagPruned | kFlagOrphanResult);
  EXPECT_EQ((*msgs)[2].message.text, "message 3");  // the original stays retrievable
  EXPECT_EQ(db_->messages.AddFlags("ghost", {1}, kFlagPruned).code(), StatusCode::kNotFound);
}

TEST_F(RecordsTest, MemoryItemsCrud) {
  MemoryItem m;
  m.text = "deploys go through ./ship.sh";
  m.tags = {"deploy", "howto"};
  m.pinned = true;
  m.created_at_ms = 10;
  auto a = db_->memory.Add(m);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->id.substr(0, 4), "mem_");
  MemoryItem scoped;
  scoped.id = "mem_scoped";
  scoped.text = "session s uses python 3.11";
  scoped.session_id = "s";
  scoped.created_at_ms = 20;
  ASSERT_TRUE(db_->memory.Add(scoped).ok());
  EXPECT_EQ(db_->memory.Add(scoped).status().code(), StatusCode::kAlreadyExists);
  MemoryItem other = scoped;
  other.id = "mem_other";
  other.session_id = "t";
  other.created_at_ms = 30;
  ASSERT_TRUE(db_->memory.Add(other).ok());
  EXPECT_EQ(db_->memory.Add(MemoryItem{}).status().code(), StatusCode::kInvalidArgument);

  auto got = db_->memory.Get(a->id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->tags, (std::vector<std::string>{"deploy", "howto"}));
  EXPECT_TRUE(got->pinned);
  EXPECT_TRUE(got->session_id.empty());

  auto all = db_->memory.List({});
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, "mem_other");  // newest first
  auto for_s = db_->memory.List({}, "s");
  ASSERT_EQ(for_s->size(), 2u);  // its own and the global one
  EXPECT_EQ((*for_s)[0].id, "mem_scoped");
  EXPECT_EQ((*for_s)[1].id, a->id);

  MemoryItem edit = *got;
  edit.pinned = false;
  edit.tags = {"deploy"};
  ASSERT_TRUE(db_->memory.Update(edit).ok());
  EXPECT_FALSE(db_->memory.Get(a->id)->pinned);
  edit.id = "mem_missing";
  EXPECT_EQ(db_->memory.Update(edit).code(), StatusCode::kNotFound);
  ASSERT_TRUE(db_->memory.Delete(a->id).ok());
  EXPECT_EQ(db_->memory.Get(a->id).status().code(), StatusCode::kNotFound);
}

TEST_F(RecordsTest, LearningsNewestFirstAndFiltered) {
  for (int i = 0; i < 3; ++i) {
    LearningRecord l;
    l.task_type = i == 1 ? "debug" : "deploy";
    l.outcome = "success";
    l.lesson = "lesson " + std::to_string(i);
    l.approach = {"step a", "step b"};
    l.created_at_ms = 100 + i;
    ASSERT_TRUE(db_->memory.AddLearning(l).ok());
  }
  EXPECT_EQ(db_->memory.AddLearning(LearningRecord{}).status().code(), StatusCode::kInvalidArgument);
  auto all = db_->memory.ListLearnings({});
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].lesson, "lesson 2");
  EXPECT_EQ((*all)[0].approach, (std::vector<std::string>{"step a", "step b"}));
  auto deploy = db_->memory.ListLearnings({}, "deploy");
  ASSERT_EQ(deploy->size(), 2u);
  EXPECT_EQ((*deploy)[1].lesson, "lesson 0");
  Learning core = ToLearning((*all)[0]);
  EXPECT_EQ(core.lesson, "lesson 2");
  EXPECT_EQ(core.created_at_ms, 102);
  ASSERT_TRUE(db_->memory.DeleteLearning((*all)[0].id).ok());
  EXPECT_EQ(db_->memory.DeleteLearning((*all)[0].id).code(), StatusCode::kNotFound);
  EXPECT_EQ(db_->memory.ListLearnings(ListOptions{1, 0})->size(), 1u);
}

TEST_F(RecordsTest, CalibrationPerModel) {
  EXPECT_EQ(db_->calibration.Get("claude").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(db_->calibration.Put(Calibration{"claude", 1.18, 3, 50}).ok());
  ASSERT_TRUE(db_->calibration.Put(Calibration{"gpt-4o", 0.97, 1, 60}).ok());
  ASSERT_TRUE(db_->calibration.Put(Calibration{"claude", 1.21, 4, 70}).ok());
  auto c = db_->calibration.Get("claude");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->ratio, 1.21);
  EXPECT_EQ(c->samples, 4);
  EXPECT_EQ(c->updated_at_ms, 70);
  auto all = db_->calibration.List();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].model, "gpt-4o");
  EXPECT_EQ(db_->calibration.Put(Calibration{}).code(), StatusCode::kInvalidArgument);
}

TEST_F(RecordsTest, ReadOnlyDatabaseServesEveryReadAndRefusesEveryWrite) {
  MemoryItem m;
  m.text = "readable memory";
  ASSERT_TRUE(db_->memory.Add(m).ok());
  db_.reset();
  DatabaseOptions ro;
  ro.read_only = true;
  db_ = OpenDbOrDie(path_, ro);
  ASSERT_TRUE(db_);
  EXPECT_EQ(db_->messages.Load("s")->size(), 12u);
  SearchOptions o;
  o.query = "readable";
  EXPECT_EQ(Search(*db_.db, o)->size(), 1u);
  EXPECT_EQ(db_->memory.List({})->size(), 1u);
  EXPECT_TRUE(db_->audit.Verify()->ok);
  EXPECT_EQ(db_->memory.Add(m).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(db_->jobs.Enqueue("k", "s", "{}", 1).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(db_->summaries.Insert(Leaf(1, 2, "x")).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(db_->calibration.Put(Calibration{"m", 1, 1, 1}).code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace missy

// SummaryStore (storage/summary_store.cpp): leaves, condensing, errors.
#include "storage/summary_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/database.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::RawQuery;

class SummaryStoreTest : public testing::TwelveMessagesTest {};

TEST_F(SummaryStoreTest, LeafSummaryCoversItsRange) {
  auto leaf = db_->summaries.Insert(Leaf(1, 4, "first four"));
  ASSERT_TRUE(leaf.ok()) << leaf.status().ToString();
  EXPECT_EQ(leaf->id.substr(0, 4), "sum_");
  EXPECT_EQ(leaf->id.size(), 20u);
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

TEST_F(SummaryStoreTest, ALeafOverlappingAnotherIsRefusedAndNothingIsStored) {
  auto first = db_->summaries.Insert(Leaf(3, 6, "three to six"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  for (auto [from, to] : {std::pair{1, 3}, {6, 9}, {4, 5}, {1, 12}}) {
    auto overlap = db_->summaries.Insert(Leaf(from, to, "overlap"));
    ASSERT_EQ(overlap.status().code(), StatusCode::kConflict) << from << ".." << to;
    EXPECT_EQ(overlap.status().field(), "first_seq");
    EXPECT_NE(overlap.status().message().find(first->id), std::string::npos)
        << overlap.status().message();
  }
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM summaries"), "1");
  // Beside it on either side is fine.
  EXPECT_TRUE(db_->summaries.Insert(Leaf(1, 2, "one and two")).ok());
  EXPECT_TRUE(db_->summaries.Insert(Leaf(7, 12, "the rest")).ok());
  // Among several leaves, the one overlapping is found wherever it lies.
  EXPECT_EQ(db_->summaries.Insert(Leaf(2, 2, "again")).status().code(), StatusCode::kConflict);
  EXPECT_EQ(db_->summaries.Insert(Leaf(5, 8, "again")).status().code(), StatusCode::kConflict);
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM summaries"), "3");
}

TEST_F(SummaryStoreTest, CondensingSetsParentsAndHidesChildren) {
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

TEST_F(SummaryStoreTest, SummaryErrors) {
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

}  // namespace
}  // namespace missy

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

class SummaryStoreTest : public testing::TwelveMessagesTest {
 protected:
  // A depth-1 summary of `children` (leaves), covering first..last.
  static SummaryRecord Parent(std::vector<std::string> children, int64_t first, int64_t last,
                              std::string content) {
    SummaryRecord parent;
    parent.session_id = "s";
    parent.depth = 1;
    parent.content = std::move(content);
    parent.first_seq = first;
    parent.last_seq = last;
    parent.child_ids = std::move(children);
    parent.descendant_count = last - first + 1;
    return parent;
  }
};

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
  auto p = db_->summaries.Insert(Parent(leaves, 1, 12, "all twelve"));
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
  SummaryRecord twice = Parent({leaves[0]}, 1, 12, "all twelve");
  EXPECT_EQ(db_->summaries.Insert(twice).status().code(), StatusCode::kConflict);
  twice.child_ids = {"sum_nope"};
  EXPECT_EQ(db_->summaries.Insert(twice).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(db_->summaries.List("s")->size(), 5u);  // neither failure left a row
}

TEST_F(SummaryStoreTest, ListTopIsTheUncondensedListWithoutTheLongColumns) {
  std::vector<std::string> leaves;
  for (int i = 0; i < 4; ++i) {
    auto l = db_->summaries.Insert(Leaf(i * 2 + 1, i * 2 + 2, "leaf " + std::to_string(i)));
    ASSERT_TRUE(l.ok());
    leaves.push_back(l->id);
  }
  ASSERT_TRUE(db_->summaries.Insert(Parent(leaves, 1, 8, "one to eight")).ok());
  ASSERT_TRUE(db_->summaries.Insert(Leaf(9, 10, "nine and ten")).ok());
  auto full = db_->summaries.List("s", true);
  auto planned = db_->summaries.ListTop("s");
  ASSERT_TRUE(full.ok() && planned.ok());
  ASSERT_EQ(planned->size(), 2u);
  ASSERT_EQ(full->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const SummaryRecord& f = (*full)[i];
    const SummaryRecord& p = (*planned)[i];
    EXPECT_EQ(p.id, f.id);
    EXPECT_EQ(p.depth, f.depth);
    EXPECT_EQ(p.first_seq, f.first_seq);
    EXPECT_EQ(p.last_seq, f.last_seq);
    EXPECT_EQ(p.tokens, f.tokens);
    EXPECT_EQ(p.descendant_count, f.descendant_count);
    EXPECT_EQ(p.ordinal, f.ordinal);
    EXPECT_TRUE(p.content.empty());
    EXPECT_TRUE(p.child_ids.empty());
    EXPECT_TRUE(p.artifacts_json.empty());
  }
  EXPECT_EQ((*planned)[0].depth, 1);
  EXPECT_EQ((*planned)[1].first_seq, 9);
  EXPECT_EQ(db_->summaries.ListTop("ghost").status().code(), StatusCode::kNotFound);
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

// What a context reads: the summaries without a parent, and those that an anchor
// snapshot taken before their condensation still shows; never the children condensed
// before the snapshot, nor those of another session.
TEST_F(SummaryStoreTest, ListForContextReadsTheTopAndWhatAnOlderSnapshotShows) {
  std::vector<SummaryRecord> leaves;
  for (int i = 0; i < 4; ++i) {
    auto l = db_->summaries.Insert(Leaf(i * 2 + 1, i * 2 + 2, "leaf " + std::to_string(i)));
    ASSERT_TRUE(l.ok());
    leaves.push_back(*db_->summaries.Get(l->id));  // with its ordinal
  }
  ASSERT_TRUE(db_->summaries
                  .Insert(Parent({leaves[0].id, leaves[1].id, leaves[2].id, leaves[3].id}, 1, 8,
                                 "one to eight"))
                  .ok());
  auto p = db_->summaries.List("s", true)->front();
  auto last = db_->summaries.Insert(Leaf(9, 12, "nine to twelve"));
  ASSERT_TRUE(last.ok());
  last = db_->summaries.Get(last->id);

  auto ids = [](const std::vector<SummaryRecord>& list) {
    std::vector<std::string> out;
    for (const SummaryRecord& r : list) out.push_back(r.id + "=" + r.content);
    return out;
  };
  // No snapshot, or one taken after the condensation: the top only, oldest first.
  for (int64_t through : {int64_t{0}, p.ordinal, last->ordinal}) {
    auto top = db_->summaries.ListForContext("s", through);
    ASSERT_TRUE(top.ok()) << top.status().ToString();
    EXPECT_EQ(ids(*top),
              (std::vector<std::string>{p.id + "=one to eight", last->id + "=nine to twelve"}))
        << through;
  }
  // A snapshot taken after the third leaf: it shows leaves 0-2 in place of the parent.
  auto older = db_->summaries.ListForContext("s", leaves[2].ordinal);
  ASSERT_TRUE(older.ok()) << older.status().ToString();
  EXPECT_EQ(ids(*older),
            (std::vector<std::string>{leaves[0].id + "=leaf 0", p.id + "=one to eight",
                                      leaves[1].id + "=leaf 1", leaves[2].id + "=leaf 2",
                                      last->id + "=nine to twelve"}));
  for (const SummaryRecord& r : *older) {
    EXPECT_EQ(r.parent_id, r.depth == 0 && r.id != last->id ? p.id : "") << r.id;
    EXPECT_GT(r.ordinal, 0);
  }
  EXPECT_TRUE(db_->summaries.ListForContext("nobody", leaves[2].ordinal)->empty());
  // The leaves' coverage, whatever condensed them: through seq 12.
  EXPECT_EQ(*db_->summaries.CoveredThrough("s"), 12);
  EXPECT_EQ(*db_->summaries.CoveredThrough("nobody"), 0);
}

// The list a context reads is kept per session and read again whenever the session's
// summaries changed: a new leaf, a condensation, a session deleted and made again under its
// name (whose new summary may take the deleted one's ordinal), another snapshot.
TEST_F(SummaryStoreTest, ListForContextIsReadAgainWheneverTheSessionsSummariesChanged) {
  auto contents = [&](int64_t through) {
    std::vector<std::string> out;
    auto list = db_->summaries.ListForContext("s", through);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    if (list.ok()) {
      for (const SummaryRecord& r : *list) out.push_back(r.content);
    }
    return out;
  };
  using Texts = std::vector<std::string>;
  EXPECT_EQ(contents(0), Texts{});
  auto a = db_->summaries.Insert(Leaf(1, 4, "one to four"));
  ASSERT_TRUE(a.ok());
  const int64_t a_ordinal = db_->summaries.Get(a->id)->ordinal;
  EXPECT_EQ(contents(0), Texts{"one to four"});
  EXPECT_EQ(contents(0), Texts{"one to four"});  // read again: the same
  auto b = db_->summaries.Insert(Leaf(5, 8, "five to eight"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(contents(0), (Texts{"one to four", "five to eight"}));
  ASSERT_TRUE(db_->summaries.Insert(Parent({a->id, b->id}, 1, 8, "one to eight")).ok());
  EXPECT_EQ(contents(0), Texts{"one to eight"});
  // A snapshot from before the second leaf also lists the first, which it shows.
  EXPECT_EQ(contents(a_ordinal), (Texts{"one to four", "one to eight"}));
  EXPECT_EQ(contents(0), Texts{"one to eight"});

  // Deleted and made again: its one new leaf takes the first leaf's ordinal (the table is
  // empty again), as many summaries as the kept list had once.
  ASSERT_TRUE(db_->sessions.Delete("s").ok());
  ASSERT_TRUE(db_->sessions.Create(testing::SimpleSession("s")).ok());
  std::vector<NewMessage> batch;
  for (int i = 1; i <= 4; ++i) batch.push_back(NewMessage{Message::User("again"), 10, 0, {}});
  ASSERT_TRUE(db_->messages.Append("s", std::move(batch), 100).ok());
  EXPECT_EQ(contents(0), Texts{});
  auto again = db_->summaries.Insert(Leaf(1, 4, "the new one to four"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(contents(0), Texts{"the new one to four"});
  const int64_t again_ordinal = db_->summaries.Get(again->id)->ordinal;
  ASSERT_TRUE(db_->sessions.Delete("s").ok());
  ASSERT_TRUE(db_->sessions.Create(testing::SimpleSession("s")).ok());
  batch.clear();
  for (int i = 1; i <= 4; ++i) batch.push_back(NewMessage{Message::User("third"), 10, 0, {}});
  ASSERT_TRUE(db_->messages.Append("s", std::move(batch), 100).ok());
  auto third = db_->summaries.Insert(Leaf(1, 4, "the third one to four"));
  ASSERT_TRUE(third.ok());
  // The same ordinal and count as the list kept: only the new id tells them apart.
  EXPECT_EQ(db_->summaries.Get(third->id)->ordinal, again_ordinal);
  EXPECT_EQ(contents(0), Texts{"the third one to four"});
}

}  // namespace
}  // namespace missy

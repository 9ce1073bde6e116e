// MemoryStore (storage/memory_store.cpp): memory items and learnings.
#include "storage/memory_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/database.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

class MemoryStoreTest : public testing::TwelveMessagesTest {};

TEST_F(MemoryStoreTest, MemoryItemsCrud) {
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

TEST_F(MemoryStoreTest, LearningsNewestFirstAndFiltered) {
  for (int i = 0; i < 3; ++i) {
    LearningRecord l;
    l.task_type = i == 1 ? "debug" : "deploy";
    l.outcome = "success";
    l.lesson = "lesson " + std::to_string(i);
    l.approach = {"step a", "step b"};
    l.created_at_ms = 100 + i;
    ASSERT_TRUE(db_->memory.AddLearning(l).ok());
  }
  EXPECT_EQ(db_->memory.AddLearning(LearningRecord{}).status().code(),
            StatusCode::kInvalidArgument);
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

}  // namespace
}  // namespace missy

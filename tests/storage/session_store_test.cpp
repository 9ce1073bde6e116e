// SessionStore (storage/session_store.cpp): create, get, list, anchors.
#include "storage/session_store.h"

#include <gtest/gtest.h>

#include <string>

#include "storage/database.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::MakeSession;
using ::missy::testing::New;
using ::missy::testing::OpenDbOrDie;
using ::missy::testing::TempDir;

TEST(SessionStoreTest, DuplicateSessionIsAlreadyExistsAndLeavesTheFirst) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("dup")).ok());
  Session other = MakeSession("dup", 99);
  other.model = "other-model";
  Status st = db->sessions.Create(other);
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(st.message().find("dup"), std::string::npos);
  EXPECT_EQ(db->sessions.Get("dup")->model, "gpt-4o");
  EXPECT_EQ(db->sessions.Create(MakeSession("")).code(), StatusCode::kInvalidArgument);
}

TEST(SessionStoreTest, UnknownSessionIsNotFoundAndWritesNothing) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  auto r = db->messages.Append("ghost", {New(Message::User("x"))}, 1);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(db->sessions.Get("ghost").status().code(), StatusCode::kNotFound);
  auto sessions = db->sessions.List({});
  ASSERT_TRUE(sessions.ok());
  EXPECT_TRUE(sessions->empty());
}

TEST(SessionStoreTest, ListSessionsPagesInCreationOrder) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(db->sessions.Create(MakeSession("s" + std::to_string(i), 100 + i)).ok());
  auto page = db->sessions.List(ListOptions{2, 1});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].id, "s1");
  EXPECT_EQ((*page)[1].id, "s2");
}

TEST(SessionStoreTest, AnchorsArePersistedAndSurviveReopen) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  {
    auto db = OpenDbOrDie(path);
    ASSERT_TRUE(db->sessions.Create(MakeSession("a")).ok());
    ASSERT_TRUE(db->sessions.Create(MakeSession("b")).ok());
    EXPECT_EQ(db->sessions.Get("a")->anchor_seq, 0);  // none yet
    ASSERT_TRUE(db->sessions.SetAnchor("a", 17).ok());
    ASSERT_TRUE(db->sessions.SetAnchor("a", 12).ok());  // an anchor may move back (bigger window)
    // With its summaries' forms and the tool outputs it shows squeezed.
    ASSERT_TRUE(db->sessions.SetAnchor("b", 40, 6, 31, 52).ok());
    EXPECT_EQ(db->sessions.SetAnchor("ghost", 1).code(), StatusCode::kNotFound);
    EXPECT_EQ(db->sessions.SetAnchor("a", -1).code(), StatusCode::kInvalidArgument);
  }
  auto db = OpenDbOrDie(path);
  auto a = db->sessions.Get("a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->anchor_seq, 12);
  EXPECT_EQ(a->model, "gpt-4o");  // the rest of the row is untouched
  auto list = db->sessions.List({});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].anchor_seq, 40);
  EXPECT_EQ((*list)[1].anchor_summaries, 6);
  EXPECT_EQ((*list)[1].anchor_stub_through, 31);
  EXPECT_EQ((*list)[1].anchor_squeezed_through, 52);
  EXPECT_EQ(a->anchor_stub_through, 0);
  EXPECT_EQ(a->anchor_squeezed_through, 0);
}

TEST(SessionStoreTest, TheAnchorsMemoryIsPersistedAsGivenAndSurvivesReopen) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  const std::string hits = R"([{"source":"message","id":"m1","text":"x","score":1.5}])";
  {
    auto db = OpenDbOrDie(path);
    ASSERT_TRUE(db->sessions.Create(MakeSession("a")).ok());
    ASSERT_TRUE(db->sessions.Create(MakeSession("b")).ok());
    EXPECT_EQ(db->sessions.Get("a")->anchor_memory, "");  // none chosen yet
    ASSERT_TRUE(db.engine()
                    .Write([&](Txn& txn) { return db->sessions.SetAnchorMemory(txn, "a", hits); })
                    .ok());
    ASSERT_TRUE(db.engine()
                    .Write([&](Txn& txn) { return db->sessions.SetAnchorMemory(txn, "b", "[]"); })
                    .ok());
    EXPECT_EQ(db.engine()
                  .Write([&](Txn& txn) { return db->sessions.SetAnchorMemory(txn, "ghost", "[]"); })
                  .code(),
              StatusCode::kNotFound);
  }
  auto db = OpenDbOrDie(path);
  EXPECT_EQ(db->sessions.Get("a")->anchor_memory, hits);
  EXPECT_EQ(db->sessions.Get("b")->anchor_memory, "[]");  // none found is kept too
  EXPECT_EQ(db->sessions.Get("a")->model, "gpt-4o");
}

TEST(SessionStoreTest, CreateCarriesTheAnchorAndAWriteSeesItsOwnChanges) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  Session s = MakeSession("s");
  s.anchor_seq = 3;
  Status st = db.db->Write([&](Txn& txn) -> Status {
    MISSY_RETURN_IF_ERROR(db->sessions.Create(txn, s));
    MISSY_RETURN_IF_ERROR(db->sessions.SetAnchor(txn, "s", 8));
    auto inside = db->sessions.Get(txn, "s");
    if (!inside.ok()) return inside.status();
    EXPECT_EQ(inside->anchor_seq, 8);
    EXPECT_EQ(db->sessions.Get(txn, "other").status().code(), StatusCode::kNotFound);
    return SessionStore::MustExist(txn, "s");
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(db->sessions.Get("s")->anchor_seq, 8);
}

}  // namespace
}  // namespace missy

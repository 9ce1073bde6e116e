// MessageStore (storage/message_store.cpp): append, load, flags, metadata.
#include "storage/message_store.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "storage/database.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::MakeSession;
using ::missy::testing::New;
using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawQuery;
using ::missy::testing::TempDir;

// The four shapes a message can take: string, parts with an image, null content with
// tool calls, and a tool result.
std::vector<NewMessage> FourShapes() {
  Message parts;
  parts.role = Role::kUser;
  parts.content_form = ContentForm::kParts;
  parts.parts = {
      ContentPart{ContentPart::Kind::kText, "what is in this picture?", "", ""},
      ContentPart{ContentPart::Kind::kImage, "", "data:image/png;base64,iVBORw0KGgo=", "low"}};
  Message calls = Message::AssistantCalls(
      {ToolCall{"call_1", "function", "read_file", R"({"path":"/etc/hosts"})"},
       ToolCall{"call_2", "function", "ls", R"({"dir":"/tmp"})"}});
  return {New(Message::User("héllo \"world\"\n"), 5), New(parts, 90),
          New(calls, 30, kFlagUnansweredCall),
          New(Message::ToolResult("call_1", "127.0.0.1 localhost", "read_file"), 12)};
}

TEST(MessageStoreTest, RoundTripsEveryMessageShape) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(MakeSession("s1")).ok());
  std::vector<NewMessage> batch = FourShapes();
  auto stored = db->messages.Append("s1", std::vector<NewMessage>(batch), 5000);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*stored)[i].seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ((*stored)[i].created_at_ms, 5000);
  }

  auto loaded = db->messages.Load("s1");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const StoredMessage& m = (*loaded)[i];
    EXPECT_EQ(m.seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ(m.created_at_ms, 5000);
    EXPECT_EQ(m.tokens, batch[i].tokens);
    EXPECT_EQ(m.flags, batch[i].flags);
    EXPECT_EQ(m.message, batch[i].message);
  }
  EXPECT_EQ((*loaded)[1].message.content_form, ContentForm::kParts);
  EXPECT_EQ((*loaded)[1].message.parts[1].image_url, "data:image/png;base64,iVBORw0KGgo=");
  EXPECT_EQ((*loaded)[2].message.content_form, ContentForm::kNull);
  EXPECT_EQ((*loaded)[2].message.tool_calls.size(), 2u);
  EXPECT_EQ((*loaded)[3].message.tool_call_id, "call_1");

  auto session = db->sessions.Get("s1");
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(session->model, "gpt-4o");
  EXPECT_EQ(session->system_prompt, "You are terse.");
  EXPECT_EQ(session->tools_json, R"([{"type":"function","function":{"name":"ls"}}])");
  EXPECT_EQ(session->metadata_json, R"({"agent":"test"})");
  EXPECT_EQ(session->context_window, 128000);
  EXPECT_TRUE(session->strict);
  EXPECT_EQ(session->created_at_ms, 1000);
  EXPECT_EQ(session->updated_at_ms, 5000);
  EXPECT_EQ(session->message_count, 4);
  EXPECT_EQ(session->total_tokens, 5 + 90 + 30 + 12);
  EXPECT_EQ(session->last_seq, 4);
}

TEST(MessageStoreTest, LoadMessagesHonoursAfterSeqAndLimit) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("s")).ok());
  std::vector<NewMessage> batch;
  for (int i = 1; i <= 10; ++i) batch.push_back(New(Message::User("m" + std::to_string(i))));
  ASSERT_TRUE(db->messages.Append("s", std::move(batch), 1).ok());
  auto some = db->messages.Load("s", 4, 3);
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->size(), 3u);
  EXPECT_EQ((*some)[0].seq, 5);
  EXPECT_EQ((*some)[0].message.text, "m5");
  EXPECT_EQ((*some)[2].seq, 7);
  auto none = db->messages.Load("s", 10);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(db->messages.Load("nope").status().code(), StatusCode::kNotFound);
}

TEST(MessageStoreTest, ExtractsAreStoredAndLoadedOnlyForTheSummarizer) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  // Bytes of every value (an extract is binary: NULs, high bytes).
  const std::string extract = std::string("\x01\x00\xff\x80 bytes", 10);
  {
    auto db = OpenDbOrDie(path);
    ASSERT_TRUE(db->sessions.Create(MakeSession("s")).ok());
    NewMessage with = New(Message::User("has one"));
    with.extract = extract;
    auto stored = db->messages.Append("s", {std::move(with), New(Message::User("has none"))}, 1);
    ASSERT_TRUE(stored.ok());
    EXPECT_TRUE((*stored)[0].extract.empty());  // what callers cache holds no extract
  }
  auto db = OpenDbOrDie(path);
  auto plain = db->messages.Load("s");
  ASSERT_TRUE(plain.ok());
  ASSERT_EQ(plain->size(), 2u);
  EXPECT_TRUE((*plain)[0].extract.empty());
  auto full = db->messages.LoadWithExtracts("s");
  ASSERT_TRUE(full.ok());
  ASSERT_EQ(full->size(), 2u);
  EXPECT_EQ((*full)[0].extract, extract);
  EXPECT_EQ((*full)[0].message.text, "has one");
  EXPECT_EQ((*full)[1].extract, "");  // stored as NULL
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM message_digests WHERE extract IS NULL"), "1");
  auto after = db->messages.LoadWithExtracts("s", 1);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].seq, 2);
  EXPECT_EQ(db->messages.LoadWithExtracts("nope").status().code(), StatusCode::kNotFound);
}

TEST(MessageStoreTest, ReopenKeepsSessionsMessagesAndSeq) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  {
    auto db = OpenDbOrDie(path);
    ASSERT_TRUE(db->sessions.Create(MakeSession("s1")).ok());
    ASSERT_TRUE(db->messages.Append("s1", FourShapes(), 10).ok());
    ASSERT_TRUE(db->messages.Append("s1", {New(Message::User("second batch"))}, 11).ok());
  }
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  auto loaded = db->messages.Load("s1");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 5u);
  EXPECT_EQ(loaded->back().message.text, "second batch");
  EXPECT_EQ(loaded->back().seq, 5);
  auto more =
      db->messages.Append("s1", {New(Message::Assistant("a")), New(Message::User("b"))}, 12);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ((*more)[0].seq, 6);
  EXPECT_EQ((*more)[1].seq, 7);
  auto session = db->sessions.Get("s1");
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(session->last_seq, 7);
  EXPECT_EQ(session->message_count, 7);
}

TEST(MessageStoreTest, SeqContinuesAcrossBatchesPerSession) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("a")).ok());
  ASSERT_TRUE(db->sessions.Create(MakeSession("b")).ok());
  auto a1 = db->messages.Append("a", {New(Message::User("1")), New(Message::User("2"))}, 1);
  auto b1 = db->messages.Append("b", {New(Message::User("1"))}, 1);
  auto a2 = db->messages.Append("a", {New(Message::User("3"))}, 2);
  ASSERT_TRUE(a1.ok() && b1.ok() && a2.ok());
  EXPECT_EQ((*b1)[0].seq, 1);
  EXPECT_EQ((*a2)[0].seq, 3);
  auto empty = db->messages.Append("a", {}, 3);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(db->sessions.Get("a")->last_seq, 3);
}

class MessageFlagsTest : public testing::TwelveMessagesTest {};

TEST_F(MessageFlagsTest, PrunedFlagIsStickyAndAddsToExistingFlags) {
  ASSERT_TRUE(db_->messages.AddFlags("s", {2, 3}, kFlagPruned).ok());
  ASSERT_TRUE(db_->messages.AddFlags("s", {3}, kFlagOrphanResult).ok());
  auto msgs = db_->messages.Load("s");
  EXPECT_EQ((*msgs)[0].flags, kFlagNone);
  EXPECT_EQ((*msgs)[1].flags, kFlagPruned);
  EXPECT_EQ((*msgs)[2].flags, kFlagPruned | kFlagOrphanResult);
  EXPECT_EQ((*msgs)[2].message.text, "message 3");  // the original stays retrievable
  EXPECT_EQ(db_->messages.AddFlags("ghost", {1}, kFlagPruned).code(), StatusCode::kNotFound);
}

TEST(MessageStoreTest, LoadPlanHasSeqRoleAndTokens) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("s")).ok());
  ASSERT_TRUE(db->messages.Append("s", FourShapes(), 700).ok());
  auto plan = db->messages.LoadPlan("s");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->size(), 4u);
  EXPECT_EQ((*plan)[0].seq, 1);
  EXPECT_EQ((*plan)[0].role, Role::kUser);
  EXPECT_EQ((*plan)[0].tokens, 5);
  EXPECT_EQ((*plan)[2].role, Role::kAssistant);
  EXPECT_EQ((*plan)[3].role, Role::kTool);
  EXPECT_EQ((*plan)[3].seq, 4);
  auto after = db->messages.LoadPlan("s", 2);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ(after->front().seq, 3);
  EXPECT_TRUE(db->messages.LoadPlan("s", 4)->empty());
  EXPECT_EQ(db->messages.LoadPlan("ghost").status().code(), StatusCode::kNotFound);
}

TEST(MessageStoreTest, LoadExtractsLeavesOutTheContentOfMessagesWithAnExtract) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("s")).ok());
  std::vector<NewMessage> batch = FourShapes();
  const std::vector<NewMessage> shapes = batch;
  batch[1].extract = "x1";  // the user's parts
  batch[2].extract = "x2";  // the calls
  ASSERT_TRUE(db->messages.Append("s", std::move(batch), 700).ok());
  auto rows = db->messages.LoadExtracts("s", 1, 4);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].message, shapes[0].message);  // no extract: whole
  EXPECT_EQ((*rows)[0].extract, "");
  EXPECT_EQ((*rows)[1].extract, "x1");
  EXPECT_EQ((*rows)[1].message.role, Role::kUser);
  EXPECT_TRUE((*rows)[1].message.parts.empty());
  EXPECT_EQ((*rows)[1].message.PlainText(), "");
  EXPECT_EQ((*rows)[1].tokens, 90);
  EXPECT_EQ((*rows)[2].extract, "x2");
  EXPECT_EQ((*rows)[2].message.role, Role::kAssistant);
  EXPECT_TRUE((*rows)[2].message.tool_calls.empty());
  EXPECT_EQ((*rows)[3].message, shapes[3].message);
  EXPECT_EQ((*rows)[3].seq, 4);
  EXPECT_TRUE(db->messages.LoadExtracts("s", 5, 9)->empty());
  EXPECT_EQ(db->messages.LoadExtracts("ghost", 1, 4).status().code(), StatusCode::kNotFound);
}

// Planning and summarizing read the digests; a message that has none (every append and
// the migration write one) is still planned and loaded, from its row.
TEST(MessageStoreTest, AMessageWithoutADigestIsPlannedAndLoadedFromItsRow) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db->sessions.Create(MakeSession("s")).ok());
  std::vector<NewMessage> batch = FourShapes();
  const std::vector<NewMessage> shapes = batch;
  for (NewMessage& m : batch) m.extract = "x";
  ASSERT_TRUE(db->messages.Append("s", std::move(batch), 700).ok());
  testing::RawExec(
      path, "DELETE FROM message_digests WHERE id = (SELECT id FROM messages WHERE seq = 3)");
  auto plan = db->messages.LoadPlan("s");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->size(), 4u);
  EXPECT_EQ((*plan)[2].seq, 3);
  EXPECT_EQ((*plan)[2].role, Role::kAssistant);
  EXPECT_EQ((*plan)[2].tokens, shapes[2].tokens);
  auto rows = db->messages.LoadExtracts("s", 1, 4);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[1].extract, "x");
  EXPECT_EQ((*rows)[2].seq, 3);
  EXPECT_EQ((*rows)[2].extract, "");
  EXPECT_EQ((*rows)[2].message, shapes[2].message);  // whole, from its row
  EXPECT_EQ((*rows)[2].created_at_ms, 700);
}

TEST(MessageStoreTest, LoadsChosenSeqsAndRanges) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("s")).ok());
  std::vector<NewMessage> batch;
  for (int i = 1; i <= 8; ++i) batch.push_back(New(Message::User("m" + std::to_string(i))));
  ASSERT_TRUE(db->messages.Append("s", std::move(batch), 1).ok());
  auto some = db->messages.Load("s", std::vector<int64_t>{7, 2, 7, 99, 5});
  ASSERT_TRUE(some.ok()) << some.status().ToString();
  ASSERT_EQ(some->size(), 3u);  // sorted, each once, the absent 99 left out
  EXPECT_EQ((*some)[0].seq, 2);
  EXPECT_EQ((*some)[1].message.text, "m5");
  EXPECT_EQ((*some)[2].seq, 7);
  EXPECT_TRUE(db->messages.Load("s", std::vector<int64_t>{}).value().empty());
  EXPECT_EQ(db->messages.Load("ghost", std::vector<int64_t>{1}).status().code(),
            StatusCode::kNotFound);
  auto range = db->messages.LoadRange("s", 3, 5);
  ASSERT_TRUE(range.ok());
  ASSERT_EQ(range->size(), 3u);
  EXPECT_EQ(range->front().message.text, "m3");
  EXPECT_EQ(range->back().seq, 5);
  EXPECT_TRUE(db->messages.LoadRange("s", 5, 4)->empty());
}

TEST(MessageStoreTest, AppendTakesTheBatchAndComposesWithOtherWrites) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("s")).ok());
  const std::string big(100000, 'x');
  std::vector<NewMessage> batch{New(Message::ToolResult("call_9", big, "cat"), 25000)};
  auto stored = db->messages.Append("s", std::move(batch), 3);
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(batch.empty());  // moved into the stored rows, not copied
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].message.text, big);
  EXPECT_EQ((*stored)[0].message.tool_call_id, "call_9");
  // Encoded off the writer, appended with the anchor in one write.
  EncodedBatch encoded(
      std::vector<NewMessage>{New(Message::User("one")), New(Message::User("two"))});
  EXPECT_EQ(encoded.size(), 2u);
  std::vector<StoredMessage> rows;
  Status st = db.db->Write([&](Txn& txn) -> Status {
    auto r = db->messages.Append(txn, "s", std::move(encoded), 4);
    if (!r.ok()) return r.status();
    rows = std::move(*r);
    return db->sessions.SetAnchor(txn, "s", 2);
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].seq, 2);
  EXPECT_EQ(rows[1].message.text, "two");
  auto session = db->sessions.Get("s");
  EXPECT_EQ(session->last_seq, 3);
  EXPECT_EQ(session->message_count, 3);
  EXPECT_EQ(session->total_tokens, 25000 + 7 + 7);
  EXPECT_EQ(session->updated_at_ms, 4);
  EXPECT_EQ(session->anchor_seq, 2);
  EXPECT_EQ(db->messages.Load("s", 0)->front().message.text, big);
  // An empty batch stores nothing but still needs the session.
  EXPECT_EQ(db->messages.Append("ghost", {}, 5).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace missy

// SessionService::Delete: the rows go with an audit event, the session's cached state is
// forgotten (a session created again under the same id starts empty), and a delete
// queued behind an append of the same session sees that append's messages.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "daemon/service/session_service.h"
#include "service_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

class SessionDeleteTest : public ServiceFixture {
 protected:
  Result<SessionDeletion> Delete(const std::string& id) {
    Awaiter<Result<SessionDeletion>> w;
    services_->sessions.Delete(id, w.Callback());
    std::optional<Result<SessionDeletion>> r = w.Wait();
    if (!r) return Status::Internal("Delete timed out");
    return std::move(*r);
  }
};

TEST_F(SessionDeleteTest, DeletesRowsAuditsAndForgetsTheCachedHistory) {
  ASSERT_TRUE(Create("s").ok());
  ASSERT_TRUE(Append("s", {Message::User("first walrus question"), Message::Assistant("answer one"),
                           Message::User("second walrus question")})
                  .status.ok());
  Result<ContextOutcome> ctx = Context("s");
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  ASSERT_NE(services_->history.Find("s"), nullptr);  // the window is cached now
  std::vector<std::string> observed;
  services_->sessions.AddDeletionObserver(
      [&observed](const std::string& id) { observed.push_back(id); });
  const uint64_t stamp_before = services_->memory_hits.Stamp("other");

  Result<SessionDeletion> removed = Delete("s");
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(removed->messages, 3);
  EXPECT_EQ(removed->summaries, 0);
  EXPECT_EQ(observed, std::vector<std::string>{"s"});
  EXPECT_EQ(services_->history.Find("s"), nullptr);
  EXPECT_EQ(services_->memory_hits.Stamp("other"), stamp_before + 1);  // searches re-run

  Result<Session> gone = services_->sessions.Get("s");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  std::vector<AuditEvent> events = Events("session.deleted");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].session_id, "s");
  json::value detail = json::parse(events[0].detail_json);
  EXPECT_EQ(detail.at("messages").to_number<int64_t>(), 3);
  EXPECT_EQ(detail.at("summaries").to_number<int64_t>(), 0);

  // Unknown now: 404 naming session_id, and no second event.
  Result<SessionDeletion> again = Delete("s");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(again.status().field(), "session_id");
  EXPECT_EQ(Events("session.deleted").size(), 1u);
  EXPECT_EQ(observed.size(), 1u);

  // The same id again is a new, empty session: nothing of the old history shows.
  ASSERT_TRUE(Create("s").ok());
  AppendOutcome fresh = Append("s", {Message::User("brand new start")});
  ASSERT_TRUE(fresh.status.ok()) << fresh.status.ToString();
  ASSERT_EQ(fresh.messages.size(), 1u);
  EXPECT_EQ(fresh.messages[0].seq, 1);
  ctx = Context("s");
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(ctx->context.kept_seqs, std::vector<int64_t>{1});
  ASSERT_FALSE(ctx->context.messages.empty());
  EXPECT_EQ(ctx->context.messages.back().PlainText(), "brand new start");
}

TEST_F(SessionDeleteTest, ADeleteQueuedBehindAnAppendRemovesItsMessagesToo) {
  ASSERT_TRUE(Create("q").ok());
  ASSERT_TRUE(Append("q", {Message::User("one")}).status.ok());
  Awaiter<AppendOutcome> appended;
  Awaiter<Result<SessionDeletion>> deleted;
  {
    WriterBlock block(*db_);
    ASSERT_TRUE(block.holding());
    AppendRequest request;
    request.session_id = "q";
    request.messages = {Message::User("two"), Message::User("three")};
    services_->sessions.Append(std::move(request), appended.Callback());
    services_->sessions.Delete("q", deleted.Callback());
    EXPECT_FALSE(deleted.ready());  // nothing can commit while the writer is held
  }
  std::optional<AppendOutcome> a = appended.Wait();
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->status.ok()) << a->status.ToString();
  std::optional<Result<SessionDeletion>> d = deleted.Wait();
  ASSERT_TRUE(d.has_value());
  ASSERT_TRUE(d->ok()) << d->status().ToString();
  EXPECT_EQ((*d)->messages, 3);
  EXPECT_EQ(stores_->sessions.Get("q").status().code(), StatusCode::kNotFound);
}

TEST_F(SessionDeleteTest, AnAppendAfterTheDeleteIsNotFoundAndStoresNothing) {
  ASSERT_TRUE(Create("late").ok());
  ASSERT_TRUE(Delete("late").ok());
  AppendOutcome out = Append("late", {Message::User("too late")});
  EXPECT_EQ(out.status.code(), StatusCode::kNotFound);
  EXPECT_EQ(services_->history.Find("late"), nullptr);
}

// An append takes its session's settings from memory (no session row is read): a session
// deleted and created again under its id must be appended with the new settings (strict
// here), and its counters start over.
TEST_F(SessionDeleteTest, ASessionCreatedAgainIsAppendedWithItsNewSettings) {
  const auto orphan = [] { return std::vector<Message>{Message::ToolResult("call_9", "?")}; };
  ASSERT_TRUE(Create("s", /*strict=*/false).ok());
  AppendOutcome lax = Append("s", orphan());
  ASSERT_TRUE(lax.status.ok()) << lax.status.ToString();
  EXPECT_EQ(lax.messages[0].flags, kFlagOrphanResult);
  EXPECT_FALSE(lax.session.strict);

  ASSERT_TRUE(Delete("s").ok());
  ASSERT_TRUE(Create("s", /*strict=*/true).ok());
  AppendOutcome refused = Append("s", orphan());
  EXPECT_EQ(refused.status.code(), StatusCode::kUnprocessable) << refused.status.ToString();
  AppendOutcome ok = Append("s", {Message::User("hello again")});
  ASSERT_TRUE(ok.status.ok()) << ok.status.ToString();
  EXPECT_TRUE(ok.session.strict);
  EXPECT_EQ(ok.session.message_count, 1);
  EXPECT_EQ(ok.session.last_seq, 1);
  EXPECT_EQ(ok.session.total_tokens, ok.messages[0].tokens);
  EXPECT_EQ(Stored("s").size(), 1u);
}

// A long session evicts from the front, so its contexts carry an anchor (where the
// kept history starts). Deleted and created again under the same id, the new session
// must not inherit it: its first context keeps everything from seq 1.
TEST_F(SessionDeleteTest, ASessionCreatedAgainDoesNotInheritTheOldAnchor) {
  ASSERT_TRUE(Create("s").ok());
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(Append("s", {Message::User("question " + std::to_string(i) + " " +
                                           std::string(2000, static_cast<char>('a' + i % 26))),
                             Message::Assistant("answer " + std::to_string(i))})
                    .status.ok());
  }
  Result<ContextOutcome> before = Context("s", 8000, 500);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_GT(before->context.report.first_kept_seq, 20) << "the old session evicts from the front";
  before = Context("s", 8000, 500);  // now at its anchor
  ASSERT_TRUE(before.ok());
  ASSERT_GT(before->context.report.first_kept_seq, 20);

  ASSERT_TRUE(Delete("s").ok());
  ASSERT_TRUE(Create("s").ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(Append("s", {Message::User("new " + std::to_string(i))}).status.ok());
  }
  Result<ContextOutcome> after = Context("s", 8000, 500);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->context.kept_seqs, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(after->context.report.eviction, "fill");
}

}  // namespace
}  // namespace missy::testing

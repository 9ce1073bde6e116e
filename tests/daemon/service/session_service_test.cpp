#include "daemon/service/session_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <set>
#include <thread>

#include "daemon/service/counting.h"
#include "service_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

using ServiceSessionTest = ServiceFixture;

int64_t DetailInt(const AuditEvent& e, const char* key) {
  return json::parse(e.detail_json).at(key).to_number<int64_t>();
}

TEST_F(ServiceSessionTest, CreateWithoutIdTakesTheIdSourceAndTheClock) {
  clock_.Set(kStartMs + 5);
  Session s;
  s.model = "gpt-4o";
  s.system_prompt = "Be brief.";
  Result<Session> created = Create(std::move(s));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->id, "ses_id000001");
  EXPECT_EQ(created->created_at_ms, kStartMs + 5);
  EXPECT_EQ(created->updated_at_ms, kStartMs + 5);
  EXPECT_FALSE(created->strict);

  Result<Session> stored = stores_->sessions.Get("ses_id000001");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->model, "gpt-4o");
  EXPECT_EQ(stored->system_prompt, "Be brief.");
  EXPECT_EQ(stored->message_count, 0);

  Result<Session> second = Create(Session{});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->id, "ses_id000002");

  std::vector<AuditEvent> events = Events("session.created");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].session_id, "ses_id000001");
  EXPECT_EQ(events[1].session_id, "ses_id000002");
  EXPECT_EQ(events[0].timestamp_ms, kStartMs + 5);
}

TEST_F(ServiceSessionTest, DuplicateIdIsAlreadyExistsNamingTheIdAndTheFirstStays) {
  Session first;
  first.id = "dup";
  first.model = "first-model";
  ASSERT_TRUE(Create(std::move(first)).ok());
  clock_.Advance(1000);
  Session again;
  again.id = "dup";
  again.model = "second-model";
  Result<Session> r = Create(std::move(again));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(r.status().message().find("'dup'"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().field(), "id");

  Result<Session> stored = stores_->sessions.Get("dup");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->model, "first-model");
  EXPECT_EQ(stored->created_at_ms, kStartMs);
  EXPECT_EQ(Events("session.created").size(), 1u);  // the refused one left no event
}

TEST_F(ServiceSessionTest, InvalidIdIsRefusedNamingId) {
  for (const std::string& id :
       std::vector<std::string>{"has space", "slash/id", std::string(129, 'a')}) {
    Result<Session> r = Create(id);
    ASSERT_FALSE(r.ok()) << id;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << id;
    EXPECT_EQ(r.status().field(), "id") << id;
  }
  EXPECT_TRUE(Create(std::string(128, 'a')).ok());
}

TEST_F(ServiceSessionTest, StrictDefaultsToTheConfigUnlessTheRequestSetsIt) {
  struct Case {
    bool config_strict;
    std::optional<bool> request;
    bool want;
  };
  const Case cases[] = {
      {false, std::nullopt, false}, {true, std::nullopt, true}, {true, false, false},
      {false, true, true},          {true, true, true},         {false, false, false},
  };
  int n = 0;
  for (const Case& c : cases) {
    SetConfig([&](DaemonConfig& cfg) { cfg.strict = c.config_strict; });
    const std::string id = "s" + std::to_string(n++);
    Result<Session> r = Create(id, c.request);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->strict, c.want) << "config " << c.config_strict << " request "
                                 << (c.request ? (*c.request ? "true" : "false") : "unset");
    EXPECT_EQ(stores_->sessions.Get(id)->strict, c.want) << id;
  }
}

TEST_F(ServiceSessionTest, AppendAssignsSeqsCountsTokensAndUpdatesTheSession) {
  ASSERT_TRUE(Create("s").ok());
  clock_.Set(kStartMs + 777);
  std::vector<Message> batch = {Message::User("list the files in src"),
                                CallMessage("call_1", "ls", R"({"path":"src"})"),
                                Message::ToolResult("call_1", "a.cpp\nb.cpp\nc.cpp", "ls")};
  // What the session's counter says for each message (heuristic: the config asks for it).
  const MessageTokenCounter counter = CounterFor(*config_, nullptr, *stores_->sessions.Get("s"));
  std::vector<int64_t> want_tokens;
  for (const Message& m : batch) want_tokens.push_back(counter.CountMessage(m));

  AppendOutcome out = Append("s", batch);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(out.encoding, "heuristic");
  EXPECT_TRUE(out.warnings.empty());
  ASSERT_EQ(out.messages.size(), 3u);
  int64_t sum = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out.messages[i].seq, static_cast<int64_t>(i) + 1);
    EXPECT_GT(out.messages[i].tokens, 0);
    EXPECT_EQ(out.messages[i].tokens, want_tokens[i]) << i;
    EXPECT_EQ(out.messages[i].flags, kFlagNone);
    sum += out.messages[i].tokens;
  }
  EXPECT_EQ(out.session.message_count, 3);
  EXPECT_EQ(out.session.last_seq, 3);
  EXPECT_EQ(out.session.total_tokens, sum);
  EXPECT_EQ(out.session.updated_at_ms, kStartMs + 777);

  AppendOutcome more = Append("s", {Message::Assistant("three files"), Message::User("thanks")});
  ASSERT_TRUE(more.status.ok()) << more.status.ToString();
  ASSERT_EQ(more.messages.size(), 2u);
  EXPECT_EQ(more.messages[0].seq, 4);
  EXPECT_EQ(more.messages[1].seq, 5);
  EXPECT_EQ(more.session.message_count, 5);
  EXPECT_EQ(more.session.last_seq, 5);
  EXPECT_EQ(more.session.total_tokens, sum + more.messages[0].tokens + more.messages[1].tokens);

  std::vector<StoredMessage> stored = Stored("s");
  ASSERT_EQ(stored.size(), 5u);
  EXPECT_EQ(stored[0].message, batch[0]);
  EXPECT_EQ(stored[1].message, batch[1]);
  EXPECT_EQ(stored[2].message, batch[2]);
  EXPECT_EQ(stored[2].tokens, want_tokens[2]);
  EXPECT_EQ(stored[0].created_at_ms, kStartMs + 777);
  EXPECT_EQ(stored[4].message.text, "thanks");

  // One messages.appended event per append, naming its seqs.
  std::vector<AuditEvent> events = Events("messages.appended");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].session_id, "s");
  EXPECT_EQ(DetailInt(events[0], "count"), 3);
  EXPECT_EQ(DetailInt(events[0], "first_seq"), 1);
  EXPECT_EQ(DetailInt(events[0], "last_seq"), 3);
  EXPECT_EQ(DetailInt(events[0], "tokens"), sum);
  EXPECT_EQ(DetailInt(events[1], "first_seq"), 4);
  EXPECT_EQ(DetailInt(events[1], "last_seq"), 5);
}

TEST_F(ServiceSessionTest, OrphanToolResultIsStoredFlaggedWithAWarning) {
  ASSERT_TRUE(Create("lax", false).ok());
  AppendOutcome out = Append(
      "lax", {Message::User("go"), CallMessage("call_1"), Message::ToolResult("call_9", "?")});
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_EQ(out.warnings[0].index, 2u);
  EXPECT_EQ(out.warnings[0].tool_call_id, "call_9");
  EXPECT_EQ(out.warnings[0].problem, "orphan_result");
  ASSERT_EQ(out.messages.size(), 3u);
  EXPECT_EQ(out.messages[0].flags, kFlagNone);
  EXPECT_EQ(out.messages[2].flags, kFlagOrphanResult);
  EXPECT_EQ(out.session.message_count, 3);

  std::vector<StoredMessage> stored = Stored("lax");
  ASSERT_EQ(stored.size(), 3u);
  EXPECT_EQ(stored[2].flags, kFlagOrphanResult);
  EXPECT_EQ(stored[2].message.tool_call_id, "call_9");

  std::vector<AuditEvent> events = Events("messages.appended");
  ASSERT_EQ(events.size(), 1u);
  json::value detail = json::parse(events[0].detail_json);
  ASSERT_TRUE(detail.as_object().contains("warnings")) << events[0].detail_json;
  EXPECT_EQ(detail.at("warnings").at(0).at("problem").as_string(), "orphan_result");
  EXPECT_EQ(detail.at("warnings").at(0).at("tool_call_id").as_string(), "call_9");
}

TEST_F(ServiceSessionTest, StrictModeRefusesWithWarningsAndStoresNothing) {
  ASSERT_TRUE(Create("strict", true).ok());
  ASSERT_TRUE(Append("strict", {Message::User("first")}).status.ok());
  const auto bad = [] {
    return std::vector<Message>{Message::User("go"), CallMessage("call_1"),
                                Message::ToolResult("call_9", "?")};
  };
  AppendOutcome out = Append("strict", bad());
  ASSERT_FALSE(out.status.ok());
  EXPECT_EQ(out.status.code(), StatusCode::kUnprocessable);
  EXPECT_EQ(out.status.field(), "messages[2]");
  EXPECT_NE(out.status.message().find("nothing was stored"), std::string::npos)
      << out.status.message();
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_EQ(out.warnings[0].problem, "orphan_result");
  EXPECT_TRUE(out.messages.empty());

  EXPECT_EQ(Stored("strict").size(), 1u);
  EXPECT_EQ(stores_->sessions.Get("strict")->message_count, 1);
  EXPECT_EQ(Events("messages.appended").size(), 1u);  // only the first append

  // The request overrides the session's setting, both ways.
  AppendOutcome lax_once = Append("strict", bad(), /*strict=*/false);
  ASSERT_TRUE(lax_once.status.ok()) << lax_once.status.ToString();
  EXPECT_EQ(lax_once.messages[2].seq, 4);
  EXPECT_EQ(lax_once.messages[2].flags, kFlagOrphanResult);

  ASSERT_TRUE(Create("lax", false).ok());
  AppendOutcome strict_once = Append("lax", bad(), /*strict=*/true);
  EXPECT_EQ(strict_once.status.code(), StatusCode::kUnprocessable);
  EXPECT_TRUE(Stored("lax").empty());
}

TEST_F(ServiceSessionTest, AppendToUnknownSessionOrWithNoMessagesStoresNothing) {
  AppendOutcome ghost = Append("ghost", {Message::User("hello?")});
  EXPECT_EQ(ghost.status.code(), StatusCode::kNotFound);
  EXPECT_NE(ghost.status.message().find("'ghost'"), std::string::npos) << ghost.status.message();

  ASSERT_TRUE(Create("s").ok());
  AppendOutcome empty = Append("s", {});
  EXPECT_EQ(empty.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.status.field(), "messages");
  EXPECT_TRUE(Stored("s").empty());
  EXPECT_TRUE(Events("messages.appended").empty());
}

TEST_F(ServiceSessionTest, AppendThatCannotBeStoredIsUnavailableAndReleasesTheSession) {
  ASSERT_TRUE(Create("s").ok());
  ASSERT_TRUE(Append("s", {Message::User("one")}).status.ok());
  db_options_.read_only = true;
  Reopen();
  for (int attempt = 0; attempt < 3; ++attempt) {  // the queue is released after each failure
    AppendOutcome out = Append("s", {Message::User("two")});
    EXPECT_EQ(out.status.code(), StatusCode::kUnavailable) << out.status.ToString();
    EXPECT_TRUE(out.messages.empty());
  }
  EXPECT_EQ(services_->queue.busy_sessions(), 0u);
  EXPECT_EQ(Stored("s").size(), 1u);
  db_options_.read_only = false;
  Reopen();
  AppendOutcome ok = Append("s", {Message::User("two")});
  ASSERT_TRUE(ok.status.ok()) << ok.status.ToString();
  EXPECT_EQ(ok.messages[0].seq, 2);
}

TEST_F(ServiceSessionTest, GetAndMessagesNameAnUnknownSession) {
  Result<Session> missing = services_->sessions.Get("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "session 'nope' not found");
  EXPECT_EQ(services_->sessions.Messages("nope", 0, 10).status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(Create("s").ok());
  std::vector<Message> batch;
  for (int i = 1; i <= 6; ++i) batch.push_back(Message::User("m" + std::to_string(i)));
  ASSERT_TRUE(Append("s", batch).status.ok());
  Result<std::vector<StoredMessage>> page = services_->sessions.Messages("s", 2, 3);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 3u);
  EXPECT_EQ((*page)[0].seq, 3);
  EXPECT_EQ((*page)[2].message.text, "m5");
}

TEST_F(ServiceSessionTest, ConcurrentAppendsFromEightThreadsKeepSeqsContiguous) {
  ASSERT_TRUE(Create("busy").ok());
  constexpr int kThreads = 8;
  constexpr int kAppendsPerThread = 25;  // two messages each
  std::vector<std::vector<AppendOutcome>> outcomes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Fire every append first, so that they queue up behind each other.
      std::vector<Awaiter<AppendOutcome>> waits(kAppendsPerThread);
      for (int i = 0; i < kAppendsPerThread; ++i) {
        const std::string tag = "t" + std::to_string(t) + "-" + std::to_string(i);
        AppendRequest request;
        request.session_id = "busy";
        request.messages = {Message::User(tag + "-q"), Message::Assistant(tag + "-a")};
        services_->sessions.Append(std::move(request), waits[i].Callback());
      }
      for (auto& w : waits) {
        std::optional<AppendOutcome> out = w.Wait();
        if (out) outcomes[t].push_back(std::move(*out));
      }
    });
  }
  for (std::thread& th : threads) th.join();

  constexpr int kMessages = kThreads * kAppendsPerThread * 2;
  std::map<int64_t, std::pair<int64_t, int64_t>> batches;  // first seq -> (first, last)
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(outcomes[t].size(), static_cast<size_t>(kAppendsPerThread)) << "thread " << t;
    for (const AppendOutcome& out : outcomes[t]) {
      ASSERT_TRUE(out.status.ok()) << out.status.ToString();
      ASSERT_EQ(out.messages.size(), 2u);
      EXPECT_EQ(out.messages[1].seq, out.messages[0].seq + 1);  // a batch stays together
      batches[out.messages[0].seq] = {out.messages[0].seq, out.messages[1].seq};
    }
  }
  ASSERT_EQ(batches.size(), static_cast<size_t>(kMessages / 2));

  std::vector<StoredMessage> stored = Stored("busy");
  ASSERT_EQ(stored.size(), static_cast<size_t>(kMessages));
  std::set<std::string> texts;
  for (size_t i = 0; i < stored.size(); ++i) {
    EXPECT_EQ(stored[i].seq, static_cast<int64_t>(i) + 1);
    texts.insert(stored[i].message.text);
  }
  EXPECT_EQ(texts.size(), static_cast<size_t>(kMessages));  // nothing lost or doubled
  // Each batch's question is directly followed by its own answer.
  for (size_t i = 0; i + 1 < stored.size(); i += 2) {
    const std::string& q = stored[i].message.text;
    EXPECT_EQ(stored[i + 1].message.text, q.substr(0, q.size() - 2) + "-a") << "seq " << i + 1;
  }
  Result<Session> session = stores_->sessions.Get("busy");
  EXPECT_EQ(session->message_count, kMessages);
  EXPECT_EQ(session->last_seq, kMessages);

  std::vector<AuditEvent> events = Events("messages.appended");
  ASSERT_EQ(events.size(), batches.size());
  int64_t expect_first = 1;
  for (const AuditEvent& e : events) {
    const int64_t first = DetailInt(e, "first_seq");
    const int64_t last = DetailInt(e, "last_seq");
    EXPECT_EQ(first, expect_first) << "events follow the seqs in commit order";
    ASSERT_EQ(batches.count(first), 1u) << first;
    EXPECT_EQ(batches[first].second, last);
    expect_first = last + 1;
  }
  EXPECT_TRUE(stores_->audit.Verify()->ok);
}

}  // namespace
}  // namespace missy::testing

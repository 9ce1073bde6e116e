// GET /v1/contexts/{id}, GET /v1/sessions/{id}/contexts and GET /v1/audit/stream in
// process (daemon/http/inspect_routes.cpp): what a context whose sources are gone looks
// like (an edited or deleted memory item, a new message never appended, a deleted
// session), the list's shape and paging, and the event stream delivering an event
// appended after the subscription, filtered by type, then ended at shutdown.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/http/api_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

// An exchange that keeps what a streamed answer writes.
class StreamExchange final : public HttpExchange {
 public:
  class Body final : public BodyStream {
   public:
    explicit Body(StreamExchange& owner) : owner_(owner) {}
    void Write(std::string chunk) override {
      std::lock_guard<std::mutex> lock(owner_.mu_);
      owner_.body_ += chunk;
      owner_.cv_.notify_all();
    }
    size_t buffered() const override { return 0; }
    void End() override {
      std::lock_guard<std::mutex> lock(owner_.mu_);
      owner_.ended_ = true;
      owner_.cv_.notify_all();
    }
    bool closed() const override {
      std::lock_guard<std::mutex> lock(owner_.mu_);
      return owner_.ended_;
    }

   private:
    StreamExchange& owner_;
  };

  void Send(HttpResponse response) override {
    std::lock_guard<std::mutex> lock(mu_);
    body_ = response.body;
    status_ = response.status;
    cv_.notify_all();
  }
  std::shared_ptr<BodyStream> Stream(int status, std::string content_type) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    content_type_ = std::move(content_type);
    return std::make_shared<Body>(*this);
  }
  // Waits until the body contains `what`; returns the body.
  std::string WaitFor(const std::string& what) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kWaitLimit, [&] { return body_.find(what) != std::string::npos; });
    return body_;
  }
  bool WaitEnded() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitLimit, [&] { return ended_; });
  }
  int status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  std::string content_type() const {
    std::lock_guard<std::mutex> lock(mu_);
    return content_type_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string body_, content_type_;
  int status_ = 0;
  bool ended_ = false;
};

class InspectRoutesTest : public ApiFixture {
 protected:
  void AppendUser(const std::string& id, const std::string& text) {
    ASSERT_EQ(
        Call("POST", "/v1/sessions/" + id + "/messages",
             json::serialize(json::object{
                 {"messages", json::array{json::object{{"role", "user"}, {"content", text}}}}}))
            .status,
        200);
  }
  json::value ContextOf(const std::string& id, const std::string& body = "{}") {
    ApiReply r = Call("POST", "/v1/sessions/" + id + "/context", body);
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body;
  }
};

TEST_F(InspectRoutesTest, AContextWhoseSourcesAreGoneMarksThemMissing) {
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"other"})").status, 201);
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"s","system_prompt":"Be brief."})").status, 201);
  ApiReply mem =
      Call("POST", "/v1/memory", R"({"text":"The staging quokka listens on port 6543."})");
  ASSERT_EQ(mem.status, 201) << mem.raw;
  const std::string mem_id(mem.body.at("id").as_string());
  AppendUser("s", "where does the staging quokka listen?");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the index catches up
  json::value ctx = ContextOf(
      "s",
      R"({"message":{"role":"user","content":"and the quokka's port?"},"query":"staging quokka"})");
  const std::string id(ctx.at("context_id").as_string());

  ApiReply past = Call("GET", "/v1/contexts/" + id);
  ASSERT_EQ(past.status, 200) << past.raw;
  EXPECT_EQ(past.body.at("session_id"), "s");
  const json::array& msgs = past.body.at("messages").as_array();
  ASSERT_EQ(msgs.size(), 3u) << past.raw;  // system (with the memory item), the user message, new
  EXPECT_EQ(msgs[0].at("missy").at("entry"), "system");
  ASSERT_EQ(msgs[0].at("missy").at("memory").as_array().size(), 1u) << past.raw;
  EXPECT_EQ(msgs[0].at("missy").at("memory").as_array()[0].at("id"), mem_id.c_str());
  EXPECT_EQ(msgs[1].at("missy").at("entry"), "kept");
  EXPECT_EQ(msgs[1].at("missy").at("seq"), 1);
  // The new message was never appended: missing, and the context incomplete.
  EXPECT_EQ(msgs[2].at("missy").at("entry"), "new");
  EXPECT_TRUE(msgs[2].at("missy").at("missing").as_bool());
  EXPECT_TRUE(msgs[2].at("role").is_null());
  EXPECT_FALSE(past.body.at("complete").as_bool());

  // Appended afterwards (as an agent does when the turn is done): found at its seq.
  AppendUser("s", "and the quokka's port?");
  past = Call("GET", "/v1/contexts/" + id);
  EXPECT_TRUE(past.body.at("complete").as_bool()) << past.raw;
  EXPECT_EQ(past.body.at("messages").as_array()[2].at("content"),
            ctx.at("messages").as_array()[2].at("content"));
  EXPECT_EQ(past.body.at("messages").as_array()[0], [&] {
    json::object m = ctx.at("messages").as_array()[0].as_object();
    m["missy"] = past.body.at("messages").as_array()[0].at("missy");
    return json::value(m);
  }());

  // The memory item edited since: shown as it is now, marked changed.
  Result<MemoryItem> item = stores_->memory.Get(mem_id);
  ASSERT_TRUE(item.ok());
  item->text = "The staging quokka moved to port 7654.";
  ASSERT_TRUE(stores_->memory.Update(*item).ok());
  past = Call("GET", "/v1/contexts/" + id);
  EXPECT_TRUE(past.body.at("messages")
                  .as_array()[0]
                  .at("missy")
                  .at("memory")
                  .as_array()[0]
                  .at("changed")
                  .as_bool())
      << past.raw;
  EXPECT_FALSE(past.body.at("complete").as_bool());

  // The memory item deleted: left out of the system text, marked missing.
  ASSERT_EQ(Call("DELETE", "/v1/memory/" + mem_id).status, 200);
  past = Call("GET", "/v1/contexts/" + id);
  const json::value& system = past.body.at("messages").as_array()[0];
  EXPECT_TRUE(system.at("missy").at("memory").as_array()[0].at("missing").as_bool()) << past.raw;
  EXPECT_EQ(system.at("content"), "Be brief.");
  EXPECT_FALSE(past.body.at("complete").as_bool());

  // The session deleted: every message missing, the figures kept.
  ASSERT_EQ(Call("DELETE", "/v1/sessions/s").status, 200);
  past = Call("GET", "/v1/contexts/" + id);
  ASSERT_EQ(past.status, 200) << past.raw;
  EXPECT_TRUE(past.body.at("messages").as_array()[1].at("missy").at("missing").as_bool());
  EXPECT_TRUE(past.body.at("messages").as_array()[0].at("missy").at("base_missing").as_bool());
  EXPECT_GT(past.body.at("used_tokens").to_number<int64_t>(), 0);

  EXPECT_TRUE(IsError(Call("GET", "/v1/contexts/ctx_nope"), 404, "not_found", "context_id"));
}

TEST_F(InspectRoutesTest, TheListPagesNewestFirstWithSectionsAndForcedMarks) {
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"s"})").status, 201);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    AppendUser("s", "turn " + std::to_string(i));
    ids.emplace_back(ContextOf("s").at("context_id").as_string());
  }
  ApiReply compact = Call("POST", "/v1/sessions/s/compact", "{}");
  ASSERT_EQ(compact.status, 200) << compact.raw;
  ids.emplace_back(compact.body.at("context_id").as_string());

  ApiReply page = Call("GET", "/v1/sessions/s/contexts?limit=4");
  ASSERT_EQ(page.status, 200) << page.raw;
  const json::array& first = page.body.at("contexts").as_array();
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first[0].at("context_id"), ids[5].c_str());
  EXPECT_TRUE(first[0].at("forced").as_bool());
  EXPECT_FALSE(first[1].at("forced").as_bool());
  EXPECT_EQ(first[1].at("context_id"), ids[4].c_str());
  const json::object& c = first[1].as_object();
  for (const char* key : {"context_id", "seq", "at", "used_tokens", "budget", "window", "zone",
                          "sections", "summaries", "kept_messages", "dropped_messages", "forced"}) {
    EXPECT_TRUE(c.contains(key)) << key << ": " << page.raw;
  }
  for (const char* key :
       {"system", "tools", "task", "memory", "learnings", "summaries", "history", "new_message"}) {
    EXPECT_TRUE(c.at("sections").as_object().contains(key)) << key;
  }
  EXPECT_EQ(c.at("kept_messages"), 5);
  ASSERT_TRUE(page.body.at("next_before").is_int64());
  ApiReply rest = Call("GET", "/v1/sessions/s/contexts?limit=4&before=" +
                                  std::to_string(page.body.at("next_before").as_int64()));
  ASSERT_EQ(rest.body.at("contexts").as_array().size(), 2u) << rest.raw;
  EXPECT_EQ(rest.body.at("contexts").as_array()[1].at("context_id"), ids[0].c_str());
  EXPECT_TRUE(rest.body.at("next_before").is_null());

  EXPECT_TRUE(IsError(Call("GET", "/v1/sessions/nobody/contexts"), 404, "not_found", "session_id"));
  EXPECT_TRUE(
      IsError(Call("GET", "/v1/sessions/s/contexts?limit=0"), 400, "invalid_argument", "limit"));
}

TEST_F(InspectRoutesTest, TheAuditStreamDeliversEventsAppendedAfterItStartsFilteredByType) {
  auto all = std::make_shared<StreamExchange>();
  auto only_created = std::make_shared<StreamExchange>();
  for (auto [exchange, target] :
       {std::pair{all, "/v1/audit/stream"},
        std::pair{only_created, "/v1/audit/stream?types=session.created"}}) {
    HttpRequest request;
    request.method = "GET";
    request.target = target;
    api_->Handle(std::move(request), exchange);
  }
  EXPECT_EQ(all->status(), 200);
  EXPECT_EQ(all->content_type(), "text/event-stream");
  EXPECT_EQ(services_->deps.audit->feed().subscribers(), 2u);

  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"streamed"})").status, 201);
  AppendUser("streamed", "hello");
  const std::string body = all->WaitFor("messages.appended");
  const size_t created = body.find("data: {\"seq\":");
  ASSERT_NE(created, std::string::npos) << body;
  const size_t end = body.find("\n\n", created);
  ASSERT_NE(end, std::string::npos);
  json::value event = json::parse(body.substr(created + 6, end - created - 6));
  EXPECT_EQ(event.at("event_type"), "session.created");
  EXPECT_EQ(event.at("session_id"), "streamed");
  EXPECT_NE(body.find("\"event_type\":\"messages.appended\""), std::string::npos) << body;

  const std::string filtered = only_created->WaitFor("session.created");
  EXPECT_NE(filtered.find("\"event_type\":\"session.created\""), std::string::npos) << filtered;
  EXPECT_EQ(filtered.find("messages.appended"), std::string::npos) << filtered;

  services_->deps.audit->feed().CloseAll();  // what the daemon does when it stops
  EXPECT_TRUE(all->WaitEnded());
  EXPECT_TRUE(only_created->WaitEnded());
  EXPECT_EQ(services_->deps.audit->feed().subscribers(), 0u);
}

}  // namespace
}  // namespace missy::testing

// Past contexts end to end (issue 30): a recorded session replayed through the real
// daemon at a small window, a context before every assistant message (with the next user
// message as the request's `message` before each user turn), then a forced compaction
// that condenses summaries, then a restart. GET /v1/contexts/{id} must give back, message
// for message, what every one of those context requests answered; the session's list
// pages through them newest first; no secret of the config appears anywhere.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon_process.h"
#include "test_util.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

constexpr const char* kSecret = "sk-past-contexts-NEVER-SHOWN-4242";

std::string Config() {
  return std::string(
             "default_provider: openai\n"
             "providers:\n"
             "  openai: {model: gpt-4o, api_key: ") +
         kSecret +
         "}\n"
         "context:\n"
         "  log_level: warn\n"
         "  pruning: {protect_turns: 1, protect_tokens: 2000, minimum_freed: 500}\n";
}

constexpr const char* kContextBody = R"({"context_window":16000,"max_output_tokens":1000)";

struct Recorded {
  std::string id;
  json::array messages;
};

class PastContextsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<DaemonProcess>(dir_.path(), Config());
    ASSERT_TRUE(daemon_->Start().ok()) << daemon_->log();
  }
  void TearDown() override {
    if (daemon_ && daemon_->running()) EXPECT_EQ(daemon_->Stop(), 0) << daemon_->log();
  }

  json::value Post(const std::string& target, const std::string& body, int want = 200) {
    Result<ClientResponse> r = daemon_->Call("POST", target, body);
    EXPECT_TRUE(r.ok() && r->status == want)
        << target << ": " << (r.ok() ? r->body.substr(0, 1000) : r.status().ToString());
    return r.ok() && r->status == want ? json::parse(r->body) : json::value();
  }

  void Context(const std::string& session, const json::object* message) {
    std::string body = kContextBody;
    if (message != nullptr) body += ",\"message\":" + json::serialize(*message);
    body += "}";
    json::value ctx = Post("/v1/sessions/" + session + "/context", body);
    if (!ctx.is_object()) return;
    recorded_.push_back(
        Recorded{std::string(ctx.at("context_id").as_string()), ctx.at("messages").as_array()});
  }

  // Every recorded context, rebuilt, equals what its request answered.
  void CheckAll(const std::string& when) {
    SCOPED_TRACE(when);
    int checked = 0;
    for (const Recorded& want : recorded_) {
      Result<ClientResponse> r = daemon_->Call("GET", "/v1/contexts/" + want.id);
      ASSERT_TRUE(r.ok() && r->status == 200)
          << want.id << ": " << (r.ok() ? r->body.substr(0, 500) : r.status().ToString());
      EXPECT_EQ(r->body.find(kSecret), std::string::npos);
      json::value got = json::parse(r->body);
      EXPECT_EQ(got.at("context_id").as_string(), want.id);
      EXPECT_TRUE(got.at("complete").as_bool()) << want.id;
      const json::array& msgs = got.at("messages").as_array();
      ASSERT_EQ(msgs.size(), want.messages.size()) << want.id;
      for (size_t i = 0; i < msgs.size(); ++i) {
        json::object m = msgs[i].as_object();
        const json::object mark = m.at("missy").as_object();
        m.erase("missy");
        ASSERT_EQ(json::value(m), want.messages[i])
            << want.id << " message " << i << " (" << json::serialize(mark) << ")";
      }
      ++checked;
    }
    EXPECT_EQ(checked, static_cast<int>(recorded_.size()));
  }

  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::vector<Recorded> recorded_;
};

std::vector<json::object> Trajectory(const std::string& name) {
  std::ifstream in(TrajectoryPath(name));
  std::vector<json::object> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(json::parse(line).as_object());
  }
  return out;
}

TEST_F(PastContextsTest, EveryContextOfAReplayedSessionComesBackExactlyAfterCondensingAndARestart) {
  const std::vector<json::object> messages = Trajectory("marot__spotter-1.jsonl");
  ASSERT_GT(messages.size(), 100u) << "missing trajectory (../shared/data/trajectories)";
  const std::string session = "spotter";
  size_t start = 0;
  json::object create{{"id", session}};
  if (messages[0].at("role").as_string() == "system") {
    create["system_prompt"] = messages[0].at("content");
    start = 1;
  }
  Post("/v1/sessions", json::serialize(create), 201);
  // A memory item and learnings, so that the system message has both sections.
  Post("/v1/memory", R"({"text":"The repository's tests run with pytest from the root."})", 201);
  Post("/v1/learnings",
       R"({"task_type":"bugfix","outcome":"success","lesson":"Read the failing test first."})",
       201);
  Post("/v1/learnings", R"({"lesson":"Keep patches small."})", 201);
  for (size_t i = start; i < messages.size(); ++i) {
    const std::string role(messages[i].at("role").as_string());
    if (role == "assistant" && i > start) Context(session, nullptr);
    if (role == "user" && i > start) Context(session, &messages[i]);  // the turn's new message
    Post("/v1/sessions/" + session + "/messages",
         json::serialize(json::object{{"messages", json::array{messages[i]}}}));
    if (HasFatalFailure()) return;
  }
  // Condensed: the summaries the contexts showed get parents.
  json::value compacted = Post("/v1/sessions/" + session + "/compact",
                               R"({"context_window":10000,"max_output_tokens":1000})");
  ASSERT_TRUE(compacted.is_object());
  recorded_.push_back(Recorded{std::string(compacted.at("context_id").as_string()),
                               compacted.at("messages").as_array()});
  ASSERT_GT(recorded_.size(), 150u);
  json::value summaries = Body(daemon_->Call("GET", "/v1/sessions/" + session + "/summaries"));
  int condensed = 0;
  for (const json::value& s : summaries.at("summaries").as_array()) {
    condensed += s.at("parent_id").is_string() ? 1 : 0;
  }
  EXPECT_GT(condensed, 0) << "no summary was condensed";

  // Entries of every kind were rebuilt.
  std::set<std::string> kinds;
  for (const Recorded& r : recorded_) {
    json::value got = Body(daemon_->Call("GET", "/v1/contexts/" + r.id));
    for (const json::value& m : got.at("messages").as_array()) {
      kinds.insert(std::string(m.at("missy").at("entry").as_string()));
      if (m.at("missy").at("entry") == "system") {
        EXPECT_FALSE(m.at("missy").at("learnings").as_array().empty());
      }
    }
  }
  for (const char* kind : {"system", "task", "summary", "kept", "pruned", "truncated", "new"}) {
    EXPECT_TRUE(kinds.count(kind)) << "no '" << kind << "' entry in any context";
  }

  std::printf("[ past     ] %zu contexts, %d summaries condensed, entries:", recorded_.size(),
              condensed);
  for (const std::string& kind : kinds) std::printf(" %s", kind.c_str());
  std::printf("\n");
  CheckAll("before the restart");
  ASSERT_EQ(daemon_->Stop(), 0) << daemon_->log();
  daemon_ = std::make_unique<DaemonProcess>(dir_.path(), Config());
  ASSERT_TRUE(daemon_->Start().ok()) << daemon_->log();
  CheckAll("after a restart");

  // The session's list: every context, newest first, in pages.
  std::vector<std::string> listed;
  std::string before;
  for (int page = 0; page < 100; ++page) {
    Result<ClientResponse> r =
        daemon_->Call("GET", "/v1/sessions/" + session + "/contexts?limit=64" +
                                 (before.empty() ? "" : "&before=" + before));
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
    EXPECT_EQ(r->body.find(kSecret), std::string::npos);
    json::value list = json::parse(r->body);
    for (const json::value& c : list.at("contexts").as_array()) {
      listed.emplace_back(c.at("context_id").as_string());
      const json::object& sections = c.at("sections").as_object();
      int64_t sum = 0;
      for (const auto& [key, tokens] : sections) sum += tokens.to_number<int64_t>();
      EXPECT_EQ(sum, c.at("used_tokens").to_number<int64_t>()) << json::serialize(c);
      EXPECT_EQ(c.at("forced").as_bool(), listed.size() == 1) << json::serialize(c);
      EXPECT_LE(c.at("used_tokens").to_number<int64_t>(), c.at("budget").to_number<int64_t>());
      for (const char* key :
           {"at", "window", "zone", "summaries", "kept_messages", "dropped_messages"}) {
        EXPECT_TRUE(c.as_object().contains(key)) << key;
      }
    }
    if (list.at("next_before").is_null()) break;
    before = std::to_string(list.at("next_before").to_number<int64_t>());
  }
  ASSERT_EQ(listed.size(), recorded_.size());
  for (size_t i = 0; i < listed.size(); ++i) {
    EXPECT_EQ(listed[i], recorded_[recorded_.size() - 1 - i].id) << i;
  }

  // Errors: an unknown context, an unknown session.
  Result<ClientResponse> missing = daemon_->Call("GET", "/v1/contexts/ctx_0000000000000000");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404) << missing->body;
  Result<ClientResponse> no_session = daemon_->Call("GET", "/v1/sessions/nobody/contexts");
  ASSERT_TRUE(no_session.ok());
  EXPECT_EQ(no_session->status, 404) << no_session->body;
  // The audit log holds ids and cuts, never the key.
  Result<ClientResponse> audit = daemon_->Call("GET", "/v1/audit?limit=10000");
  ASSERT_TRUE(audit.ok());
  EXPECT_EQ(audit->body.find(kSecret), std::string::npos);
}

}  // namespace
}  // namespace missy::testing

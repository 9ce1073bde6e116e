// Summarization jobs of the real missyd, with a fake llm provider on loopback that holds
// a request as long as a test needs:
// - SIGKILLed while a job runs (its first llm request held): nothing of the cut run is
//   stored, the restarted daemon runs the job again at once (not once its 10-minute lease
//   ends), and the session ends with leaves that cover its history from seq 1 with each
//   message once, every message kept and the audit chain intact;
// - messages appended while a job runs (after it planned) are summarized by a next job
//   queued when it ends, without waiting for another append.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/daemon_process.h"
#include "provider/fake_provider_server.h"
#include "test_util.h"

namespace missy::testing {
namespace {

using namespace std::chrono_literals;
namespace json = boost::json;
using provider_test::FakeProviderServer;
using provider_test::Json;
using provider_test::OpenAiAnswer;
using provider_test::Reply;

json::array Jobs(DaemonProcess& d) {
  return Body(d.Call("GET", "/v1/jobs?limit=100")).at("jobs").as_array();
}

// 40 messages of about 120 tokens each, seqs from `first`.
json::value Forty(int first) {
  json::array messages;
  for (int i = first; i < first + 40; ++i) {
    messages.push_back(json::object{
        {"role", i % 2 == 0 ? "user" : "assistant"},
        {"content", "step " + std::to_string(i) + ": editing src/mod_" + std::to_string(i) +
                        ".cpp to fix error E" + std::to_string(i) + ". " + std::string(400, 'x') +
                        " lorem ipsum dolor sit amet"}});
  }
  return json::object{{"messages", std::move(messages)}};
}

std::string Config(const std::string& provider_url) {
  return "default_provider: fake\nproviders:\n  fake: {model: gpt-test, base_url: " + provider_url +
         ", api_key: sk-never-shown, timeout: 300}\n"
         "context:\n  budget: {total: 3000, system_reserve: 100, tool_definitions_reserve: 100, "
         "fresh_tail_count: 16}\n  summarizer: {backend: llm, provider: fake}\n";
}

// The first request answered after `held`, the next ones at once.
std::vector<Reply> FirstHeld(std::chrono::milliseconds held) {
  std::vector<Reply> script;
  Reply first = Json(200, OpenAiAnswer("## Goal\\nheld"));
  first.delay = held;
  script.push_back(std::move(first));
  for (int i = 0; i < 50; ++i) {
    script.push_back(Json(200, OpenAiAnswer("## Goal\\nFix the modules.\\n## Progress\\nEdited "
                                            "src/mod_1.cpp.")));
  }
  return script;
}

// The leaves' ranges, in seq order.
std::vector<std::pair<int64_t, int64_t>> Leaves(DaemonProcess& d, const std::string& id) {
  const json::array summaries =
      Body(d.Call("GET", "/v1/sessions/" + id + "/summaries")).at("summaries").as_array();
  std::vector<std::pair<int64_t, int64_t>> leaves;
  for (const json::value& s : summaries) {
    if (Int(s, {"depth"}) == 0) leaves.push_back({Int(s, {"first_seq"}), Int(s, {"last_seq"})});
  }
  std::sort(leaves.begin(), leaves.end());
  return leaves;
}

bool AllDone(DaemonProcess& d, size_t jobs) {
  json::array all = Jobs(d);
  if (all.size() != jobs) return false;
  for (const json::value& j : all) {
    if (j.at("state").as_string() != "done") return false;
  }
  return true;
}

TEST(SummarizationJobsTest, MessagesAppendedWhileAJobRunsAreSummarizedByTheNextJobAtOnce) {
  FakeProviderServer provider(FirstHeld(1500ms));
  TempDir dir;
  std::filesystem::create_directories(dir.Join("home"));
  DaemonProcess d(dir.Join("home"), Config(provider.Url("/v1")));
  ASSERT_TRUE(d.Start().ok()) << d.log();
  ASSERT_EQ(d.Call("POST", "/v1/sessions", R"({"id":"busy"})")->status, 201);
  ASSERT_EQ(d.Call("POST", "/v1/sessions/busy/messages", json::serialize(Forty(0)))->status, 200);
  // The first job planned over seqs 1..40 and waits for its first leaf's answer.
  ASSERT_TRUE(WaitFor([&] { return !provider.requests().empty(); }, 20s)) << d.log();
  ASSERT_EQ(d.Call("POST", "/v1/sessions/busy/messages", json::serialize(Forty(40)))->status, 200);
  ASSERT_TRUE(WaitFor([&] { return AllDone(d, 2); }, 30s)) << json::serialize(Jobs(d)) << d.log();
  // The second job, queued when the first ended, covered what came meanwhile: leaves
  // from seq 1 up to the fresh tail of the 80 messages, each message once.
  const std::vector<std::pair<int64_t, int64_t>> leaves = Leaves(d, "busy");
  ASSERT_FALSE(leaves.empty());
  int64_t next = 1;
  for (const auto& [first, last] : leaves) {
    EXPECT_EQ(first, next);
    next = last + 1;
  }
  EXPECT_GT(next - 1, 40) << "nothing appended during the first job was summarized";
  EXPECT_LE(next - 1, 80 - 16);
  EXPECT_EQ(d.Stop(), 0);
}

TEST(SummarizationJobsTest, AJobCutBySigkillRunsAgainAtTheNextStartAndCoversEachMessageOnce) {
  // The first request never gets its answer in time; the later ones answer at once.
  FakeProviderServer provider(FirstHeld(120s));
  TempDir dir;
  std::filesystem::create_directories(dir.Join("home"));
  const std::string config = Config(provider.Url("/v1"));
  DaemonProcess d(dir.Join("home"), config);
  ASSERT_TRUE(d.Start().ok()) << d.log();
  ASSERT_EQ(d.Call("POST", "/v1/sessions", R"({"id":"cut"})")->status, 201);
  ASSERT_EQ(d.Call("POST", "/v1/sessions/cut/messages", json::serialize(Forty(0)))->status, 200);

  // The job is running, its first leaf's request at the provider: kill the daemon there.
  ASSERT_TRUE(WaitFor([&] { return !provider.requests().empty(); }, 20s)) << d.log();
  json::array before = Jobs(d);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].at("state").as_string(), "running");
  const int64_t job_id = Int(before[0], {"id"});
  EXPECT_EQ(d.Stop(SIGKILL), 128 + SIGKILL);

  ASSERT_TRUE(d.Start().ok()) << d.log();
  ASSERT_TRUE(WaitFor(
      [&] {
        json::array jobs = Jobs(d);
        return jobs.size() == 1 && jobs[0].at("state").as_string() == "done";
      },
      30s))
      << json::serialize(Jobs(d)) << d.log();
  const json::array after = Jobs(d);
  EXPECT_EQ(Int(after[0], {"id"}), job_id);  // the same job, run again
  EXPECT_EQ(Int(after[0], {"attempts"}), 2);
  EXPECT_NE(d.log().find("1 job(s) left running when missyd last stopped queued again"),
            std::string::npos)
      << d.log();

  // Leaves from seq 1, each message once, all of them written by the second run (the cut
  // run stored nothing), and condensed summaries over leaves only.
  const json::array summaries =
      Body(d.Call("GET", "/v1/sessions/cut/summaries")).at("summaries").as_array();
  const std::vector<std::pair<int64_t, int64_t>> leaves = Leaves(d, "cut");
  ASSERT_FALSE(leaves.empty()) << json::serialize(summaries);
  int64_t next = 1;
  for (const auto& [first, last] : leaves) {
    EXPECT_EQ(first, next);
    EXPECT_GE(last, first);
    next = last + 1;
  }
  EXPECT_LE(next - 1, 40 - 16);  // the fresh tail stays raw
  const json::array completed =
      Body(d.Call("GET", "/v1/audit?type=summarization.completed&limit=100"))
          .at("events")
          .as_array();
  EXPECT_EQ(completed.size(), summaries.size());
  const json::array started =
      Body(d.Call("GET", "/v1/audit?type=summarization.started&limit=100")).at("events").as_array();
  EXPECT_EQ(started.size(), 2u);  // the cut run and the second one
  EXPECT_EQ(Int(Body(d.Call("GET", "/v1/sessions/cut")), {"message_count"}), 40);
  const json::value verify = Body(d.Call("GET", "/v1/audit/verify"));
  EXPECT_TRUE(verify.at("ok").as_bool()) << json::serialize(verify);
  EXPECT_EQ(d.log().find("sk-never-shown"), std::string::npos);
  EXPECT_EQ(d.Stop(), 0);
}

}  // namespace
}  // namespace missy::testing

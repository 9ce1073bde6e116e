// The JSON of a summarization job and its result on the broker: what goes out comes back
// the same, and a malformed one is refused naming the field.
#include "daemon/broker/job_wire.h"

#include <gtest/gtest.h>

namespace missy::broker {
namespace {

SummaryTask LeafTask() {
  SummaryTask t;
  t.task_id = "7:abc:1";
  t.job_id = 7;
  t.session_id = "s1";
  t.prior = "earlier: set up the build";
  t.target_tokens = 1200;
  t.backend = "llm";
  t.provider = "gpu-box";
  t.model = "gpt-4o";
  t.deadline_ms = 1790000000000;
  StoredMessage m;
  m.seq = 3;
  m.created_at_ms = 1790000000001;
  m.tokens = 42;
  m.flags = 2;
  m.message = Message::AssistantCalls(
      {ToolCall{"call_1", "function", "read_file", R"({"path":"src/main.cpp"})"}},
      "reading src/main.cpp");
  t.messages.push_back(m);
  StoredMessage r;
  r.seq = 4;
  r.tokens = 9;
  r.message = Message::ToolResult("call_1", "int main() {}");
  t.messages.push_back(r);
  return t;
}

TEST(JobWireTest, ALeafTaskRoundTrips) {
  const SummaryTask t = LeafTask();
  Result<SummaryTask> back = TaskFromJson(TaskToJson(t));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->task_id, "7:abc:1");
  EXPECT_EQ(back->job_id, 7);
  EXPECT_EQ(back->session_id, "s1");
  EXPECT_FALSE(back->condense);
  EXPECT_EQ(back->prior, "earlier: set up the build");
  EXPECT_EQ(back->target_tokens, 1200);
  EXPECT_EQ(back->backend, "llm");
  EXPECT_EQ(back->provider, "gpu-box");
  EXPECT_EQ(back->model, "gpt-4o");
  EXPECT_EQ(back->deadline_ms, 1790000000000);
  ASSERT_EQ(back->messages.size(), 2u);
  EXPECT_EQ(back->messages[0].seq, 3);
  EXPECT_EQ(back->messages[0].created_at_ms, 1790000000001);
  EXPECT_EQ(back->messages[0].tokens, 42);
  EXPECT_EQ(back->messages[0].flags, 2u);
  EXPECT_EQ(back->messages[0].message.role, Role::kAssistant);
  ASSERT_EQ(back->messages[0].message.tool_calls.size(), 1u);
  EXPECT_EQ(back->messages[0].message.tool_calls[0].arguments, R"({"path":"src/main.cpp"})");
  EXPECT_EQ(back->messages[1].message.tool_call_id, "call_1");
  EXPECT_EQ(back->messages[1].message.PlainText(), "int main() {}");
}

TEST(JobWireTest, ACondenseTaskRoundTripsWithTheChildrensTrails) {
  SummaryTask t;
  t.task_id = "0:def:2";
  t.condense = true;
  t.target_tokens = 2000;
  ArtifactTrail trail;
  trail.files = {"src/a.cpp"};
  trail.errors = {"error: boom"};
  t.children = {{"first summary", trail, 300}, {"second summary", {}, 200}};
  Result<SummaryTask> back = TaskFromJson(TaskToJson(t));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->condense);
  ASSERT_EQ(back->children.size(), 2u);
  EXPECT_EQ(back->children[0].text, "first summary");
  EXPECT_EQ(back->children[0].artifacts, trail);
  EXPECT_EQ(back->children[0].tokens, 300);
  EXPECT_TRUE(back->children[1].artifacts.empty());
  EXPECT_TRUE(back->messages.empty());
}

TEST(JobWireTest, AResultRoundTrips) {
  SummaryTaskResult r;
  r.task_id = "7:abc:1";
  r.ok = true;
  r.text = "Goal: fix the build.";
  r.artifacts.files = {"src/main.cpp"};
  r.backend = "llm";
  r.fallback = "";
  r.llm_requests = 2;
  r.worker = "gpu-1-4242";
  Result<SummaryTaskResult> back = ResultFromJson(ResultToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->ok);
  EXPECT_EQ(back->text, r.text);
  EXPECT_EQ(back->artifacts, r.artifacts);
  EXPECT_EQ(back->backend, "llm");
  EXPECT_EQ(back->llm_requests, 2);
  EXPECT_EQ(back->worker, "gpu-1-4242");

  SummaryTaskResult failed;
  failed.task_id = "7:abc:2";
  failed.error = "no provider";
  back = ResultFromJson(ResultToJson(failed));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->ok);
  EXPECT_EQ(back->error, "no provider");
}

TEST(JobWireTest, MalformedJobsAreRefusedNamingTheField) {
  const struct {
    const char* json;
    const char* expected;
  } cases[] = {
      {"[]", "job: not a JSON object"},
      {"{", "job: not JSON"},
      {R"({"v":2,"task_id":"t"})", "job: unsupported version"},
      {R"({"v":1,"kind":"leaf","target_tokens":1,"messages":[]})", "job.task_id: missing"},
      {R"({"v":1,"task_id":"t","kind":"tree","target_tokens":1})", "job.kind: expected"},
      {R"({"v":1,"task_id":"t","kind":"leaf","target_tokens":"many"})",
       "job.target_tokens: expected an integer"},
      {R"({"v":1,"task_id":"t","kind":"leaf","target_tokens":1,"messages":[]})",
       "job.messages: expected a non-empty array"},
      {R"({"v":1,"task_id":"t","kind":"leaf","target_tokens":1,"messages":[{"seq":1}]})",
       "job.messages[0].message: missing"},
      {R"({"v":1,"task_id":"t","kind":"leaf","target_tokens":1,"messages":[{"seq":1,"message":{"role":"wizard","content":"x"}}]})",
       "job.messages[0].message"},
      {R"({"v":1,"task_id":"t","kind":"condense","target_tokens":1,"children":[{"tokens":3}]})",
       "job.children[0].text: missing"},
  };
  for (const auto& c : cases) {
    Result<SummaryTask> t = TaskFromJson(c.json);
    ASSERT_FALSE(t.ok()) << c.json;
    EXPECT_NE(t.status().message().find(c.expected), std::string::npos)
        << c.json << " -> " << t.status().message();
  }
  EXPECT_EQ(TaskIdOf(R"({"v":1,"task_id":"t9","kind":"tree"})"), "t9");
  EXPECT_EQ(TaskIdOf(R"({"v":1,"task_id":7})"), "");
  EXPECT_EQ(TaskIdOf("not json"), "");
  EXPECT_EQ(AdvisoryStreamSeq(R"({"type":"io.nats.jetstream.advisory.v1.max_deliver",)"
                              R"("stream":"MISSY_JOBS","consumer":"workers","stream_seq":17,)"
                              R"("deliveries":3})"),
            17u);
  EXPECT_EQ(AdvisoryStreamSeq(R"({"stream_seq":-1})"), 0u);
  EXPECT_EQ(AdvisoryStreamSeq("{}"), 0u);
  Result<SummaryTaskResult> r = ResultFromJson(R"({"v":1,"task_id":"t","ok":true})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("result.text: missing"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace missy::broker

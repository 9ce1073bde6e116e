// GET /metrics in process (daemon/http/metrics_routes.cpp over Services::metrics): after a
// known sequence of requests the scrape holds exact counter values under the routes'
// patterns, and the storage gauges read at scrape time match what was stored.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api_fixture.h"

namespace missy::testing {
namespace {

// The sample lines of `text` whose name (with labels) starts with `prefix`.
std::set<std::string> Lines(const std::string& text, const std::string& prefix) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.insert(line);
  }
  return out;
}

// The value of the one sample named exactly `series` (name plus labels), or "<absent>".
std::string Value(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return line.substr(series.size() + 1);
    }
  }
  return "<absent>";
}

class MetricsRouteTest : public ApiFixture {};

TEST_F(MetricsRouteTest, CountsRequestsByRoutePatternAndStatus) {
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"s"})").status, 201);
  ApiReply appended = Call("POST", "/v1/sessions/s/messages",
                           R"({"messages":[{"role":"user","content":"where is the staging db?"},)"
                           R"({"role":"assistant","content":"port 6543"}]})");
  ASSERT_EQ(appended.status, 200) << appended.raw;
  ApiReply ctx = Call("POST", "/v1/sessions/s/context",
                      R"({"context_window":16000,"max_output_tokens":1000})");
  ASSERT_EQ(ctx.status, 200) << ctx.raw;
  ASSERT_EQ(Call("GET", "/nope").status, 404);
  ASSERT_EQ(Call("GET", "/v1/sessions/s/context").status, 405);
  ASSERT_EQ(Call("GET", "/v1/sessions/bad%20id").status, 400);
  ApiReply usage = Call("POST", "/v1/sessions/s/usage",
                        R"({"context_id":")" + std::string(ctx.body.at("context_id").as_string()) +
                            R"(","prompt_tokens":120,"completion_tokens":7})");
  ASSERT_EQ(usage.status, 200) << usage.raw;
  const std::string model(usage.body.at("model").as_string());

  ApiReply scrape = Call("GET", "/metrics");
  ASSERT_EQ(scrape.status, 200) << scrape.raw;
  EXPECT_EQ(scrape.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = scrape.raw;

  // Every request so far, once, under its pattern; the scrape counts after it answered.
  EXPECT_EQ(
      Lines(text, "missyd_http_requests_total{"),
      (std::set<std::string>{
          R"(missyd_http_requests_total{method="GET",route="/v1/sessions/{session_id}",status="400"} 1)",
          R"(missyd_http_requests_total{method="GET",route="/v1/sessions/{session_id}/context",status="405"} 1)",
          R"(missyd_http_requests_total{method="GET",route="unmatched",status="404"} 1)",
          R"(missyd_http_requests_total{method="POST",route="/v1/sessions",status="201"} 1)",
          R"(missyd_http_requests_total{method="POST",route="/v1/sessions/{session_id}/context",status="200"} 1)",
          R"(missyd_http_requests_total{method="POST",route="/v1/sessions/{session_id}/messages",status="200"} 1)",
          R"(missyd_http_requests_total{method="POST",route="/v1/sessions/{session_id}/usage",status="200"} 1)",
      }));
  EXPECT_NE(text.find("# TYPE missyd_http_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE missyd_http_request_duration_seconds histogram\n"),
            std::string::npos);
  EXPECT_EQ(
      Value(text,
            R"(missyd_http_request_duration_seconds_count{method="POST",route="/v1/sessions"})"),
      "1");
  EXPECT_EQ(
      Value(
          text,
          R"(missyd_http_request_duration_seconds_bucket{method="POST",route="/v1/sessions",le="+Inf"})"),
      "1");
  EXPECT_EQ(
      Value(text, R"(missyd_http_request_duration_seconds_count{method="GET",route="unmatched"})"),
      "1");

  // Storage, read now.
  ApiReply session = Call("GET", "/v1/sessions/s");
  ASSERT_EQ(session.status, 200);
  const int64_t stored_tokens = Int(session.body, "total_tokens");
  ASSERT_GT(stored_tokens, 0);
  EXPECT_EQ(Value(text, "missyd_sessions"), "1");
  EXPECT_EQ(Value(text, "missyd_messages"), "2");
  EXPECT_EQ(Value(text, "missyd_stored_tokens"), std::to_string(stored_tokens));
  EXPECT_NE(Value(text, R"(missyd_database_file_bytes{file="db"})"), "0");
  EXPECT_NE(Value(text, R"(missyd_database_file_bytes{file="db"})"), "<absent>");
  EXPECT_NE(Value(text, R"(missyd_database_file_bytes{file="wal"})"), "<absent>");
  EXPECT_GE(std::stoll(Value(text, "missyd_writer_transactions_total")), 3);
  EXPECT_EQ(Value(text, "missyd_writer_queue_depth"), "0");  // every write was answered
  EXPECT_GT(std::stoll(Value(text, "missyd_writer_commit_microseconds_total")), 0);
  EXPECT_GT(std::stoll(Value(text, "missyd_writer_cpu_microseconds_total")), 0);
  EXPECT_NE(Value(text, "missyd_writer_checkpoints_total"), "<absent>");
  EXPECT_EQ(Value(text, R"(missyd_summarization_jobs{state="queued"})"), "0");

  // The use cases' counters.
  EXPECT_EQ(Value(text, R"(missyd_context_builds_total{zone="safe"})"), "1");
  EXPECT_EQ(Value(text, "missyd_context_evicted_messages_total"), "0");
  EXPECT_EQ(Value(text, "missyd_context_pruned_messages_total"), "0");
  EXPECT_EQ(Value(text, "missyd_usage_reports_total{model=\"" + model + "\"}"), "1");
  EXPECT_EQ(Value(text, "missyd_usage_prompt_tokens_total{model=\"" + model + "\"}"), "120");
  EXPECT_EQ(Value(text, "missyd_usage_completion_tokens_total{model=\"" + model + "\"}"), "7");

  // The scrape itself counts in the next one; nothing else changed.
  ApiReply again = Call("GET", "/metrics");
  EXPECT_EQ(
      Value(again.raw, R"(missyd_http_requests_total{method="GET",route="/metrics",status="200"})"),
      "1");
  EXPECT_EQ(Value(again.raw,
                  R"(missyd_http_requests_total{method="POST",route="/v1/sessions",status="201"})"),
            "1");
  EXPECT_EQ(
      Value(
          again.raw,
          R"(missyd_http_requests_total{method="GET",route="/v1/sessions/{session_id}",status="200"})"),
      "1");
}

TEST_F(MetricsRouteTest, UnusualMethodsShareOneLabel) {
  ASSERT_EQ(Call("BREW", "/v1/sessions").status, 405);
  ASSERT_EQ(Call("MKCOL", "/v1/sessions").status, 405);
  ApiReply scrape = Call("GET", "/metrics");
  ASSERT_EQ(scrape.status, 200);
  EXPECT_EQ(
      Value(scrape.raw,
            R"(missyd_http_requests_total{method="other",route="/v1/sessions",status="405"})"),
      "2");
  EXPECT_EQ(scrape.raw.find("BREW"), std::string::npos);
}

TEST_F(MetricsRouteTest, EveryLineIsACommentOrASample) {
  ASSERT_EQ(Call("POST", "/v1/sessions", R"({"id":"s"})").status, 201);
  ApiReply scrape = Call("GET", "/metrics");
  ASSERT_EQ(scrape.status, 200);
  ASSERT_FALSE(scrape.raw.empty());
  EXPECT_EQ(scrape.raw.back(), '\n');
  std::istringstream in(scrape.raw);
  std::set<std::string> typed;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(typed.insert(name).second) << "declared twice: " << name;
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    // name{labels} value, or name value; the name belongs to a declared family.
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const std::string series = line.substr(0, space);
    std::string name = series.substr(0, series.find('{'));
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (!typed.count(name) && name.size() > s.size() &&
          name.compare(name.size() - s.size(), s.size(), s) == 0) {
        name.erase(name.size() - s.size());
      }
    }
    EXPECT_TRUE(typed.count(name)) << "sample before its TYPE line: " << line;
    EXPECT_EQ(name.rfind("missyd_", 0), 0u) << line;
    const std::string value = line.substr(space + 1);
    EXPECT_FALSE(value.empty()) << line;
  }
  EXPECT_TRUE(typed.count("missyd_sessions"));
  EXPECT_TRUE(typed.count("missyd_audit_subscribers"));
  EXPECT_TRUE(typed.count("missyd_provider_requests_total"));
}

}  // namespace
}  // namespace missy::testing

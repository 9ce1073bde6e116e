#include "cli/render.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/table.h"
#include "test_util.h"

namespace missy::cli {
namespace {

using missy::testing::SplitLines;

namespace json = boost::json;

void ExpectFits(const std::string& text, size_t width = 80) {
  for (const std::string& line : SplitLines(text)) {
    EXPECT_LE(DisplayWidth(line), width) << "too wide: '" << line << "'";
  }
}

TEST(RenderTest, SessionsTableHasOneRowPerSessionWithCounts) {
  json::value body = json::parse(R"({"sessions":[
    {"id":"demo","model":"gpt-4o","message_count":3,"total_tokens":43,"updated_at":"2026-11-21T17:03:44.276Z"},
    {"id":"ses_0123456789abcdef0123456789abcdef0123456789abcdef","model":"","message_count":12345,
     "total_tokens":9876543,"updated_at":"2026-11-22T08:00:00.000Z"}]})");
  const std::string out = RenderSessions(body);
  std::vector<std::string> lines = SplitLines(out);
  ASSERT_EQ(lines.size(), 3u) << out;
  EXPECT_EQ(lines[0].rfind("ID", 0), 0u);
  EXPECT_NE(lines[0].find("MODEL"), std::string::npos);
  EXPECT_NE(lines[0].find("UPDATED"), std::string::npos);
  EXPECT_EQ(lines[1].rfind("demo ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("gpt-4o"), std::string::npos);
  EXPECT_NE(lines[1].find("gpt-4o       3         43  2026-11-21 17:03:44"), std::string::npos)
      << lines[1];
  EXPECT_NE(lines[2].find("12,345  9,876,543  2026-11-22 08:00:00"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find(" - "), std::string::npos) << lines[2];  // no model
  ExpectFits(out);
  EXPECT_EQ(RenderSessions(json::parse(R"({"sessions":[]})")), "(no sessions)\n");
}

TEST(RenderTest, ContextReportShowsSectionsZoneAndWhatWasLeftOut) {
  json::value answer = json::parse(R"({
    "context_id":"ctx_910e543be52872fe","session_id":"demo","messages":[{},{},{},{},{}],
    "budget":{"context_window":128000,"max_output_tokens":16384,"total":111616,"used_tokens":2036,
      "available":110472,"zone":"warning","should_summarize":true,
      "system":{"tokens":120,"measured":true,"message_tokens":180},
      "tools":{"tokens":1024,"measured":false},
      "memory":{"budget":2000,"tokens":80,"items":2},"learnings":{"budget":1000,"tokens":40,"items":1},
      "summaries":{"tokens":300,"included":2,"skipped":1,"short":1,"included_ids":[],
        "skipped_ids":[]},
      "history":{"budget":80000,"tokens":1400,"demand_tokens":90000,"threshold_tokens":64000,
        "uncovered_messages":40,"kept_messages":12,"fresh_tail_messages":4,"dropped_messages":30,
        "covered_messages":8,"first_kept_seq":31,"first_fresh_seq":39,"eviction":"anchored"},
      "task":{"seq":1,"pinned":true,"tokens":14,"truncated":false},
      "new_message":{"tokens":0,"dropped":false},
      "sanitized":[{"seq":6,"tool_call_id":"call_9","reason":"orphan_result","detail":"answers no open call"}],
      "truncated":[{"seq":12,"original_tokens":4000,"tokens":1000}],
      "pruned":{"messages":3,"newly_pruned_seqs":[4,7,9],"freed_tokens":1200},
      "fresh_tail":{"squeezed":true,"dropped_messages":0,"last_turn_truncated":true},
      "encoding":"o200k_base","factor":1.0,
      "calibration":{"ratio":1.0658,"samples":2,"raw_total":111616,"calibrated_total":104725}}})");
  const std::string out = RenderContext(answer);
  ExpectFits(out);
  EXPECT_NE(out.find("context ctx_910e543be52872fe of demo: 5 messages\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("used 2,036 of 111,616 tokens (1.8%), zone warning\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("window 128,000 - output 16,384; o200k_base x1.00; calibration 1.0658 (2 "
                     "samples)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\nsystem          120        -  measured; 180 as sent\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("\nmemory           80    2,000  2 items\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nlearnings        40    1,000  1 item\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nhistory       1,400   80,000  12 kept (4 fresh tail), anchored\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\nsummaries       300        -  2 included (1 short), 1 skipped\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\ntask             14        -  seq 1, pinned after the system message\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\ntotal         2,036  111,616  available 110,472\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("evicted:   30 messages before seq 31, 8 covered by summaries\n"),
            std::string::npos)
      << out;
  EXPECT_NE(
      out.find("pruned:    3 old tool outputs cleared, 1,200 tokens freed; newly: seq 4, 7, 9"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("truncated: seq 12 4,000 -> 1,000 tokens\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sanitized: seq 6 call_9: orphan_result (answers no open call)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("summarize: due: history 90,000 tokens, threshold 64,000, 40 uncovered"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("squeezed:  the newest messages alone did not fit"), std::string::npos)
      << out;
  EXPECT_NE(out.find("cut:       the last turn alone did not fit: its largest messages were cut\n"),
            std::string::npos)
      << out;
}

TEST(RenderTest, AQuietContextHasNoNotes) {
  json::value answer = json::parse(R"({"context_id":"ctx_1","session_id":"s","messages":[{}],
    "budget":{"total":30000,"used_tokens":10,"zone":"safe","history":{"dropped_messages":0},
              "pruned":{"messages":0},"sanitized":[],"truncated":[],"should_summarize":false}})");
  const std::string out = RenderContext(answer);
  EXPECT_EQ(out.find("evicted:"), std::string::npos) << out;
  EXPECT_EQ(out.find("pruned:"), std::string::npos) << out;
  EXPECT_EQ(out.find("summarize:"), std::string::npos) << out;
  EXPECT_NE(out.find("window unknown (configured budget)"), std::string::npos) << out;
}

TEST(RenderTest, ACompactionSaysWhatItSummarized) {
  json::value answer = json::parse(R"({"context_id":"ctx_2","session_id":"s","messages":[],
    "budget":{"total":14000,"used_tokens":2310,"zone":"safe"},
    "compaction":{"leaves":2,"condensed":0,"messages_covered":140,"tokens_before":41250,
                  "tokens_after":2310,"backend":"extractive","stopped":""}})");
  const std::string out = RenderContext(answer);
  EXPECT_NE(out.find("\ncompacted: 2 leaf summaries, 0 condensed (extractive)\n"
                     "           140 messages covered, 41,250 -> 2,310 tokens\n"),
            std::string::npos)
      << out;
  ExpectFits(out);
}

TEST(RenderTest, AuditLinesShowTimeSeqTypeSessionAndDetailWithin80Columns) {
  json::value e =
      json::parse(R"({"seq":12,"timestamp":"2026-11-21T17:03:44.277Z","session_id":"demo",
    "event_type":"session.created","category":"context","result":"allow",
    "detail":{"model":"gpt-4o","strict":false,"has_system_prompt":true},"prev_chain_hash":"b8"})");
  EXPECT_EQ(AuditLine(e),
            "11-21 17:03:44    12 session.created    demo       model=gpt-4o strict=false ha…");
  EXPECT_EQ(DisplayWidth(AuditLine(e)), 80u);
  json::value rejected =
      json::parse(R"({"seq":7,"timestamp":"2026-11-21T17:03:45.000Z","session_id":"",
    "event_type":"request.rejected","result":"deny","detail":{"status":404}})");
  EXPECT_EQ(AuditLine(rejected),
            "11-21 17:03:45     7 request.rejected   -          deny: status=404");
  EXPECT_EQ(AuditDetailText(json::parse(R"({"seqs":[1,2,3],"x":{"a":1},"empty":""})")),
            "seqs=[3] x={…} empty=\"\"");
}

TEST(RenderTest, StatusNamesVersionUptimeSessionsTokenizerAndJobs) {
  json::value health = json::parse(R"({"status":"ok","version":"0.1.0","uptime_ms":7380000,
    "requests":17,"schema_version":6,"socket":"/h/.missy/missyd.sock","audit_socket":"/h/.missy/audit.sock",
    "memory":{"rss_bytes":33030144,"limit_mb":256,"history_cache":{"sessions":1,"messages":3,
      "bytes":2304,"max_bytes":134217728},"sqlite":{"bytes":1843200}},
    "storage":{"write_transactions":4,"commits_with_fsync":3}})");
  StatusExtras x;
  x.sessions = 1200;
  x.tokenizer = "exact";
  x.jobs_queued = 1;
  x.jobs_running = 0;
  x.jobs_failed = 2;
  const std::string out = RenderStatus(health, x);
  ExpectFits(out);
  EXPECT_EQ(SplitLines(out)[0], "ok: missyd 0.1.0, up 2h 03m, schema v6");
  EXPECT_NE(out.find("sessions    1,200 (1 cached, 3 messages in memory)\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("tokenizer   exact\n"), std::string::npos) << out;
  EXPECT_NE(out.find("jobs        1 queued, 0 running, 2 failed\n"), std::string::npos) << out;
  EXPECT_NE(out.find("rss 31.5 MiB of 256 MiB"), std::string::npos) << out;
  StatusExtras unknown;
  EXPECT_NE(RenderStatus(health, unknown).find("jobs        ? queued, ? running, ? failed"),
            std::string::npos);
  EXPECT_EQ(out.find("broker"), std::string::npos);  // none configured: no line
  EXPECT_EQ(out.find("workers"), std::string::npos);
}

TEST(RenderTest, StatusShowsTheBrokerBridgeAndItsWorkers) {
  json::value health = json::parse(R"({"status":"ok","version":"0.1.0","uptime_ms":1000,
    "broker":{"connected":true,"published":12345,"duplicates":0,"failures":0,"cursor":12345,
      "backlog":3,"last_error":"","rate":20.5,
      "jobs":{"connected":false,"dispatched":40,"not_sent":2,"completed":37,"worker_errors":1,
        "exhausted":0,"timeouts":2,"duplicates":0,"stale":0,"in_flight":0,
        "last_error":"cannot connect: No server available for connection"}}})");
  const std::string out = RenderStatus(health, StatusExtras{});
  ExpectFits(out);
  EXPECT_NE(out.find("broker      audit 12,345 published, 3 behind; connected\n"),
            std::string::npos)
      << out;
  // Cut to 80 columns: the whole error is in --json.
  EXPECT_NE(out.find("workers     37 summaries by workers, 5 local, 0 waiting; not connected "
                     "(cannot …\n"),
            std::string::npos)
      << out;
  // Only the audit half: no workers line.
  json::value audit_only = json::parse(R"({"broker":{"connected":true,"published":1,"cursor":1,
    "backlog":0}})");
  const std::string a = RenderStatus(audit_only, StatusExtras{});
  EXPECT_NE(a.find("broker      audit 1 published, 0 behind; connected"), std::string::npos) << a;
  EXPECT_EQ(a.find("workers"), std::string::npos) << a;
}

TEST(RenderTest, FlattenJsonGivesOneKeyPathPerLine) {
  EXPECT_EQ(
      FlattenJson(json::parse(
          R"({"context":{"budget":{"total":30000},"socket":"/s","tags":["a","b"],"x":{}},"k":null})")),
      "context.budget.total = 30000\ncontext.socket = /s\ncontext.tags = [a, b]\n"
      "context.x = {}\nk = null\n");
}

TEST(RenderTest, SummariesAndMemoryTablesFit) {
  json::value sums =
      json::parse(R"({"summaries":[{"id":"sum_4f1c9a0b2d3e4f56","depth":0,"first_seq":1,
    "last_seq":40,"descendant_count":40,"tokens":1180,"parent_id":null},
    {"id":"sum_aaaaaaaaaaaaaaaa","depth":1,"first_seq":1,"last_seq":160,"descendant_count":160,
     "tokens":1900,"parent_id":""}]})");
  const std::string out = RenderSummaries(sums);
  ExpectFits(out);
  std::vector<std::string> lines = SplitLines(out);
  ASSERT_EQ(lines.size(), 3u) << out;
  EXPECT_EQ(lines[1], "sum_4f1c9a0b2d3e4f56      0  1-40     40   1,180  -");
  json::value mem = json::parse(R"({"items":[{"id":"mem_1","text":")" + std::string(200, 'w') +
                                R"(","tags":["db","ops"],"session_id":"","pinned":true}]})");
  const std::string m = RenderMemoryList(mem);
  ExpectFits(m);
  EXPECT_NE(m.find("mem_1  (global)  db,ops  [pinned] www"), std::string::npos) << m;
  EXPECT_NE(m.find("w…\n"), std::string::npos) << m;
}

}  // namespace
}  // namespace missy::cli

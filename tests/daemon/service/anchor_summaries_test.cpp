// Summaries and the eviction anchor: a summary of messages the context still shows raw
// does not change the context's prefix until eviction moves the anchor; a summary of
// history evicted before it existed is shown at the next context; the anchor's snapshot
// of the summaries survives a restart, so the prefix does too.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "daemon/service/summarization_service.h"
#include "service_fixture.h"

namespace missy::testing {
namespace {

// `count` rounds from `first`: a request naming a file, a call, its output, an answer.
std::vector<Message> Rounds(int first, int count, int words) {
  std::vector<Message> out;
  for (int i = first; i < first + count; ++i) {
    const std::string n = std::to_string(i);
    out.push_back(Message::User("step " + n + ": fix src/unit_" + n + ".cc"));
    out.push_back(CallMessage("call_" + n, "bash", R"({"command":"make unit_)" + n + R"("})"));
    out.push_back(Message::ToolResult("call_" + n, Words(words, "out" + n + "_"), "bash"));
    out.push_back(Message::Assistant("done " + n));
  }
  return out;
}

std::vector<std::string> Texts(const ContextOutcome& c) {
  std::vector<std::string> out;
  for (const Message& m : c.context.messages) out.push_back(m.PlainText());
  return out;
}

bool IsPrefix(const std::vector<std::string>& prefix, const std::vector<std::string>& of) {
  if (prefix.size() > of.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i] != of[i]) return false;
  }
  return true;
}

class AnchorSummariesTest : public ServiceFixture {
 protected:
  // Window 12,000 with 2,000 for output: a history budget of a few thousand tokens.
  static constexpr int64_t kWindow = 12000;
  static constexpr int64_t kOutput = 2000;

  void SetUp() override {
    ServiceFixture::SetUp();
    SetConfig([](DaemonConfig& c) { c.summarizer.leaf_chunk_tokens = 2000; });
  }

  Result<SummarizeOutcome> Summarize(const std::string& id) {
    SummarizeRequest r;
    r.session_id = id;
    r.force = true;
    r.reason = "test";
    return services_->summarization.Summarize(r);
  }
};

TEST_F(AnchorSummariesTest, ASummaryOfWhatIsStillShownWaitsForTheNextEviction) {
  ASSERT_TRUE(Create("a").ok());
  ASSERT_TRUE(Append("a", Rounds(1, 6, 60)).status.ok());  // 24 messages, all fit
  Result<ContextOutcome> first = Context("a", kWindow, kOutput);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->context.report.first_kept_seq, 1);
  ASSERT_EQ(first->context.report.summaries_included, 0);

  Result<SummarizeOutcome> job = Summarize("a");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_GE(job->leaves, 1) << "the history outside the fresh tail is summarized";

  // Nothing was evicted: the summary would only repeat what is shown, and would change
  // the prefix the provider has cached. The next context is the same list.
  Result<ContextOutcome> same = Context("a", kWindow, kOutput);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->context.report.eviction, "anchored");
  EXPECT_EQ(same->context.report.summaries_included, 0);
  EXPECT_EQ(Texts(*same), Texts(*first));

  // Enough new history that the anchor must move: now the summary comes in, in place of
  // the messages it covers, and the kept raw part starts after them.
  ASSERT_TRUE(Append("a", Rounds(7, 30, 60)).status.ok());
  Result<ContextOutcome> moved = Context("a", kWindow, kOutput);
  ASSERT_TRUE(moved.ok());
  const ContextReport& r = moved->context.report;
  EXPECT_EQ(r.eviction, "anchor_moved");
  EXPECT_GE(r.summaries_included, 1);
  EXPECT_LE(r.used_tokens, r.total);
  Result<std::vector<SummaryRecord>> all = stores_->summaries.List("a", true);
  ASSERT_TRUE(all.ok());
  ASSERT_FALSE(all->empty());
  EXPECT_GT(r.first_kept_seq, all->front().last_seq);

  // From there on the prefix holds again, across a restart too.
  ASSERT_TRUE(Append("a", Rounds(37, 1, 20)).status.ok());
  ASSERT_TRUE(Flush().ok());
  Reopen();
  Result<ContextOutcome> after = Context("a", kWindow, kOutput);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->context.report.eviction, "anchored");
  EXPECT_EQ(after->context.report.summaries_included, r.summaries_included);
  EXPECT_TRUE(IsPrefix(Texts(*moved), Texts(*after)));
}

// A moved anchor that evicts history no summary covers yet: with the extractive
// summarizer the leaves the background job would write are written in the same request,
// so the context shows them (and the next one need not change the prefix again to bring
// them in). With an llm summarizer the request does not wait for one: the evicted
// history waits for the background job.
TEST_F(AnchorSummariesTest, WhatAMovedAnchorEvictsIsSummarizedInTheSameContext) {
  for (const std::string backend : {"extractive", "llm"}) {
    SCOPED_TRACE(backend);
    Session s;
    s.id = "m-" + backend;
    s.summarizer_backend = backend;
    ASSERT_TRUE(Create(std::move(s)).ok());
    ASSERT_TRUE(Append("m-" + backend, Rounds(1, 6, 60)).status.ok());  // all fit
    Result<ContextOutcome> first = Context("m-" + backend, kWindow, kOutput);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_EQ(first->context.report.first_kept_seq, 1);

    ASSERT_TRUE(Append("m-" + backend, Rounds(7, 30, 60)).status.ok());  // no job has run
    Result<ContextOutcome> moved = Context("m-" + backend, kWindow, kOutput);
    ASSERT_TRUE(moved.ok()) << moved.status().ToString();
    const ContextReport& r = moved->context.report;
    EXPECT_EQ(r.eviction, "anchor_moved");
    EXPECT_LE(r.used_tokens, r.total);
    Result<std::vector<SummaryRecord>> all = stores_->summaries.List("m-" + backend, false);
    ASSERT_TRUE(all.ok());
    std::string text;
    for (const std::string& t : Texts(*moved)) text += t + "\n";
    if (backend == "llm") {
      EXPECT_TRUE(all->empty());
      EXPECT_GT(r.dropped_messages, 0);
      EXPECT_EQ(r.summaries_included, 0);
      continue;
    }
    // The leaves a background run would write now (whole chunks, from seq 1) were written
    // in this request and are shown: only what lies after the last of them, less than
    // half a chunk, waits for more history before it is summarized.
    ASSERT_FALSE(all->empty());
    EXPECT_EQ(all->front().first_seq, 1);
    int64_t last = 0;
    for (const SummaryRecord& x : *all) last = std::max(last, x.last_seq);
    EXPECT_EQ(r.covered_messages, last);
    EXPECT_EQ(r.covered_messages + r.dropped_messages, r.first_kept_seq - 1);
    EXPECT_LT(r.dropped_messages, 8) << "at most two rounds' worth (half a 2,000-token chunk)";
    EXPECT_EQ(r.summaries_included, static_cast<int64_t>(all->size()));
    EXPECT_NE(text.find("src/unit_2.cc"), std::string::npos) << text;
  }
}

TEST_F(AnchorSummariesTest, ASummaryOfHistoryEvictedBeforeItExistedIsShownAtOnce) {
  ASSERT_TRUE(Create("e").ok());
  ASSERT_TRUE(Append("e", Rounds(1, 40, 60)).status.ok());  // far over the budget
  Result<ContextOutcome> first = Context("e", kWindow, kOutput);
  ASSERT_TRUE(first.ok());
  const int64_t anchor = first->context.report.first_kept_seq;
  ASSERT_GT(anchor, 20) << "the start was evicted";
  ASSERT_EQ(first->context.report.summaries_included, 0);
  const std::string text_before = [&] {
    std::string t;
    for (const std::string& s : Texts(*first)) t += s + "\n";
    return t;
  }();
  EXPECT_EQ(text_before.find("src/unit_2.cc"), std::string::npos);

  ASSERT_TRUE(Summarize("e").ok());
  Result<ContextOutcome> next = Context("e", kWindow, kOutput);
  ASSERT_TRUE(next.ok());
  EXPECT_GE(next->context.report.summaries_included, 1);
  std::string text;
  for (const std::string& s : Texts(*next)) text += s + "\n";
  EXPECT_NE(text.find("src/unit_2.cc"), std::string::npos) << text;

  // Shown once, then stable: the snapshot was renewed and persisted.
  ASSERT_TRUE(Flush().ok());
  Reopen();
  Result<ContextOutcome> again = Context("e", kWindow, kOutput);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Texts(*again), Texts(*next));
}

}  // namespace
}  // namespace missy::testing

// The real recorded sessions replayed as an agent would (append each message, ask for a
// context before each assistant message) at the budget of 28,000 tokens (window
// 32,000, output 4,000), with summarization run whenever an append or a context queues a
// job (as the background worker would, right away). Every context fits, keeps tool pairs
// valid and holds the task; at the end, the share of the file paths the user or the agent
// named and of the error lines tools printed that the last context still shows (summaries
// included) is printed per session, and the share of contexts that kept the previous one
// as their prefix. The replay is the same on every run (fake ids, the trigger waited for,
// the index caught up), so these figures can be compared between changes.
// MISSY_RETENTION_DEBUG=1 prints each break of the prefix; MISSY_RETENTION_TRACE=1 also
// prints every context (eviction, first kept seq, leaf coverage, tokens);
// MISSY_RETENTION_DIFF=1 (with DEBUG) prints where the first changed message differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include "context_stability_sessions.h"
#include "core/context_checks.h"
#include "core/message_json.h"
#include "daemon/service/summarization_service.h"
#include "service_fixture.h"
#include "storage/text_indexer.h"
#include "test_util.h"

namespace missy::testing {
namespace {

// An independent notion of "a file path": a token with a '/' or a known extension, ending
// in an extension of 1-4 letters or digits (not the module's own rules).
bool PathLike(std::string_view t) {
  static const std::set<std::string> kExt = {
      "py",  "cc",   "cpp",  "h",   "hpp",  "c",  "js",   "ts", "go",  "rs",  "md",
      "txt", "json", "yaml", "yml", "toml", "sh", "java", "rb", "cfg", "ini", "rst"};
  const size_t dot = t.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= t.size()) return false;
  const std::string ext(t.substr(dot + 1));
  if (!kExt.count(ext)) return false;
  for (char c : t) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' ||
          c == '-')) {
      return false;
    }
  }
  return t.size() >= 4 && t.find("..") == std::string_view::npos;
}

void CollectPaths(std::string_view text, std::set<std::string>& out) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !(std::isalnum(static_cast<unsigned char>(text[i])) ||
                                text[i] == '/' || text[i] == '_' || text[i] == '.')) {
      ++i;
    }
    size_t j = i;
    while (j < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '/' || text[j] == '_' ||
            text[j] == '.' || text[j] == '-')) {
      ++j;
    }
    std::string_view t = text.substr(i, j - i);
    while (!t.empty() && (t.back() == '.' || t.back() == '/')) t.remove_suffix(1);
    if (!t.empty() && t.front() == '/') t.remove_prefix(0);
    if (PathLike(t)) out.insert(std::string(t));
    i = j + 1;
  }
}

// An independent notion of "an error line a tool printed": a line that starts like an
// error report (Error/error/ERROR/Traceback/FAILED/fatal:/panic:, or "SomethingError: ..."
// / "SomethingException: ..."), or a compiler's "file:line: error:" — not source code that
// merely names an exception class (listings, "raise", "except", "class").
bool ErrorLine(std::string_view line) {
  for (std::string_view p :
       {"Error", "error", "ERROR", "Traceback", "FAILED", "fatal:", "panic:"}) {
    if (line.substr(0, p.size()) == p) return true;
  }
  if (line.find(": error:") != std::string_view::npos) return true;
  const size_t colon = line.find(": ");
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view head = line.substr(0, colon);
  if (head.find(' ') != std::string_view::npos) return false;
  return head.ends_with("Error") || head.ends_with("Exception");
}

void CollectErrors(std::string_view text, std::set<std::string>& out) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) {
      line.remove_prefix(1);
    }
    if (line.size() >= 12 && ErrorLine(line)) out.insert(std::string(line.substr(0, 60)));
    start = end + 1;
  }
}

class ReplayRetentionTest : public ServiceFixture {
 protected:
  // What a replay measured: the files and errors named, those still in view at the end,
  // and the consecutive contexts, those that kept the previous one as their prefix.
  struct Figures {
    size_t named = 0, seen = 0;
    int pairs = 0, stable = 0;
  };

  // Replays `conv` as session `id` (as an agent would: append each message, ask for a
  // context before each assistant message), checking every context, and prints its line.
  void Replay(const std::string& id, const std::vector<Message>& conv, Figures& f) {
    const size_t begin = CreateForReplay(id, conv);
    ASSERT_NE(begin, std::string::npos);
    std::string task;
    std::set<std::string> named, errors;
    int contexts = 0, summarized = 0, stable = 0;
    bool wrote = false;  // whether the job just run wrote leaves
    Result<ContextOutcome> last = Status::Internal("no context");
    std::vector<Message> previous;  // the message list of the previous context
    for (size_t i = begin; i < conv.size(); ++i) {
      const Message& m = conv[i];
      if (m.role == Role::kAssistant) {
        // The indexer has caught up, as between an agent's turns: memory hits (other
        // sessions' messages) do not depend on how far it had got.
        ASSERT_TRUE(TextIndexer::CatchUp(*db_).ok());
        last = Context(id, 32000, 4000);
        ASSERT_TRUE(last.ok()) << last.status().ToString();
        ++contexts;
        const std::vector<Message>& now = last->context.messages;
        if (contexts > 1 && previous.size() <= now.size() &&
            std::equal(previous.begin(), previous.end(), now.begin())) {
          ++stable;  // the provider's prompt cache keeps the whole previous request
        } else if (contexts > 1 && getenv("MISSY_RETENTION_DEBUG")) {
          size_t same = 0;
          while (same < previous.size() && same < now.size() && previous[same] == now[same]) {
            ++same;
          }
          const ContextReport& br = last->context.report;
          std::printf(
              "  break at context %d: eviction %s, first kept %lld, summaries %lld, "
              "newly pruned %zu, used %lld, same %zu of %zu (now %zu)\n",
              contexts, br.eviction.c_str(), (long long)br.first_kept_seq,
              (long long)br.summaries_included, br.newly_pruned_seqs.size(),
              (long long)br.used_tokens, same, previous.size(), now.size());
          if (getenv("MISSY_RETENTION_DIFF") && same < previous.size() && same < now.size()) {
            const std::string a = previous[same].PlainText(), b = now[same].PlainText();
            size_t k = 0;
            while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
            std::printf("    differ at char %zu of %zu/%zu: [%s] vs [%s]\n", k, a.size(), b.size(),
                        a.substr(k > 80 ? k - 80 : 0, 200).c_str(),
                        b.substr(k > 80 ? k - 80 : 0, 200).c_str());
          }
        }
        if (getenv("MISSY_RETENTION_TRACE")) {
          Result<int64_t> covered = stores_->summaries.CoveredThrough(id);
          const int64_t cov = covered.ok() ? *covered : -1;
          const ContextReport& tr = last->context.report;
          std::printf(
              "    ctx %d %s first_kept %lld fresh %lld cov %lld used %lld hist %lld/%lld sums "
              "%lld\n",
              contexts, tr.eviction.c_str(), (long long)tr.first_kept_seq,
              (long long)tr.first_fresh_seq, (long long)cov, (long long)tr.used_tokens,
              (long long)tr.history_tokens, (long long)tr.history_budget,
              (long long)tr.summaries_included);
        }
        previous = now;
        const ContextReport& r = last->context.report;
        ASSERT_LE(r.used_tokens, 28000);
        ASSERT_EQ(FindToolPairProblem(last->context.messages), "");
        if (!task.empty()) {
          bool has_task = false;
          for (const Message& c : last->context.messages) {
            has_task = has_task || c.PlainText().find(task.substr(0, 200)) != std::string::npos;
          }
          ASSERT_TRUE(has_task) << "task missing from context " << contexts;
        }
        ASSERT_NO_FATAL_FAILURE(RunQueuedJob(id, &wrote));
        summarized += wrote;
      }
      if (m.role == Role::kUser && task.empty()) task = m.PlainText();
      if (m.role == Role::kUser || m.role == Role::kAssistant) CollectPaths(m.PlainText(), named);
      for (const ToolCall& c : m.tool_calls) CollectPaths(c.arguments, named);
      if (m.role == Role::kTool) CollectErrors(m.PlainText(), errors);
      ASSERT_TRUE(Append(id, {m}).status.ok());
      ASSERT_NO_FATAL_FAILURE(RunQueuedJob(id, &wrote));
      summarized += wrote;
    }
    last = Context(id, 32000, 4000);
    ASSERT_TRUE(last.ok());
    std::string text;
    for (const Message& c : last->context.messages) {
      text += c.PlainText() + "\n";
      for (const ToolCall& tc : c.tool_calls) text += tc.arguments + "\n";
    }
    size_t seen_named = 0, seen_errors = 0;
    for (const std::string& p : named) seen_named += text.find(p) != std::string::npos;
    for (const std::string& e : errors) seen_errors += text.find(e) != std::string::npos;
    f.named = named.size() + errors.size();
    f.seen = seen_named + seen_errors;
    f.pairs = std::max(0, contexts - 1);
    f.stable = stable;
    if (getenv("MISSY_RETENTION_DEBUG")) {
      const ContextReport& r = last->context.report;
      std::printf(
          "  summaries included %lld skipped %lld tokens %lld; kept %lld dropped %lld covered %lld "
          "pruned %lld\n",
          (long long)r.summaries_included, (long long)r.summaries_skipped,
          (long long)r.summary_tokens, (long long)r.kept_messages, (long long)r.dropped_messages,
          (long long)r.covered_messages, (long long)r.pruned_messages);
      // "[in trail]": a summary's stored trail has it; no text had room for it.
      Result<std::vector<SummaryRecord>> all = stores_->summaries.List(id, false);
      std::string trails;
      for (const SummaryRecord& x : *all) trails += x.artifacts_json;
      auto where = [&](const std::string& x) {
        return trails.find(x) != std::string::npos ? "  [in trail]" : "";
      };
      for (const std::string& p : named) {
        if (text.find(p) == std::string::npos) {
          std::printf("  missing file %s%s\n", p.c_str(), where(p));
        }
      }
      for (const std::string& e : errors) {
        if (text.find(e) == std::string::npos) {
          std::printf("  missing error %s%s\n", e.c_str(), where(e));
        }
      }
      for (const SummaryRecord& x : *all)
        std::printf("  summary %s depth %d %lld..%lld tokens %lld parent %s\n", x.id.c_str(),
                    x.depth, (long long)x.first_seq, (long long)x.last_seq, (long long)x.tokens,
                    x.parent_id.c_str());
    }
    std::printf(
        "%-40s %4zu msgs %3d contexts %2d summarized: files %zu/%zu, errors %zu/%zu; prefix kept "
        "%d/%d\n",
        id.c_str(), conv.size(), contexts, summarized, seen_named, named.size(), seen_errors,
        errors.size(), stable, std::max(0, contexts - 1));
  }

  // Each order in a daemon of its own: a second session would find the first one's files in
  // the memory search, which is not what is measured here.
  void ReplaySixTasks(bool reversed) {
    std::vector<std::string> files = TrajectoryFiles();
    if (files.empty()) GTEST_SKIP() << "shared/data/trajectories is not beside the repository";
    if (reversed) std::reverse(files.begin(), files.end());
    const std::vector<Message> conv = OneSession(files);
    Figures f;
    ASSERT_NO_FATAL_FAILURE(Replay(reversed ? "six-tasks-reversed" : "six-tasks", conv, f));
    ASSERT_GT(f.named, 60u);
    EXPECT_GE(static_cast<double>(f.seen), 0.85 * static_cast<double>(f.named))
        << f.seen << "/" << f.named << " files and errors still in view";
    EXPECT_GE(static_cast<double>(f.stable), 0.90 * static_cast<double>(f.pairs));
  }
};

TEST_F(ReplayRetentionTest, RealSessionsAt28kTokensKeepTheTaskFilesAndErrorsInView) {
  const std::vector<std::string> files = TrajectoryFiles();
  if (files.empty()) GTEST_SKIP() << "shared/data/trajectories is not beside the repository";
  Figures all;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const std::string id = std::filesystem::path(file).stem().string();
    Figures f;
    ASSERT_NO_FATAL_FAILURE(Replay(id, LoadTrajectory(file), f));
    if (f.named > 0) {  // the target: at least 95% still in view
      EXPECT_GE(static_cast<double>(f.seen), 0.95 * static_cast<double>(f.named))
          << id << ": " << f.seen << "/" << f.named << " files and errors still in view";
    }
    all.named += f.named;
    all.seen += f.seen;
    all.pairs += f.pairs;
    all.stable += f.stable;
  }
  std::printf(
      "retention over all sessions: %zu/%zu (%.1f%%)\n", all.seen, all.named,
      all.named ? 100.0 * static_cast<double>(all.seen) / static_cast<double>(all.named) : 100.0);
  std::printf("prefix kept over all sessions: %d/%d consecutive contexts (%.1f%%)\n", all.stable,
              all.pairs, all.pairs ? 100.0 * all.stable / static_cast<double>(all.pairs) : 100.0);
}

// A long session: the six trajectories one after the other in one session (six tasks,
// 1,127 messages, the first system prompt only), in name order and reversed, so that leaves
// are condensed twice and a summary at depth 2 holds the trail of 300-600 messages in 2,000
// tokens. Files and errors in view at the end: 52/86 and 62/86 before the trail came first
// in bounded summaries (half of a condensed one's room for its files) and markup tags, sed
// scripts and listings stopped filling it; 84/86 (97.7%) and 75/86 (87.2%) since: the
// oldest task's files are what a reversed session loses. The issue asks 95% of the
// recorded sessions and of the synthetic one; these longer ones are ours, and the floor
// keeps what was won.
TEST_F(ReplayRetentionTest, ALongSessionOfSixTasksKeepsMostOfItsFilesAndErrorsInView) {
  ReplaySixTasks(/*reversed=*/false);
}

TEST_F(ReplayRetentionTest, TheSixTasksReversedKeepMostOfTheirFilesAndErrorsInView) {
  ReplaySixTasks(/*reversed=*/true);
}

}  // namespace
}  // namespace missy::testing

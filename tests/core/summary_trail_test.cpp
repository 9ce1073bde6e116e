// What the artifact trail takes from agents' messages and what a bounded summary keeps of
// it first: markup tags and sed scripts are not files, an error line that reports an error
// ranks before one that only mentions one, and the files and errors come before the older
// requests and facts once the first of each are in (long sessions condense many leaves'
// trails into one summary).
#include <gtest/gtest.h>

#include <algorithm>

#include "core/extractive_summarizer.h"
#include "core/summary_test_helpers.h"
#include "core/summary_text.h"

namespace missy {
namespace {

using testing::HeuristicCounter;
using testing::StoredMessages;

Message Bash(std::string id, const std::string& command) {
  std::string escaped;
  for (char c : command) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return Message::AssistantCalls(
      {{std::move(id), "function", "bash", R"({"command":")" + escaped + R"("})"}});
}

TEST(SummaryTrail, AnErrorReportIsToldFromAMention) {
  using extractive::ReportsError;
  for (const char* report :
       {"TypeError: __init__() got an unexpected keyword argument 'code'",
        "django.db.utils.OperationalError: no such table: product", "error: could not compile",
        "Error: ENOENT", "Traceback (most recent call last):", "FAILED tests/test_a.py::test_b",
        "fatal: not a git repository", "panic: runtime error: index out of range",
        "src/a.cc:12:3: error: expected ';'", "cat: x.txt: No such file or directory",
        "bash: -c: line 1: syntax error near unexpected token `('",
        "error[E0382]: borrow of moved value: `v`", "ERROR tests/test_api.py - ImportError",
        "Exception: boom", "ld: KeyError: 'symtab'"}) {
    EXPECT_TRUE(ReportsError(report)) << report;
  }
  for (const char* mention :
       {"error = instance.unique_error_message(model, self.fields)",
        "logger.error('An option is unknown')", "143→ _ -> :error",
        "+ raise ValidationError(error)",
        "except ValueError:", "from sphinx.errors import PycodeError",
        "Total errors: 0, Skipped: 0", "assert body[\"error\"] =~ \"required\"", "error ->",
        ":error", "Caught ValidationError: {'name': 'taken'}", "SUCCESS: found the error code"}) {
    EXPECT_FALSE(ReportsError(mention)) << mention;
  }
}

TEST(SummaryTrail, MarkupTagsAndSedScriptsAreNotFiles) {
  const auto msgs = StoredMessages({
      Message::User("<pr_description>\nFix src/models.py\n</pr_description>\n<instructions>\n"
                    "Edit files under /testbed</instructions>"),
      Bash("c1",
           "sed -i '25s/def __init__(self):/def __init__(self, code=None):/' "
           "django/db/constraints.py"),
      Message::ToolResult("c1", ""),
      Bash("c2", "sed -i \"s|/raise|/super|g\" lib/a.py && sed -n '10,20p' lib/b.py"),
      Message::ToolResult("c2", ""),
      Bash("c3", "sed -i '2001a \\    print(self.name)' sphinx/ext/__init__.py"),
      Message::ToolResult("c3", ""),
  });
  EXPECT_EQ(ExtractArtifacts(msgs).files,
            (std::vector<std::string>{"src/models.py", "/testbed", "django/db/constraints.py",
                                      "lib/a.py", "lib/b.py", "sphinx/ext/__init__.py"}));
}

TEST(SummaryTrail, ANumberedListingNamesNoErrors) {
  EXPECT_TRUE(extractive::NumberedListingLine("    60→   {:error, reason} -> :error"));
  EXPECT_TRUE(extractive::NumberedListingLine("12\tlogger.error(msg)"));
  EXPECT_TRUE(extractive::NumberedListingLine("7:    raise ValueError(msg)"));
  EXPECT_TRUE(extractive::NumberedListingLine("00042|     raise ValueError(\"bad\")"));
  EXPECT_TRUE(extractive::NumberedListingLine("  42 | error: unreachable in tests"));
  EXPECT_FALSE(extractive::NumberedListingLine("2 errors generated."));
  EXPECT_FALSE(extractive::NumberedListingLine("10:42:01.337 [error] worker crashed"));
  EXPECT_FALSE(extractive::NumberedListingLine("src/a.cc:12:3: error: expected ';'"));
  const auto msgs = StoredMessages({
      Message::User("add tracing"),
      Bash("c1", "cat -n lib/trace.ex"),
      Message::ToolResult(
          "c1",
          "     5→  Records errors on the current span.\n"
          "    60→    :error ->\n    61\t  {:error, reason} -> log_error(reason)\n"),
      Bash("c2", "git log"),
      Message::ToolResult("c2", "fatal: not a git repository\n"),
  });
  EXPECT_EQ(ExtractArtifacts(msgs).errors,
            (std::vector<std::string>{"fatal: not a git repository"}));
}

TEST(SummaryTrail, ErrorsThatReportComeFirstWhenRoomIsShort) {
  // Eight mentions of "error" in source code a tool printed, newer than the one reported
  // error.
  std::string listing;
  for (int i = 0; i < 8; ++i) {
    listing += "    {:error, reason_" + std::to_string(i) + "} -> :error\n";
  }
  const auto msgs = StoredMessages({
      Message::User("fix the build"),
      Bash("c1", "make"),
      Message::ToolResult("c1", "ld: KeyError: 'missing_symbol_table'\n"),
      Bash("c2", "cat lib/x.ex"),
      Message::ToolResult("c2", listing),
  });
  ExtractiveOptions options;
  options.target_tokens = 120;
  const ExtractiveSummary s = SummarizeMessages(msgs, "", options, HeuristicCounter());
  ASSERT_TRUE(s.cut) << s.text;
  EXPECT_NE(s.text.find("KeyError: 'missing_symbol_table'"), std::string::npos) << s.text;
  EXPECT_EQ(s.artifacts.errors.size(), 9u);  // the trail keeps all of them
}

TEST(SummaryTrail, FilesComeBeforeOlderRequestsAndFacts) {
  // Forty files, then many requests and tool results, in a summary with room for about
  // half of it all: after the task and the newest of each list, the files may take 30% of
  // the room before the older requests and facts (which used to come first and left
  // room for 26 files).
  std::vector<Message> conv = {Message::User("refactor the parsers")};
  for (int i = 0; i < 40; ++i) {
    const std::string id = "c" + std::to_string(i);
    conv.push_back(Bash(id, "cat src/parser_" + std::to_string(i) + ".py"));
    conv.push_back(Message::ToolResult(id, "def parse_" + std::to_string(i) + "(): pass"));
  }
  for (int i = 0; i < 20; ++i) {
    conv.push_back(Message::User("also check that step " + std::to_string(i) +
                                 " keeps the old behaviour for callers that pass bytes"));
    conv.push_back(Message::Assistant("ok"));
  }
  const auto msgs = StoredMessages(std::move(conv));
  ExtractiveOptions options;
  options.target_tokens = 700;
  const ExtractiveSummary s = SummarizeMessages(msgs, "", options, HeuristicCounter());
  ASSERT_TRUE(s.cut) << s.text;
  EXPECT_LE(s.tokens, 700);
  int files = 0, newest = 0;
  for (int i = 0; i < 40; ++i) {
    const bool in = s.text.find("src/parser_" + std::to_string(i) + ".py") != std::string::npos;
    files += in;
    newest += in && i >= 5;
  }
  EXPECT_EQ(files, 35) << s.text;
  EXPECT_EQ(newest, 35);                                              // the newest ones
  EXPECT_NE(s.text.find("refactor the parsers"), std::string::npos);  // the task first
  EXPECT_NE(s.text.find("step 19"), std::string::npos);               // the newest requests next
  EXPECT_EQ(s.text.find("step 0 "), std::string::npos);               // the oldest are cut
}

TEST(SummaryTrail, ACondensedSummaryGivesTheFilesHalfItsRoom) {
  // Four leaves, each with fifteen files of its own and a few requests and facts: the
  // condensed summary is their union, with room for about half of it.
  const MessageTokenCounter counter = HeuristicCounter();
  std::vector<ChildSummary> children;
  for (int leaf = 0; leaf < 4; ++leaf) {
    std::vector<Message> conv = {
        Message::User("part " + std::to_string(leaf) + ": port the handlers to the new router")};
    for (int i = 0; i < 15; ++i) {
      const std::string id = "c" + std::to_string(i);
      conv.push_back(Bash(id, "cat app/handlers/h" + std::to_string(leaf * 15 + i) + ".go"));
      conv.push_back(Message::ToolResult(id, "package handlers // " + std::to_string(i)));
    }
    for (int i = 0; i < 6; ++i) {
      conv.push_back(Message::User("keep the old route " + std::to_string(leaf * 6 + i) +
                                   " working until the clients have moved over"));
      conv.push_back(Message::Assistant("ok"));
    }
    const ExtractiveSummary s = SummarizeMessages(StoredMessages(std::move(conv)), "", {}, counter);
    children.push_back({s.text, s.artifacts, s.tokens});
  }
  ExtractiveOptions options;
  options.target_tokens = 800;
  const ExtractiveSummary s = CondenseSummaries(children, options, counter);
  ASSERT_TRUE(s.cut) << s.text;
  EXPECT_LE(s.tokens, 800);
  int files = 0, newest = 0;
  for (int i = 0; i < 60; ++i) {
    const bool in = s.text.find("app/handlers/h" + std::to_string(i) + ".go") != std::string::npos;
    files += in;
    newest += in && i >= 8;
  }
  // The newest 52 (30% of the room, a leaf's share, left room for 36).
  EXPECT_EQ(files, 52) << s.text;
  EXPECT_EQ(newest, 52);
  EXPECT_NE(s.text.find("part 0: port the handlers"), std::string::npos);  // the task
  EXPECT_NE(s.text.find("route 23 "), std::string::npos);                  // the newest request
}

}  // namespace
}  // namespace missy

// The extractive summarizer: artifact trail extraction, Missy's consolidator facts, the
// target bound and its priorities, condensing, malformed input, determinism, and a replay
// of the real trajectories measuring how many file paths survive into the summaries.
#include "core/extractive_summarizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/context_test_helpers.h"
#include "core/groups.h"
#include "core/message_json.h"
#include "core/summary_test_helpers.h"
#include "core/summary_text.h"
#include "core/tool_arguments.h"
#include "core/utf8.h"
#include "test_util.h"

namespace missy {
namespace {

using testing::HeuristicCounter;
using testing::StoredMessages;

Message Call(std::string id, std::string name, std::string arguments, std::string text = {}) {
  return Message::AssistantCalls(
      {{std::move(id), "function", std::move(name), std::move(arguments)}}, std::move(text));
}

bool Contains(const std::string& hay, std::string_view needle) {
  return hay.find(needle) != std::string::npos;
}

TEST(ExtractiveArtifacts, FilesFromArgumentsCommandsAndTextsInFirstSeenOrder) {
  const auto msgs = StoredMessages({
      Message::User("Fix the crash in src/server/handler.cc, see docs/DESIGN.md."),
      Call("c1", "read_file", R"({"path":"src/x.py"})"),
      Message::ToolResult("c1", "def f():\n    pass\n"),
      Call("c2", "str_replace_editor", R"({"command":"str_replace","path":"src/x.py"})"),
      Message::ToolResult("c2", "ok"),
      Call("c3", "bash", R"({"command":"sed -n 1,20p src/x.py && pytest tests/test_y.py"})"),
      Message::ToolResult("c3", "1 passed"),
      Call("c4", "Edit", R"({"file_path":"/repo/lib/app.ex","old_string":"a","new_string":"b"})"),
      Message::ToolResult("c4", "ok"),
      Message::Assistant("I changed `./config/dev.exs` and src/x.py; and/or nothing else."),
  });
  const ArtifactTrail t = ExtractArtifacts(msgs);
  EXPECT_EQ(t.files,
            (std::vector<std::string>{"src/server/handler.cc", "docs/DESIGN.md", "src/x.py",
                                      "tests/test_y.py", "/repo/lib/app.ex", "./config/dev.exs"}));
  // str_replace_editor's "command" is its sub-command, not a shell command.
  EXPECT_EQ(t.commands,
            (std::vector<std::string>{"sed -n 1,20p src/x.py && pytest tests/test_y.py"}));
}

TEST(ExtractiveArtifacts, CommandsFromShellToolsArgvAndRawStrings) {
  const auto msgs = StoredMessages({
      Message::User("go"),
      Call("c1", "shell", R"({"command":["bash","-lc","cargo test -p core"]})"),
      Message::ToolResult("c1", "ok"),
      Call("c2", "execute_bash", R"({"command":"make test\nmake install"})"),
      Message::ToolResult("c2", "ok"),
      Call("c3", "bash", "git diff --stat"),  // not JSON: the raw command line
      Message::ToolResult("c3", "ok"),
      Call("c4", "shell", R"({"cmd":["git","status"]})"),
      Message::ToolResult("c4", "ok"),
      Call("c5", "bash", R"({"command":"make test"})"),  // duplicate
      Message::ToolResult("c5", "ok"),
  });
  EXPECT_EQ(ExtractArtifacts(msgs).commands,
            (std::vector<std::string>{"cargo test -p core", "make test", "git diff --stat",
                                      "git status"}));
}

TEST(ExtractiveArtifacts, CommandsOnlyFromShellLikeTools) {
  const auto msgs = StoredMessages({
      Message::User("go"),
      Call("c1", "str_replace_editor", R"({"command":"view","path":"/testbed/setup.py"})"),
      Message::ToolResult("c1", "ok"),
      Call("c2", "str_replace_editor",
           R"({"command":"create","path":"/testbed/repro.py","file_text":"x = 1"})"),
      Message::ToolResult("c2", "ok"),
      Call("c3", "str_replace_editor",
           R"({"command":"str_replace","path":"src/a.py","old_str":"x","new_str":"y"})"),
      Message::ToolResult("c3", "ok"),
      Call("c4", "run_terminal_cmd", R"({"command":"pytest -x tests/unit"})"),
      Message::ToolResult("c4", "ok"),
      Call("c5", "Bash", R"({"command":"git status","description":"status"})"),
      Message::ToolResult("c5", "ok"),
      Call("c6", "terminal", R"({"cmd":["ls","-la"]})"),
      Message::ToolResult("c6", "ok"),
      // A non-shell tool's "command" is not a command, but its paths are kept.
      Call("c7", "notebook", R"({"command":"open docs/guide.ipynb"})"),
      Message::ToolResult("c7", "ok"),
  });
  const ArtifactTrail t = ExtractArtifacts(msgs);
  EXPECT_EQ(t.commands, (std::vector<std::string>{"pytest -x tests/unit", "git status", "ls -la"}));
  EXPECT_EQ(t.files, (std::vector<std::string>{"/testbed/setup.py", "/testbed/repro.py", "src/a.py",
                                               "tests/unit", "docs/guide.ipynb"}));
}

TEST(ExtractiveArtifacts, ArgumentsJsonEdgeCases) {
  const auto msgs = StoredMessages({
      Message::User("go"),
      // Escapes in keys and values; a large skipped value holding quotes and braces.
      Call("c1", "Edit",
           R"({"old_string":"a \"}\" {[","file\u005fpath":"src\/esc.py","new_string":"\\\"}"})"),
      Message::ToolResult("c1", "ok"),
      Call("c2", "bash", R"({"command":"echo \"hi\"\ncat lib/x.rs"})"),
      Message::ToolResult("c2", "ok"),
      // Valid up to a trailing comma: not JSON, so bash takes it as the raw command.
      Call("c3", "bash", R"({"command":"make all",})"),
      Message::ToolResult("c3", "ok"),
      // Trailing garbage after the object: not JSON either.
      Call("c4", "bash", R"({"command":"ls"} x)"),
      Message::ToolResult("c4", "ok"),
      // Deeper than the visited depth: checked but not visited.
      Call("c5", "edit",
           R"({"a":{"b":{"c":{"d":{"e":{"f":{"path":"deep/x.py"}}}}}},"path":"top.py"})"),
      Message::ToolResult("c5", "ok"),
  });
  const ArtifactTrail t = ExtractArtifacts(msgs);
  EXPECT_EQ(t.files, (std::vector<std::string>{"src/esc.py", "lib/x.rs", "top.py"}));
  EXPECT_EQ(t.commands, (std::vector<std::string>{"echo \"hi\"", R"({"command":"make all",})",
                                                  R"({"command":"ls"} x)"}));
}

TEST(ArtifactArguments, ReadsWhatTheTrailNeedsAndRejectsWhatIsNotAnObject) {
  using Kind = ArgumentItem::Kind;
  std::vector<ArgumentItem> items;
  ASSERT_TRUE(ReadToolArguments(
      R"({"content":"x\"y}","path":" a.py ","changes":{"src/b.rs":{}},"cmd":["git","status"],)"
      R"("n":-1.5e3,"ok":true,"z":null,"patch":"+++ b/c.py","s":"\ud83d\ude00"})",
      true, items));
  std::vector<std::pair<Kind, std::string>> got;
  for (const ArgumentItem& i : items) got.emplace_back(i.kind, i.text);
  EXPECT_EQ(got, (std::vector<std::pair<Kind, std::string>>{{Kind::kPath, " a.py "},
                                                            {Kind::kPathKey, "src/b.rs"},
                                                            {Kind::kCommand, "git status"},
                                                            {Kind::kPatch, "+++ b/c.py"}}));
  items.clear();
  ASSERT_TRUE(ReadToolArguments(R"({"command":"view","path":"/x\u00e9.py"})", false, items));
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].kind, Kind::kOtherCommand);
  EXPECT_EQ(items[1].text, "/x\xc3\xa9.py");
  std::string deep = R"({"a":)";
  for (int i = 0; i < 40; ++i) deep += "[";
  for (int i = 0; i < 40; ++i) deep += "]";
  deep += "}";
  for (const std::string& bad : std::vector<std::string>{
           "", "[]", "{", R"({"a":})", R"({"a":1}x)", "{'a':1}", R"({"a":tru})", R"({"path":"\q"})",
           R"({"a" 1})", R"({"a":1,})", R"({"a":"open)", deep}) {
    items.clear();
    EXPECT_FALSE(ReadToolArguments(bad, true, items)) << bad;
  }
  // Lenient by design: a skipped value is not decoded, so its bad escape goes unnoticed.
  EXPECT_TRUE(ReadToolArguments(R"({"content":"\q"})", true, items));
  EXPECT_TRUE(IsShellTool("Bash"));
  EXPECT_TRUE(IsShellTool("execute_bash"));
  EXPECT_TRUE(IsShellTool("run_terminal_cmd"));
  EXPECT_FALSE(IsShellTool("str_replace_editor"));
  EXPECT_FALSE(IsShellTool("read_file"));
}

TEST(ExtractiveArtifacts, LongTextsAreScannedForPathsInHeadAndTailWindows) {
  const std::string filler(40000, ' ');
  const auto msgs = StoredMessages({
      Message::User("see src/head.py" + filler + "middle/lost.py" + filler + "and src/tail.py"),
      Message::Assistant("edit lib/a.rs\n" + filler + "lib/gone.rs" + filler + "\nlib/z.rs"),
  });
  EXPECT_EQ(ExtractArtifacts(msgs).files,
            (std::vector<std::string>{"src/head.py", "src/tail.py", "lib/a.rs", "lib/z.rs"}));
}

TEST(ExtractiveArtifacts, ErrorLinesFromToolResultsDeduplicated) {
  const std::string traceback =
      "Running...\nTraceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n"
      "ValueError: bad value\nviolation_error_code = None\n";
  const std::string compiler =
      "src/a.cc:12:3: error: expected ';' after expression\n1 warning generated.\n";
  const std::string pytest = "FAILED tests/test_x.py::test_y - AssertionError\n1 failed\n";
  const auto msgs = StoredMessages({
      Message::User("go"),
      Call("c1", "bash", R"({"command":"python a.py"})"),
      Message::ToolResult("c1", traceback),
      Call("c2", "bash", R"({"command":"make"})"),
      Message::ToolResult("c2", compiler),
      Call("c3", "bash", R"({"command":"pytest"})"),
      Message::ToolResult("c3", pytest),
      Call("c4", "bash", R"({"command":"make"})"),
      Message::ToolResult("c4", compiler),
      Call("c5", "bash", R"({"command":"cat x"})"),
      Message::ToolResult("c5", "cat: x: No such file or directory\nraise ValueError(msg)\n"),
  });
  EXPECT_EQ(ExtractArtifacts(msgs).errors,
            (std::vector<std::string>{"Traceback (most recent call last):", "ValueError: bad value",
                                      "src/a.cc:12:3: error: expected ';' after expression",
                                      "FAILED tests/test_x.py::test_y - AssertionError", "1 failed",
                                      "cat: x: No such file or directory"}));
}

TEST(ExtractiveArtifacts, ErrorsAreFoundInTheTailOfLongOutputs) {
  std::string out;
  for (int i = 0; i < 2000; ++i) out += "compiling module " + std::to_string(i) + "\n";
  out += "fatal: not a git repository\n";
  const auto msgs =
      StoredMessages({Message::User("go"), Call("c1", "bash", R"({"command":"git log"})"),
                      Message::ToolResult("c1", out)});
  EXPECT_EQ(ExtractArtifacts(msgs).errors,
            (std::vector<std::string>{"fatal: not a git repository"}));
}

TEST(ExtractiveArtifacts, PatchesAndPathKeyedObjects) {
  const auto msgs = StoredMessages({
      Message::User("go"),
      Call("c1", "apply_patch",
           R"({"changes":{"/w/core/lib.rs":{"update":{"unified_diff":"@@ -1 +1 @@\n-a\n+b\n"}}}})"),
      Message::ToolResult("c1", "ok"),
      Call(
          "c2", "apply_patch",
          R"({"input":"*** Begin Patch\n*** Update File: src/main.rs\n@@\n-a\n+b\n*** End Patch"})"),
      Message::ToolResult("c2", "ok"),
  });
  EXPECT_EQ(ExtractArtifacts(msgs).files,
            (std::vector<std::string>{"/w/core/lib.rs", "src/main.rs"}));
}

TEST(ExtractiveArtifacts, PathShapes) {
  EXPECT_TRUE(LooksLikePath("src/a.cc", false));
  EXPECT_TRUE(LooksLikePath("mix.exs", false));
  EXPECT_TRUE(LooksLikePath("/testbed", false));
  EXPECT_TRUE(LooksLikePath("django/db/models", true));
  EXPECT_FALSE(LooksLikePath("django/db/models", false));
  EXPECT_FALSE(LooksLikePath("s/foo/bar/g", true));
  EXPECT_FALSE(LooksLikePath("and/or", false));
  EXPECT_FALSE(LooksLikePath("N/A", true));
  EXPECT_FALSE(LooksLikePath("1.2.3", true));
  EXPECT_FALSE(LooksLikePath("e.g.", false));
  EXPECT_FALSE(LooksLikePath("--out=a.py", true));
  EXPECT_FALSE(LooksLikePath("src/**/*.py", true));
}

TEST(ExtractiveArtifacts, JsonRoundTripAndMerge) {
  ArtifactTrail a{{"a.py", "b.py"}, {"make"}, {"error: x"}, {"decided: y"}};
  Result<ArtifactTrail> back = ArtifactsFromJson(ArtifactsToJson(a));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, a);
  EXPECT_EQ(ArtifactsToJson(ArtifactTrail{}),
            R"({"files":[],"commands":[],"errors":[],"decisions":[]})");
  Result<ArtifactTrail> partial = ArtifactsFromJson(R"({"files":["x.rs",3]})");
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->files, std::vector<std::string>{"x.rs"});
  EXPECT_TRUE(partial->commands.empty());
  EXPECT_EQ(ArtifactsFromJson("not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ArtifactsFromJson("[1]").status().code(), StatusCode::kInvalidArgument);

  MergeArtifacts(a, ArtifactTrail{{"b.py", "c.py"}, {"make", "ls"}, {}, {}});
  EXPECT_EQ(a.files, (std::vector<std::string>{"a.py", "b.py", "c.py"}));
  EXPECT_EQ(a.commands, (std::vector<std::string>{"make", "ls"}));
}

TEST(ExtractiveText, OneLineCapsOnCodePointsAndFoldsWhitespace) {
  struct Case {
    std::string in;
    size_t max;
    std::string out;
  };
  const std::vector<Case> cases = {
      {"  a  b\n\tc  ", 10, "a b c"},
      {"abcdef", 3, "abc…"},
      {"ab cd", 3, "ab …"},  // the space counts
      {"ab cd", 2, "ab…"},
      {"h\xc3\xa9llo w\xc3\xb6rld", 7, "h\xc3\xa9llo w…"},
      {std::string(10000, 'x') + " tail", 4, "xxxx…"},  // a long run is not read whole
      {"\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", 2, "\xe2\x82\xac\xe2\x82\xac…"},
      {"ok \xff\xfe end", 50, "ok \xef\xbf\xbd\xef\xbf\xbd end"},  // invalid bytes replaced
      {"", 5, ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(extractive::OneLine(c.in, c.max), c.out) << c.in.substr(0, 40) << " / " << c.max;
  }
}

TEST(ExtractiveText, CandidateScanNeverSkipsAPattern) {
  // Random texts made of the patterns and pieces of them; the SIMD scan must stop at every
  // position where a pattern starts (the classifiers' anchors), at any alignment.
  const std::vector<std::string> pieces = {"err", "ERR", "exc", "fai", "FAT", "pan", "Tra", "No ",
                                           "dec", "DeC", ":",   "/",   ".a",  ".",   "x",   " ",
                                           "\n",  "e",   "r",   "E",   "p",   "a",   "T"};
  uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  for (int round = 0; round < 500; ++round) {
    std::string text;
    const size_t n = 1 + next() % 60;
    for (size_t k = 0; k < n; ++k) text += pieces[next() % pieces.size()];
    for (unsigned set : {extractive::kColon | extractive::kErrorWords,
                         extractive::kColon | extractive::kDecisionWords,
                         static_cast<unsigned>(extractive::kPathChars)}) {
      std::set<size_t> found;
      for (size_t pos = 0; (pos = extractive::NextCandidate(text, pos, set)) < text.size(); ++pos) {
        found.insert(pos);
      }
      for (size_t i = 0; i < text.size(); ++i) {
        std::string folded = text.substr(i, 3);
        for (char& ch : folded) ch = static_cast<char>(extractive::Lower(ch));
        bool starts = false;
        if (set & extractive::kColon) starts |= text[i] == ':';
        if (set & extractive::kPathChars) {
          starts |=
              text[i] == '/' || (text[i] == '.' && i + 1 < text.size() &&
                                 extractive::IsAlpha(static_cast<unsigned char>(text[i + 1])));
        }
        if (set & extractive::kErrorWords) {
          for (std::string_view a : {"err", "exc", "fai", "fat", "pan"}) starts |= folded == a;
          starts |= text.compare(i, 3, "Tra") == 0 || text.compare(i, 3, "No ") == 0;
        }
        if (set & extractive::kDecisionWords) starts |= folded == "dec";
        if (starts) {
          EXPECT_TRUE(found.count(i)) << "set " << set << " at " << i << ": " << text;
        }
      }
    }
  }
}

TEST(ExtractiveSummary, LayoutUserMessagesFactsAndTrail) {
  const std::string task = "Implement tracing in lib/spotter/application.ex. " +
                           std::string(400, 'x');  // 450 chars: verbatim
  const std::string long_msg = "Now " + std::string(600, 'y') + " the end";
  const auto msgs = StoredMessages({
      Message::User(task),
      Call("c1", "bash", R"({"command":"mix test"})", "Running the tests."),
      Message::ToolResult("c1", "3 tests, 1 failure\n** (RuntimeError) error: boom\n" +
                                    std::string(8000, '.') + "\nresult: 2 skipped"),
      Message::Assistant("Decided: use OpenTelemetry.\nresult: tests pass"),
      Message::User(long_msg),
  });
  const ExtractiveSummary s = SummarizeMessages(msgs, "", {}, HeuristicCounter());
  EXPECT_EQ(s.text, "Task/requests:\n- " + task + "\n- Now " + std::string(329, 'y') +
                        " […112 chars cut…] " + std::string(159, 'y') + " the end\n" +
                        "Facts:\n- [tool] 3 tests, 1 failure ** (RuntimeError) error: boom " +
                        std::string(151, '.') + "…\n- result: 2 skipped\n" +
                        "- Decided: use OpenTelemetry.\n- result: tests pass\n"
                        "Files: lib/spotter/application.ex\n"
                        "Commands:\n- mix test\n"
                        "Errors:\n- ** (RuntimeError) error: boom\n"
                        "Decisions:\n- Decided: use OpenTelemetry.\n");
  EXPECT_FALSE(s.cut);
  EXPECT_EQ(s.tokens, HeuristicCounter().CountText(s.text));
  EXPECT_TRUE(s.Shrinks());
  EXPECT_EQ(InvalidUtf8At(s.text), std::string_view::npos);
}

// A chunk of `n` rounds, each a command with an output worth a fact and an error.
std::vector<StoredMessage> BusyChunk(int n) {
  std::vector<Message> m;
  m.push_back(Message::User("The task: make every test in tests/ pass without API changes."));
  for (int i = 0; i < n; ++i) {
    const std::string id = "c" + std::to_string(i);
    m.push_back(
        Call(id, "bash", R"({"command":"pytest tests/test_mod)" + std::to_string(i) + R"(.py"})"));
    m.push_back(Message::ToolResult(
        id, "collected 12 items, round " + std::to_string(i) + "\n" + std::string(3000, '.') +
                "\nE   AssertionError: round " + std::to_string(i) + " value mismatch\n"));
    m.push_back(Message::Assistant("found: round " + std::to_string(i) + " fails on parse"));
  }
  return StoredMessages(std::move(m));
}

TEST(ExtractiveSummary, TargetBoundDropsOldestFactsAndKeepsTrailAndTask) {
  const MessageTokenCounter counter = HeuristicCounter();
  const auto msgs = BusyChunk(60);
  ExtractiveOptions o;
  o.target_tokens = 1200;
  const ExtractiveSummary s = SummarizeMessages(msgs, "", o, counter);
  EXPECT_LE(s.tokens, 1200);
  EXPECT_EQ(s.tokens, counter.CountText(s.text));
  EXPECT_GT(s.source_tokens, 50000);
  EXPECT_TRUE(s.cut);
  EXPECT_TRUE(s.Shrinks());
  EXPECT_TRUE(Contains(s.text, "The task: make every test"));
  // The newest facts are kept, the oldest dropped.
  EXPECT_TRUE(Contains(s.text, "found: round 59 fails on parse"));
  EXPECT_FALSE(Contains(s.text, "found: round 0 fails on parse"));
  EXPECT_TRUE(Contains(s.text, "older items omitted"));
  // The trail outranks facts: the newest files are all there, more of them than facts.
  size_t files = 0, facts = 0;
  for (int i = 0; i < 60; ++i) {
    files += Contains(s.text, "tests/test_mod" + std::to_string(i) + ".py,") ||
             Contains(s.text, "tests/test_mod" + std::to_string(i) + ".py\n");
    facts += Contains(s.text, "found: round " + std::to_string(i) + " fails");
  }
  EXPECT_GE(files, 40u);
  EXPECT_GT(files, facts);
  EXPECT_TRUE(Contains(s.text, "tests/test_mod59.py"));
  // Everything extracted is still in the artifacts.
  EXPECT_EQ(s.artifacts.files.size(), 60u);
  EXPECT_EQ(s.artifacts.errors.size(), 60u);
}

TEST(ExtractiveSummary, BoundHoldsForManyTargetsWithExactBytes) {
  const MessageTokenCounter bytes = testing::BytesCounter();
  const auto msgs = BusyChunk(30);
  for (int64_t target : {100, 150, 300, 1200, 2000, 5000}) {
    ExtractiveOptions o;
    o.target_tokens = target;
    const ExtractiveSummary s = SummarizeMessages(msgs, "earlier summary text", o, bytes);
    EXPECT_LE(s.tokens, target) << target;
    EXPECT_EQ(s.tokens, static_cast<int64_t>(s.text.size())) << target;
    EXPECT_TRUE(s.Shrinks()) << target;
    EXPECT_TRUE(s.cut) << target;
    EXPECT_TRUE(Contains(s.text, target >= 150 ? "- The task:" : "Task/requests:\n- Th"))
        << target << "\n"
        << s.text;
  }
}

TEST(ExtractiveSummary, TinyChunksAreBoundedBySourceSize) {
  const MessageTokenCounter counter = HeuristicCounter();
  const auto msgs =
      StoredMessages({Message::User("Rename a.py to b.py"), Message::Assistant("Done.")});
  const ExtractiveSummary s = SummarizeMessages(msgs, "", {}, counter);
  EXPECT_EQ(s.source_tokens, 19);
  EXPECT_LE(s.tokens, 18);
  EXPECT_TRUE(s.Shrinks());
  EXPECT_TRUE(s.cut);
  EXPECT_EQ(s.tokens, counter.CountText(s.text));
  EXPECT_EQ(s.artifacts.files, (std::vector<std::string>{"a.py", "b.py"}));
}

TEST(ExtractiveSummary, PriorIsAnExcerptAndTheFirstThingDropped) {
  const MessageTokenCounter counter = HeuristicCounter();
  const auto msgs = BusyChunk(2);
  const ExtractiveSummary q = SummarizeMessages(msgs, "we were fixing parse()", {}, counter);
  EXPECT_TRUE(Contains(q.text, "Earlier:\n- we were fixing parse()\n")) << q.text;
  // A long prior is cut to a tenth of the target.
  const ExtractiveSummary l = SummarizeMessages(msgs, std::string(20000, 'p'), {}, counter);
  EXPECT_TRUE(Contains(l.text, "truncated")) << l.text;
  EXPECT_LT(l.tokens, q.tokens + 130);
  // Under pressure the prior goes before any fact or trail item.
  ExtractiveOptions tight;
  tight.target_tokens = 140;
  const ExtractiveSummary t = SummarizeMessages(msgs, "we were fixing parse()", tight, counter);
  EXPECT_LE(t.tokens, 140);
  EXPECT_FALSE(Contains(t.text, "Earlier:")) << t.text;
  EXPECT_TRUE(Contains(t.text, "The task:")) << t.text;
}

TEST(ExtractiveSummary, CondenseMergesTrailsAndKeepsNewestFacts) {
  const MessageTokenCounter counter = HeuristicCounter();
  std::vector<ChildSummary> children;
  for (int c = 0; c < 4; ++c) {
    const auto msgs = BusyChunk(15 + c);
    const std::span<const StoredMessage> all(msgs);
    const ExtractiveSummary s = SummarizeMessages(all, "", {}, counter);
    ChildSummary child{s.text, s.artifacts, s.tokens};
    child.artifacts.files.push_back("shared/common.h");  // in every child: merged once
    children.push_back(std::move(child));
  }
  ExtractiveOptions o;
  o.target_tokens = kCondensedTargetTokens;
  const ExtractiveSummary s = CondenseSummaries(children, o, counter);
  EXPECT_LE(s.tokens, 2000);
  EXPECT_TRUE(s.Shrinks());
  EXPECT_EQ(std::count(s.artifacts.files.begin(), s.artifacts.files.end(), "shared/common.h"), 1);
  EXPECT_EQ(s.artifacts.files.size(), 18u + 1u);  // test_mod0..17 and the shared one
  EXPECT_TRUE(Contains(s.text, "The task: make every test"));
  EXPECT_TRUE(Contains(s.text, "found: round 17 fails on parse"));  // the last child's newest
  EXPECT_TRUE(Contains(s.text, "shared/common.h"));
  // The condensed text reads back as the same layout (a second level keeps working).
  const std::vector<ChildSummary> again = {{s.text, s.artifacts, s.tokens},
                                           {s.text, s.artifacts, s.tokens}};
  const ExtractiveSummary s2 = CondenseSummaries(again, o, counter);
  EXPECT_EQ(s2.artifacts, s.artifacts);
  EXPECT_TRUE(Contains(s2.text, "The task: make every test"));
}

TEST(ExtractiveSummary, ForeignChildTextBecomesFacts) {
  const std::vector<ChildSummary> children = {
      {"The agent fixed the parser.\nTests pass now.", {{"src/parser.rs"}, {}, {}, {}}, 400},
      {"Then it released v2.", {}, 300}};
  const ExtractiveSummary s = CondenseSummaries(children, {}, HeuristicCounter());
  EXPECT_EQ(s.text,
            "Facts:\n- The agent fixed the parser.\n- Tests pass now.\n- Then it released v2.\n"
            "Files: src/parser.rs\n");
}

TEST(ExtractiveSummary, MalformedArgumentsNeverThrowNorBreakUtf8) {
  const std::string bad_utf8 = "src/\xff\xfe.py \xc3\x28 caf\xc3\xa9";
  std::vector<Message> m = {
      Message::User("fix " + bad_utf8),
      Call("c1", "bash", "{not json"),
      Message::ToolResult("c1", "error: " + bad_utf8),
      Call("c2", "bash", "[1,2,3]"),
      Message::ToolResult("c2", "ok"),
      Call("c3", "read_file", R"({"path":)" + std::string("\"") + std::string(100000, 'a') + "\"}"),
      Message::ToolResult("c3", std::string(100000, '\xff')),
      Call("c4", "bash", "{\"command\":\"cat " + bad_utf8 + "\"}"),  // invalid UTF-8 in JSON
      Message::ToolResult("c4", "ok"),
      Call("c5", "edit", R"({"path":{"deep":[[[[[[[[[["x.py"]]]]]]]]]]}})"),
      Message::ToolResult("c5", "ok"),
      Call("c6", "bash", R"({"command":42,"path":null})"),
      Message::ToolResult("c6", "ok"),
      Call("c7", "bash", ""),
      Message::ToolResult("c7", ""),
      Message::Assistant("decided: keep " + bad_utf8),
  };
  const auto msgs = StoredMessages(std::move(m));
  ExtractiveSummary s;
  ASSERT_NO_THROW(s = SummarizeMessages(msgs, bad_utf8, {}, HeuristicCounter()));
  EXPECT_EQ(InvalidUtf8At(s.text), std::string_view::npos) << s.text;
  for (const auto* list :
       {&s.artifacts.files, &s.artifacts.commands, &s.artifacts.errors, &s.artifacts.decisions}) {
    for (const std::string& x : *list) EXPECT_EQ(InvalidUtf8At(x), std::string_view::npos) << x;
  }
  EXPECT_TRUE(Result<ArtifactTrail>(ArtifactsFromJson(ArtifactsToJson(s.artifacts))).ok());
  EXPECT_FALSE(s.artifacts.commands.empty());  // "{not json" kept as bash's raw command
}

TEST(ExtractiveSummary, Deterministic) {
  const auto msgs = BusyChunk(40);
  const ExtractiveSummary a = SummarizeMessages(msgs, "prior", {}, HeuristicCounter());
  const ExtractiveSummary b = SummarizeMessages(msgs, "prior", {}, HeuristicCounter());
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.artifacts, b.artifacts);
  EXPECT_EQ(a.tokens, b.tokens);
}

// ---------------------------------------------------------------------------------------
// Replay of the real trajectories: chunks of ~20,000 tokens (whole groups), each summarized
// with the previous summary as prior. The reference set of paths is computed here
// independently of the module: string values of path-like argument keys, and tokens of
// shell commands that contain a '/' or end in a dotted extension of 1-5 letters, outside
// sed substitutions ('25s/old/new/': "/new" is not a file).

void ReferencePaths(const boost::json::value& v, std::string_view key, std::set<std::string>& out) {
  if (v.is_string()) {
    const std::string s(v.get_string());
    if (key == "path" || key == "file_path" || key == "filename" || key == "file") {
      out.insert(s);
    } else if (key == "command" || key == "cmd") {
      bool in_sed = false;  // inside a quoted sed substitution
      std::string tok;
      auto flush = [&] {
        while (!tok.empty() && (tok.back() == '.' || tok.back() == ',' || tok.back() == ':')) {
          tok.pop_back();
        }
        static const std::set<std::string> kCommon = {
            "c",    "cc", "cpp", "h",   "py",  "rs",   "go",   "js",   "ts",
            "java", "rb", "ex",  "exs", "md",  "txt",  "json", "toml", "yaml",
            "yml",  "sh", "cfg", "ini", "rst", "html", "css",  "lock"};
        const size_t dot = tok.rfind('.');
        const bool ext = dot != std::string::npos && dot > 0 && kCommon.count(tok.substr(dot + 1));
        const bool ok_chars = std::all_of(tok.begin(), tok.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-~", c);
        });
        const bool letter = std::any_of(tok.begin(), tok.end(), ::isalpha);
        if (ok_chars && letter && tok.size() > 3 && tok[0] != '-' &&
            ((tok.find('/') != std::string::npos && (tok[0] == '/' || ext)) ||
             (ext && tok.find('/') == std::string::npos && dot > 1))) {
          out.insert(tok);
        }
        tok.clear();
      };
      for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '\'') {
          size_t j = i + 1;
          while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == ',')) {
            ++j;
          }
          if (!in_sed && j + 1 < s.size() && s[j] == 's' && s[j + 1] == '/') {
            in_sed = true;
          } else if (in_sed) {
            in_sed = false;
            tok.clear();
          }
        }
        if (in_sed) continue;
        if (std::isspace(static_cast<unsigned char>(c)) || std::strchr("\"'`;|&<>(){}=,", c)) {
          flush();
        } else {
          tok += c;
        }
      }
      flush();
    }
  } else if (v.is_array()) {
    for (const auto& x : v.get_array()) ReferencePaths(x, key, out);
  } else if (v.is_object()) {
    for (const auto& kv : v.get_object()) ReferencePaths(kv.value(), kv.key(), out);
  }
}

TEST(ExtractiveReplay, PathsAndTaskSurviveInTheSummaries) {
  const std::filesystem::path dir = MISSY_SOURCE_DIR "/../shared/data/trajectories";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no trajectories at " << dir;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".jsonl") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  const MessageTokenCounter counter = HeuristicCounter();
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    const auto msgs = StoredMessages(testing::LoadTrajectory(file.string()));
    std::set<std::string> reference;
    std::string task;
    for (const StoredMessage& m : msgs) {
      if (task.empty() && m.message.role == Role::kUser) task = m.message.PlainText();
      for (const ToolCall& c : m.message.tool_calls) {
        boost::json::error_code ec;
        const boost::json::value v = boost::json::parse(c.arguments, ec);
        if (!ec) ReferencePaths(v, "", reference);
      }
    }
    const std::vector<GroupSpan> chunks = ChunkOnGroups(
        0, msgs.size(), [&](size_t i) -> const Message& { return msgs[i].message; },
        [&](size_t i) { return msgs[i].tokens; }, 20000);
    std::string all;
    std::string prior;
    std::string first_summary;
    int64_t summary_tokens = 0, source_tokens = 0;
    for (const GroupSpan& g : chunks) {
      const std::span<const StoredMessage> chunk(msgs.data() + g.begin, g.size());
      const ExtractiveSummary s = SummarizeMessages(chunk, prior, {}, counter);
      EXPECT_LE(s.tokens, 1200);
      if (s.source_tokens > 1200) {
        EXPECT_TRUE(s.Shrinks());
      }
      if (first_summary.empty()) first_summary = s.text;
      all += s.text;
      prior = s.text;
      summary_tokens += s.tokens;
      source_tokens += s.source_tokens;
    }
    size_t kept = 0;
    std::vector<std::string> missing;
    for (const std::string& p : reference) {
      if (Contains(all, p)) {
        ++kept;
      } else {
        missing.push_back(p);
      }
    }
    const double share = reference.empty() ? 1.0 : static_cast<double>(kept) / reference.size();
    std::printf("%-36s %4zu msgs %2zu chunks %6lld -> %5lld tokens, paths kept %zu/%zu = %.1f%%\n",
                file.filename().c_str(), msgs.size(), chunks.size(),
                static_cast<long long>(source_tokens), static_cast<long long>(summary_tokens), kept,
                reference.size(), 100.0 * share);
    std::string sample;
    for (const std::string& m : missing) sample += " " + m;
    EXPECT_GE(share, 0.95) << "missing:" << sample;
    // The task is in the first summary: verbatim, or its head when it was cut.
    // (Its first line: continuation lines are indented in the layout.)
    const size_t b = task.find_first_not_of(" \t\r\n");
    ASSERT_NE(b, std::string::npos);
    std::string first_line = task.substr(b, task.find('\n', b) - b);
    first_line = first_line.substr(0, 200);
    while (!first_line.empty() && static_cast<unsigned char>(first_line.back()) <= ' ') {
      first_line.pop_back();
    }
    EXPECT_TRUE(Contains(first_summary, first_line)) << first_summary.substr(0, 400);
  }
}

}  // namespace
}  // namespace missy

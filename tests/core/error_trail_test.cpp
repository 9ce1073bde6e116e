// What a summary keeps of the errors tools printed and the pages an agent fetched (issue
// 29): error reports of many toolchains are recognised, kept as printed (blanks
// included) even from the middle of a long output, one line per distinct error, with the
// seq of the run that showed it gone; URLs are kept whole among the files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "core/extractive_summarizer.h"
#include "core/summary_test_helpers.h"
#include "core/summary_text.h"

namespace missy {
namespace {

using testing::HeuristicCounter;
using testing::StoredMessages;

Message Call(std::string id, const std::string& tool, const std::string& arguments) {
  return Message::AssistantCalls({{std::move(id), "function", tool, arguments}});
}

TEST(ErrorTrail, ReportsOfManyToolchainsAreToldFromMentions) {
  using extractive::IsErrorLine;
  using extractive::ReportsError;
  for (const char* report :
       {"E       KeyError: 'sku'", "E   ModuleNotFoundError: No module named 'yaml'",
        "** (BadMapError) expected a map, got: nil",
        "** (Mix) Could not start application inventory: shutdown", "npm ERR! code ERESOLVE",
        "src/app.ts(4,7): error TS2322: Type 'string' is not assignable",
        "src/routes/users.ts:12:5 - error TS2339: Property 'email' does not exist",
        "--- FAIL: TestStore_Get (0.00s)", "FAIL\texample.com/inventory\t0.012s",
        "FAIL src/services/cart.test.ts",
        "thread 'parser::tests::parses' panicked at src/parser.rs:118:9:",
        "bash: npx: jset: command not found", "error[E0308]: mismatched types"}) {
    EXPECT_TRUE(IsErrorLine(report)) << report;
    EXPECT_TRUE(ReportsError(report)) << report;
  }
  for (const char* mention :
       {"The tests fail since we moved to the new format", "E       assert 100 == 101",
        "** Note: the new default", "    {:error, reason} -> {:error, reason}",
        "we found the command not useful"}) {
    EXPECT_FALSE(ReportsError(mention)) << mention;
  }
}

TEST(ErrorTrail, ReportsOfMoreToolchainsAndOfTheSystemAreToldFromMentions) {
  using extractive::ReportsError;
  for (const char* report :
       {"Exception in thread \"main\" java.lang.IllegalStateException: pool closed",
        "Caused by: java.net.ConnectException: Connection refused",
        "[ERROR] Failed to execute goal on project stock-legacy: Could not resolve",
        "FAILURE: Build failed with an exception.",
        "StockServiceTest > reservesOnce() FAILED",
        "CMake Error at CMakeLists.txt:23 (find_package):",
        "io.cpp:(.text+0x1a4): undefined reference to `geo::parse_header(std::istream&)'",
        "==4211==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000014",
        "terminate called after throwing an instance of 'std::out_of_range'",
        "Segmentation fault (core dumped)",
        "Aborted (core dumped)",
        "Error from server (NotFound): namespaces \"staging\" not found",
        "docker: Error response from daemon: port is already allocated.",
        "\u2502 Error: Unsupported argument",
        "Job for nginx.service failed because the control process exited with error code.",
        "cat: /etc/nginx/certs/api.key: Permission denied",
        "ssh: connect to host 10.0.3.7 port 22: Connection refused",
        "app/models/user.rb:12:in `full_name': undefined method `upcase' for nil:NilClass "
        "(NoMethodError)",
        "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:",
        "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'undici'"}) {
    EXPECT_TRUE(ReportsError(report)) << report;
  }
  for (const char* mention :
       {"Caused by: the new config", "[INFO] BUILD SUCCESS", "Error handling is described below",
        "rescue_from(ActiveRecord::RecordNotFound)", "assert_raises(KeyError)",
        "Stock (see StockError)", "[WARNING] Using platform encoding", "==> Error budget"}) {
    EXPECT_FALSE(ReportsError(mention)) << mention;
  }
}

// Verdicts and codes of more runners and compilers are reports; a field saying there was
// none ("Error: (none)" in every output of Gemini CLI's shell tool) is not, nor a count
// that sums up the reports above it.
TEST(ErrorTrail, VerdictsAndCodesAreReportsAndAFieldSayingNoneOrACountIsNot) {
  using extractive::IsErrorLine;
  using extractive::ReportsError;
  for (const char* report :
       {"not ok 3 - parses ISO dates with offsets", "KeyError: 0", "E       KeyError: None",
        "Build FAILED.", "BUILD FAILED in 2s", "Failed Api.Tests.BillingTests.RoundsHalfUp [12 ms]",
        "npm error code ELIFECYCLE", "npm error Missing script: \"lint\"",
        "ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  @acme/core@1.0.0 test: `node --test`",
        "error Command failed with exit code 1.",
        "error TS5083: Cannot read file '/repo/tsconfig.base.json'.",
        "MSBUILD : error MSB1009: Project file does not exist.",
        "Unhandled exception. System.InvalidOperationException: Sequence contains no elements"}) {
    EXPECT_TRUE(IsErrorLine(report)) << report;
    EXPECT_TRUE(ReportsError(report)) << report;
  }
  for (const char* none :
       {"Error: (none)", "Errors: 0", "error: 0", "errors: []", "Error: null",
        "Found 2 errors in 2 files.", "1 error generated.", "not ok so far",
        "The error TS2322 means a type mismatch", "Build FAILED to start is logged below",
        "ERR_ is the prefix of pnpm's codes", "ERR_TIMEOUT = 110",
        "not ok 4 - reads the cache # TODO not written yet", "not ok 5 - on windows # SKIP"}) {
    EXPECT_FALSE(ReportsError(none)) << none;
  }
  // An ERR_ code or "not ok N" in code is not even an error word.
  for (const char* code : {"  if (e.code === 'ERR_PNPM_NO_SCRIPT') return;",
                           "assert.equal(out, 'not ok 1 - x')", "    ERR_NONE = 0,"}) {
    EXPECT_FALSE(IsErrorLine(code)) << code;
  }
}

// What a program prints with no error word in it (the OS's, a linker's, a crash's) is found
// anywhere in a long output, and an agent that sends outputs back as user messages has their
// reports kept as a tool's.
TEST(ErrorTrail, ReportsWithoutAnErrorWordAndInUserMessagesAreKept) {
  std::string output;
  for (int i = 0; i < 300; ++i) output += "[" + std::to_string(i) + "%] Building CXX object\n";
  output += "io.cpp:(.text+0x1a4): undefined reference to `geo::parse_header()'\n";
  for (int i = 0; i < 300; ++i) output += "[" + std::to_string(i) + "%] Linking\n";
  const std::string observation =
      "<returncode>1</returncode>\n<output>\n  18 passing\n  1 failing\n\n  1) paginate:\n"
      "     AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n3 !== "
      "4\n</output>";
  const auto msgs = StoredMessages(
      {Message::User("make the build pass"), Call("c1", "bash", R"({"command":"make"})"),
       Message::ToolResult("c1", output), Message::Assistant("```bash\nnpm test\n```"),
       Message::User(observation),
       Message::User("Please look at the error handling in src/http.js, it fails often.")});
  const std::vector<std::string> errors = ExtractArtifacts(msgs).errors;
  EXPECT_EQ(errors, (std::vector<std::string>{
                        "io.cpp:(.text+0x1a4): undefined reference to `geo::parse_header()'",
                        "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:"}));
}

// An agent that sends each command's output back as a user message (mini-swe-agent's
// "<returncode>", SWE-agent's "OBSERVATION:"): the output is read as a tool's, so what the
// source it printed imports is not a file and the output is not one of the user's requests.
TEST(ErrorTrail, AnOutputSentAsAUserMessageIsReadAsATools) {
  const std::string listing =
      "<returncode>0</returncode>\n<output>\n     1\timport { run } from './runner';\n     "
      "2\texport const page = load('./pages/index.js');\n</output>";
  const auto msgs = StoredMessages(
      {Message::User("fix src/paginate.js"), Message::Assistant("```bash\ncat -n src/a.js\n```"),
       Message::User(listing), Message::Assistant("```bash\nnpm test\n```"),
       Message::User("OBSERVATION:\nTypeError: Cannot read properties of undefined")});
  const ArtifactTrail trail = ExtractArtifacts(msgs);
  EXPECT_EQ(trail.files, (std::vector<std::string>{"src/paginate.js", "src/a.js"}));
  EXPECT_EQ(trail.errors,
            (std::vector<std::string>{"TypeError: Cannot read properties of undefined"}));
  ExtractiveOptions options;
  const ExtractiveSummary s = SummarizeMessages(msgs, "", options, HeuristicCounter());
  EXPECT_NE(s.text.find("fix src/paginate.js"), std::string::npos) << s.text;
  EXPECT_EQ(s.text.find("<returncode>"), std::string::npos) << s.text;  // a fact, unframed
  EXPECT_NE(s.text.find("[tool] TypeError: Cannot read"), std::string::npos) << s.text;

  using extractive::ObservationBody;
  EXPECT_EQ(ObservationBody("<returncode>2</returncode>\n<output>\nboom\n</output>"), "boom");
  EXPECT_EQ(ObservationBody("OBSERVATION:\n  ls: x: No such file"), "ls: x: No such file");
  EXPECT_EQ(ObservationBody("EXECUTION RESULT of [execute_bash]:\nok\n[exit code 0]"),
            "ok\n[exit code 0]");
  // Cline's and Roo Code's result header, and the editor state Cline appends.
  const std::string cline =
      "[execute_command for 'npm test'] Result:\nCommand executed.\nOutput:\nnpm error code "
      "1\n\n<environment_details>\n# VSCode Visible Files\nsrc/a.ts\n</environment_details>";
  EXPECT_TRUE(extractive::ToolOutputInUserMessage(cline));
  EXPECT_EQ(ObservationBody(cline), "npm error code 1");
  EXPECT_FALSE(extractive::ToolOutputInUserMessage("[Important] Result: keep the API stable"));
  // The user's own words, returned the same way (an answer, feedback), stay the user's.
  EXPECT_FALSE(extractive::ToolOutputInUserMessage(
      "[plan_mode_respond] Result:\n<user_message>\nUse Postgres, not SQLite\n</user_message>"));
  // Roo Code's command lines, and the tag inside a file read: the last one is the editor's.
  EXPECT_EQ(ObservationBody("[execute_command for 'make'] Result:\nCommand executed in terminal "
                            "within working directory '/w'. Exit code: 2\nOutput:\nmake: *** "
                            "[all] Error 2"),
            "make: *** [all] Error 2");
  EXPECT_EQ(ObservationBody("[read_file for 'p.ts'] Result:\nconst t = '<environment_details>';"
                            "\n\n<environment_details>\n# Time\n</environment_details>"),
            "const t = '<environment_details>';");
  // Summarized as a tool's output, not as what the user asked.
  const ExtractiveSummary cs = SummarizeMessages(
      StoredMessages({Message::User("<task>fix the build</task>"),
                      Message::Assistant("<execute_command><command>npm test</command>"
                                         "</execute_command>"),
                      Message::User(cline)}),
      "", options, HeuristicCounter());
  EXPECT_NE(cs.text.find("[tool] npm error code 1"), std::string::npos) << cs.text;
  EXPECT_EQ(cs.text.find("] Result:"), std::string::npos) << cs.text;
}

// A service log repeats one error with a new time stamp each time: in the parts of an
// output read for every error line (its head and tail), it is kept once, without the
// stamp, in this output and the next; the same compiler error at two line numbers stays
// two errors.
TEST(ErrorTrail, AStampedRepeatIsOneError) {
  auto stamp = [](int i) {
    char s[32];
    std::snprintf(s, sizeof s, "2026-11-27 09:%02d:%02d,%03d ", i / 60 % 60, i % 60, i * 7 % 1000);
    return std::string(s);
  };
  std::string log, later;
  for (int i = 0; i < 8; ++i) {
    log += stamp(i) + "ERROR redis: Error 111 connecting to localhost:6379\n";
    later += stamp(100 + i) + "ERROR redis: Error 111 connecting to localhost:6379\n";
  }
  log += stamp(9) + "ERROR db: deadlock detected while updating stock\n";
  const std::string build =
      "src/a.cc:12:3: error: expected ';' after expression\n"
      "src/a.cc:40:3: error: expected ';' after expression\n";
  const auto msgs = StoredMessages(
      {Message::User("why is staging down?"),
       Call("c1", "bash", R"({"command":"docker logs api"})"), Message::ToolResult("c1", log),
       Call("c2", "bash", R"({"command":"docker logs api"})"), Message::ToolResult("c2", later),
       Call("c3", "bash", R"({"command":"make"})"), Message::ToolResult("c3", build)});
  const std::vector<std::string> errors = ExtractArtifacts(msgs).errors;
  EXPECT_EQ(errors,
            (std::vector<std::string>{"ERROR redis: Error 111 connecting to localhost:6379",
                                      "ERROR db: deadlock detected while updating stock",
                                      "src/a.cc:12:3: error: expected ';' after expression",
                                      "src/a.cc:40:3: error: expected ';' after expression"}));
}

TEST(ErrorTrail, ReportsInTheMiddleOfALongOutputAreKeptAsPrinted) {
  std::string output;
  for (int i = 0; i < 300; ++i)
    output += "tests/test_x.py::test_" + std::to_string(i) + " PASSED\n";
  output += ">       sku = row[\"sku\"]\nE       KeyError: 'sku'\n";
  output += "    logger.error(\"missing %s\", exc)\n";  // a mention: not from the middle
  for (int i = 0; i < 300; ++i)
    output += "tests/test_y.py::test_" + std::to_string(i) + " PASSED\n";
  const auto msgs = StoredMessages({Message::User("make the tests pass"),
                                    Call("c1", "bash", R"({"command":"pytest -v"})"),
                                    Message::ToolResult("c1", output)});
  const std::vector<std::string> errors = ExtractArtifacts(msgs).errors;
  EXPECT_EQ(errors, (std::vector<std::string>{"E       KeyError: 'sku'"}));
}

TEST(ErrorTrail, UrlsAreFilesKeptWhole) {
  const auto msgs = StoredMessages({
      Message::User("read https://docs.python.org/3/library/csv.html#csv.DictReader first."),
      Call("c1", "web_fetch", R"({"url":"https://hexdocs.pm/ecto/Ecto.Changeset.html#cast/4"})"),
      Message::ToolResult("c1", "Changeset functions"),
  });
  const std::vector<std::string> files = ExtractArtifacts(msgs).files;
  for (const char* url : {"https://docs.python.org/3/library/csv.html#csv.DictReader",
                          "https://hexdocs.pm/ecto/Ecto.Changeset.html#cast/4"}) {
    EXPECT_NE(std::find(files.begin(), files.end(), url), files.end()) << url;
  }
}

// Other agents' argument keys: Gemini CLI's read_file "absolute_path", OpenCode's
// camel-case "filePath", a fetch whose
// prompt names its URL, Codex's "workdir", a sub-agent's task naming a file; and the
// project files of more toolchains.
TEST(ErrorTrail, OtherAgentsArgumentKeysAndProjectFilesAreFiles) {
  const auto msgs = StoredMessages({
      Message::User("fix the build"),
      Call("c1", "read_file", R"({"absolute_path":"/repo/packages/core/src/round.ts"})"),
      Message::ToolResult("c1", "export const x = 1;"),
      Call("c2", "web_fetch",
           R"({"prompt":"Summarize the reporters section of https://nodejs.org/api/test.html"})"),
      Message::ToolResult("c2", "Reporters"),
      Call("c3", "shell", R"({"command":["dotnet","build","Api.sln"],"workdir":"/src/Api"})"),
      Message::ToolResult("c3", "Build succeeded."),
      Call("c4", "Task",
           R"({"description":"Audit","prompt":"Check src/billing/Tax.cs for rounding"})"),
      Message::ToolResult("c4", "Tax.cs rounds for display only."),
      Call("c5", "read", R"({"filePath":"/home/dev/app/src/cart.ts"})"),  // OpenCode's key
      Message::ToolResult("c5", "export {}"),
  });
  const std::vector<std::string> files = ExtractArtifacts(msgs).files;
  for (const char* file :
       {"/repo/packages/core/src/round.ts", "https://nodejs.org/api/test.html", "Api.sln",
        "/src/Api", "src/billing/Tax.cs", "/home/dev/app/src/cart.ts"}) {
    EXPECT_NE(std::find(files.begin(), files.end(), file), files.end()) << file;
  }
}

TEST(ErrorTrail, AnErrorARerunNoLongerPrintsIsListedWithItsFix) {
  const std::string run = R"({"command":"python -m pytest -q"})";
  const auto msgs = StoredMessages({
      Message::User("fix the importer"),
      Call("c1", "bash", run),  // seq 2
      Message::ToolResult("c1", "E   KeyError: 'sku'\nE   TypeError: bad operand\n2 failed\n"),
      Call("c2", "bash", run),
      Message::ToolResult("c2", "E   TypeError: bad operand\n1 failed\n"),  // seq 5
      Call("c3", "bash", run),
      Message::ToolResult("c3", "E   TypeError: bad operand\n1 failed\n"),
  });
  const ExtractiveSummary s = SummarizeMessages(msgs, "", {}, HeuristicCounter());
  EXPECT_NE(s.text.find("- E   KeyError: 'sku' (fixed in seq 5)\n"), std::string::npos) << s.text;
  EXPECT_NE(s.text.find("- E   TypeError: bad operand\n"), std::string::npos) << s.text;
  // One line per distinct error, however often it was printed.
  const std::string listed = s.text.substr(s.text.find(kSummaryErrorsHeader));
  size_t count = 0;
  for (size_t at = listed.find("TypeError"); at != std::string::npos;
       at = listed.find("TypeError", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << listed;
  // A condensed summary keeps what its children said of the fix.
  const MessageTokenCounter counter = HeuristicCounter();
  const std::vector<ChildSummary> children = {{s.text, s.artifacts, s.tokens}};
  const ExtractiveSummary up = CondenseSummaries(children, {}, counter);
  EXPECT_NE(up.text.find("KeyError: 'sku' (fixed in seq 5)"), std::string::npos) << up.text;
}

TEST(ErrorTrail, AnOldSummaryKeepsEarlyErrorsOverTheNewestOnes) {
  // Thirty distinct errors, each printed once, in a summary with room for about a third
  // of them: the newest few come first, then the oldest, not only the newest.
  std::vector<Message> conv = {Message::User("clean up the build")};
  for (int i = 0; i < 30; ++i) {
    const std::string id = "c" + std::to_string(i);
    conv.push_back(Call(id, "bash", R"({"command":"make step)" + std::to_string(i) + R"("})"));
    conv.push_back(Message::ToolResult(
        id, "src/unit_" + std::to_string(i) + ".c:12: error: expected ';' before '}' token\n"));
  }
  ExtractiveOptions options;
  options.target_tokens = 400;
  const ExtractiveSummary s =
      SummarizeMessages(StoredMessages(std::move(conv)), "", options, HeuristicCounter());
  ASSERT_TRUE(s.cut) << s.text;
  EXPECT_NE(s.text.find("src/unit_29.c:12: error"), std::string::npos) << s.text;  // newest
  EXPECT_NE(s.text.find("src/unit_0.c:12: error"), std::string::npos) << s.text;   // oldest
}

}  // namespace
}  // namespace missy

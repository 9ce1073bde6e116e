#include <string>
#include <vector>

#include "synthetic_builder.h"
#include "synthetic_sessions.h"

// The sessions of synthetic_sessions.h from agents and runners the others do not have: a
// TypeScript monorepo on pnpm, tsc and node's own test runner (TAP) worked by an agent with
// Gemini CLI's tools (run_shell_command, whose every output is framed: "Stdout: ...",
// "Stderr: ...", "Error: (none)", "Exit Code: 1"), and a C# service on dotnet build and
// xUnit worked by an agent with Claude Code's tool names (Bash, Read, Edit, Grep), and a
// Python session from Cline's XML tools, whose results come back as user messages, and a
// Go session from OpenCode's tools (camel-case keys, pipe-numbered listings) whose test
// runs print a new duration each time.
namespace missy::testing {

using namespace synthetic;

namespace {

// --- TypeScript on pnpm, tsc and node --test, from Gemini CLI's tools --------------------

// run_shell_command's output as Gemini CLI frames it.
std::string GeminiShell(Builder& b, const std::string& command, const std::string& out,
                        const std::string& err, int code) {
  return "Command: " + command + "\nDirectory: (root)\nStdout: " + (out.empty() ? "(empty)" : out) +
         "\nStderr: " + (err.empty() ? "(empty)" : err) +
         "\nError: (none)\nExit Code: " + std::to_string(code) +
         "\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: " +
         std::to_string(40000 + b.rng().Below(9000));
}

void Shell(Builder& b, const std::string& command, const std::string& out, const std::string& err,
           int code, std::string say = {}) {
  b.Call("run_shell_command", {{"command", command}, {"description", "Runs " + command + "."}},
         GeminiShell(b, command, out, err, code), std::move(say));
}

bool IsTest(const Problem& p) { return p.file.ends_with(".test.ts"); }

std::string PnpmBuild(const std::vector<Problem>& open) {
  std::string out =
      "\nScope: 3 of 4 workspace projects\npackages/core build$ tsc -p tsconfig.json\n";
  size_t errors = 0;
  for (const Problem& p : open) {
    if (IsTest(p)) continue;
    out += "packages/core build: " + p.block + "\n";
    ++errors;
  }
  if (errors == 0) {
    return out +
           "packages/core build: Done\npackages/api build$ tsc -p tsconfig.json\n"
           "packages/api build: Done\n";
  }
  out += "packages/core build: \npackages/core build: Found " + std::to_string(errors) +
         (errors == 1 ? " error." : " errors.") + "\npackages/core build: Failed\n";
  return out +
         "/repo/packages/core:\n ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  @acme/core@1.4.0 build: "
         "`tsc -p tsconfig.json`\nExit status 2";
}

// node --test's TAP: six tests that pass, then the session's two, failing while open.
std::string NodeTest(Builder& b, const std::vector<Problem>& all,
                     const std::vector<Problem>& open) {
  std::string out =
      "\n> @acme/core@1.4.0 test /repo/packages/core\n> node --test dist/\n\n"
      "TAP version 13\n";
  int n = 1;
  static const std::vector<std::string> kPassing = {"formats dates",    "parses plain dates",
                                                    "adds days",        "compares instants",
                                                    "reads time zones", "clamps ranges"};
  for (const std::string& name : kPassing) {
    out += "ok " + std::to_string(n++) + " - " + name +
           "\n  ---\n  duration_ms: " + std::to_string(1 + b.rng().Below(30)) + ".2\n  ...\n";
  }
  int failing = 0;
  for (const Problem& p : all) {
    if (!IsTest(p)) continue;
    bool is_open = false;
    for (const Problem& o : open) is_open = is_open || o.file == p.file;
    const std::string name = p.block.substr(0, p.block.find('\n'));
    if (is_open) {
      ++failing;
      out += "not ok " + std::to_string(n++) + " - " + p.block + "\n";
    } else {
      out += "ok " + std::to_string(n++) + " - " + name + "\n  ---\n  duration_ms: 0.4\n  ...\n";
    }
  }
  out += "1.." + std::to_string(n - 1) + "\n# tests " + std::to_string(n - 1) + "\n# pass " +
         std::to_string(n - 1 - failing) + "\n# fail " + std::to_string(failing) + "\n";
  return out;
}

}  // namespace

SyntheticSession TsPnpmGeminiSession() {
  Builder b(
      "You are an interactive CLI agent specializing in software engineering tasks. Use the "
      "tools to read, search, edit and run commands in the user's project.",
      97);
  b.User(
      "Parsing dates with a UTC offset is broken in packages/core. Make `pnpm -r build` and "
      "`pnpm --filter @acme/core test` pass.");
  std::vector<Problem> open = {
      {"tsconfig.base.json", "error TS5083: Cannot read file '/repo/tsconfig.base.json'."},
      {"packages/core/src/date.ts",
       "src/date.ts(14,7): error TS2322: Type 'string' is not assignable to type 'Date'."},
      {"packages/core/src/date.test.ts",
       "parses ISO dates with offsets\n  ---\n  duration_ms: 1.9\n  failureType: "
       "'testCodeFailure'\n  error: |-\n    Expected values to be strictly equal:\n\n    "
       "120 !== 60\n\n  code: 'ERR_ASSERTION'\n  ..."},
      {"packages/core/src/round.test.ts",
       "rounds to the nearest minute\n  ---\n  duration_ms: 0.7\n  failureType: "
       "'testCodeFailure'\n  error: \"Cannot read properties of undefined (reading "
       "'getTime')\"\n  code: 'ERR_TEST_FAILURE'\n  stack: |-\n    roundToMinute "
       "(file:///repo/packages/core/dist/round.js:9:18)\n  ..."},
  };
  const std::vector<std::string> files = {
      "/repo/packages/core/src/date.ts", "/repo/packages/core/src/round.ts",
      "/repo/packages/core/src/date.test.ts", "/repo/packages/api/src/routes.ts",
      "/repo/packages/core/tsconfig.json"};
  const std::vector<Problem> all = open;
  auto run_all = [&](Builder& bb) {
    bool tests = false, built = true;
    for (const Problem& p : open) {
      tests = tests || IsTest(p);
      built = built && IsTest(p);
    }
    Shell(bb, "pnpm -r build", PnpmBuild(open), "", built ? 0 : 1);
    if (built) {
      Shell(bb, "pnpm --filter @acme/core test", NodeTest(bb, all, open),
            tests ? " ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  @acme/core@1.4.0 test: `node --test "
                    "dist/`\nExit status 1"
                  : "",
            tests ? 1 : 0);
    }
  };
  run_all(b);
  int round = 0;
  while (!open.empty()) {
    const Problem p = open.front();
    for (int k = 0; k < 6; ++k) {
      const std::string& f = k == 0 ? "/repo/" + p.file : files[b.rng().Below(files.size())];
      b.Call("read_file", {{"absolute_path", f}}, b.Code(Lang::kTs, 140, 1));
      b.Call("search_file_content", {{"pattern", b.rng().Of(kWords) + "At"}, {"path", "packages"}},
             "Found 4 matches for pattern in path \"packages\":\n---\n" + b.Code(Lang::kTs, 12, 1));
      if (k % 3 == 2) run_all(b);
    }
    if (round == 0) {
      Shell(b, "npm run lint", "",
            "npm error Missing script: \"lint\"\nnpm error\nnpm error To "
            "see a list of scripts, run:\nnpm error   npm run\nnpm error A complete log of this "
            "run can be found in: /home/dev/.npm/_logs/2026-11-20T10_04_51_220Z-debug-0.log",
            1);
      b.Call("web_fetch",
             {{"prompt", "Summarize the reporters section of https://nodejs.org/api/test.html"}},
             b.Prose(5));
    }
    if (round == 1) {
      Shell(b, "pnpm --filter @acme/core typecheck", "",
            " ERR_PNPM_NO_SCRIPT  Missing script: typecheck\n\nCommand \"typecheck\" not found.",
            1);
      b.Say("packages/legacy/src/time.ts has its own parser; it is not built any more.");
    }
    if (round == 2) {
      Shell(b, "node scripts/bench-dates.mjs", "",
            "node:internal/modules/esm/resolve:854\n  throw new ERR_MODULE_NOT_FOUND(packageName, "
            "fileURLToPath(base), null);\n        ^\n\nError [ERR_MODULE_NOT_FOUND]: Cannot find "
            "package 'tinybench' imported from /repo/scripts/bench-dates.mjs",
            1);
    }
    b.Call("replace",
           {{"file_path", "/repo/" + p.file},
            {"old_string", "/* before */"},
            {"new_string", "/* after */"}},
           "Successfully modified file: /repo/" + p.file + " (1 replacements).",
           "Fixing " + p.file + ".");
    open.erase(open.begin());
    run_all(b);
    ++round;
  }
  b.Say("Both commands pass now.");
  return {"ts-pnpm-gemini", b.Take()};
}

namespace {

// --- C#: dotnet build and test, from Claude Code's tools ------------------------------------

std::string DotnetBuild(Builder& b, const std::vector<Problem>& open) {
  std::string out =
      "MSBuild version 17.8.3+195e7f5a3 for .NET\n  Determining projects to "
      "restore...\n  All projects are up-to-date for restore.\n";
  int errors = 0;
  for (const Problem& p : open) {
    if (!p.file.ends_with(".cs")) continue;
    out += p.block + "\n";
    ++errors;
  }
  if (errors == 0) {
    return out +
           "  Api -> /src/Api/bin/Debug/net8.0/Api.dll\n\nBuild succeeded.\n    0 "
           "Warning(s)\n    0 Error(s)\n\nTime Elapsed 00:00:0" +
           std::to_string(2 + b.rng().Below(7)) + ".41\n";
  }
  return out + "\nBuild FAILED.\n\n    0 Warning(s)\n    " + std::to_string(errors) +
         " Error(s)\n\nTime Elapsed 00:00:0" + std::to_string(2 + b.rng().Below(7)) + ".87\n";
}

std::string DotnetTest(Builder& b, const std::vector<Problem>& open) {
  std::string out =
      "  Determining projects to restore...\n  Api.Tests -> "
      "/src/Api.Tests/bin/Debug/net8.0/Api.Tests.dll\nTest run for "
      "/src/Api.Tests/bin/Debug/net8.0/Api.Tests.dll (.NETCoreApp,Version=v8.0)\n"
      "Starting test execution, please wait...\n";
  int failed = 0;
  for (const Problem& p : open) {
    if (!p.file.ends_with("Tests.cs")) continue;
    out += p.block + "\n";
    ++failed;
  }
  const int total = 42;
  return out + (failed ? "\nFailed!  - Failed:     " : "\nPassed!  - Failed:     ") +
         std::to_string(failed) + ", Passed:    " + std::to_string(total - failed) +
         ", Skipped:     0, Total:    " + std::to_string(total) +
         ", Duration: " + std::to_string(200 + b.rng().Below(300)) +
         " ms - Api.Tests.dll (net8.0)\n";
}

}  // namespace

SyntheticSession CsharpDotnetSession() {
  Builder b("You are Claude Code, an agent for software engineering tasks in the terminal.", 101);
  b.User(
      "Invoices round the wrong way since the billing refactor. Make `dotnet build` and "
      "`dotnet test` pass in /src; the service is Api/Services/Billing.cs.");
  std::vector<Problem> open = {
      {"Api/Services/Billing.cs",
       "/src/Api/Services/Billing.cs(42,17): error CS0103: The name 'rate' does not exist in "
       "the current context [/src/Api/Api.csproj]"},
      {"Api/Services/Invoice.cs",
       "/src/Api/Services/Invoice.cs(18,9): error CS0246: The type or namespace name "
       "'MoneyRounding' could not be found (are you missing a using directive or an assembly "
       "reference?) [/src/Api/Api.csproj]"},
      {"Api.Tests/BillingTests.cs",
       "  Failed Api.Tests.BillingTests.RoundsHalfUp [12 ms]\n  Error Message:\n   "
       "Assert.Equal() Failure: Values differ\nExpected: 10.05\nActual:   10.04\n  Stack "
       "Trace:\n     at Api.Tests.BillingTests.RoundsHalfUp() in "
       "/src/Api.Tests/BillingTests.cs:line 31"},
      {"Api.Tests/InvoiceTests.cs",
       "  Failed Api.Tests.InvoiceTests.TotalsEmptyInvoice [3 ms]\n  Error Message:\n   "
       "System.InvalidOperationException : Sequence contains no elements\n  Stack Trace:\n     "
       "at System.Linq.ThrowHelper.ThrowNoElementsException()\n     at "
       "Api.Services.Invoice.Total() in /src/Api/Services/Invoice.cs:line 57"},
  };
  const std::vector<std::string> files = {
      "/src/Api/Services/Billing.cs", "/src/Api/Services/Invoice.cs",
      "/src/Api.Tests/BillingTests.cs", "/src/Api/Program.cs", "/src/Api/Api.csproj"};
  auto check = [&](Builder& bb) {
    bool builds = true;
    for (const Problem& p : open) builds = builds && !p.file.starts_with("Api/");
    bb.Call("Bash", {{"command", "cd /src && dotnet build"}, {"description", "Build"}},
            DotnetBuild(bb, open));
    if (builds) {
      bb.Call("Bash", {{"command", "cd /src && dotnet test"}, {"description", "Test"}},
              DotnetTest(bb, open));
    }
  };
  check(b);
  int round = 0;
  while (!open.empty()) {
    const Problem p = open.front();
    for (int k = 0; k < 6; ++k) {
      const std::string& f = k == 0 ? "/src/" + p.file : files[b.rng().Below(files.size())];
      b.Call("Read", {{"file_path", f}}, b.Code(Lang::kJava, 150, 1));
      b.Call("Grep",
             {{"pattern", b.rng().Of(kWords)}, {"path", "/src"}, {"output_mode", "content"}},
             b.Code(Lang::kJava, 20, 1));
      if (k % 3 == 2) check(b);
    }
    if (round == 0) {
      b.Call("Bash", {{"command", "dotnet build Api.sln"}, {"description", "Build the solution"}},
             "MSBUILD : error MSB1009: Project file does not exist.\nSwitch: Api.sln\n");
      b.Call("WebFetch",
             {{"url", "https://learn.microsoft.com/en-us/dotnet/api/system.math.round"},
              {"prompt", "MidpointRounding modes"}},
             b.Prose(5));
    }
    if (round == 1) {
      b.Call("Bash", {{"command", "cd /src/Api && dotnet run -- --seed"}, {"description", "Seed"}},
             "Unhandled exception. System.IO.FileNotFoundException: Could not find file "
             "'/src/Api/seed/invoices.json'.\nFile name: '/src/Api/seed/invoices.json'\n   at "
             "Microsoft.Win32.SafeHandles.SafeFileHandle.Open(String fullPath)\n");
      b.Say("Api/Services/Tax.cs rounds too, but only for display; leaving it.");
    }
    b.Call(
        "Edit",
        {{"file_path", "/src/" + p.file}, {"old_string", "// before"}, {"new_string", "// after"}},
        "The file /src/" + p.file + " has been updated.", "Fixing " + p.file + ".");
    open.erase(open.begin());
    check(b);
    ++round;
  }
  b.Say("Build and tests pass.");
  return {"csharp-dotnet", b.Take()};
}

namespace {

// --- Python from Cline's XML tools: results come back as user messages ----------------

// One tool use of such an agent: its thinking and the call as XML in its text, and the
// result as the next user message, under Cline's header and above the editor's state.
void ClineTool(Builder& b, const std::string& thought, const std::string& call,
               const std::string& header, const std::string& result, const std::string& file) {
  b.Say(thought + "\n\n" + call);
  b.User("[" + header + "] Result:\n" + result +
         "\n\n<environment_details>\n# VSCode Visible Files\n" + file +
         "\n\n# Current Time\n11/20/2026, 10:" + std::to_string(10 + b.rng().Below(50)) +
         " AM (UTC)\n</environment_details>");
}

void ClineCommand(Builder& b, const std::string& thought, const std::string& command,
                  const std::string& output) {
  ClineTool(b, thought,
            "<execute_command>\n<command>" + command +
                "</command>\n<requires_approval>false</requires_approval>\n</execute_command>",
            "execute_command for '" + command + "'", "Command executed.\nOutput:\n" + output,
            "src/orders/total.py");
}

std::string Pytest(Builder& b, const std::vector<Problem>& open) {
  std::string out =
      "============================= test session starts ==============================\n"
      "collected 38 items\n\n";
  for (int i = 0; i < 4; ++i)
    out += "tests/test_" + b.rng().Of(kWords) + ".py ........  [ 2" + std::to_string(i) + "%]\n";
  if (open.empty())
    return out +
           "\n============================== 38 passed in 1.42s ==============================\n";
  out += "\n=================================== FAILURES ===================================\n";
  for (const Problem& p : open) out += p.block + "\n";
  return out +
         "=========================== short test summary info ============================\n" +
         std::to_string(open.size()) + " failed, " + std::to_string(38 - open.size()) +
         " passed in 1.7" + std::to_string(b.rng().Below(10)) + "s\n";
}

}  // namespace

SyntheticSession PythonClineSession() {
  Builder b(
      "You are Cline, a highly skilled software engineer. Use one tool per message, in "
      "XML, and wait for its result.",
      107);
  b.User(
      "<task>\nOrder totals are off by a cent and the nightly import crashes. Fix src/orders "
      "so that `python -m pytest -q` and `mypy src` pass.\n</task>\n\n<environment_details>\n"
      "# VSCode Visible Files\nsrc/orders/total.py\n\n# Current Working Directory "
      "(/home/dev/shop) Files\npyproject.toml\nsrc/\ntests/\n</environment_details>");
  std::vector<Problem> open = {
      {"src/orders/importer.py",
       "_____________________________ test_nightly_import _____________________________\n"
       "    def test_nightly_import(db):\n>       run_import(db, 'fixtures/orders.csv')\n"
       "E   sqlite3.OperationalError: no such table: orders\n\nsrc/orders/importer.py:27: "
       "OperationalError"},
      {"src/orders/total.py",
       "____________________________ test_rounds_half_up ______________________________\n"
       "E   AssertionError: assert Decimal('10.04') == Decimal('10.05')\n"
       "FAILED tests/test_total.py::test_rounds_half_up - AssertionError: assert "
       "Decimal('10.04') == Decimal('10.05')"},
      {"src/orders/dates.py",
       "______________________ ERROR collecting tests/test_dates.py ______________________\n"
       "E   ModuleNotFoundError: No module named 'dateutil'"},
  };
  const std::vector<std::string> files = {"src/orders/importer.py", "src/orders/total.py",
                                          "src/orders/dates.py", "tests/test_total.py",
                                          "src/orders/models.py"};
  ClineCommand(b, "<thinking>Run the tests first.</thinking>", "python -m pytest -q",
               Pytest(b, open));
  int round = 0;
  while (!open.empty()) {
    const Problem p = open.front();
    for (int k = 0; k < 6; ++k) {
      const std::string& f = k == 0 ? p.file : files[b.rng().Below(files.size())];
      ClineTool(b, "<thinking>Read " + f + ".</thinking>",
                "<read_file>\n<path>" + f + "</path>\n</read_file>", "read_file for '" + f + "'",
                "<file><path>" + f + "</path>\n<content>\n" + b.Code(Lang::kPython, 140, 1) +
                    "</content>\n</file>",
                f);
      ClineTool(b, "<thinking>Where else is it used?</thinking>",
                "<search_files>\n<path>src</path>\n<regex>" + b.rng().Of(kWords) +
                    "</regex>\n</search_files>",
                "search_files for '" + b.rng().Of(kWords) + "'",
                "Found 6 results.\n\n" + b.Code(Lang::kPython, 18, 1), f);
      if (k % 3 == 2)
        ClineCommand(b, "<thinking>Again.</thinking>", "python -m pytest -q", Pytest(b, open));
    }
    if (round == 0) {
      ClineCommand(b, "<thinking>Lint it.</thinking>", "ruff check src",
                   "bash: ruff: command not found\n");
      ClineTool(b, "<thinking>Check the rounding modes.</thinking>",
                "<web_fetch>\n<url>https://docs.python.org/3/library/decimal.html#rounding-modes"
                "</url>\n</web_fetch>",
                "web_fetch for 'https://docs.python.org/3/library/decimal.html#rounding-modes'",
                b.Prose(5), "src/orders/total.py");
      ClineCommand(b, "<thinking>Type check.</thinking>", "mypy src",
                   "src/orders/total.py:41: error: Incompatible return value type (got \"str\", "
                   "expected \"Decimal\")  [return-value]\nFound 1 error in 1 file (checked 12 "
                   "source files)\n");
    }
    if (round == 1) b.Say("src/orders/legacy.py rounds the old way; it is not imported anywhere.");
    ClineTool(b, "<thinking>Fix it.</thinking>",
              "<replace_in_file>\n<path>" + p.file +
                  "</path>\n<diff>\n------- SEARCH\n# before\n=======\n# after\n+++++++ "
                  "REPLACE\n</diff>\n</replace_in_file>",
              "replace_in_file for '" + p.file + "'",
              "The content was successfully saved to " + p.file + ".", p.file);
    open.erase(open.begin());
    ClineCommand(b, "<thinking>Run the tests.</thinking>", "python -m pytest -q", Pytest(b, open));
    ++round;
  }
  ClineCommand(b, "<thinking>And the types.</thinking>", "mypy src",
               "Success: no issues found in 12 source files\n");
  b.Say(
      "<attempt_completion>\n<result>Totals round half up, the import creates its table, "
      "and the tests and mypy pass.</result>\n</attempt_completion>");
  return {"python-cline", b.Take()};
}

namespace {

// --- Go from OpenCode's tools: camel-case keys, a read's pipe-numbered listing, and test
// runs whose verdicts carry a new duration every time --------------------------------------

std::string OpenCodeListing(Builder& b, int lines) {
  std::string out = "<file>\n";
  const std::string code = b.Code(Lang::kGo, lines, 1);
  int n = 1;
  for (size_t at = 0; at < code.size();) {
    size_t nl = code.find('\n', at);
    if (nl == std::string::npos) nl = code.size();
    std::string line = code.substr(at, nl - at);
    line = line.substr(std::min(line.find('\t') + 1, line.size()));  // cat -n's number off
    char num[16];
    std::snprintf(num, sizeof num, "%05d| ", n++);
    out += num + line + "\n";
    at = nl + 1;
  }
  return out + "</file>";
}

std::string GoTestTimed(Builder& b, const std::vector<Problem>& open) {
  auto seconds = [&](int max_ms) {
    char t[16];
    std::snprintf(t, sizeof t, "%d.%03ds", 0, static_cast<int>(1 + b.rng().Below(max_ms)));
    return std::string(t);
  };
  std::string out;
  for (int i = 0; i < 10; ++i)
    out += "=== RUN   Test" + b.Ident() + "\n--- PASS (" + seconds(9) + ")\n";
  for (const Problem& p : open) {
    out += "=== RUN   " + p.block.substr(0, p.block.find('\n')) +
           "\n--- FAIL: " + p.block.substr(0, p.block.find('\n')) + " (" + seconds(30) + ")\n" +
           p.block.substr(p.block.find('\n') + 1) + "\n";
  }
  if (open.empty()) return out + "PASS\nok  \tgithub.com/acme/clock\t" + seconds(90) + "\n";
  return out + "FAIL\nFAIL\tgithub.com/acme/clock\t" + seconds(90) + "\nFAIL\n";
}

}  // namespace

SyntheticSession GoOpenCodeSession() {
  Builder b(
      "You are opencode, an interactive CLI tool that helps users with software "
      "engineering tasks.",
      113);
  b.User("The clock package mis-parses durations and schedules. Make `go test ./...` pass.");
  std::vector<Problem> open = {
      {"/home/dev/clock/parse.go",
       "TestParseDuration\n    parse_test.go:31: ParseDuration(\"1m30s\") = 90s, want 1m30s"},
      {"/home/dev/clock/schedule.go",
       "TestNextRun\n    schedule_test.go:48: NextRun(\"0 9 * * MON\") = 2026-11-30 08:00, want "
       "2026-11-30 09:00"},
      {"/home/dev/clock/zone.go",
       "TestZoneLoad\n    zone_test.go:12: LoadLocation(\"Europe/Oslo\"): unknown time zone "
       "Europe/Oslo"},
  };
  const std::vector<std::string> files = {
      "/home/dev/clock/parse.go", "/home/dev/clock/schedule.go", "/home/dev/clock/zone.go",
      "/home/dev/clock/parse_test.go", "/home/dev/clock/go.mod"};
  auto run = [&](Builder& bb) {
    bb.Call("bash", {{"command", "go test ./..."}, {"description", "Runs the tests"}},
            GoTestTimed(bb, open));
  };
  run(b);
  int round = 0;
  while (!open.empty()) {
    for (int k = 0; k < 8; ++k) {
      const std::string& f = files[b.rng().Below(files.size())];
      b.Call("read", {{"filePath", f}, {"offset", 0}, {"limit", 200}}, OpenCodeListing(b, 120));
      b.Call("grep",
             {{"pattern", b.rng().Of(kWords)}, {"path", "/home/dev/clock"}, {"include", "*.go"}},
             "Found 3 matches\n" + f + ":\n  Line 12: " + b.Ident() + " := 0\n");
      if (k % 2 == 1) run(b);
    }
    if (round == 0) {
      b.Call("bash", {{"command", "go vet ./..."}, {"description", "Vets the package"}},
             "# github.com/acme/clock\n./schedule.go:71:2: unreachable code\n");
      b.Call("webfetch", {{"url", "https://go.dev/doc/effective_go#time"}, {"format", "markdown"}},
             b.Prose(4));
    }
    if (round == 1) b.Say("/home/dev/clock/legacy/cron.go has its own parser; it is not built.");
    const std::string fixed = open.front().file;
    b.Call("edit", {{"filePath", fixed}, {"oldString", "// before"}, {"newString", "// after"}},
           "Edit applied successfully.", "Fixing " + fixed + ".");
    open.erase(open.begin());
    run(b);
    ++round;
  }
  b.Say("All tests pass.");
  return {"go-opencode", b.Take()};
}

}  // namespace missy::testing

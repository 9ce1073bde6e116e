#include <boost/json.hpp>
#include <string>
#include <vector>

#include "core/message_json.h"
#include "synthetic_builder.h"
#include "synthetic_sessions.h"

// The long session of synthetic_sessions.h (1,000+ messages, outputs of 40,000 characters),
// and the list of all of them.
namespace missy::testing {

using namespace synthetic;

namespace {

// --- The long session ---------------------------------------------------------------------

// About `chars` characters of a service's log: timestamped lines, and, when `error` is not
// empty, an exception's traceback somewhere in the middle.
std::string ServiceLog(Builder& b, size_t chars, const std::string& error) {
  std::string out;
  int line = 0;
  const size_t middle = chars * (3 + b.rng().Below(4)) / 10;
  bool placed = error.empty();
  while (out.size() < chars) {
    char ts[64];
    std::snprintf(ts, sizeof ts, "2026-11-27 09:%02d:%02d,%03d ", (line / 60) % 60, line % 60,
                  static_cast<int>(b.rng().Below(1000)));
    out += std::string(ts) + "INFO     uvicorn.access: 172.18.0." +
           std::to_string(2 + b.rng().Below(8)) + " - \"GET /api/v1/" + b.rng().Of(kWords) + "s/" +
           std::to_string(b.rng().Below(5000)) + " HTTP/1.1\" 200 OK\n";
    if (!placed && out.size() > middle) {
      out += std::string(ts) +
             "ERROR    uvicorn.error: Exception in ASGI application\n"
             "Traceback (most recent call last):\n  File \"/app/api/routes/" +
             b.rng().Of(kWords) + ".py\", line " + std::to_string(20 + b.rng().Below(200)) +
             ", in handler\n    return await call_next(request)\n" + error + "\n";
      placed = true;
    }
    ++line;
  }
  return out;
}

// A verbose pytest run of about `chars` characters: PASSED lines, a flaky ERROR repeated
// every run, and the `failures` (exception lines) in the middle.
std::string VerbosePytest(Builder& b, size_t chars, const std::vector<std::string>& failures) {
  std::string out =
      "============================= test session starts ====\ncollected 2113 "
      "items\n\n";
  const size_t middle = chars / 2;
  bool placed = false;
  int n = 0;
  while (out.size() < chars) {
    out += "tests/api/test_" + b.rng().Of(kWords) + ".py::test_" + b.Ident() + " PASSED [" +
           std::to_string(n++ % 100) + "%]\n";
    if (!placed && out.size() > middle) {
      for (const std::string& f : failures) {
        out += "____ test_" + b.Ident() + " ____\n\n    def test_case():\n>       run()\nE   " + f +
               "\n\n";
      }
      placed = true;
    }
  }
  out +=
      "=========================== short test summary info ====\nERROR "
      "tests/api/test_cache.py::test_ttl - redis.exceptions.ConnectionError: Error 111 "
      "connecting to localhost:6379. Connection refused.\n";
  return out + "==== " + std::to_string(failures.size()) +
         " failed, 2111 passed, 1 error in "
         "48.20s ====\n";
}

struct Chapter {
  std::string request;              // the user's message opening it
  std::vector<std::string> files;   // what it works on
  std::vector<std::string> errors;  // exception lines its test runs report until fixed
  std::string url;                  // documentation fetched, may be empty
  std::string aside;                // a file named once in passing, may be empty
};

}  // namespace

SyntheticSession LongMixedSession() {
  Builder b(
      "You are a coding agent maintaining the platform monorepo (api/ in Python, web/ in "
      "TypeScript).",
      71);
  b.User(
      "We are cleaning up the platform monorepo this week; I will give you one item at a "
      "time. First: the api service does not start in CI. Logs are in docker compose.");
  // Reported once, early, and fixed: what a long session loses first.
  b.Bash("docker compose logs --no-color api | tail -400",
         ServiceLog(b, 40000, "ModuleNotFoundError: No module named 'redis'"),
         "Checking the api logs.");
  b.Bash("python -m pytest -q api/tests/test_health.py",
         "E   ModuleNotFoundError: No module named 'redis'\nERROR api/tests/test_health.py - "
         "ModuleNotFoundError: No module named 'redis'\n1 error in 0.22s\n");
  b.Edit("api/requirements.txt", "fastapi==0.110.0", "fastapi==0.110.0\nredis==5.0.1",
         "Adding redis to api/requirements.txt.");
  b.Bash("mix run -e 'Worker.Jobs.enqueue(nil)' --no-start",
         "** (BadMapError) expected a map, got: nil\n    (worker 0.4.0) lib/worker/jobs.ex:18: "
         "Worker.Jobs.enqueue/1\n");
  b.Bash("cd worker && mix run",
         "** (Mix) Could not start application worker: "
         "Worker.Application.start(:normal, []) returned an error: "
         "shutdown: failed to start child: Worker.Redis\n");
  // A type check with many distinct errors, fixed over the next rounds, inside a long
  // output: each is printed once or twice, early, and never again.
  std::vector<std::string> mypy;
  for (int i = 0; i < 24; ++i) {
    const std::string module = b.rng().Of(kWords) + "_" + std::to_string(i);
    mypy.push_back("api/" + b.rng().Of(kWords) + "s/" + module +
                   ".py:" + std::to_string(10 + b.rng().Below(300)) + ": error: " +
                   b.rng().Of(std::vector<std::string>{
                       "Incompatible types in assignment (expression has type \"str\", "
                       "variable has type \"int\")  [assignment]",
                       "Item \"None\" of \"Optional[Order]\" has no attribute \"" + b.Ident() +
                           "\"  [union-attr]",
                       "Argument 1 to \"" + b.Ident() +
                           "\" has incompatible type \"str\"; "
                           "expected \"Decimal\"  [arg-type]",
                       "Missing return statement  [return]"}));
  }
  for (int round = 0; round < 4; ++round) {
    std::string out = ServiceLog(b, 30000, "");
    for (size_t i = static_cast<size_t>(round) * 6; i < mypy.size(); ++i) out += mypy[i] + "\n";
    out += "Found " + std::to_string(mypy.size() - static_cast<size_t>(round) * 6) +
           " errors in 19 files (checked 412 source files)\n";
    b.Bash("mypy api", out, round == 0 ? "Type-checking the api first." : "");
    for (int k = 0; k < 6; ++k) {
      const std::string& line = mypy[static_cast<size_t>(round) * 6 + static_cast<size_t>(k)];
      b.Edit(line.substr(0, line.find(':')), "x", "y");
    }
  }
  b.Say(
      "Files I looked at in passing while at it: api/settings/base.py, api/settings/ci.py, "
      "api/middleware/cors.py, api/middleware/timing.py, worker/lib/worker/redis.ex, "
      "worker/config/runtime.exs, web/src/env.d.ts, web/vite.config.ts, .github/workflows/"
      "ci.yml, docker-compose.override.yml. Reference: "
      "https://docs.docker.com/compose/how-tos/environment-variables/ and "
      "https://mypy.readthedocs.io/en/stable/error_code_list.html#check-that-attribute-exists"
      "-union-attr.");
  const std::vector<Chapter> chapters = {
      {"Next: the orders endpoint returns 500 for orders without a customer.",
       {"api/routes/orders.py", "api/models/order.py", "api/tests/test_orders.py"},
       {"AttributeError: 'NoneType' object has no attribute 'email'",
        "AssertionError: assert 500 == 200"},
       "https://fastapi.tiangolo.com/tutorial/handling-errors/",
       "api/routes/legacy_orders.py"},
      {"Next: prices are rounded wrongly in invoices.",
       {"api/services/invoice.py", "api/services/money.py", "api/tests/test_invoice.py"},
       {"AssertionError: assert Decimal('10.04') == Decimal('10.05')",
        "decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]"},
       "https://docs.python.org/3/library/decimal.html#rounding-modes",
       ""},
      {"Next: the web cart page crashes when the cart is empty.",
       {"web/src/pages/cart.tsx", "web/src/hooks/useCart.ts", "web/src/api/client.ts"},
       {"TypeError: Cannot read properties of undefined (reading 'map')"},
       "",
       "web/src/pages/checkout.tsx"},
      {"Next: the nightly export job times out.",
       {"api/jobs/export.py", "api/db/queries.py", "api/tests/test_export.py"},
       {"sqlalchemy.exc.OperationalError: (psycopg2.errors.QueryCanceled) canceling statement "
        "due to statement timeout",
        "TimeoutError: export did not finish within 300 seconds"},
       "https://docs.sqlalchemy.org/en/20/orm/queryguide/api.html#yield-per",
       ""},
      {"Next: users with unicode names cannot log in.",
       {"api/auth/login.py", "api/auth/tokens.py", "api/tests/test_login.py"},
       {"UnicodeEncodeError: 'latin-1' codec can't encode character '\\u0142' in position 3",
        "jwt.exceptions.InvalidSignatureError: Signature verification failed"},
       "",
       "api/auth/sso.py"},
      {"Next: the search endpoint ignores the page size.",
       {"api/routes/search.py", "api/search/paginate.py", "api/tests/test_search.py"},
       {"AssertionError: assert 50 == 20"},
       "https://docs.pydantic.dev/latest/concepts/fields/",
       ""},
      {"Next: the web build fails on the new eslint config.",
       {"web/.eslintrc.json", "web/src/components/Table.tsx", "web/package.json"},
       {"Error: Failed to load plugin 'react-hooks' declared in '.eslintrc.json': Cannot find "
        "module 'eslint-plugin-react-hooks'"},
       "https://eslint.org/docs/latest/use/configure/plugins",
       "web/src/components/Modal.tsx"},
      {"Next: stock reservations are sometimes doubled.",
       {"api/services/stock.py", "api/db/locks.py", "api/tests/test_stock.py"},
       {"AssertionError: assert 2 == 1",
        "sqlalchemy.exc.IntegrityError: (psycopg2.errors.UniqueViolation) duplicate key value "
        "violates unique constraint \"reservations_order_id_key\""},
       "",
       ""},
      {"Next: emails are sent twice on retry.",
       {"api/jobs/mailer.py", "api/services/outbox.py", "api/tests/test_mailer.py"},
       {"AssertionError: expected 'send' to be called once. Called 2 times."},
       "https://docs.celeryq.dev/en/stable/userguide/tasks.html#retrying",
       "api/jobs/sms.py"},
      {"Next: the CSV import rejects files with a BOM.",
       {"api/importers/csv_import.py", "api/tests/test_csv_import.py"},
       {"KeyError: '\\ufeffsku'", "csv.Error: line contains NUL"},
       "",
       ""},
      {"Next: the admin report is slow; add an index.",
       {"api/db/migrations/0042_report_index.py", "api/reports/admin.py"},
       {"alembic.util.exc.CommandError: Can't locate revision identified by '0041'"},
       "https://alembic.sqlalchemy.org/en/latest/branches.html",
       ""},
      {"Last: update the README with what changed this week.",
       {"README.md", "docs/changes.md"},
       {},
       "",
       "docs/runbook.md"},
  };
  for (const Chapter& c : chapters) {
    b.User(c.request);
    std::vector<std::string> open = c.errors;
    for (int step = 0; step < 40; ++step) {
      const std::string& file = c.files[b.rng().Below(c.files.size())];
      const Lang lang = file.ends_with(".py") ? Lang::kPython : Lang::kTs;
      switch (step % 8) {
        case 0:
          b.Read(file, lang, 150);
          break;
        case 1:
          b.Bash("grep -rn \"" + b.rng().Of(kWords) + "\" api web/src | head -50",
                 b.Code(lang, 50, 1));
          break;
        case 2:  // the whole suite: 40,000 characters
          b.Bash("python -m pytest -v api/tests", VerbosePytest(b, 40000, open));
          break;
        case 3:
          b.Bash("docker compose logs --no-color api | tail -400",
                 ServiceLog(b, step == 3 && !open.empty() ? 40000 : 12000, ""));
          break;
        case 4:
          if (step == 4 && !c.url.empty()) {
            b.Fetch(c.url, 10);
          } else {
            b.Read(c.files[0], lang, 220);
          }
          break;
        case 5:
          b.Bash("python -m pytest -q " + c.files.back(), VerbosePytest(b, 3000, open));
          break;
        case 6:
          if (!open.empty() && step >= 14) {
            b.Edit(file, "# TODO", "# done", "Fixing: " + open.front());
            open.erase(open.begin());
          } else {
            b.Read(file, lang, 90);
          }
          break;
        case 7:
          if (step == 15 && !c.aside.empty()) {
            b.Say("Side note: " + c.aside + " has the same pattern but is unused.");
          }
          b.Bash("git diff --stat", " " + file + " | " + std::to_string(2 + b.rng().Below(30)) +
                                        " ++--\n 1 file changed\n");
          break;
      }
    }
    b.Say("Done with this item.");
  }
  b.User("Thanks, that is all for this week.");
  b.Say("You're welcome.");
  return {"long-mixed", b.Take()};
}

std::vector<SyntheticSession> SyntheticSessions() {
  return {PythonPytestSession(),  RustCargoSession(),        GoModuleSession(),
          TypeScriptNpmSession(), ElixirMixSession(),        LongMixedSession(),
          JavaGradleSession(),    CppCmakeSession(),         OpsDeploySession(),
          RubyRspecSession(),     NodeObservationsSession(), TsPnpmGeminiSession(),
          CsharpDotnetSession(),  PythonClineSession(),      GoOpenCodeSession()};
}

std::string ToJsonl(const std::vector<Message>& messages) {
  std::string out;
  for (const Message& m : messages) out += boost::json::serialize(MessageToJson(m)) + "\n";
  return out;
}

}  // namespace missy::testing

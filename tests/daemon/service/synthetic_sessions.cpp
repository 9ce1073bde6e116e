#include "synthetic_sessions.h"

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "synthetic_builder.h"

namespace missy::testing {

using namespace synthetic;

namespace {

// --- Python: pytest failures fixed one by one --------------------------------------------

struct PyFailure {
  std::string test, file, source, error;  // error: the exception line as pytest prints it
};

std::string PytestRun(Builder& b, const std::vector<PyFailure>& failing, int total) {
  std::string out =
      "============================= test session starts "
      "==============================\nplatform linux -- Python 3.11.6, pytest-7.4.3, "
      "pluggy-1.3.0\nrootdir: /home/dev/inventory\ncollected " +
      std::to_string(total) + " items\n\n";
  for (const char* mod : {"test_importer", "test_models", "test_pricing", "test_reports"}) {
    std::string dots;
    for (int i = 0; i < total / 4; ++i) dots += '.';
    for (const PyFailure& f : failing) {
      if (f.test.find(mod) != std::string::npos) dots[b.rng().Below(dots.size())] = 'F';
    }
    out += "tests/" + std::string(mod) + ".py " + dots + "   [ 25%]\n";
  }
  if (!failing.empty()) {
    out +=
        "\n=================================== FAILURES "
        "===================================\n";
  }
  for (const PyFailure& f : failing) {
    const std::string name = f.test.substr(f.test.rfind(':') + 1);
    out += "____________________ " + name + " ____________________\n\n    def " + name +
           "():\n        rows = load_fixture(\"" + b.rng().Of(kWords) + ".csv\")\n>       " +
           "result = " + b.Ident() + "(rows)\n\n" + f.test.substr(0, f.test.find("::")) + ":" +
           std::to_string(20 + b.rng().Below(80)) +
           ": \n_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n\n    def " +
           b.Ident() + "(rows):\n>       " + f.source + "\nE       " + f.error + "\n\n" + f.file +
           ":" + std::to_string(10 + b.rng().Below(90)) + ": " +
           f.error.substr(0, f.error.find(':')) + "\n";
  }
  out +=
      "=========================== short test summary info "
      "============================\n";
  for (const PyFailure& f : failing) out += "FAILED " + f.test + " - " + f.error + "\n";
  out += "========================= " +
         (failing.empty() ? std::string() : std::to_string(failing.size()) + " failed, ") +
         std::to_string(total - static_cast<int>(failing.size())) + " passed in 0." +
         std::to_string(30 + b.rng().Below(60)) + "s =========================\n";
  return out;
}

}  // namespace

SyntheticSession PythonPytestSession() {
  Builder b("You are a coding agent. Use the tools to inspect and change the repository.", 11);
  b.User(
      "The inventory importer's tests fail since we moved to the new CSV export format. Make "
      "`python -m pytest -q` pass again without changing the tests. The importer lives in "
      "inventory/importer.py and the fixtures in tests/fixtures/.");
  std::vector<PyFailure> failing = {
      {"tests/test_importer.py::test_imports_yaml_overrides", "inventory/overrides.py",
       "import yaml", "ModuleNotFoundError: No module named 'yaml'"},
      {"tests/test_importer.py::test_parse_row_new_format", "inventory/importer.py",
       "sku = row[\"sku\"]", "KeyError: 'sku'"},
      {"tests/test_models.py::test_quantity_is_int", "inventory/models.py",
       "return self.qty + delta", "TypeError: unsupported operand type(s) for +: 'int' and 'str'"},
      {"tests/test_pricing.py::test_blank_price", "inventory/pricing.py", "cents = int(price)",
       "ValueError: invalid literal for int() with base 10: ''"},
      {"tests/test_reports.py::test_report_without_notes", "inventory/reports.py",
       "notes = item.notes.strip()", "AttributeError: 'NoneType' object has no attribute 'strip'"},
      {"tests/test_pricing.py::test_discount_rounding", "inventory/pricing.py",
       "assert round_cents(1.005) == 101", "AssertionError: assert 100 == 101"},
      {"tests/test_models.py::test_supplier_lookup", "inventory/models.py",
       "return SUPPLIERS[code]", "KeyError: 'ACME-EU'"},
  };
  const int total = 64;
  b.Bash("ls -R inventory tests | head -50",
         "inventory:\n__init__.py\nimporter.py\nmodels.py\npricing.py\nreports.py\n"
         "overrides.py\n\ntests:\nfixtures\ntest_importer.py\ntest_models.py\n"
         "test_pricing.py\ntest_reports.py\n");
  b.Bash("python -m pytest -q", PytestRun(b, failing, total),
         "Let me run the suite first to see what fails.");
  b.Bash("pyhton -m pip list | grep -i yaml", "bash: pyhton: command not found\n");
  b.Bash("python -m pip install pyyaml",
         "Collecting pyyaml\n  Downloading PyYAML-6.0.1-cp311-cp311-manylinux_2_17_x86_64.whl "
         "(757 kB)\nInstalling collected packages: pyyaml\nSuccessfully installed "
         "pyyaml-6.0.1\n");
  failing.erase(failing.begin());
  b.Fetch("https://docs.python.org/3/library/csv.html#csv.DictReader", 6);
  b.Say(
      "The new export renames `sku` to `item_code`; I also glanced at docs/export_format.md "
      "and scripts/convert_legacy.py, which do not need changes.");
  int round = 0;
  const std::vector<std::string> paths = {"inventory/importer.py", "inventory/models.py",
                                          "inventory/pricing.py", "inventory/reports.py"};
  while (!failing.empty()) {
    const PyFailure f = failing.front();
    // Reading around, a few noisy runs, then the fix and the whole suite again.
    for (int k = 0; k < 5; ++k) {
      b.Read(paths[b.rng().Below(paths.size())], Lang::kPython, 60 + 20 * k);
      b.Bash("grep -rn \"" + b.rng().Of(kWords) + "\" inventory tests | head -40",
             b.Code(Lang::kPython, 30, 1));
      b.Bash("python -m pytest -q " + f.test.substr(0, f.test.find("::")) + " -k " +
                 f.test.substr(f.test.rfind(':') + 1),
             PytestRun(b, {f}, 16));
    }
    if (round == 1) {
      b.Bash("python scripts/check_db.py",
             "Traceback (most recent call last):\n  File \"/home/dev/inventory/scripts/"
             "check_db.py\", line 12, in <module>\n    cur.execute(\"SELECT * FROM items\")\n"
             "sqlite3.OperationalError: no such table: items\n");
      b.Bash("cat inventory/settings.toml",
             "cat: inventory/settings.toml: No such file or directory\n");
      b.Fetch("https://docs.pytest.org/en/stable/how-to/fixtures.html", 8);
    }
    if (round == 3) b.Say("Noted for later: inventory/legacy/csv_v1.py still uses the old names.");
    b.Edit(f.file, f.source, "# fixed: " + f.source, "Fixing " + f.test + ".");
    failing.erase(failing.begin());
    b.Bash("python -m pytest -q", PytestRun(b, failing, total));
    ++round;
  }
  b.Say("All 64 tests pass now.");
  b.User("Thanks. Also add a short note to CHANGELOG.md about the new column names.");
  b.Write("CHANGELOG.md",
          "## 2.4.0\n- importer reads item_code (was sku), see "
          "inventory/importer.py\n");
  b.Say("Added the note to CHANGELOG.md.");
  return {"python-pytest", b.Take()};
}

namespace {

// --- Rust ---------------------------------------------------------------------------------

std::string CargoBuild(Builder& b, const std::vector<Problem>& open) {
  std::string out =
      "   Compiling ledger v0.3.1 (/home/dev/ledger)\n"
      "warning: unused import: `std::fmt`\n --> src/report.rs:2:5\n  |\n2 | use "
      "std::fmt;\n  |     ^^^^^^^^\n  |\n  = note: `#[warn(unused_imports)]` on by "
      "default\n\n";
  out += Join(open);
  if (open.empty()) {
    return out + "    Finished dev [unoptimized + debuginfo] target(s) in " +
           std::to_string(1 + b.rng().Below(9)) + ".4" + std::to_string(b.rng().Below(10)) + "s\n";
  }
  return out + "error: could not compile `ledger` (bin \"ledger\") due to " +
         std::to_string(open.size()) + " previous error" + (open.size() > 1 ? "s" : "") +
         "; 1 warning emitted\n";
}

std::string RustError(const std::string& head, const std::string& where, int line,
                      const std::string& code, const std::string& note) {
  const std::string n = std::to_string(line);
  return head + "\n  --> " + where + ":" + n + ":9\n   |\n" + n + " |     " + code +
         "\n   |         ^^^^^^^ " + note + "\n";
}

std::string CargoTest(Builder& b, const std::vector<Problem>& open) {
  std::string out =
      "    Finished test [unoptimized + debuginfo] target(s) in 0.91s\n     Running "
      "unittests src/lib.rs (target/debug/deps/ledger-5f1c2a9e)\n\nrunning 24 "
      "tests\n";
  for (int i = 0; i < 24 - static_cast<int>(open.size()); ++i) {
    out += "test " + b.Ident() + "::tests::" + b.Ident() + " ... ok\n";
  }
  if (open.empty()) return out + "\ntest result: ok. 24 passed; 0 failed; finished in 0.01s\n";
  out += "\nfailures:\n\n";
  out += Join(open);
  return out + "\ntest result: FAILED. " + std::to_string(24 - open.size()) + " passed; " +
         std::to_string(open.size()) +
         " failed; 0 ignored\n\nerror: test failed, to rerun pass `--lib`\n";
}

}  // namespace

SyntheticSession RustCargoSession() {
  Builder b("You are a coding agent working in a Rust repository.", 23);
  b.User(
      "Port the ledger CLI to the new Entry type (amounts in cents as i64). `cargo build` "
      "and `cargo test` must pass. Start from src/entry.rs.");
  const std::vector<std::string> files = {"src/main.rs", "src/parser.rs", "src/ledger.rs",
                                          "src/report.rs", "src/entry.rs"};
  Loop build{Lang::kRust, "cargo build 2>&1 | tail -80", {}, CargoBuild};
  build.problems = {
      {"src/parser.rs", RustError("error[E0308]: mismatched types", "src/parser.rs", 42,
                                  "let count: u32 = line.len();", "expected `u32`, found `usize`")},
      {"src/ledger.rs",
       RustError("error[E0425]: cannot find value `total_cents` in this scope", "src/ledger.rs", 88,
                 "total_cents += e.amount;", "not found in this scope")},
      {"src/report.rs",
       RustError("error[E0599]: no method named `sum_by` found for struct `Vec<Entry>` in the "
                 "current scope",
                 "src/report.rs", 17, "let sum = entries.sum_by(|e| e.amount);",
                 "method not found in `Vec<Entry>`")},
      {"src/main.rs",
       RustError("error[E0382]: borrow of moved value: `entries`", "src/main.rs", 31,
                 "println!(\"{}\", entries.len());", "value borrowed here after move")},
      {"Cargo.toml",
       RustError("error[E0433]: failed to resolve: use of undeclared crate or module `chrono`",
                 "src/entry.rs", 3, "use chrono::NaiveDate;", "use of undeclared crate")},
  };
  FixOneByOne(b, build, files, [](Builder& bb, int round) {
    if (round == 0)
      bb.Bash("cargo fmtt", "error: no such command: `fmtt`\n\n\tDid you mean `fmt`?\n");
    if (round == 1)
      bb.Fetch("https://doc.rust-lang.org/std/iter/trait.Iterator.html#method.sum", 6);
    if (round == 2) {
      bb.Say("src/bin/import.rs and benches/parse.rs only use the public API; no change there.");
    }
    if (round == 3) bb.Fetch("https://docs.rs/chrono/latest/chrono/struct.NaiveDate.html", 5);
  });
  Loop test{Lang::kRust, "cargo test 2>&1 | tail -60", {}, CargoTest};
  test.problems = {
      {"src/parser.rs",
       "---- parser::tests::parses_negative_amounts stdout ----\nthread "
       "'parser::tests::parses_negative_amounts' panicked at src/parser.rs:118:9:\nassertion "
       "`left == right` failed\n  left: -1250\n right: 1250\nnote: run with `RUST_BACKTRACE=1` "
       "environment variable to display a backtrace\n"},
      {"src/report.rs",
       "---- report::tests::monthly_totals stdout ----\nthread 'report::tests::monthly_totals' "
       "panicked at src/report.rs:64:14:\ncalled `Option::unwrap()` on a `None` value\n"},
  };
  FixOneByOne(b, test, files, [](Builder& bb, int round) {
    if (round == 0)
      bb.Bash("cat tests/data/ledger_2023.csv",
              "cat: tests/data/ledger_2023.csv: No such file or directory\n");
  });
  b.Say("`cargo build` and `cargo test` pass.");
  return {"rust-cargo", b.Take()};
}

namespace {

// --- Go -----------------------------------------------------------------------------------

std::string GoTest(Builder& b, const std::vector<Problem>& open) {
  std::string out;
  bool compile = false;
  for (const Problem& p : open) compile |= p.block.starts_with("#");
  if (compile) return open.front().block + "\nFAIL\texample.com/inventory [build failed]\n";
  for (int i = 0; i < 12; ++i) out += "=== RUN   Test" + b.Ident() + "\n--- PASS\n";
  out += Join(open);
  if (open.empty())
    return out + "PASS\nok  \texample.com/inventory\t0.01" + std::to_string(b.rng().Below(10)) +
           "s\n";
  return out + "FAIL\nFAIL\texample.com/inventory\t0.012s\nFAIL\n";
}

}  // namespace

SyntheticSession GoModuleSession() {
  Builder b("You are a coding agent working in a Go module.", 37);
  b.User(
      "Add a Get method to the inventory Store that returns ErrNotFound for unknown ids, and "
      "make `go test ./...` pass. The store is in store.go.");
  const std::vector<std::string> files = {"store.go", "store_test.go", "main.go", "item.go",
                                          "internal/db/db.go"};
  Loop loop{Lang::kGo, "go test ./...", {}, GoTest};
  loop.problems = {
      {"store.go",
       "# example.com/inventory\n./store.go:41:9: undefined: ErrNotFound\n"
       "./store.go:57:2: missing return"},
      {"store_test.go", "--- FAIL: TestStore_Get (0.00s)\n    store_test.go:27: got 3, want 4"},
      {"item.go",
       "--- FAIL: TestItem_Split (0.00s)\npanic: runtime error: index out of range [5] with "
       "length 5 [recovered]\n\tpanic: runtime error: index out of range [5] with length 5\n\n"
       "goroutine 7 [running]:\nexample.com/inventory.(*Item).Split(...)\n\t/home/dev/inventory/"
       "item.go:33 +0x1d4"},
      {"internal/db/db.go",
       "--- FAIL: TestDB_Open (0.01s)\n    db_test.go:15: open: dial tcp 127.0.0.1:5432: "
       "connect: connection refused"},
  };
  FixOneByOne(b, loop, files, [](Builder& bb, int round) {
    if (round == 0) {
      bb.Bash("go vet ./internal/...",
              "go: cannot find main module, but found .git/config in "
              "/home/dev\n\tto create a module there, run:\n\tgo mod init\n");
    }
    if (round == 1) bb.Fetch("https://go.dev/blog/go1.13-errors", 4);
    if (round == 2) bb.Say("cmd/seed/main.go builds its own store; it needs no change.");
  });
  return {"go-module", b.Take()};
}

namespace {

// --- TypeScript ---------------------------------------------------------------------------

std::string Tsc(Builder&, const std::vector<Problem>& open) {
  if (open.empty()) return "";
  return Join(open) + "\nFound " + std::to_string(open.size()) + " error" +
         (open.size() > 1 ? "s" : "") + ".\n";
}

std::string Jest(Builder& b, const std::vector<Problem>& open) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += "PASS src/" + b.rng().Of(kWords) + ".test.ts\n";
  if (!open.empty()) out += "FAIL src/services/cart.test.ts\n";
  out += Join(open);
  return out + "Tests:       " + std::to_string(open.size()) + " failed, " +
         std::to_string(42 - open.size()) + " passed, 42 total\nTime:        3.1" +
         std::to_string(b.rng().Below(10)) + " s\n";
}

}  // namespace

SyntheticSession TypeScriptNpmSession() {
  Builder b("You are a coding agent working on a TypeScript (Node) API.", 41);
  b.User(
      "Upgrade the shop API to TypeScript 5.3 and the pg client, then make `npx tsc --noEmit` "
      "and `npm test` pass. Entry point: src/app.ts.");
  b.Bash("npm install typescript@5.3.3 @types/pg",
         "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! \n"
         "npm ERR! While resolving: shop-api@1.4.0\nnpm ERR! Found: typescript@5.3.3\nnpm ERR! "
         "Could not resolve dependency:\nnpm ERR! peer typescript@\">=3.7 <5.1\" from "
         "ts-node-dev@2.0.0\nnpm ERR! \nnpm ERR! A complete log of this run can be found in:\n"
         "npm ERR!     /home/dev/.npm/_logs/2026-11-27T10_11_12_345Z-debug-0.log\n");
  b.Fetch("https://docs.npmjs.com/cli/v10/using-npm/config#legacy-peer-deps", 4);
  b.Bash("npm install typescript@5.3.3 @types/pg --legacy-peer-deps",
         "added 3 packages, changed 1 package, and audited 412 packages in 4s\n\n58 packages are "
         "looking for funding\n  run `npm fund` for details\n\nfound 0 vulnerabilities\n");
  const std::vector<std::string> files = {"src/app.ts", "src/db.ts", "src/routes/users.ts",
                                          "src/services/cart.ts", "src/config.ts"};
  Loop tsc{Lang::kTs, "npx tsc --noEmit", {}, Tsc};
  tsc.problems = {
      {"src/app.ts",
       "src/app.ts(4,7): error TS2322: Type 'string' is not assignable to type "
       "'number'."},
      {"src/db.ts",
       "src/db.ts(3,22): error TS2307: Cannot find module 'pg' or its corresponding "
       "type declarations."},
      {"src/routes/users.ts",
       "src/routes/users.ts(12,5): error TS2339: Property 'email' does not "
       "exist on type 'User'."},
      {"src/services/cart.ts",
       "src/services/cart.ts(57,18): error TS7006: Parameter 'item' "
       "implicitly has an 'any' type."},
  };
  FixOneByOne(b, tsc, files, [](Builder& bb, int round) {
    if (round == 1) bb.Fetch("https://www.typescriptlang.org/docs/handbook/2/narrowing.html", 6);
    if (round == 2) bb.Say("src/legacy/session.js is plain JS and excluded by tsconfig.json.");
  });
  Loop jest{Lang::kTs, "npm test -- --silent", {}, Jest};
  jest.problems = {
      {"src/services/cart.ts",
       "  ● Cart › applies the member discount\n\n    TypeError: Cannot read properties of "
       "undefined (reading 'price')\n\n      55 |   const total = items.reduce((s, i) => s + "
       "i.price, 0);\n    at Object.<anonymous> (src/services/cart.ts:57:18)"},
      {"src/config.ts",
       "  ● Config › loads defaults\n\n    Error: Cannot find module './defaults.json' from "
       "'src/config.ts'"},
  };
  FixOneByOne(b, jest, files, [](Builder& bb, int round) {
    if (round == 0)
      bb.Bash("npx jset --version", "sh: 1: jset: not found\nbash: npx: jset: command not found\n");
  });
  return {"typescript-npm", b.Take()};
}

namespace {

// --- Elixir -------------------------------------------------------------------------------

std::string MixTest(Builder& b, const std::vector<Problem>& open) {
  std::string out = "Compiling 14 files (.ex)\n";
  for (const Problem& p : open) {
    if (p.block.starts_with("**") || p.block.starts_with("error")) return out + p.block + "\n";
  }
  out += "warning: variable \"" + b.rng().Of(kWords) + "\" is unused\n  lib/inventory/" +
         b.rng().Of(kWords) + ".ex:" + std::to_string(b.rng().Below(90)) + "\n\n";
  int n = 1;
  for (const Problem& p : open) out += "  " + std::to_string(n++) + ") " + p.block + "\n\n";
  return out + "Finished in 0." + std::to_string(b.rng().Below(9)) + " seconds\n42 tests, " +
         std::to_string(open.size()) + " failures\n";
}

}  // namespace

SyntheticSession ElixirMixSession() {
  Builder b("You are a coding agent working on an Elixir/Phoenix application.", 53);
  b.User(
      "The stock endpoints crash after the Ecto upgrade. Fix lib/inventory/stock.ex and "
      "whatever else it takes for `mix test` to pass.");
  const std::vector<std::string> files = {"lib/inventory/stock.ex", "lib/inventory/item.ex",
                                          "lib/inventory/application.ex", "config/test.exs",
                                          "lib/inventory_web/controllers/stock_controller.ex"};
  Loop loop{Lang::kElixir, "mix test", {}, MixTest};
  loop.problems = {
      {"config/test.exs",
       "** (Mix) Could not start application inventory: Inventory.Application.start(:normal, "
       "[]) returned an error: shutdown: failed to start child: Inventory.Repo"},
      {"lib/inventory/item.ex",
       "== Compilation error in file lib/inventory/item.ex ==\n** (CompileError) "
       "lib/inventory/item.ex:14: undefined function parse_qty/1 (there is no such import)"},
      {"lib/inventory/stock.ex",
       "error: undefined variable \"qty\"\n  │\n 22 │     qty + 1\n  │     ^^^\n  │\n  └─ "
       "lib/inventory/stock.ex:22:5: Inventory.Stock.add/2"},
      {"lib/inventory/stock.ex",
       "test add/2 increases stock (Inventory.StockTest)\n     "
       "test/inventory/stock_test.exs:12\n     ** (BadMapError) expected a map, got: nil\n     "
       "code: Stock.add(nil, 3)\n     stacktrace:\n       lib/inventory/stock.ex:9: "
       "Inventory.Stock.add/2"},
      {"lib/inventory_web/controllers/stock_controller.ex",
       "test GET /stock/:id (InventoryWeb.StockControllerTest)\n     "
       "test/inventory_web/controllers/stock_controller_test.exs:20\n     ** "
       "(UndefinedFunctionError) function Inventory.Stock.fetch!/1 is undefined or private"},
      {"lib/inventory/item.ex",
       "test changeset rejects negative qty (Inventory.ItemTest)\n     "
       "test/inventory/item_test.exs:31\n     ** (ArgumentError) errors were found at the given "
       "arguments:\n\n       * 1st argument: not an atom"},
  };
  FixOneByOne(b, loop, files, [](Builder& bb, int round) {
    if (round == 0) {
      bb.Bash("mix ecto.create",
              "** (Postgrex.Error) FATAL 3D000 (invalid_catalog_name) database "
              "\"inventory_test\" does not exist\n");
      bb.Fetch("https://hexdocs.pm/ecto/Ecto.Changeset.html#validate_number/3", 6);
    }
    if (round == 2) bb.Say("priv/repo/seeds.exs still inserts the old shape; leaving it.");
    if (round == 4) bb.Fetch("https://hexdocs.pm/elixir/main/Map.html#fetch!/2", 4);
  });
  return {"elixir-mix", b.Take()};
}

}  // namespace missy::testing

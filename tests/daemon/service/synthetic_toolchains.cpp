#include <string>
#include <vector>

#include "synthetic_builder.h"
#include "synthetic_sessions.h"

// The sessions of synthetic_sessions.h in toolchains and an agent format the first ones do
// not have: Java with Gradle and Maven, C++ with CMake and a linker, an operator's session
// (kubectl, docker, terraform, systemd, ssh), Ruby with RSpec and rake, and a Node.js
// session from an agent that sends each command's output back as a user message
// (`<returncode>`/`<output>`, as mini-swe-agent does) instead of a tool result.
namespace missy::testing {

using namespace synthetic;

namespace {

// --- Java: Gradle, JUnit, Maven -----------------------------------------------------------

std::string GradleBuild(Builder& b, const std::vector<Problem>& open) {
  std::string out = "> Task :app:processResources UP-TO-DATE\n> Task :app:compileJava\n";
  out += Join(open);
  if (open.empty()) {
    return out + "> Task :app:test\n\nBUILD SUCCESSFUL in " + std::to_string(3 + b.rng().Below(9)) +
           "s\n7 actionable tasks: 2 executed, 5 up-to-date\n";
  }
  return out +
         "\nFAILURE: Build failed with an exception.\n\n* What went wrong:\nExecution failed "
         "for task ':app:test'.\n> There were failing tests. See the report at: "
         "file:///home/dev/inventory/app/build/reports/tests/test/index.html\n\n* Try:\n> Run "
         "with --stacktrace option to get the stack trace.\n\nBUILD FAILED in " +
         std::to_string(4 + b.rng().Below(9)) + "s\n";
}

}  // namespace

SyntheticSession JavaGradleSession() {
  Builder b("You are a coding agent working in a Java repository built with Gradle.", 61);
  b.User(
      "Reservations fail since the stock service moved to the new client library. Make "
      "`./gradlew build` pass; the service is app/src/main/java/com/acme/stock/StockService.java.");
  const std::vector<std::string> files = {"app/src/main/java/com/acme/stock/StockService.java",
                                          "app/src/main/java/com/acme/stock/Reservation.java",
                                          "app/src/test/java/com/acme/stock/StockServiceTest.java",
                                          "app/src/main/java/com/acme/db/Pool.java",
                                          "app/build.gradle"};
  Loop loop{Lang::kJava, "./gradlew build", {}, GradleBuild};
  loop.reads_per_fix = 7;
  loop.listing_lines = 160;
  loop.problems = {
      {"app/src/main/java/com/acme/stock/StockService.java",
       "/home/dev/inventory/app/src/main/java/com/acme/stock/StockService.java:42: error: "
       "cannot find symbol\n        return client.reserve(sku, qty);\n                     ^\n  "
       "symbol:   method reserve(String,int)\n  location: variable client of type StockClient"},
      {"app/src/main/java/com/acme/stock/Reservation.java",
       "StockServiceTest > reservesOnlyOnce() FAILED\n    "
       "org.opentest4j.AssertionFailedError: expected: <1> but was: <2>\n        at "
       "app//org.junit.jupiter.api.AssertionUtils.fail(AssertionUtils.java:55)\n        at "
       "app//com.acme.stock.StockServiceTest.reservesOnlyOnce(StockServiceTest.java:61)"},
      {"app/src/main/java/com/acme/db/Pool.java",
       "StockServiceTest > releasesOnTimeout() FAILED\n    java.lang.IllegalStateException: "
       "pool closed while a reservation was open\n        at "
       "com.acme.db.Pool.get(Pool.java:88)\n    Caused by: java.net.ConnectException: "
       "Connection refused (Connection refused)\n        at "
       "java.base/sun.nio.ch.Net.connect0(Native Method)"},
      {"app/src/main/java/com/acme/stock/StockService.java",
       "StockServiceTest > rejectsNegativeQuantity() FAILED\n    "
       "java.lang.NullPointerException: Cannot invoke \"java.lang.Integer.intValue()\" because "
       "\"limit\" is null\n        at com.acme.stock.StockService.check(StockService.java:97)"},
  };
  FixOneByOne(b, loop, files, [](Builder& bb, int round) {
    if (round == 0) {
      bb.Bash("mvn -q -f legacy/pom.xml dependency:tree",
              "[ERROR] Failed to execute goal on project stock-legacy: Could not resolve "
              "dependencies for project com.acme:stock-legacy:jar:1.4: Could not find artifact "
              "com.acme:ledger-client:jar:2.3.1 in internal (https://repo.acme.local/maven)\n"
              "[ERROR] -> [Help 1]\n");
      bb.Fetch("https://docs.gradle.org/current/userguide/java_testing.html", 6);
    }
    if (round == 1) {
      bb.Bash("java -cp app/build/classes/java/main com.acme.stock.Main --dry-run",
              "Exception in thread \"main\" java.lang.UnsupportedOperationException: dry run "
              "is not supported by StockClient 3.x\n\tat "
              "com.acme.stock.Main.main(Main.java:23)\n");
    }
    if (round == 2)
      bb.Say("app/src/main/java/com/acme/audit/AuditLog.java has the same pattern; not needed.");
  });
  b.Say("The build passes now.");
  return {"java-gradle", b.Take()};
}

namespace {

// --- C++: CMake, the compiler, the linker, ctest -----------------------------------------

std::string CmakeBuild(Builder& b, const std::vector<Problem>& open) {
  for (const Problem& p : open) {
    if (p.block.starts_with("CMake Error")) {
      return "-- The CXX compiler identification is GNU 12.2.0\n-- Detecting CXX compiler ABI "
             "info - done\n" +
             p.block + "\n-- Configuring incomplete, errors occurred!\n";
    }
  }
  std::string out;
  for (int i = 0; i < 6; ++i) {
    out += "[" + std::to_string(10 + 12 * i) + "%] Building CXX object CMakeFiles/geo.dir/src/" +
           b.rng().Of(kWords) + ".cpp.o\n";
  }
  out += Join(open);
  if (open.empty()) {
    return out +
           "[100%] Linking CXX executable geo\n[100%] Built target geo\n"
           "100% tests passed, 0 tests failed out of 5\n";
  }
  return out +
         "gmake[2]: *** [CMakeFiles/geo.dir/build.make:90: geo] Error 1\n"
         "gmake: *** [Makefile:136: all] Error 2\n";
}

}  // namespace

SyntheticSession CppCmakeSession() {
  Builder b("You are a coding agent working in a C++ repository built with CMake.", 67);
  b.User(
      "The mesh loader crashes on files with empty groups. Fix it in src/mesh.cpp and keep "
      "`cmake --build build && ctest --test-dir build` green.");
  const std::vector<std::string> files = {"src/mesh.cpp", "src/io.cpp", "include/geo/mesh.h",
                                          "tests/mesh_test.cpp", "CMakeLists.txt"};
  Loop loop{Lang::kCpp,
            "cmake -B build && cmake --build build && ctest --test-dir build",
            {},
            CmakeBuild};
  loop.reads_per_fix = 7;
  loop.listing_lines = 160;
  loop.problems = {
      {"CMakeLists.txt",
       "CMake Error at CMakeLists.txt:23 (find_package):\n  Could not find a package "
       "configuration file provided by \"fmt\" with any of\n  the following names:\n\n    "
       "fmtConfig.cmake\n    fmt-config.cmake"},
      {"src/mesh.cpp",
       "/home/dev/geo/src/mesh.cpp:118:22: error: 'class std::vector<geo::Vertex>' has no "
       "member named 'push'\n  118 |     group.vertices.push(v);\n      |                    "
       "^~~~"},
      {"src/io.cpp",
       "/usr/bin/ld: CMakeFiles/geo.dir/src/io.cpp.o: in function `geo::load(std::string "
       "const&)':\nio.cpp:(.text+0x1a4): undefined reference to "
       "`geo::parse_header(std::istream&)'\ncollect2: error: ld returned 1 exit status"},
      {"src/mesh.cpp",
       "3/5 Test #3: mesh_test ........................***Exception: SegFault  0.02 sec\n"
       "==4211==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000014 at pc "
       "0x55d1c2 bp 0x7ffd sp 0x7ffd\nREAD of size 4 at 0x602000000014 thread T0\n    #0 "
       "0x55d1c1 in geo::Mesh::normals() /home/dev/geo/src/mesh.cpp:141"},
  };
  FixOneByOne(b, loop, files, [](Builder& bb, int round) {
    if (round == 0) {
      bb.Bash("./build/geo data/empty_group.obj",
              "terminate called after throwing an instance of 'std::out_of_range'\n  what():  "
              "vector::_M_range_check: __n (which is 0) >= this->size() (which is 0)\n"
              "Aborted (core dumped)\n");
      bb.Fetch("https://cmake.org/cmake/help/latest/command/find_package.html", 5);
    }
    if (round == 1) {
      bb.Bash("./build/geo --bench data/large.obj", "Segmentation fault (core dumped)\n");
    }
    if (round == 2) bb.Say("src/export.cpp copies the same loop; it is not reached from here.");
  });
  b.Say("Built and all five tests pass.");
  return {"cpp-cmake", b.Take()};
}

namespace {

// --- Operations: kubectl, docker, terraform, systemd, ssh --------------------------------

std::string Deploy(Builder& b, const std::vector<Problem>& open) {
  std::string out = "+ terraform -chdir=infra plan -out=plan.bin\n";
  out += b.Log("Refreshing state...", 6);
  for (const Problem& p : open) {
    if (p.block.find("Error: ") != std::string::npos && p.block.starts_with("\u2577")) {
      return out + p.block + "\n";  // terraform stops the script
    }
  }
  out += "+ kubectl apply -f deploy/\n";
  for (const Problem& p : open) out += p.block + "\n";
  if (open.empty()) return out + "deployment.apps/api configured\nservice/api unchanged\n";
  return out + "make: *** [Makefile:31: deploy] Error 1\n";
}

}  // namespace

SyntheticSession OpsDeploySession() {
  Builder b("You are an operations agent with shell access to the staging cluster.", 71);
  b.User(
      "Staging has been down since last night's deploy. Get `make deploy` working again and "
      "the API answering on api.staging.acme.local; the manifests are in deploy/.");
  const std::vector<std::string> files = {"deploy/api.yaml", "deploy/ingress.yaml", "infra/main.tf",
                                          "deploy/namespace.yaml", "deploy/secrets.yaml"};
  Loop loop{Lang::kYaml, "make deploy", {}, Deploy};
  loop.reads_per_fix = 6;
  loop.listing_lines = 120;
  loop.problems = {
      {"infra/main.tf",
       "\u2577\n\u2502 Error: Unsupported argument\n\u2502 \n\u2502   on main.tf line 14, in "
       "resource \"aws_s3_bucket\" \"logs\":\n\u2502   14:   acl = \"private\"\n\u2502 \n"
       "\u2502 An argument named \"acl\" is not expected here.\n\u2575"},
      {"deploy/namespace.yaml",
       "Error from server (NotFound): error when creating \"deploy/api.yaml\": namespaces "
       "\"staging\" not found"},
      {"deploy/secrets.yaml",
       "Error from server (Forbidden): error when retrieving current configuration of: "
       "secrets \"api-db\" is forbidden: User \"deployer\" cannot get resource \"secrets\""},
      {"deploy/api.yaml",
       "The Deployment \"api\" is invalid: spec.template.spec.containers[0].ports[0]."
       "containerPort: Invalid value: 80800: must be between 1 and 65535, inclusive"},
  };
  FixOneByOne(b, loop, files, [](Builder& bb, int round) {
    if (round == 0) {
      bb.Bash("ssh ops@10.0.3.7 uptime",
              "ssh: connect to host 10.0.3.7 port 22: Connection refused\n");
      bb.Bash("docker run -d -p 8080:8080 registry.local/api:1.42",
              "docker: Error response from daemon: driver failed programming external "
              "connectivity on endpoint quirky_hopper: Bind for 0.0.0.0:8080 failed: port is "
              "already allocated.\n");
      bb.Fetch(
          "https://registry.terraform.io/providers/hashicorp/aws/latest/docs/guides/"
          "version-4-upgrade",
          6);
    }
    if (round == 1) {
      bb.Bash("sudo systemctl restart nginx",
              "Job for nginx.service failed because the control process exited with error "
              "code.\nSee \"systemctl status nginx.service\" and \"journalctl -xeu "
              "nginx.service\" for details.\n");
      bb.Bash("cat /etc/nginx/certs/api.key", "cat: /etc/nginx/certs/api.key: Permission denied\n");
    }
    if (round == 2) bb.Say("deploy/worker.yaml has the same port typo but is scaled to zero.");
  });
  b.Bash("curl -sS https://api.staging.acme.local/healthz", "{\"status\":\"ok\"}\n");
  b.Say("Staging answers again.");
  return {"ops-deploy", b.Take()};
}

namespace {

// --- Ruby: RSpec and rake -----------------------------------------------------------------

std::string Rspec(Builder& b, const std::vector<Problem>& open) {
  for (const Problem& p : open) {
    if (p.block.starts_with("rake aborted!") || p.block.starts_with("An error occurred")) {
      return p.block + "\n";
    }
  }
  std::string out = "Randomized with seed " + std::to_string(b.rng().Below(60000)) + "\n";
  for (int i = 0; i < 60; ++i) out += (i % 17 == 3 && !open.empty()) ? "F" : ".";
  out += "\n\n";
  if (open.empty()) return out + "Finished in 1.2 seconds\n60 examples, 0 failures\n";
  out += "Failures:\n\n";
  int n = 1;
  for (const Problem& p : open) out += "  " + std::to_string(n++) + ") " + p.block + "\n\n";
  return out + "Finished in 1.4 seconds\n60 examples, " + std::to_string(open.size()) +
         " failures\n";
}

}  // namespace

SyntheticSession RubyRspecSession() {
  Builder b("You are a coding agent working on a Ruby on Rails application.", 79);
  b.User(
      "Order totals are wrong after the tax rework. Fix app/models/order.rb and make "
      "`bundle exec rspec` pass.");
  const std::vector<std::string> files = {"app/models/order.rb", "app/models/line_item.rb",
                                          "app/services/tax_table.rb", "spec/models/order_spec.rb",
                                          "db/schema.rb"};
  Loop loop{Lang::kRuby, "bundle exec rspec", {}, Rspec};
  loop.reads_per_fix = 7;
  loop.listing_lines = 160;
  loop.problems = {
      {"db/schema.rb",
       "rake aborted!\nActiveRecord::PendingMigrationError: Migrations are pending. To resolve "
       "this issue, run: bin/rails db:migrate RAILS_ENV=test"},
      {"app/services/tax_table.rb",
       "An error occurred while loading ./spec/services/tax_table_spec.rb.\nFailure/Error: "
       "require 'tax_table'\n\nLoadError:\n  cannot load such file -- tax_table"},
      {"app/models/order.rb",
       "Order#total sums line items\n     Failure/Error: expect(order.total).to eq(30)\n\n"
       "       expected: 30\n            got: 25\n\n       (compared using ==)\n     # "
       "./spec/models/order_spec.rb:14:in `block (3 levels) in <top (required)>'"},
      {"app/models/line_item.rb",
       "LineItem#price falls back to the product\n     Failure/Error: product.price * qty\n\n"
       "     NoMethodError:\n       undefined method `price' for nil:NilClass\n     # "
       "./app/models/line_item.rb:9:in `price'"},
  };
  FixOneByOne(b, loop, files, [](Builder& bb, int round) {
    if (round == 0) {
      bb.Bash("bin/rails runner 'puts User.first.full_name'",
              "app/models/user.rb:12:in `full_name': undefined method `upcase' for "
              "nil:NilClass (NoMethodError)\n\tfrom bin/rails:4:in `<main>'\n");
      bb.Fetch("https://guides.rubyonrails.org/active_record_migrations.html", 5);
    }
    if (round == 2) bb.Say("app/models/invoice.rb rounds the same way; out of scope.");
  });
  b.Say("All 60 examples pass.");
  return {"ruby-rspec", b.Take()};
}

namespace {

// --- Node.js, from an agent that sends outputs back as user messages ---------------------

// One command of such an agent: its reasoning and the command in a fenced block, and the
// output as the next user message.
void Observe(Builder& b, const std::string& thought, const std::string& command, int code,
             const std::string& output) {
  b.Say("THOUGHT: " + thought + "\n\n```bash\n" + command + "\n```");
  b.User("<returncode>" + std::to_string(code) + "</returncode>\n<output>\n" + output +
         "</output>");
}

std::string Mocha(Builder& b, const std::vector<std::string>& open) {
  std::string out = "\n> fetcher@2.1.0 test\n> mocha --recursive test/\n\n";
  for (int i = 0; i < 18; ++i) out += "  \u2714 " + b.Ident() + " works\n";
  if (open.empty()) return out + "\n  18 passing (96ms)\n";
  out += "\n  18 passing (102ms)\n  " + std::to_string(open.size()) + " failing\n\n";
  int n = 1;
  for (const std::string& e : open) out += "  " + std::to_string(n++) + ") " + e + "\n\n";
  return out + "npm ERR! code ELIFECYCLE\nnpm ERR! errno 1\n";
}

}  // namespace

SyntheticSession NodeObservationsSession() {
  Builder b(
      "You are a helpful assistant that can interact with a computer. Reply with one "
      "bash command in a fenced block; its output comes back as the next message.",
      83);
  b.User(
      "The feed fetcher drops items when the server paginates. Fix src/paginate.js so that "
      "`npm test` passes.");
  std::vector<std::string> open = {
      "paginate\n       follows the next link:\n     AssertionError [ERR_ASSERTION]: Expected "
      "values to be strictly equal:\n\n3 !== 4\n\n      at Context.<anonymous> "
      "(test/paginate.test.js:22:12)",
      "http\n       retries on 503:\n     Error [ERR_MODULE_NOT_FOUND]: Cannot find package "
      "'undici' imported from /home/dev/fetcher/src/http.js",
      "feed\n       parses an empty page:\n     TypeError: Cannot read properties of "
      "undefined (reading 'map')\n      at parseFeed (src/feed.js:31:24)",
  };
  const std::vector<std::string> files = {"src/paginate.js", "src/http.js", "src/feed.js",
                                          "test/paginate.test.js", "package.json"};
  Observe(b, "Run the tests first.", "npm test", 1, Mocha(b, open));
  int round = 0;
  while (!open.empty()) {
    for (int k = 0; k < 9; ++k) {
      const std::string& f = files[b.rng().Below(files.size())];
      Observe(b, "Look at " + f + ".", "cat -n " + f, 0, b.Code(Lang::kTs, 150, 1));
      Observe(b, "Search for the helper.",
              "grep -rn \"" + b.rng().Of(kWords) + "\" src test | head -30", 0,
              b.Code(Lang::kTs, 25, 1));
      if (k % 2 == 1) Observe(b, "Run the tests again.", "npm test", 1, Mocha(b, open));
    }
    if (round == 0) {
      Observe(b, "Check the lint config.", "npx eslint src/paginate.js", 2,
              "\nOops! Something went wrong! :(\n\nESLint: 8.57.0\n\nError: Cannot find module "
              "'eslint-config-acme'\nRequire stack:\n- /home/dev/fetcher/.eslintrc.js\n");
      Observe(b, "Try the feed by hand.", "node src/cli.js --once", 1,
              "file:///home/dev/fetcher/src/cli.js:4\nimport { run } from './runner.js';\n"
              "         ^^^\nSyntaxError: The requested module './runner.js' does not provide "
              "an export named 'run'\n");
    }
    if (round == 1) b.Say("src/legacy/rss.js paginates the old way; it is unused.");
    Observe(b, "Fix it.",
            "sed -i 's/page.next/page.links.next/' src/paginate.js && git diff --stat", 0,
            " src/paginate.js | 2 +-\n 1 file changed\n");
    open.erase(open.begin());
    Observe(b, "Run the tests.", "npm test", open.empty() ? 0 : 1, Mocha(b, open));
    ++round;
  }
  b.Say("All tests pass.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```");
  return {"node-observations", b.Take()};
}

}  // namespace missy::testing

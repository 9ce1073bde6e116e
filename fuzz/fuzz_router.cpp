// Fuzzes the daemon's HTTP request router and handlers (daemon/http/api.h) in process,
// over a real store in a temporary directory (tmpfs when available). Input: the first
// line is "METHOD TARGET", the rest is the body. Properties checked:
//  - every request is answered (no crash, no hang, no exception escaping);
//  - the status is one the API documents (200, 201, 400, 404, 405, 409, 413, 422);
//    never a 500, which would be an unexpected error;
//  - the body is one valid JSON object; an error status carries
//    {"error":{"code","message","field"}} with string members.
// Sessions "f1" and "f2" exist with a few messages, so deeper paths are reachable.
#include <stdlib.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/http/api.h"
#include "daemon/http/json_io.h"
#include "daemon/service/ports.h"
#include "daemon/service/services.h"
#include "fuzz/fuzz_check.h"
#include "storage/database.h"
#include "storage/stores.h"

namespace {

namespace json = boost::json;
using namespace missy;

struct World {
  std::unique_ptr<Database> db;
  std::unique_ptr<Stores> stores;
  SystemClock clock;
  RandomIds ids;
  std::unique_ptr<AuditBus> audit;
  std::unique_ptr<ConfigHolder> config;
  std::unique_ptr<Services> services;
  std::unique_ptr<http::Api> api;
};

World* world = nullptr;

HttpResponse Call(const std::string& method, const std::string& target, std::string body) {
  HttpRequest req;
  req.method = method;
  req.target = target;
  req.body = std::move(body);
  return world->api->HandleSync(std::move(req));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  const std::string dir = base + "/missy-fuzz-router-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  world = new World();
  auto db = Database::Open(dir + "/missyd.db");
  if (!db.ok()) abort();
  world->db = std::move(*db);
  world->stores = std::make_unique<Stores>(*world->db);
  world->audit = std::make_unique<AuditBus>(*world->db, world->stores->audit, world->clock);
  auto cfg = std::make_shared<DaemonConfig>();
  cfg->tokenizer = TokenizerMode::kHeuristic;
  cfg->missy_home = dir;
  world->config = std::make_unique<ConfigHolder>(cfg);
  ServiceDeps deps;
  deps.db = world->db.get();
  deps.stores = world->stores.get();
  deps.clock = &world->clock;
  deps.ids = &world->ids;
  deps.audit = world->audit.get();
  deps.config = world->config.get();
  world->services = std::make_unique<Services>(deps);
  world->api = std::make_unique<http::Api>(*world->services, "fuzz");
  for (const char* id : {"f1", "f2"}) {
    Call("POST", "/v1/sessions", std::string(R"({"id":")") + id + R"(","system_prompt":"s"})");
    Call("POST", std::string("/v1/sessions/") + id + "/messages",
         R"({"messages":[{"role":"user","content":"list files"},
            {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
             "function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"README.md"}]})");
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  const size_t eol = input.find('\n');
  const std::string line = input.substr(0, eol);
  std::string body = eol == std::string::npos ? std::string() : input.substr(eol + 1);
  const size_t space = line.find(' ');
  if (space == std::string::npos) return 0;
  const std::string method = line.substr(0, space);
  const std::string target = line.substr(space + 1);
  if (target.empty() || target[0] != '/') return 0;  // the HTTP parser never passes these
  // The path as the router reads it: "//metrics" and "/%6detrics" are /metrics.
  const std::vector<std::string> path = http::ParseTarget(target).segments;
  if (method == "POST" && path == std::vector<std::string>{"v1", "import", "missy"}) {
    return 0;  // reads files by path
  }

  const HttpResponse r = Call(method, target, std::move(body));
  const int s = r.status;
  if (method == "GET" && path == std::vector<std::string>{"metrics"}) {  // the one text answer
    MISSY_FUZZ_CHECK(s == 200 && r.body.rfind("# HELP ", 0) == 0,
                     "metrics answer " + std::to_string(s) + ": " + r.body.substr(0, 200));
    return 0;
  }
  // This process has no config file to reload: 503, with the usual error shape.
  const bool reload =
      method == "POST" && path == std::vector<std::string>{"v1", "config", "reload"};
  MISSY_FUZZ_CHECK(s == 200 || s == 201 || s == 400 || s == 404 || s == 405 || s == 409 ||
                       s == 413 || s == 422 || (reload && s == 503),
                   "unexpected status " + std::to_string(s) + " for " + line + ": " + r.body);
  boost::system::error_code ec;
  const json::value v = json::parse(r.body, ec);
  MISSY_FUZZ_CHECK(!ec && v.is_object(), "body is not a JSON object for " + line + ": " + r.body);
  if (s >= 400) {
    const json::value* e = v.get_object().if_contains("error");
    MISSY_FUZZ_CHECK(e != nullptr && e->is_object(), "error body without error: " + r.body);
    for (const char* key : {"code", "message", "field"}) {
      const json::value* m = e->get_object().if_contains(key);
      MISSY_FUZZ_CHECK(m != nullptr && m->is_string(),
                       std::string("error.") + key + " missing or not a string: " + r.body);
    }
  }
  return 0;
}

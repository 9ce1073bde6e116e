// missyd: the context-window daemon. A thin main: parse arguments, load config, build
// the subsystems in order, report READY, run the loop, exit 0 on SIGTERM/SIGINT.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#ifdef MISSY_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "config/config.h"
#include "daemon/api.h"
#include "daemon/auditor.h"
#include "daemon/net.h"
#include "daemon/tokenizers.h"
#include "storage/database.h"

namespace {

constexpr const char* kVersion = "0.1.0";

void PrintUsage() {
  std::printf(
      "usage: missyd [--config PATH] [--check-config] [--log-level LEVEL] [--version]\n"
      "\n"
      "  --config PATH     config file (default: $MISSY_HOME/config.yaml, MISSY_HOME\n"
      "                    defaults to ~/.missy); created with commented defaults if absent\n"
      "  --check-config    validate the config file and exit 0 (valid) or 1 (invalid)\n"
      "  --log-level L     override context.log_level (trace|debug|info|warn|error)\n"
      "  --version         print the version and exit\n");
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string RandomHex() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

void Notify(const char* state) {
#ifdef MISSY_HAVE_SYSTEMD
  sd_notify(0, state);
#else
  (void)state;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  using namespace missy;
  std::string config_path;
  std::string log_level_override;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--config" && i + 1 < argc) {
      config_path = argv[++i];
    } else if (arg.rfind("--config=", 0) == 0) {
      config_path = arg.substr(9);
    } else if (arg == "--check-config") {
      check_only = true;
    } else if (arg == "--log-level" && i + 1 < argc) {
      log_level_override = argv[++i];
    } else if (arg == "--version") {
      std::printf("missyd %s\n", kVersion);
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      PrintUsage();
      return 0;
    } else {
      std::fprintf(stderr, "missyd: unknown argument '%s'\n\n", arg.c_str());
      PrintUsage();
      return 2;
    }
  }

  // Everything missyd creates (database, WAL, sockets, JSONL mirrors) is private to its user.
  umask(077);
  try {
    const std::string home = ResolveMissyHome();
    if (config_path.empty()) config_path = home + "/config.yaml";

    if (check_only) {
      Result<DaemonConfig> cfg = LoadConfigFile(config_path, home);
      if (!cfg.ok()) {
        std::fprintf(stderr, "missyd: %s\n", cfg.status().message().c_str());
        return 1;
      }
      std::printf("missyd: %s is valid\n", config_path.c_str());
      return 0;
    }

    bool created = false;
    Result<DaemonConfig> loaded = LoadOrCreateConfig(config_path, home, &created);
    if (!loaded.ok()) {
      std::fprintf(stderr, "missyd: %s\n", loaded.status().message().c_str());
      return 1;
    }
    auto config = std::make_shared<DaemonConfig>(std::move(*loaded));
    if (!log_level_override.empty()) config->log_level = log_level_override;

    auto logger = spdlog::stderr_color_mt("missyd");
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    spdlog::set_level(spdlog::level::from_str(config->log_level));
    if (created) spdlog::info("created default config at {}", config_path);
    spdlog::info("missyd {} starting (config {})", kVersion, config_path);

    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(config->database_path).parent_path(), ec);
    Result<std::unique_ptr<Database>> db = Database::Open(config->database_path);
    if (!db.ok()) {
      spdlog::critical("cannot open database: {}", db.status().ToString());
      return 1;
    }
    spdlog::info("database {} (schema version {})", config->database_path, (*db)->SchemaVersion());

    // Exact token counts need the rank files; a missing or corrupt one is a startup error
    // unless the config asks for the heuristic.
    TokenizerRegistry tokenizers(config->data_dir);
    if (config->tokenizer == TokenizerMode::kExact) {
      Status loaded_ranks = tokenizers.LoadAll();
      if (!loaded_ranks.ok()) {
        spdlog::critical("{} (set context.tokenizer: heuristic to run without exact counts)",
                         loaded_ranks.message());
        return 1;
      }
      spdlog::info("tokenizers o200k_base and cl100k_base loaded from {}", tokenizers.data_dir());
    } else {
      spdlog::warn("context.tokenizer is heuristic: token counts are conservative estimates");
    }

    Auditor auditor(db->get(), NowMs);
    ApiDeps deps;
    deps.db = db->get();
    deps.auditor = &auditor;
    deps.clock_ms = NowMs;
    deps.new_id = RandomHex;
    deps.tokenizers = &tokenizers;
    deps.version = kVersion;
    Api api(deps, config);

    NetOptions net;
    net.api_socket_path = config->socket_path;
    net.audit_socket_path = config->audit_socket_path;
    net.body_limit = static_cast<size_t>(config->max_body_bytes);
    net.read_timeout = std::chrono::milliseconds(config->read_timeout_ms);
    net.subscriber_buffer_bytes = static_cast<size_t>(config->audit_client_buffer_bytes);
    net.on_security_event = [&auditor](const std::string& what, uint32_t uid, int32_t pid) {
      spdlog::warn("refused connection: {} (uid {}, pid {})", what, uid, pid);
      (void)auditor.Emit("connection.refused", "security", "deny", "",
                         boost::json::object{{"reason", what}, {"uid", uid}, {"pid", pid}});
    };
    Database* database = db->get();
    BacklogProvider backlog = [database](const SubscribeRequest& req) {
      std::vector<std::string> lines;
      if (req.since < 0) return lines;
      int64_t since = req.since;
      for (;;) {
        Result<std::vector<AuditEvent>> events = database->AuditSince(since, 1000);
        if (!events.ok() || events->empty()) break;
        for (const AuditEvent& e : *events) {
          since = e.seq;
          bool wanted = req.types.empty();
          for (const std::string& t : req.types) wanted = wanted || t == e.event_type;
          if (wanted) lines.push_back(AuditEventToJsonLine(e));
        }
      }
      return lines;
    };
    Result<std::unique_ptr<NetServer>> server =
        NetServer::Create(net, [&api](const HttpRequest& r) { return api.Handle(r); }, backlog);
    if (!server.ok()) {
      spdlog::critical("{}", server.status().message());
      return 1;
    }
    NetServer* srv = server->get();
    auditor.SetPublisher([srv](int64_t seq, const std::string& type, std::string line) {
      srv->Publish(seq, type, std::move(line));
    });

    // SIGHUP: parse into a new config and swap only on success (sockets and database
    // paths need a restart).
    srv->HandleSignals([&]() {
      Result<DaemonConfig> fresh = LoadConfigFile(config_path, home);
      if (!fresh.ok()) {
        spdlog::error("reload failed, keeping the current config: {}", fresh.status().message());
        (void)auditor.Emit("config.reload_failed", "daemon", "error", "",
                           boost::json::object{{"path", config_path},
                                               {"error", fresh.status().message()}});
        return;
      }
      auto next = std::make_shared<DaemonConfig>(std::move(*fresh));
      spdlog::set_level(spdlog::level::from_str(next->log_level));
      api.SetConfig(next);
      spdlog::info("config reloaded from {}", config_path);
      (void)auditor.Emit("config.reloaded", "daemon", "allow", "",
                         boost::json::object{{"path", config_path}});
    });

    // Maintenance: audit retention (the chain stays verifiable) and jobs whose lease ended.
    srv->Every(std::chrono::minutes(10), [&api, database]() {
      auto cfg = api.config();
      AuditRetention retention;
      retention.max_events = cfg->audit_retention_events;
      if (cfg->audit_retention_days > 0) {
        retention.min_timestamp_ms = NowMs() - cfg->audit_retention_days * 86400000LL;
      }
      Result<int64_t> pruned = database->PruneAuditEvents(retention);
      if (pruned.ok() && *pruned > 0) spdlog::info("audit retention removed {} events", *pruned);
      Result<int64_t> requeued = database->RequeueExpiredJobs(NowMs());
      if (requeued.ok() && *requeued > 0) spdlog::info("requeued {} expired jobs", *requeued);
    });

    (void)auditor.Emit("daemon.started", "daemon", "allow", "",
                       boost::json::object{{"version", kVersion},
                                           {"pid", static_cast<int64_t>(getpid())},
                                           {"socket", config->socket_path},
                                           {"audit_socket", config->audit_socket_path}});
    std::printf("missyd %s listening\n  api socket:   %s\n  audit socket: %s\n", kVersion,
                config->socket_path.c_str(), config->audit_socket_path.c_str());
    std::printf("try: curl --unix-socket %s http://localhost/v1/health\n",
                config->socket_path.c_str());
    std::fflush(stdout);
    Notify("READY=1");
    srv->Run();
    Notify("STOPPING=1");
    (void)auditor.Emit("daemon.stopped", "daemon", "allow", "", boost::json::object{});
    spdlog::info("missyd stopped");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "missyd: fatal: %s\n", e.what());
    return 1;
  }
}

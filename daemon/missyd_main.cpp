// missyd: the context-window daemon. A thin main: parse arguments, take the sockets
// systemd passed (if any), load config, build the subsystems in order, report READY,
// run the loop, exit 0 on SIGTERM/SIGINT. Systemd integration lives in daemon/ops/.
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "config/paths.h"
#include "core/listen_address.h"
#include "config/tokenizers.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/audit/audit_mirror.h"
#include "daemon/broker/audit_publisher.h"
#include "daemon/broker/job_dispatcher.h"
#include "daemon/broker/worker_cli.h"
#include "daemon/http/api.h"
#include "daemon/net/server.h"
#include "daemon/ops/listen_fds.h"
#include "daemon/ops/logging.h"
#include "daemon/ops/sd_notify.h"
#include "config/token_file.h"
#include "daemon/ops/watchdog.h"
#include "daemon/proxy/proxy_service.h"
#include "daemon/service/config_reloader.h"
#include "daemon/service/ports.h"
#include "daemon/service/services.h"
#include "daemon/ui/ui_handler.h"
#include "storage/database.h"
#include "storage/stores.h"

namespace {

constexpr const char* kVersion = "0.1.0";

// Returns freed heap pages to the system (glibc keeps them in its arenas otherwise).
void ReleaseFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void PrintUsage() {
  std::printf(
      "usage: missyd [--config PATH] [--check-config] [--log-level LEVEL] [--version]\n"
      "       missyd worker --broker URL [...]   (a summarization worker: missyd worker --help)\n"
      "\n"
      "  --config PATH     config file (default: $MISSY_HOME/config.yaml, MISSY_HOME\n"
      "                    defaults to ~/.missy); created with commented defaults if absent\n"
      "  --check-config    validate the config file and exit 0 (valid) or 1 (invalid)\n"
      "  --log-level L     override context.log_level (trace|debug|info|warn|error)\n"
      "  --version         print the version and exit\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace missy;
  std::string config_path;
  std::string log_level_override;
  bool check_only = false;
  if (argc > 1 && std::string(argv[1]) == "worker") return WorkerMain(argc - 1, argv + 1);
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

    // Sockets passed by systemd (missyd.socket) are taken first: they replace the
    // configured socket paths.
    Result<ops::ActivatedSockets> activated = ops::TakeActivatedSockets();
    if (!activated.ok()) {
      std::fprintf(stderr, "missyd: %s\n", activated.status().message().c_str());
      return 1;
    }
    bool created = false;
    Result<DaemonConfig> loaded = LoadOrCreateConfig(config_path, home, &created);
    if (!loaded.ok()) {
      std::fprintf(stderr, "missyd: %s\n", loaded.status().message().c_str());
      return 1;
    }
    // What every config read keeps, at start-up and on reload: the command line's log
    // level and the adopted sockets.
    auto pin = [override = log_level_override, a = *activated](DaemonConfig& c) {
      if (!override.empty()) c.log_level = override;
      if (a.api_fd >= 0) c.socket_path = a.api_path;
      if (a.audit_fd >= 0) c.audit_socket_path = a.audit_path;
    };
    auto config = std::make_shared<DaemonConfig>(std::move(*loaded));
    pin(*config);

    // Under systemd, lines go to the journal with their priority (daemon/ops/logging.h).
    spdlog::set_default_logger(
        ops::MakeStderrLogger("missyd", ops::StderrIsJournal() || activated->any()));
    spdlog::set_level(spdlog::level::from_str(config->log_level));
    if (created) spdlog::info("created default config at {}", config_path);
    spdlog::info("missyd {} starting (config {})", kVersion, config_path);

    if (activated->any()) {
      std::string proxies;
      for (const std::string& address : activated->proxy_addresses) proxies += ", proxy " + address;
      spdlog::info("socket activation: api {}, audit {}{}",
                   activated->api_fd >= 0 ? activated->api_path : "(bound here)",
                   activated->audit_fd >= 0 ? activated->audit_path : "(bound here)", proxies);
    }
    ops::NotifyStatus("opening the database");
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(config->database_path).parent_path(),
                                        ec);
    // The memory bound (context.limits.memory_mb) is shared out: an eighth to SQLite's
    // page caches, half to the history cache (below), the rest to the daemon itself
    // (tokenizer ranks, buffers, allocator slack).
    DatabaseOptions db_options;
    db_options.cache_budget_bytes = (config->limits.memory_mb << 20) / 8;
    db_options.log = [](const std::string& line) { spdlog::info("{}", line); };
    Result<std::unique_ptr<Database>> db = Database::Open(config->database_path, db_options);
    if (!db.ok()) {
      spdlog::critical("cannot open database: {}", db.status().ToString());
      return 1;
    }
    spdlog::info("database {} (schema version {})", config->database_path, (*db)->SchemaVersion());

    // Exact token counts need the rank files; a missing or corrupt one is a startup error
    // unless the config asks for the heuristic.
    ops::NotifyStatus("loading tokenizers");
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

    Stores stores(**db);
    SystemClock clock;
    RandomIds ids;
    AuditBus audit(**db, stores.audit, clock);
    ConfigHolder config_holder(config);
    // The broker bridge (context.broker): publishes from the outbox cursor on its own
    // thread; a broker that is down or refuses us never stops the daemon.
    std::unique_ptr<AuditPublisher> publisher;
    if (!config->broker.url.empty() && config->broker.audit) {
      AuditPublisherOptions bo;
      bo.endpoint = broker::EndpointFrom(config->broker);
      bo.subject_prefix = config->broker.subject_prefix;
      bo.daemon_id = broker::DaemonIdFrom(config->broker);
      publisher = std::make_unique<AuditPublisher>(stores.audit, std::move(bo));
    }
    // Distributed summarization (context.broker.jobs): each summarization step goes to a
    // `missyd worker` over MISSY_JOBS; without a result in time it runs here.
    std::unique_ptr<JobDispatcher> dispatcher;
    if (!config->broker.url.empty() && config->broker.jobs) {
      JobDispatcherOptions jo;
      jo.endpoint = broker::EndpointFrom(config->broker);
      jo.subject_prefix = config->broker.subject_prefix;
      jo.daemon_id = broker::DaemonIdFrom(config->broker);
      jo.timeout = std::chrono::milliseconds(config->broker.job_timeout_ms);
      jo.ack_wait = std::chrono::milliseconds(config->broker.job_ack_wait_ms);
      jo.max_deliver = config->broker.job_max_deliver;
      dispatcher = std::make_unique<JobDispatcher>(std::move(jo));
      dispatcher->Start();
    }
    ServiceDeps deps;
    deps.db = db->get();
    deps.stores = &stores;
    deps.clock = &clock;
    deps.ids = &ids;
    deps.tokenizers = &tokenizers;
    deps.audit = &audit;
    deps.config = &config_holder;
    if (publisher) deps.broker_stats = [b = publisher.get()] { return b->Stats(); };
    deps.dispatcher = dispatcher.get();
    // Declared before the services, whose worker tasks (the reload route) use it.
    std::optional<ConfigReloader> reloader;
    std::unique_ptr<ops::Watchdog> watchdog;
    // The history cache gets half of the memory bound; SQLite's caches and the
    // rest of the daemon live in the other half.
    Services services(deps, static_cast<size_t>(config->limits.memory_mb) << 19);
    http::Api api(services, kVersion);

    NetOptions net;
    net.api_socket_path = config->socket_path;
    net.audit_socket_path = config->audit_socket_path;
    net.body_limit = static_cast<size_t>(config->limits.max_body_bytes);
    net.read_timeout = std::chrono::milliseconds(config->limits.read_timeout_ms);
    net.subscriber_buffer_bytes = static_cast<size_t>(config->limits.audit_client_buffer_bytes);
    net.api_listen_fd = activated->api_fd;
    net.audit_listen_fd = activated->audit_fd;
    net.on_stopping = [&watchdog, &audit] {
      ops::NotifyStopping("stopping: finishing requests in flight");
      audit.feed().CloseAll();  // open GET /v1/audit/stream answers end now
      if (watchdog) watchdog->Stop();
    };
    net.on_security_event = [&audit](const std::string& what, uint32_t uid, int32_t pid) {
      spdlog::warn("refused connection: {} (uid {}, pid {})", what, uid, pid);
      audit.Emit(AuditRecord{
          "connection.refused", "security", "deny", "",
          AuditDetail().Add("reason", what).Add("uid", int64_t{uid}).Add("pid", int64_t{pid})});
    };
    // The inspector page (docs/INSPECTOR.md): /ui/ on the proxy's listeners, before the
    // proxy sees the request, and on context.ui.listen; a read-only window on the API.
    ui::UiHandler inspector(ui::UiOptions{
        [&api](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
          api.Handle(std::move(request), std::move(exchange));
        },
        [&config_holder] { return ReadTokenFile(config_holder.Get()->proxy.token_file); },
        [&config_holder] { return config_holder.Get()->ui.enabled; },
        [&config_holder] { return config_holder.Get(); }});
    for (const std::string& text : config->ui.listen) {
      Result<ListenAddress> address = ParseListenAddress(text);
      if (!address.ok()) {
        spdlog::critical("context.ui.listen: {}", address.status().message());
        return 1;
      }
      net.ui_listen.push_back(*address);
    }
    net.ui_handler = [&inspector](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
      inspector.Handle(std::move(request), std::move(exchange));
    };
    // Proxy mode: the agents' base URL (docs/PROXY.md). Its relays run until they finish,
    // after the server stopped accepting and before the services go. Sockets passed by
    // systemd (missyd-proxy.socket, named "proxy") are served even when
    // context.proxy.enabled is false: enabling the unit is the user's choice. They own the
    // address: context.proxy.listen is then not bound at all.
    std::unique_ptr<proxy::ProxyService> proxy_service;
    net.proxy_listen_fds = activated->proxy_fds;
    if (!activated->proxy_fds.empty()) {
      std::string addresses;
      for (const std::string& a : activated->proxy_addresses) {
        addresses += (addresses.empty() ? "" : ", ") + a;
      }
      if (config->proxy.enabled) {
        spdlog::info(
            "proxy: serving the socket(s) passed by systemd ({}); context.proxy.listen "
            "is not bound",
            addresses);
      } else {
        spdlog::info(
            "proxy: serving the socket(s) passed by systemd ({}) although "
            "context.proxy.enabled is false (missyd-proxy.socket is enabled)",
            addresses);
      }
    } else if (config->proxy.enabled) {
      for (const std::string& text : config->proxy.listen) {
        Result<ListenAddress> address = ParseListenAddress(text);
        if (address.ok() && address->kind == ListenAddress::Kind::kUnix) {
          Result<std::string> path =
              ResolveConfigPath(address->path, home, "context.proxy.listen");
          if (path.ok()) address->path = *path;
          else address = path.status();
        }
        if (!address.ok()) {
          spdlog::critical("context.proxy.listen: {}", address.status().message());
          return 1;
        }
        net.proxy_listen.push_back(*address);
      }
    }
    if (config->proxy.enabled || !net.proxy_listen_fds.empty()) {
      proxy_service = std::make_unique<proxy::ProxyService>(services);
      net.proxy_handler = [p = proxy_service.get(), &inspector](
                              HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
        if (ui::UiHandler::Claims(request.target)) {
          return inspector.Handle(std::move(request), std::move(exchange));
        }
        p->Handle(std::move(request), std::move(exchange));
      };
      net.proxy_body_watch = [p = proxy_service.get()](const HttpRequest& head) {
        return p->WatchBody(head);
      };
      net.proxy_body_limit = static_cast<size_t>(config->proxy.max_body_bytes);
    }
    BacklogProvider backlog = [&audit](const SubscribeRequest& req, int64_t after_seq,
                                       size_t max_lines, int64_t* last_seq_seen) {
      return audit.BacklogPage(req.types, after_seq, max_lines, last_seq_seen);
    };
    Result<std::unique_ptr<NetServer>> server = NetServer::Create(
        net,
        [&api](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
          api.Handle(std::move(request), std::move(exchange));
        },
        backlog);
    if (!server.ok()) {
      spdlog::critical("{}", server.status().message());
      return 1;
    }
    NetServer* srv = server->get();
    // The optional JSONL mirror gets every committed event before the subscribers do.
    std::unique_ptr<AuditMirror> mirror;
    if (!config->audit.mirror.empty()) {
      AuditMirrorOptions mirror_options;
      mirror_options.path = config->audit.mirror;
      mirror_options.max_bytes = config->audit.mirror_max_bytes;
      mirror_options.files = static_cast<int>(config->audit.mirror_files);
      Result<std::unique_ptr<AuditMirror>> opened = AuditMirror::Open(mirror_options);
      if (!opened.ok()) {
        spdlog::critical("{} (context.audit.mirror)", opened.status().message());
        return 1;
      }
      mirror = std::move(*opened);
      spdlog::info("audit events mirrored to {}", mirror->path());
    }
    audit.SetPublisher([srv, m = mirror.get(), b = publisher.get()](
                           int64_t seq, const std::string& type, std::string line) {
      if (m != nullptr) m->Write(line);
      if (b != nullptr) b->Notify(seq);
      srv->Publish(seq, type, std::move(line));
    });
    if (publisher) publisher->Start();

    // SIGHUP and POST /v1/config/reload: parse into a new config and swap only on
    // success (sockets and database paths need a restart).
    auto serving = [&services, &api] {
      return "serving: " + std::to_string(services.history.cached_sessions()) +
             " sessions cached, " + std::to_string(api.requests()) + " requests";
    };
    ReloadOptions reload;
    reload.config_path = config_path;
    reload.missy_home = home;
    reload.pin = pin;
    reload.on_begin = [] { ops::NotifyReloading("reloading the config"); };
    reload.on_end = [&serving](const Status& st) {
      ops::NotifyReady(st.ok() ? serving()
                               : "config rejected, kept the current one: " + st.message());
    };
    reloader.emplace(std::move(reload), config_holder, audit, &services.history, &clock);
    srv->HandleSignals([&reloader] { (void)reloader->Reload(); });

    // Background summarization: its own thread, claiming jobs from the queue in SQLite
    // (jobs left by a previous run are picked up too).
    if (dispatcher) services.summarizer.SetThreads(static_cast<int>(config->broker.jobs_in_flight));
    services.summarizer.Start();
    // Idle sessions' histories are released, and the memory they held goes back to the
    // system (glibc keeps freed heap pages otherwise).
    srv->Every(std::chrono::seconds(15), [&services, &serving]() {
      ops::NotifyStatus(serving());
      services.workers.Post([&services] {
        if (services.history.EvictIdle() > 0) ReleaseFreeMemory();
      });
    });
    // The watchdog pings at half of WatchdogSec while the loop and the writer answer.
    if (const auto timeout = ops::WatchdogTimeout(); timeout.count() > 0) {
      const auto period =
          std::max(std::chrono::milliseconds(1),
                   std::chrono::duration_cast<std::chrono::milliseconds>(timeout / 2));
      Database* database = db->get();
      watchdog = std::make_unique<ops::Watchdog>(
          period,
          [database](std::function<void()> committed) {
            database->WriteAsync([](Txn&) { return Status::Ok(); },
                                 [committed = std::move(committed)](Status) { committed(); });
          },
          [] { ops::NotifyWatchdog(); });
      srv->Every(std::max(std::chrono::milliseconds(1), period / 4),
                 [w = watchdog.get()] { w->LoopBeat(); });
      spdlog::info("watchdog: pinging every {} ms", period.count());
    }
    // Maintenance: audit retention (the chain stays verifiable) and jobs whose lease ended.
    srv->Every(std::chrono::minutes(10), [&services]() {
      services.workers.Post([&services] { services.admin.Maintain(); });
    });

    (void)audit.EmitAndWait(AuditRecord{"daemon.started", "daemon", "allow", "",
                                        AuditDetail()
                                            .Add("version", kVersion)
                                            .Add("pid", static_cast<int64_t>(getpid()))
                                            .Add("socket", config->socket_path)
                                            .Add("audit_socket", config->audit_socket_path)});
    std::printf("missyd %s listening\n  api socket:   %s\n  audit socket: %s\n", kVersion,
                config->socket_path.c_str(), config->audit_socket_path.c_str());
    std::printf("try: curl --unix-socket %s http://localhost/v1/health\n",
                config->socket_path.c_str());
    for (const std::string& address : srv->ProxyAddresses()) {
      std::printf("  proxy:        %s (ANTHROPIC_BASE_URL / OPENAI_BASE_URL; see missyctl proxy)\n",
                  address.starts_with("unix:") ? address.c_str()
                                               : ("http://" + address).c_str());
    }
    if (config->ui.enabled) {
      std::vector<std::string> pages = srv->UiAddresses();
      for (const std::string& address : srv->ProxyAddresses()) {
        if (!address.starts_with("unix:")) pages.push_back(address);
      }
      for (const std::string& address : pages) {
        std::printf("  inspector:    http://%s/ui/\n", address.c_str());
      }
    }
    std::fflush(stdout);
    ops::NotifyReady(serving());
    if (watchdog) watchdog->Start();
    srv->Run();
    if (watchdog) watchdog->Stop();
    if (proxy_service) {
      ops::NotifyStopping("stopping: finishing proxied requests");
      proxy_service->Stop(std::chrono::seconds(10));
    }
    ops::NotifyStopping("stopping: finishing summarization");
    // The summarization job in progress finishes (its events are still published), then
    // nothing publishes to the server any more: it is destroyed before the services.
    if (dispatcher) dispatcher->Stop();  // steps waiting for a worker finish locally
    services.summarizer.Stop();
    services.workers.Drain();  // a reload still running finishes before its reloader goes
    reloader.reset();
    (void)audit.EmitAndWait(AuditRecord{"daemon.stopped", "daemon", "allow", "", AuditDetail()});
    audit.SetPublisher(nullptr);
    if (publisher) publisher->Stop();  // what it did not publish waits for the next start
    spdlog::info("missyd stopped");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "missyd: fatal: %s\n", e.what());
    return 1;
  }
}

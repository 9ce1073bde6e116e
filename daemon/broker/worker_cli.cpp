#include "daemon/broker/worker_cli.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>

#include "config/config.h"
#include "config/tokenizers.h"
#include "daemon/broker/job_worker.h"
#include "daemon/broker/nats_conn.h"
#include "daemon/ops/logging.h"
#include "daemon/ops/sd_notify.h"

namespace missy {

namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnStopSignal(int) { g_stop.store(true); }

void PrintWorkerUsage() {
  std::printf(
      "usage: missyd worker [--broker URL] [--config PATH] [--threads N] [--name NAME]\n"
      "                     [--log-level L]\n"
      "A stateless summarization worker: takes jobs from the MISSY_JOBS stream of a NATS\n"
      "JetStream server and returns the summaries (docs/BROKER.md). No database, no sockets.\n"
      "  --broker URL     nats://host:4222 or tls://host:4222 (default: context.broker.url)\n"
      "  --config PATH    config file for credentials (context.broker.*) and providers\n"
      "                   (default: ~/.missy/config.yaml when it exists)\n"
      "  --threads N      jobs at once (default 1)\n"
      "  --name NAME      this worker's name in results and logs (default host-pid)\n"
      "  --log-level L    trace|debug|info|warn|error\n");
}

bool ParseThreads(const std::string& text, int* out) {
  try {
    size_t used = 0;
    const int n = std::stoi(text, &used);
    if (used != text.size() || n < 1 || n > 256) return false;
    *out = n;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

int WorkerMain(int argc, char** argv) {
  std::string config_path, url, log_level;
  JobWorkerOptions options;
  options.name = JobWorker::DefaultName();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--broker" && has_value) {
      url = argv[++i];
    } else if (arg == "--config" && has_value) {
      config_path = argv[++i];
    } else if (arg == "--threads" && has_value) {
      if (!ParseThreads(argv[++i], &options.threads)) {
        std::fprintf(stderr, "missyd worker: --threads: expected 1..256, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (arg == "--name" && has_value) {
      options.name = broker::SubjectToken(argv[++i]);
    } else if (arg == "--log-level" && has_value) {
      log_level = argv[++i];
    } else if (arg == "--help" || arg == "-h") {
      PrintWorkerUsage();
      return 0;
    } else {
      std::fprintf(stderr, "missyd worker: unknown argument '%s'\n\n", arg.c_str());
      PrintWorkerUsage();
      return 2;
    }
  }
  const std::string home = ResolveMissyHome();
  const bool explicit_config = !config_path.empty();
  if (!explicit_config) config_path = home + "/config.yaml";
  std::error_code ec;
  Result<DaemonConfig> config = explicit_config || std::filesystem::exists(config_path, ec)
                                    ? LoadConfigFile(config_path, home)
                                    : ParseConfig("", home);
  if (!config.ok()) {
    std::fprintf(stderr, "missyd worker: %s\n", config.status().message().c_str());
    return 1;
  }
  if (!url.empty()) config->broker.url = url;
  if (config->broker.url.empty()) {
    std::fprintf(stderr,
                 "missyd worker: no broker: pass --broker nats://host:4222 or set "
                 "context.broker.url in %s\n",
                 config_path.c_str());
    return 1;
  }
  spdlog::set_default_logger(ops::MakeStderrLogger("missyd-worker", ops::StderrIsJournal()));
  spdlog::set_level(spdlog::level::from_str(log_level.empty() ? config->log_level : log_level));

  TokenizerRegistry tokenizers(config->data_dir);
  if (config->tokenizer == TokenizerMode::kExact) {
    if (Status st = tokenizers.LoadAll(); !st.ok()) {
      // The daemon recounts every summary with its own tokenizer; here counts only size
      // the summary, so the heuristic will do.
      spdlog::warn("worker: {}; sizing summaries with heuristic counts", st.message());
      config->tokenizer = TokenizerMode::kHeuristic;
    }
  }

  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  spdlog::info("missyd worker {} starting (broker {}, config {})", options.name,
               broker::RedactUrl(config->broker.url),
               explicit_config || std::filesystem::exists(config_path, ec) ? config_path
                                                                           : "(defaults)");
  options.on_connected = [] { ops::NotifyReady("taking summarization jobs"); };
  JobWorker worker(std::move(*config), &tokenizers, options);
  worker.Run(g_stop);
  ops::NotifyStopping("stopping");
  const JobWorkerStats stats = worker.Stats();
  spdlog::info("worker {} stopped: {} summaries written, {} failed, {} expired", options.name,
               stats.done, stats.failed, stats.expired);
  return 0;
}

}  // namespace missy

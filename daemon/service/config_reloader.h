// ConfigReloader: the one reload path, shared by SIGHUP and POST /v1/config/reload. It
// reads the config file into a new DaemonConfig and swaps it into the ConfigHolder only
// if it is valid (Kea's staging config): an invalid file changes nothing, is logged and
// audited as `config.rejected` with the error naming the key; a valid one is applied
// (log level, history cache bounds, every per-request read) and audited as
// `config.reloaded` with the keys whose values changed. Keys read only at start-up
// (sockets, database, data_dir, tokenizer, the socket limits) keep their running values
// and are reported as needing a restart. Reloads are serialised; thread-safe.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "core/status.h"

namespace missy {

class AuditBus;
class Clock;
class ConfigHolder;
class HistoryCache;

struct ReloadOutcome {
  std::vector<std::string> changed;           // key paths applied by this reload
  std::vector<std::string> restart_required;  // changed in the file, applied at next start
};

struct ReloadOptions {
  std::string config_path;
  std::string missy_home;
  // Applied to every config read, so that they survive reloads: command-line overrides
  // (--log-level) and sockets adopted from the service manager. Empty: none.
  std::function<void(DaemonConfig&)> pin;
  // Called around every reload, applied or not (sd_notify RELOADING=1 / READY=1).
  std::function<void()> on_begin;
  std::function<void(const Status&)> on_end;
};

class ConfigReloader {
 public:
  // `history` may be null (no cache bounds to update). Registers itself for For(holder).
  ConfigReloader(ReloadOptions options, ConfigHolder& holder, AuditBus& audit,
                 HistoryCache* history, const Clock* clock);
  ~ConfigReloader();
  ConfigReloader(const ConfigReloader&) = delete;
  ConfigReloader& operator=(const ConfigReloader&) = delete;

  // Reads, validates and swaps. Error: Unprocessable whose field() is the key path to
  // blame ("context.budget.total"; empty when the file itself cannot be read) and whose
  // message is the parser's, naming the file.
  Result<ReloadOutcome> Reload();

  const std::string& config_path() const { return options_.config_path; }

  // The reloader serving `holder`'s configuration, or nullptr. The HTTP route finds the
  // daemon's reloader through the ConfigHolder it already has.
  static ConfigReloader* For(const ConfigHolder* holder);

  // The keys (below `context:`) that only take effect at start-up.
  static bool NeedsRestart(std::string_view key_path);

 private:
  Result<ReloadOutcome> ReloadLocked();

  ReloadOptions options_;
  ConfigHolder& holder_;
  AuditBus& audit_;
  HistoryCache* history_;
  const Clock* clock_;
  std::mutex mu_;
};

}  // namespace missy

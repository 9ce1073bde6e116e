// The reload path. See config_reloader.h.
#include "daemon/service/config_reloader.h"

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <utility>

#include "config/key_table.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/service/config_diff.h"
#include "daemon/service/history_cache.h"
#include "daemon/service/service_deps.h"

namespace missy {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}
std::map<const ConfigHolder*, ConfigReloader*>& Registry() {
  static std::map<const ConfigHolder*, ConfigReloader*> registry;
  return registry;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

}  // namespace

bool ConfigReloader::NeedsRestart(std::string_view key_path) {
  static constexpr std::string_view kStartupKeys[] = {"socket",
                                                      "audit_socket",
                                                      "database",
                                                      "data_dir",
                                                      "tokenizer",
                                                      "limits.max_body_bytes",
                                                      "limits.read_timeout_ms",
                                                      "limits.audit_client_buffer_bytes",
                                                      "audit.mirror",
                                                      "audit.mirror_max_bytes",
                                                      "audit.mirror_files",
                                                      "ui.listen"};
  if (key_path.substr(0, 7) == "broker.") return true;  // the bridge is built at start
  for (std::string_view k : kStartupKeys) {
    if (k == key_path) return true;
  }
  return false;
}

ConfigReloader::ConfigReloader(ReloadOptions options, ConfigHolder& holder, AuditBus& audit,
                               HistoryCache* history, const Clock* clock)
    : options_(std::move(options)),
      holder_(holder),
      audit_(audit),
      history_(history),
      clock_(clock) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[&holder_] = this;
}

ConfigReloader::~ConfigReloader() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(&holder_);
  if (it != Registry().end() && it->second == this) Registry().erase(it);
}

ConfigReloader* ConfigReloader::For(const ConfigHolder* holder) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(holder);
  return it == Registry().end() ? nullptr : it->second;
}

Result<ReloadOutcome> ConfigReloader::Reload() {
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.on_begin) options_.on_begin();
  Result<ReloadOutcome> outcome = ReloadLocked();
  if (options_.on_end) options_.on_end(outcome.ok() ? Status::Ok() : outcome.status());
  return outcome;
}

Result<ReloadOutcome> ConfigReloader::ReloadLocked() {
  Result<DaemonConfig> fresh = LoadConfigFile(options_.config_path, options_.missy_home);
  if (!fresh.ok()) {
    const Status& st = fresh.status();
    spdlog::error("config reload rejected, keeping the current config: {}", st.message());
    audit_.Emit(AuditRecord{"config.rejected", "daemon", "error", "",
                            AuditDetail()
                                .Add("path", options_.config_path)
                                .Add("key", st.field())
                                .Add("error", st.message())});
    return Status::Unprocessable(st.message(), st.field());
  }
  auto next = std::make_shared<DaemonConfig>(std::move(*fresh));
  if (options_.pin) options_.pin(*next);

  const std::shared_ptr<const DaemonConfig> running = holder_.Get();
  ReloadOutcome outcome;
  for (const ConfigKey& key : ContextKeys()) {
    if (!NeedsRestart(key.path) || SameKeyValue(key, *running, *next)) continue;
    outcome.restart_required.push_back(ContextKeyPath(key.path));
    CopyKeyValue(key, *running, *next);
  }
  outcome.changed = ChangedConfigKeys(*running, *next);

  spdlog::set_level(spdlog::level::from_str(next->log_level));
  if (history_ != nullptr) {
    history_->SetMaxBytes(static_cast<size_t>(next->limits.memory_mb) << 19);
    history_->SetIdleRelease(clock_, next->limits.cache_idle_seconds * 1000);
  }
  holder_.Set(next);

  spdlog::info("config reloaded from {}: {} key(s) changed{}{}", options_.config_path,
               outcome.changed.size(), outcome.changed.empty() ? "" : ": ", Join(outcome.changed));
  if (!outcome.restart_required.empty()) {
    spdlog::warn("config: {} take(s) effect at the next restart", Join(outcome.restart_required));
  }
  audit_.Emit(AuditRecord{"config.reloaded", "daemon", "allow", "",
                          AuditDetail()
                              .Add("path", options_.config_path)
                              .Add("changed", outcome.changed)
                              .Add("restart_required", outcome.restart_required)});
  return outcome;
}

}  // namespace missy

#include "daemon/service/admin_service.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "daemon/audit/audit_bus.h"
#include "daemon/service/counting.h"
#include "daemon/service/history_cache.h"
#include "daemon/service/ports.h"
#include "storage/database.h"
#include "storage/missy_import.h"
#include "storage/stores.h"

namespace missy {

namespace {

int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return 0;
}

}  // namespace

AdminService::AdminService(const ServiceDeps& deps, HistoryCache& history)
    : deps_(deps), history_(history), started_ms_(deps.clock->NowMs()) {}

HealthFigures AdminService::Health() {
  HealthFigures h;
  h.uptime_ms = deps_.clock->NowMs() - started_ms_;
  h.schema_version = deps_.db->SchemaVersion();
  h.cached_sessions = history_.cached_sessions();
  h.cached_messages = history_.cached_messages();
  h.known_messages = history_.known_messages();
  h.cached_bytes = history_.cached_bytes();
  h.cache_max_bytes = history_.max_bytes();
  h.rss_bytes = ResidentBytes();
  h.sqlite = deps_.db->MemoryStats();
  const WriterStats stats = deps_.db->GetWriterStats();
  h.write_transactions = stats.transactions;
  h.commits_with_fsync = stats.commits_with_fsync;
  return h;
}

Result<std::vector<Job>> AdminService::Jobs(const ListOptions& options, const std::string& state) {
  if (!state.empty() && state != "queued" && state != "running" && state != "done" &&
      state != "failed") {
    return Status::InvalidArgument("expected queued, running, done or failed", "state");
  }
  return deps_.stores->jobs.List(options, state);
}

void AdminService::Audit(int64_t since, int limit, std::string type,
                         Done<std::vector<AuditEvent>> done) {
  auto shared_done = std::make_shared<Done<std::vector<AuditEvent>>>(std::move(done));
  deps_.audit->AfterPending([this, since, limit, type = std::move(type), shared_done](Status st) {
    RunOnWorker(deps_, [this, since, limit, type, shared_done, st] {
      if (!st.ok()) return (*shared_done)(st);
      (*shared_done)(deps_.stores->audit.Since(since, limit, type));
    });
  });
}

Result<AuditVerifyReport> AdminService::VerifyAudit() { return deps_.stores->audit.Verify(); }

void AdminService::ImportMissy(std::string path, Done<ImportOutcome> done) {
  // A whole database is read and written: off the caller's (event-loop) thread.
  RunOnWorker(deps_, [this, path = std::move(path), done = std::move(done)]() mutable {
    ImportNow(std::move(path), std::move(done));
  });
}

void AdminService::ImportNow(std::string path, Done<ImportOutcome> done) {
  if (path.empty()) path = deps_.config->Get()->missy_home + "/memory.db";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return done(Status::NotFound("no Missy database at " + path, "path"));
  }
  Session counting;  // Missy turns carry no model: count them with the default encoding
  const MessageTokenCounter counter = CounterFor(*deps_.config->Get(), deps_.tokenizers, counting);
  Result<MissyImportReport> report =
      missy::ImportMissy(*deps_.db, path, &counter, deps_.clock->NowMs());
  history_.Clear();
  SearchableChanged(deps_, "");
  if (!report.ok()) return done(report.status());
  deps_.audit->Emit(AuditRecord{"import.missy", "memory", "allow", "",
                                AuditDetail()
                                    .Add("path", path)
                                    .Add("sessions", report->sessions)
                                    .Add("messages", report->messages)
                                    .Add("summaries", report->summaries)
                                    .Add("learnings", report->learnings)
                                    .Add("skipped", report->skipped)});
  done(ImportOutcome{path, std::move(*report)});
}

void AdminService::Maintain() {
  auto cfg = deps_.config->Get();
  const int64_t now = deps_.clock->NowMs();
  AuditRetention retention;
  retention.max_events = cfg->audit.retention_events;
  if (cfg->audit.retention_days > 0) {
    retention.min_timestamp_ms = now - cfg->audit.retention_days * 86400000LL;
  }
  Result<int64_t> pruned = deps_.stores->audit.Prune(retention);
  if (pruned.ok() && *pruned > 0) spdlog::info("audit retention removed {} events", *pruned);
  Result<int64_t> requeued = deps_.stores->jobs.RequeueExpired(now);
  if (requeued.ok() && *requeued > 0) spdlog::info("requeued {} expired jobs", *requeued);
}

}  // namespace missy

// AdminService: daemon-wide reads and operations — health figures, the job queue, the
// audit log (list, verify), Missy import, periodic maintenance. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/audit_event.h"
#include "daemon/service/service_deps.h"
#include "storage/database.h"
#include "storage/records.h"

namespace missy {

class HistoryCache;

struct ImportOutcome {
  std::string path;  // the database imported
  MissyImportReport report;
};

struct HealthFigures {
  int64_t uptime_ms = 0;
  int64_t schema_version = 0;
  size_t cached_sessions = 0;
  size_t cached_messages = 0;  // with their content (the sessions' windows)
  size_t known_messages = 0;   // all messages of the cached sessions, folded ones included
  size_t cached_bytes = 0;
  size_t cache_max_bytes = 0;
  int64_t rss_bytes = 0;  // resident set size of this process (0 if unknown)
  DatabaseMemoryStats sqlite;
  int64_t write_transactions = 0;
  int64_t commits_with_fsync = 0;
};

class AdminService {
 public:
  AdminService(const ServiceDeps& deps, HistoryCache& history);

  HealthFigures Health();
  Result<std::vector<Job>> Jobs(const ListOptions& options, const std::string& state);
  // Events with seq > since (after every event emitted before the call is committed).
  void Audit(int64_t since, int limit, std::string type, Done<std::vector<AuditEvent>> done);
  Result<AuditVerifyReport> VerifyAudit();
  // An empty path means <missy_home>/memory.db.
  void ImportMissy(std::string path, Done<ImportOutcome> done);
  // Audit retention and expired job leases (called every few minutes; writes: call it
  // off the event loop).
  void Maintain();

 private:
  void ImportNow(std::string path, Done<ImportOutcome> done);

  ServiceDeps deps_;
  HistoryCache& history_;
  int64_t started_ms_ = 0;
};

}  // namespace missy

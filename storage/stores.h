// Every store over one Database, for callers that want them all. Each member is cheap
// (a reference to the Database); the Database must outlive the bundle.
#pragma once

#include "storage/audit_log.h"
#include "storage/calibration_store.h"
#include "storage/database.h"
#include "storage/job_store.h"
#include "storage/memory_store.h"
#include "storage/message_store.h"
#include "storage/proxy_store.h"
#include "storage/session_store.h"
#include "storage/summary_store.h"

namespace missy {

struct Stores {
  explicit Stores(Database& db)
      : sessions(db),
        messages(db),
        summaries(db),
        memory(db),
        jobs(db),
        calibration(db),
        audit(db),
        proxy(db) {}

  SessionStore sessions;
  MessageStore messages;
  SummaryStore summaries;
  MemoryStore memory;
  JobStore jobs;
  CalibrationStore calibration;
  AuditLog audit;
  ProxyStore proxy;
};

}  // namespace missy

// UsageService: calibration from what the provider reported (DESIGN.md §3). A report
// names a context this daemon issued; the ratio provider/estimate of that model moves
// toward the new sample. Reports for one model are serialised (read-modify-write),
// and answered after the commit. Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "core/calibration.h"
#include "daemon/service/service_deps.h"

namespace missy {

class IssuedContexts;
class SessionQueue;

struct UsageReport {
  std::string session_id;
  std::string context_id;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

struct UsageOutcome {
  std::string model;  // the calibration key
  int64_t estimated_tokens = 0;
  CalibrationState before;
  CalibrationState after;
};

class UsageService {
 public:
  UsageService(const ServiceDeps& deps, SessionQueue& queue, IssuedContexts& issued);
  void Report(UsageReport report, Done<UsageOutcome> done);

 private:
  ServiceDeps deps_;
  SessionQueue& queue_;
  IssuedContexts& issued_;
};

}  // namespace missy

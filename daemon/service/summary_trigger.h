// SummaryTrigger: queues a session's summarization job after an append, when its
// uncovered history (what no leaf summary covers) is over threshold_pct of its history
// budget or its uncovered message count is over message_threshold (DESIGN.md §5), and
// the job would have work: at least one leaf chunk outside the fresh tail
// (core/summary_plan.h). One job per session (the queue deduplicates); the worker is
// woken. Nothing of this runs on the append's path:
//  - the check after each append is arithmetic on the session's counters: a session
//    whose whole history is under the thresholds costs nothing, and one that was checked
//    is checked again only once enough has been appended to cross them (the session's
//    totals grow exactly by what is appended), and after a job was queued only once a
//    leaf chunk's worth more has arrived (no compaction loops);
//  - the real check (the summaries' coverage and the uncovered messages' sizes, read
//    from SQLite) runs on a worker, and the enqueue is one write with its
//    summarization.queued event.
// A context the assembler found over the thresholds on the budget its request asked for
// (a window smaller than the session's) asks for the same check, minus the thresholds
// (Warned). Either way a job is queued at most once per leaf chunk's worth of history.
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/session.h"
#include "daemon/service/service_deps.h"

namespace missy {

class SummaryTrigger {
 public:
  static constexpr size_t kMaxTracked = 4096;  // sessions whose next check point is kept

  explicit SummaryTrigger(const ServiceDeps& deps) : deps_(deps) {}

  // `session` as the append left it (its counters include the new messages).
  void Appended(const Session& session) { Consider(session, false); }
  // A context of `session` found it over the thresholds on its request's budget (which
  // may be smaller than the session's): only whether a job would have work is checked.
  void Warned(const Session& session) { Consider(session, true); }

  // Checks (and queues) now, on this thread. What Appended and Warned run on a worker.
  void CheckNow(const Session& session, bool over_threshold = false);

  // The session was deleted: its check points are forgotten.
  void Forget(const std::string& session_id);

  int64_t checks() const;  // real checks run (a test's view of "cheap")
  int64_t queued() const;  // jobs this trigger created

 private:
  // When the next real check is due: once the session's totals reach these.
  struct NextCheck {
    int64_t tokens = 0;
    int64_t messages = 0;
  };
  struct Tracked {
    NextCheck next;       // under the thresholds: when they can be crossed
    NextCheck after_job;  // a job was queued: nothing more before a leaf chunk's worth
  };
  void Consider(const Session& session, bool over_threshold);
  void Remember(const std::string& id, NextCheck next);
  void RememberJob(const std::string& id, NextCheck after_job);

  ServiceDeps deps_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Tracked> tracked_;
  std::unordered_set<std::string> checking_;  // a check is queued or running
  int64_t checks_ = 0;
  int64_t queued_ = 0;
};

}  // namespace missy

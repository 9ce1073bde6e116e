// SummarizationService: summarizes a session's older history (DESIGN.md §5). One run plans
// leaf chunks over the uncovered history outside the fresh tail (core/summary_plan.h),
// summarizes each chunk with the configured backend (context.summarizer.backend:
// daemon/service/summary_backend.h; an llm backend that fails falls back to the extractive
// one per summary, and the audit event says so), commits
// each summary with its coverage and its audit event in one transaction, then condenses
// while some depth has condensed_fanout summaries without a parent. Source messages are
// never deleted or changed. A summary that is not smaller than what it replaces is not
// stored (the run stops there and says so).
//
// Synchronous and slow (it reads and writes SQLite, and later calls an LLM): call it from
// the summarization worker's thread or another worker, never an event-loop thread. Runs
// of one session are serialised (a job and a forced compaction never cover a message
// twice); different sessions run in parallel. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/session.h"
#include "core/status.h"
#include "core/summary_plan.h"
#include "daemon/provider/provider_client.h"
#include "daemon/service/service_deps.h"

namespace missy {

struct SummarizeRequest {
  std::string session_id;
  bool force = false;  // also a trailing chunk however small (forced compaction)
  std::string reason;  // "threshold", "context_length_exceeded", ... (audit)
  int64_t job_id = 0;  // the job being run (0: none)
  // Each stored summary renews the job's lease to now + this, in its own transaction, so
  // that a long run that makes progress keeps its job (0: no renewal).
  int64_t lease_ms = 0;
  // The llm backend starts no request after this long; later chunks are summarized
  // extractively (0: no limit). Forced compaction sets kCompactLlmBudget.
  std::chrono::milliseconds llm_budget{0};
  std::string backend;  // "extractive" | "llm" instead of context.summarizer.backend ("": as set)
  // > 0: a run for what a context evicted up to this seq (SummarizeEvicted): the leaves a
  // background run would write now (never a forced small one), written here even with
  // broker workers.
  int64_t through_seq = 0;
};

// How long forced compaction waits for an llm at most (plus one request in flight).
inline constexpr std::chrono::milliseconds kCompactLlmBudget{30000};

struct SummarizeOutcome {
  std::string backend = "extractive";    // the configured backend of the run
  int64_t fallbacks = 0;                 // summaries the llm backend left to the extractive one
  int64_t leaves = 0;                    // leaf summaries stored
  int64_t condensed = 0;                 // condensed summaries stored
  int64_t messages_covered = 0;          // by the new leaves
  int64_t tokens_before = 0;             // what the new leaves replace
  int64_t tokens_after = 0;              // the new leaves' size
  std::vector<std::string> summary_ids;  // stored, in order
  std::string stopped;                   // why the run stopped early ("" when it did not)
};

// The summarizer options in force for `session`: context.summarizer, with leaf chunks of
// at most half the session's history budget (summarizing must make room in its contexts).
SummarizerOptions SessionSummarizerOptions(const DaemonConfig& config, const Session& session);

class SummarizationService {
 public:
  // `provider_options`: how the llm backend's client connects, times out and retries.
  explicit SummarizationService(const ServiceDeps& deps,
                                provider::ProviderOptions provider_options = {})
      : deps_(deps), provider_options_(std::move(provider_options)) {}

  // kNotFound for an unknown session; storage errors as they come. Nothing to do is a
  // success with zero leaves.
  Result<SummarizeOutcome> Summarize(const SummarizeRequest& request);
  // Forced compaction (an agent whose provider refused a request for its length):
  // Summarize with force on a worker (never the caller's thread), audited as
  // compaction.forced; `done` runs on that worker.
  void Compact(SummarizeRequest request, Done<SummarizeOutcome> done);
  // A context's moved anchor just evicted history up to `through_seq` that no summary
  // covers: the leaves a background run would write now (whole chunks only, so the tree
  // is the one the background would build) are written on the caller's thread, so that
  // the same context shows them. Only for a session whose summarizer is the extractive
  // one (a request never waits for an llm; there the background job's summaries come in
  // with the next context) and only when no run of the session is in progress (its
  // summaries come in the same way). The leaves written (0: none).
  Result<int64_t> SummarizeEvicted(const std::string& session_id, int64_t through_seq);

 private:
  // Marks the session as being summarized (one run of a session at a time): waits for
  // the run in progress, or with `wait` false returns false at once when there is one.
  bool BeginRun(const std::string& session_id, bool wait);
  void EndRun(const std::string& session_id);
  Result<SummarizeOutcome> SummarizeLocked(const SummarizeRequest& request);

  ServiceDeps deps_;
  provider::ProviderOptions provider_options_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::unordered_set<std::string> running_;  // sessions being summarized
};

}  // namespace missy

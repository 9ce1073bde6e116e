// ContextService: builds the context an agent sends to its model (DESIGN.md §4).
//
// Reads the session, its history (from the HistoryCache), its top-level summaries,
// memory hits and learnings, resolves the budget (model window, calibration), and runs
// the pure assembler. Then, in at most ONE write transaction, persists what must be
// durable before the answer: newly pruned flags (sticky pruning) and a summarization
// job when one is due and none is pending, with their audit events. A context that
// changes nothing durable is answered without waiting for any commit; its
// `context.built` event (and the session's new anchor, so a restart keeps the prefix
// stable) is committed by group commit afterwards and published only then.
// Requests for one session are serialised (SessionQueue). Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/assembler.h"
#include "core/calibration.h"
#include "daemon/service/service_deps.h"
#include "daemon/service/summary_token_cache.h"
#include "daemon/service/summary_trigger.h"

namespace missy {

class HistoryCache;
class IssuedContexts;
class SessionQueue;

struct ContextRequest {
  std::string session_id;
  std::optional<Message> new_message;     // appended last, not stored
  std::optional<int64_t> context_window;  // overrides the session's / model's window
  std::optional<int64_t> max_output_tokens;
  std::string query;  // memory search text; empty: the new (or last) user message
  // After a forced compaction: the kept part is chosen afresh (the anchor and its
  // snapshot of summaries are dropped, so the new summaries replace what they cover).
  bool reset_anchor = false;
  // Set by proxy mode, whose agent sends these with every request: its system prompt
  // (replaces the session's), and what its tool definitions and other request fields
  // cost (replaces the count of the session's tools).
  std::optional<std::string> system_prompt;
  std::optional<int64_t> tool_tokens;
  // False: no memory hits nor learnings (their budget shares go to the history).
  bool enrich = true;
};

struct ContextOutcome {
  std::string context_id;
  AssembledContext context;
  std::string encoding;  // the counter used
  double factor = 1.0;
  CalibrationState calibration;
  int64_t raw_total = 0;         // budget before calibration
  int64_t calibrated_total = 0;  // budget in our units after calibration
  int64_t estimated_tokens = 0;  // what we counted for what was sent
  int64_t calibrated_tokens = 0;
  bool wrote = false;  // a write transaction was committed before the answer
};

class ContextService {
 public:
  // `trigger` (may be null) is told of contexts over the summarization thresholds.
  ContextService(const ServiceDeps& deps, HistoryCache& history, SessionQueue& queue,
                 IssuedContexts& issued, SummaryTrigger* trigger = nullptr);

  void Build(ContextRequest request, Done<ContextOutcome> done);

  // The session was deleted: its anchor is forgotten (a session created again under the
  // same id starts afresh).
  void ForgetSession(const std::string& session_id);

  // Writes, now, the leaves a background run would write for a session whose context
  // evicted history up to a seq that no summary covers, returning how many
  // (SummarizationService::SummarizeEvicted). Set: a context whose moved anchor evicted
  // such history calls it and assembles again, so that it shows the summaries at once
  // rather than the next context changing the prefix a second time.
  using EvictedSummarizer = std::function<Result<int64_t>(const std::string&, int64_t)>;
  void SetEvictedSummarizer(EvictedSummarizer summarize) {
    summarize_evicted_ = std::move(summarize);
  }

 private:
  struct Prepared;
  Result<std::shared_ptr<Prepared>> Prepare(ContextRequest& request);
  void Assemble(std::shared_ptr<Prepared> p, std::function<void()> release);
  std::vector<MemoryHit> SearchMemory(const std::string& session_id, const std::string& query);
  // Where the kept history starts, the summaries shown with it and their forms, and the
  // memory hits its contexts show (Session::anchor_*, all persisted: after a release of
  // the session's cached state or a restart, the next context is the same bytes).
  struct AnchorState {
    int64_t seq = 0;
    int64_t summaries = 0;
    int64_t stub_through = 0;  // the summaries it shows short (Session::anchor_stub_through)
    std::shared_ptr<const std::vector<MemoryHit>> memory;
    int64_t squeezed_through = 0;  // the tool outputs it shows squeezed (Session::anchor_*)
  };
  // The anchor in force: the one set last (below), else the one persisted with `session`.
  AnchorState Anchor(const Session& session);
  void SetAnchor(const std::string& session_id, AnchorState anchor);

  ServiceDeps deps_;
  HistoryCache& history_;
  SessionQueue& queue_;
  IssuedContexts& issued_;
  SummaryTrigger* trigger_;
  EvictedSummarizer summarize_evicted_;
  std::mutex anchors_mu_;
  // Where each session's kept history started last time (persisted too; this is the
  // value in force while its write is pending).
  static constexpr size_t kMaxAnchors = 4096;
  std::unordered_map<std::string, AnchorState> anchors_;
  // Each summary's context message, counted once: the daemon's shared cache
  // (deps.summary_tokens), else one of this service's own.
  SummaryTokenCache own_summary_tokens_;
  SummaryTokenCache& summary_tokens_;
};

}  // namespace missy

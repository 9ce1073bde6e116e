#include "daemon/service/summarization_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "core/extractive_summarizer.h"
#include "core/message_extract.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/metrics/daemon_metrics.h"
#include "daemon/service/counting.h"
#include "daemon/service/ports.h"
#include "daemon/service/summary_backend.h"
#include "daemon/service/summary_dispatch.h"
#include "daemon/service/summary_token_cache.h"
#include "storage/database.h"
#include "storage/stores.h"

namespace missy {

namespace {

constexpr int64_t kMinChunkTokens = 500;  // below this a summary saves too little
// Leaves are committed in batches of at most this many, and at least this often, so a
// long run does not wait for one fsync per leaf, and contexts still see progress soon. A
// background run's batch is small: its transaction holds the writer that every session's
// appends wait for. A forced compaction's caller waits for the whole run anyway.
constexpr size_t kLeafBatch = 16;
constexpr size_t kForcedLeafBatch = 128;
constexpr int64_t kLeafBatchMs = 250;

int64_t NowSteadyMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// A stored summary, by the backend that wrote it and its kind ("leaf" | "condensed").
void CountSummary(const ServiceDeps& deps, const BackendSummary& sum, const char* kind) {
  metrics::DaemonMetrics* m = deps.metrics;
  if (m == nullptr) return;
  m->summaries.With({sum.backend, kind}).Inc();
  if (!sum.fallback.empty()) m->summary_fallbacks.Inc();
}

// The backend that wrote `sum`, and why the configured one did not when it fell back.
AuditDetail& AddBackend(AuditDetail& detail, const SelectedBackend& selected,
                        const BackendSummary& sum) {
  detail.Add("backend", sum.backend);
  const std::string& why = !sum.fallback.empty() ? sum.fallback : selected.fallback;
  if (selected.requested != sum.backend || !why.empty()) {
    detail.Add("requested_backend", selected.requested)
        .Add("fallback", sum.backend)
        .Add("fallback_reason", why);
  }
  if (sum.llm_requests > 0) detail.Add("llm_requests", sum.llm_requests);
  if (!sum.worker.empty()) detail.Add("worker", sum.worker);
  return detail;
}

// A summary's id from the daemon's id source (the store makes one only when none is
// given), so that tests with fake ids replay byte for byte: the id is in the context.
std::string NewSummaryId(const ServiceDeps& deps) {
  return deps.ids != nullptr ? "sum_" + deps.ids->NewId() : std::string();
}

// A summary written, waiting for its commit.
struct PendingSummary {
  SummaryRecord record;
  AuditDetail detail;
  BackendSummary sum;  // for the metrics and the outcome (text moved into the record)
  int64_t messages = 0;
};

// Commits `batch` in one transaction: each summary with its coverage and its
// summarization.completed event, and the job's lease renewed once. All or none.
Result<std::vector<SummaryRecord>> Store(const ServiceDeps& deps, const SummarizeRequest& request,
                                         std::vector<PendingSummary>& batch) {
  std::vector<SummaryRecord> stored;
  Status st = deps.db->Write([&](Txn& txn) -> Status {
    stored.clear();
    for (PendingSummary& p : batch) {
      Result<SummaryRecord> r = deps.stores->summaries.Insert(txn, p.record);
      if (!r.ok()) return r.status();
      AuditDetail detail = p.detail;
      detail.Add("summary_id", r->id);
      MISSY_RETURN_IF_ERROR(
          deps.audit->Append(txn, AuditRecord{"summarization.completed", "context", "allow",
                                              p.record.session_id, std::move(detail)}));
      stored.push_back(std::move(*r));
    }
    if (request.job_id > 0 && request.lease_ms > 0) {
      MISSY_RETURN_IF_ERROR(deps.stores->jobs.ExtendLease(txn, request.job_id,
                                                          deps.clock->NowMs() + request.lease_ms));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  if (!stored.empty()) SearchableChanged(deps, stored.front().session_id);
  return stored;
}

// Stores `record` with its audit event (and the job's renewed lease) in one transaction;
// returns it as stored.
Result<SummaryRecord> Store(const ServiceDeps& deps, const SummarizeRequest& request,
                            const SummaryRecord& record, AuditDetail detail) {
  std::vector<PendingSummary> one(1);
  one[0].record = record;
  one[0].detail = std::move(detail);
  Result<std::vector<SummaryRecord>> stored = Store(deps, request, one);
  if (!stored.ok()) return stored.status();
  return std::move(stored->front());
}

// A leaf chunk's messages with their extracts; without the content of those whose extract
// decodes when the backend reads extracts only (the others are loaded whole).
Result<std::vector<StoredMessage>> LoadChunk(Stores& stores, const std::string& id, int64_t first,
                                             int64_t last, bool reads_content) {
  if (reads_content) return stores.messages.LoadRange(id, first, last, /*with_extracts=*/true);
  Result<std::vector<StoredMessage>> rows = stores.messages.LoadExtracts(id, first, last);
  if (!rows.ok()) return rows;
  std::vector<int64_t> whole;  // an extract that does not decode: the content is needed
  for (const StoredMessage& m : *rows) {
    if (!m.extract.empty() && !ExtractDecodes(m.extract)) whole.push_back(m.seq);
  }
  if (whole.empty()) return rows;
  Result<std::vector<StoredMessage>> reloaded = stores.messages.Load(id, whole);
  if (!reloaded.ok()) return reloaded.status();
  size_t k = 0;
  for (StoredMessage& m : *rows) {
    if (k < reloaded->size() && (*reloaded)[k].seq == m.seq) m = std::move((*reloaded)[k++]);
  }
  return rows;
}

}  // namespace

SummarizerOptions SessionSummarizerOptions(const DaemonConfig& config, const Session& session) {
  // A leaf chunk is at most leaf_chunk_tokens, and at most half the session's history
  // budget: summarizing must make room in contexts of that budget, whatever its size.
  SummarizerOptions options = config.summarizer;
  options.leaf_chunk_tokens = std::clamp(SessionHistoryBudget(config, session) / 2, kMinChunkTokens,
                                         std::max(kMinChunkTokens, options.leaf_chunk_tokens));
  return options;
}

bool SummarizationService::BeginRun(const std::string& session_id, bool wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (wait) {
    idle_.wait(lock, [&] { return running_.count(session_id) == 0; });
  } else if (running_.count(session_id) > 0) {
    return false;
  }
  running_.insert(session_id);
  return true;
}

void SummarizationService::EndRun(const std::string& session_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(session_id);
  }
  idle_.notify_all();
}

Result<SummarizeOutcome> SummarizationService::Summarize(const SummarizeRequest& request) {
  BeginRun(request.session_id, /*wait=*/true);
  Result<SummarizeOutcome> out = SummarizeLocked(request);
  EndRun(request.session_id);
  return out;
}

void SummarizationService::Compact(SummarizeRequest request, Done<SummarizeOutcome> done) {
  request.force = true;
  if (request.reason.empty()) request.reason = "forced";
  if (request.llm_budget.count() == 0) request.llm_budget = kCompactLlmBudget;
  RunOnWorker(deps_, [this, request = std::move(request), done = std::move(done)] {
    const int64_t started = NowSteadyMs();
    Result<SummarizeOutcome> out = Summarize(request);
    if (out.ok()) {
      deps_.audit->Emit(AuditRecord{"compaction.forced", "context", "allow", request.session_id,
                                    AuditDetail()
                                        .Add("reason", request.reason)
                                        .Add("leaves", out->leaves)
                                        .Add("condensed", out->condensed)
                                        .Add("messages_covered", out->messages_covered)
                                        .Add("tokens_before", out->tokens_before)
                                        .Add("tokens_after", out->tokens_after)
                                        .Add("backend", out->backend)
                                        .Add("fallbacks", out->fallbacks)
                                        .Add("duration_ms", NowSteadyMs() - started)});
    }
    done(std::move(out));
  });
}

Result<int64_t> SummarizationService::SummarizeEvicted(const std::string& session_id,
                                                       int64_t through_seq) {
  if (through_seq <= 0) return int64_t{0};
  Result<Session> session = deps_.stores->sessions.Get(session_id);
  if (!session.ok()) return session.status();
  if (RequestedBackend(*deps_.config->Get(), session->summarizer_backend) != "extractive") {
    return int64_t{0};
  }
  if (!BeginRun(session_id, /*wait=*/false)) return int64_t{0};
  SummarizeRequest request;
  request.session_id = session_id;
  request.reason = "eviction";
  request.through_seq = through_seq;
  request.backend = "extractive";
  Result<SummarizeOutcome> out = SummarizeLocked(request);
  EndRun(session_id);
  if (!out.ok()) return out.status();
  return out->leaves;
}

Result<SummarizeOutcome> SummarizationService::SummarizeLocked(const SummarizeRequest& request) {
  const std::string& id = request.session_id;
  Result<Session> session = deps_.stores->sessions.Get(id);
  if (!session.ok()) return session.status();
  auto cfg = deps_.config->Get();
  const SummarizerOptions options = SessionSummarizerOptions(*cfg, *session);
  // Summaries are condensed only once those without a parent would take more than half the
  // session's history budget: until then a context shows them all, with their detail.
  const int64_t condense_room = SessionHistoryBudget(*cfg, *session) / 2;
  const MessageTokenCounter counter = CounterFor(*cfg, deps_.tokenizers, *session);
  provider::ProviderOptions provider_options = provider_options_;
  auto deadline = std::chrono::steady_clock::time_point::max();
  if (request.llm_budget.count() > 0) {
    deadline = std::chrono::steady_clock::now() + request.llm_budget;
    provider_options.total_timeout = std::min(provider_options.total_timeout, request.llm_budget);
  }
  SummarizeOutcome out;

  // What is covered (one index read) and the summaries without a parent, without their
  // text: what a run plans on, however many summaries the session has. Texts are read
  // only for what a run then writes from.
  Result<int64_t> covered = deps_.stores->summaries.CoveredThrough(id);
  if (!covered.ok()) return covered.status();
  const int64_t covered_through = *covered;
  Result<std::vector<SummaryRecord>> top = deps_.stores->summaries.ListTop(id);
  if (!top.ok()) return top.status();
  std::string newest_id;  // the prior summary a new leaf continues
  int64_t newest_last = -1;
  for (const SummaryRecord& s : *top) {
    if (s.last_seq > newest_last) newest_id = s.id, newest_last = s.last_seq;
  }

  // Plan on what the messages cost, without their content.
  Result<std::vector<PlanMessage>> planned = deps_.stores->messages.LoadPlan(id, covered_through);
  if (!planned.ok()) return planned.status();
  const std::vector<PlanMessage>& plan_input = *planned;
  // An eviction's run (through_seq) is not forced: it takes the chunks a background run
  // would take now, leaves of the usual size, so the tree is the same as without it.
  const std::vector<LeafChunk> chunks =
      PlanLeafChunks(plan_input, cfg->budget.fresh_tail_count, options, request.force);

  int64_t uncovered_tokens = 0;
  for (const PlanMessage& m : plan_input) uncovered_tokens += m.tokens;
  const bool condense_due = [&] {
    std::vector<PlanSummary> plan;
    for (const SummaryRecord& s : *top) plan.push_back({s.id, s.depth, s.first_seq, s.tokens});
    return !PlanCondensation(plan, options, condense_room).empty();
  }();
  const std::string& backend_override =
      !request.backend.empty() ? request.backend : session->summarizer_backend;
  out.backend = RequestedBackend(*cfg, backend_override);  // what would have written
  // An eviction's run writes leaves or nothing: condensing waits for a background run.
  if (chunks.empty() && (!condense_due || request.through_seq > 0)) {
    out.stopped = "not enough new history outside the fresh tail (" +
                  std::to_string(uncovered_tokens) + " tokens uncovered)";
    return out;  // nothing worth a summary yet: no event, no write
  }
  std::string prior;
  if (!chunks.empty() && !newest_id.empty()) {
    Result<SummaryRecord> newest = deps_.stores->summaries.Get(newest_id);
    if (!newest.ok()) return newest.status();
    prior = std::move(newest->content);
  }
  // Built only when there is work: an llm backend makes a provider client.
  auto select = [&] {
    return SelectSummaryBackend(*cfg, backend_override, session->summarizer_provider,
                                provider_options, deadline, deps_.metrics);
  };
  SelectedBackend selected;
  if (deps_.dispatcher == nullptr || request.through_seq > 0) {
    selected = select();
  } else {
    // Each step goes to a broker worker; the local backend is made only for a fallback.
    selected.requested = RequestedBackend(*cfg, backend_override);
    RemoteBackend::Identity who;
    who.task_prefix = std::to_string(request.job_id) + ":" + deps_.ids->NewId();
    who.job_id = request.job_id;
    who.session_id = id;
    who.backend = selected.requested;
    who.provider = !session->summarizer_provider.empty()       ? session->summarizer_provider
                   : !cfg->summarizer_backend.provider.empty() ? cfg->summarizer_backend.provider
                                                               : cfg->default_provider;
    who.model = session->model;
    who.max_wait_ms = request.llm_budget.count();
    selected.backend = std::make_unique<RemoteBackend>(*deps_.dispatcher, select, std::move(who));
  }
  out.backend = selected.requested;
  if (!selected.fallback.empty()) {
    spdlog::warn("summarization of {}: {}; using the extractive backend", id, selected.fallback);
  }
  deps_.audit->Emit(AuditRecord{"summarization.started", "context", "allow", id,
                                AuditDetail()
                                    .Add("job_id", request.job_id)
                                    .Add("reason", request.reason)
                                    .Add("uncovered_messages", plan_input.size())
                                    .Add("uncovered_tokens", uncovered_tokens)
                                    .Add("leaf_chunks", chunks.size())
                                    .Add("backend", selected.requested)});

  // Leaves, oldest first; each continues the one before it. They are committed in
  // batches (one transaction each: a crash loses at most a batch, never part of one).
  std::vector<PendingSummary> pending;
  std::vector<SummaryRecord> written;  // as stored, for the counts of those left on top
  int64_t pending_since = 0;
  auto flush = [&]() -> Status {
    if (pending.empty()) return Status::Ok();
    Result<std::vector<SummaryRecord>> stored = Store(deps_, request, pending);
    if (!stored.ok()) return stored.status();
    for (size_t i = 0; i < pending.size(); ++i) {
      const PendingSummary& p = pending[i];
      if (!p.sum.fallback.empty()) ++out.fallbacks;
      CountSummary(deps_, p.sum, "leaf");
      ++out.leaves;
      out.messages_covered += p.messages;
      out.tokens_before += p.sum.source_tokens;
      out.tokens_after += p.sum.tokens;
      out.summary_ids.push_back((*stored)[i].id);
      written.push_back(std::move((*stored)[i]));
    }
    pending.clear();
    return Status::Ok();
  };
  for (const LeafChunk& c : chunks) {
    const int64_t started = NowSteadyMs();
    const int64_t first = plan_input[c.begin].seq, last = plan_input[c.end - 1].seq;
    Result<std::vector<StoredMessage>> rows =
        LoadChunk(*deps_.stores, id, first, last, selected.backend->ReadsContent());
    if (!rows.ok()) {
      (void)flush();  // what is done stays done
      return rows.status();
    }
    // The prior summary gives an llm continuity (the extractive backend ignores it).
    BackendSummary sum = selected.backend->Leaf(*rows, prior, options.leaf_target_tokens, counter);
    if (!sum.Shrinks()) {
      out.stopped = "summary of seqs " + std::to_string(first) + ".." + std::to_string(last) +
                    " is not smaller than its " + std::to_string(sum.source_tokens) + " tokens";
      break;
    }
    PendingSummary p;
    SummaryRecord& record = p.record;
    record.id = NewSummaryId(deps_);
    record.session_id = id;
    record.depth = 0;
    record.content = std::move(sum.text);
    record.tokens = sum.tokens;
    record.first_seq = first;
    record.last_seq = last;
    record.start_ms = rows->front().created_at_ms;
    record.end_ms = rows->back().created_at_ms;
    record.descendant_count = static_cast<int64_t>(rows->size());
    record.artifacts_json = ArtifactsToJson(sum.artifacts);
    record.created_at_ms = deps_.clock->NowMs();
    p.detail.Add("job_id", request.job_id)
        .Add("depth", 0)
        .Add("first_seq", first)
        .Add("last_seq", last)
        .Add("messages", rows->size())
        .Add("tokens_before", sum.source_tokens)
        .Add("tokens_after", sum.tokens);
    AddBackend(p.detail, selected, sum).Add("duration_ms", NowSteadyMs() - started);
    p.messages = static_cast<int64_t>(rows->size());
    prior = record.content;
    p.sum = std::move(sum);
    if (pending.empty()) pending_since = NowSteadyMs();
    pending.push_back(std::move(p));
    if (pending.size() >= (request.force ? kForcedLeafBatch : kLeafBatch) ||
        NowSteadyMs() - pending_since >= kLeafBatchMs) {
      MISSY_RETURN_IF_ERROR(flush());
    }
  }
  MISSY_RETURN_IF_ERROR(flush());

  // Condense while some depth has condensed_fanout summaries without a parent.
  for (;;) {
    top = deps_.stores->summaries.ListTop(id);
    if (!top.ok()) return top.status();
    std::vector<PlanSummary> plan;
    for (const SummaryRecord& s : *top) plan.push_back({s.id, s.depth, s.first_seq, s.tokens});
    const std::vector<std::string> ids = PlanCondensation(plan, options, condense_room);
    if (ids.empty()) break;
    const int64_t started = NowSteadyMs();
    std::vector<ChildSummary> children;
    SummaryRecord record;
    record.id = NewSummaryId(deps_);
    record.session_id = id;
    record.first_seq = INT64_MAX;
    record.start_ms = INT64_MAX;
    for (const std::string& child_id : ids) {
      Result<SummaryRecord> child = deps_.stores->summaries.Get(child_id);
      if (!child.ok()) return child.status();
      Result<ArtifactTrail> trail = ArtifactsFromJson(child->artifacts_json);
      children.push_back({child->content, trail.ok() ? *trail : ArtifactTrail{}, child->tokens});
      record.depth = child->depth + 1;
      record.first_seq = std::min(record.first_seq, child->first_seq);
      record.last_seq = std::max(record.last_seq, child->last_seq);
      record.start_ms = std::min(record.start_ms, child->start_ms);
      record.end_ms = std::max(record.end_ms, child->end_ms);
      record.descendant_count += child->descendant_count;
      record.child_ids.push_back(child_id);
    }
    BackendSummary sum =
        selected.backend->Condense(children, options.condensed_target_tokens, counter);
    if (!sum.Shrinks()) {
      out.stopped = "condensing " + std::to_string(ids.size()) + " summaries at depth " +
                    std::to_string(record.depth - 1) + " would not make them smaller";
      break;
    }
    record.content = sum.text;
    record.tokens = sum.tokens;
    record.artifacts_json = ArtifactsToJson(sum.artifacts);
    record.created_at_ms = deps_.clock->NowMs();
    AuditDetail detail;
    detail.Add("job_id", request.job_id)
        .Add("depth", record.depth)
        .Add("first_seq", record.first_seq)
        .Add("last_seq", record.last_seq)
        .Add("children", ids.size())
        .Add("tokens_before", sum.source_tokens)
        .Add("tokens_after", sum.tokens);
    AddBackend(detail, selected, sum).Add("duration_ms", NowSteadyMs() - started);
    Result<SummaryRecord> stored = Store(deps_, request, record, std::move(detail));
    if (!stored.ok()) return stored.status();
    if (!sum.fallback.empty()) ++out.fallbacks;
    CountSummary(deps_, sum, "condensed");
    ++out.condensed;
    out.summary_ids.push_back(stored->id);
    written.push_back(std::move(*stored));
  }
  // The next context shows the summaries without a parent (`top`, as listed last): those
  // this run wrote are counted now, off the request path, instead of by the first context
  // that shows them (the others were when they were written).
  if (deps_.summary_tokens != nullptr && !written.empty()) {
    std::unordered_set<std::string> shown;
    for (const SummaryRecord& s : *top) shown.insert(s.id);
    std::vector<SummaryView> views;
    for (const SummaryRecord& s : written) {
      if (shown.count(s.id) != 0) views.push_back(ToSummaryView(s));
    }
    deps_.summary_tokens->Fill(views, counter);
  }
  if (!out.stopped.empty()) spdlog::warn("summarization of {} stopped: {}", id, out.stopped);
  return out;
}

}  // namespace missy

#include "daemon/service/context_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <memory>
#include <unordered_map>

#include "core/model_table.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/metrics/daemon_metrics.h"
#include "daemon/service/context_record.h"
#include "daemon/service/counting.h"
#include "daemon/service/history_cache.h"
#include "daemon/service/history_loader.h"
#include "daemon/service/issued_contexts.h"
#include "daemon/service/memory_hits_cache.h"
#include "daemon/service/ports.h"
#include "daemon/service/session_queue.h"
#include "storage/database.h"
#include "storage/search.h"
#include "storage/stores.h"

namespace missy {

namespace {

// The top of the summary tree (those no summary condensed), oldest first, as `all` is.
std::vector<SummaryView> TopSummaries(const std::vector<SummaryRecord>& all) {
  std::vector<SummaryView> out;
  for (const SummaryRecord& s : all) {
    if (s.parent_id.empty()) out.push_back(ToSummaryView(s));
  }
  return out;
}

// The summary tree as it stood once the summary with ordinal `through` was inserted: the
// summaries inserted by then that no summary inserted by then condensed, oldest first.
std::vector<SummaryView> SummariesAsOf(const std::vector<SummaryRecord>& all, int64_t through) {
  std::unordered_map<std::string, int64_t> ordinal;
  for (const SummaryRecord& s : all) ordinal[s.id] = s.ordinal;
  std::vector<SummaryView> out;
  for (const SummaryRecord& s : all) {
    if (s.ordinal > through) continue;
    auto parent = s.parent_id.empty() ? ordinal.end() : ordinal.find(s.parent_id);
    if (parent != ordinal.end() && parent->second <= through) continue;
    out.push_back(ToSummaryView(s));
  }
  return out;  // `all` is oldest first (first_seq, depth), and so is this
}

// Whether `current` covers a message before `anchor` that `snapshot` does not: history
// evicted before its summary existed, which the context would otherwise go on missing.
bool CoversMoreBefore(const std::vector<SummaryView>& snapshot,
                      const std::vector<SummaryView>& current, int64_t anchor) {
  std::vector<std::pair<int64_t, int64_t>> have;
  for (const SummaryView& s : snapshot) have.emplace_back(s.first_seq, s.last_seq);
  std::sort(have.begin(), have.end());
  for (const SummaryView& s : current) {
    // The part of s before the anchor, minus what the snapshot covers.
    int64_t from = s.first_seq;
    const int64_t to = std::min(s.last_seq, anchor - 1);
    for (const auto& [first, last] : have) {
      if (from > to) break;
      if (first > from) break;  // seq `from` is not covered by the snapshot
      from = std::max(from, last + 1);
    }
    if (from <= to) return true;
  }
  return false;
}

// The anchor's memory hits as persisted (Session::anchor_memory): a JSON array of
// {source, id, text, score}.
std::string EncodeMemory(const std::vector<MemoryHit>& hits) {
  boost::json::array out;
  for (const MemoryHit& h : hits) {
    out.push_back(boost::json::object{
        {"source", h.source}, {"id", h.id}, {"text", h.text}, {"score", h.score}});
  }
  return boost::json::serialize(out);
}

// Null when nothing (or nothing readable) was persisted: the next context searches.
std::shared_ptr<const std::vector<MemoryHit>> DecodeMemory(const std::string& json) {
  if (json.empty()) return nullptr;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_array()) return nullptr;
  auto hits = std::make_shared<std::vector<MemoryHit>>();
  for (const boost::json::value& e : v.as_array()) {
    const boost::json::object* o = e.if_object();
    if (o == nullptr) return nullptr;
    MemoryHit h;
    auto text = [&](const char* key) -> std::string {
      const boost::json::value* x = o->if_contains(key);
      return x != nullptr && x->is_string() ? std::string(x->as_string()) : std::string();
    };
    h.source = text("source");
    h.id = text("id");
    h.text = text("text");
    if (const boost::json::value* x = o->if_contains("score"); x != nullptr && x->is_number()) {
      h.score = x->to_number<double>();
    }
    hits->push_back(std::move(h));
  }
  return hits;
}

bool SameHits(const std::vector<MemoryHit>& a, const std::vector<MemoryHit>& b) {
  return std::equal(
      a.begin(), a.end(), b.begin(), b.end(), [](const MemoryHit& x, const MemoryHit& y) {
        return x.source == y.source && x.id == y.id && x.text == y.text && x.score == y.score;
      });
}

}  // namespace

struct ContextService::Prepared {
  Session session;
  std::shared_ptr<const DaemonConfig> config;
  MessageTokenCounter counter;
  ContextInput input;
  std::vector<SummaryRecord> summaries;  // all of the session's, condensed ones too
  std::string query;
  bool reset_anchor = false;
  ContextOutcome outcome;
  Done<ContextOutcome> done;
  int64_t summaries_through = 0;  // the anchor snapshot `summaries` has the texts for
};

ContextService::ContextService(const ServiceDeps& deps, HistoryCache& history, SessionQueue& queue,
                               IssuedContexts& issued, SummaryTrigger* trigger)
    : deps_(deps),
      history_(history),
      queue_(queue),
      issued_(issued),
      trigger_(trigger),
      summary_tokens_(deps.summary_tokens != nullptr ? *deps.summary_tokens : own_summary_tokens_) {
}

ContextService::AnchorState ContextService::Anchor(const Session& session) {
  std::lock_guard<std::mutex> lock(anchors_mu_);
  auto it = anchors_.find(session.id);
  if (it == anchors_.end()) {
    return AnchorState{session.anchor_seq, session.anchor_summaries, session.anchor_stub_through,
                       DecodeMemory(session.anchor_memory), session.anchor_squeezed_through};
  }
  return it->second;
}

void ContextService::SetAnchor(const std::string& session_id, AnchorState anchor) {
  std::lock_guard<std::mutex> lock(anchors_mu_);
  // Bounded: the anchor is persisted with the session, so forgetting the map only costs
  // a session whose anchor write is still pending one context with a moved anchor.
  if (anchors_.size() >= kMaxAnchors && anchors_.find(session_id) == anchors_.end()) {
    anchors_.clear();
  }
  anchors_[session_id] = anchor;
}

std::vector<MemoryHit> ContextService::SearchMemory(const std::string& id,
                                                    const std::string& query) {
  std::vector<MemoryHit> found;
  SearchOptions search;
  search.query = query.substr(0, 4096);
  search.exclude_session_id = id;  // this session's history is already in the context
  search.max_results = 10;
  search.wait_for_index = false;  // never wait for a commit on the context path
  const int64_t now = deps_.clock->NowMs();
  std::optional<std::vector<MemoryHit>> cached;
  if (deps_.memory_hits != nullptr) cached = deps_.memory_hits->Find(id, search.query, now);
  if (cached) return std::move(*cached);
  const uint64_t stamp = deps_.memory_hits != nullptr ? deps_.memory_hits->Stamp(id) : 0;
  Result<std::vector<MemoryHit>> hits = missy::Search(*deps_.db, search);
  if (!hits.ok()) {
    spdlog::warn("memory search failed for session {}: {}", id, hits.status().ToString());
    return found;
  }
  found = std::move(*hits);
  if (deps_.memory_hits != nullptr) deps_.memory_hits->Put(id, search.query, stamp, now, found);
  return found;
}

Result<std::shared_ptr<ContextService::Prepared>> ContextService::Prepare(ContextRequest& request) {
  const std::string& id = request.session_id;
  Result<Session> session = deps_.stores->sessions.Get(id);
  if (!session.ok()) {
    if (session.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("session '" + id + "' not found");
    }
    return session.status();
  }
  auto cfg = deps_.config->Get();
  auto p = std::make_shared<Prepared>(Prepared{
      *session, cfg, CounterFor(*cfg, deps_.tokenizers, *session), {}, {}, {}, false, {}, {}});
  ContextInput& input = p->input;
  input.budget = cfg->budget;
  input.threshold_pct = cfg->context.threshold_pct;
  input.message_threshold = cfg->context.message_threshold;
  input.tool_output_max_tokens = cfg->context.tool_output_max_tokens;
  input.min_tool_output_tokens = cfg->context.min_tool_output_tokens;
  input.max_learnings = cfg->context.max_learnings;
  input.task_max_tokens = cfg->context.task_max_tokens;
  input.eviction.slack_fraction = cfg->context.eviction_slack_fraction;
  input.eviction.squeeze_older_outputs = cfg->context.squeeze_at_move;
  input.pruning = cfg->pruning;
  input.system_prompt = session->system_prompt;
  input.tool_tokens =
      session->tools_json == "[]" ? -1 : p->counter.CountToolDefinitions(session->tools_json);
  if (request.system_prompt) input.system_prompt = *request.system_prompt;
  if (request.tool_tokens) input.tool_tokens = *request.tool_tokens;
  if (!request.enrich) {
    input.budget.memory_fraction = 0;
    input.budget.learnings_fraction = 0;
  }

  // The window is the model's: context_window - max_output_tokens (never one for the other).
  std::optional<ModelSpec> spec = cfg->models.Lookup(session->model);
  int64_t window =
      session->context_window > 0 ? session->context_window : (spec ? spec->context_window : 0);
  int64_t max_output = spec ? spec->max_output_tokens : 0;
  if (request.context_window) window = *request.context_window;
  if (request.max_output_tokens) max_output = *request.max_output_tokens;
  if (window > 0) {
    if (max_output >= window) {
      return Status::InvalidArgument("max_output_tokens (" + std::to_string(max_output) +
                                         ") must be smaller than context_window (" +
                                         std::to_string(window) + ")",
                                     "max_output_tokens");
    }
    input.budget.total = window - max_output;
    input.context_window = window;
    input.max_output_tokens = max_output;
  }
  // Sizes the request measured need no reserve (a small window stays valid for them).
  if (request.system_prompt) input.budget.system_reserve = 0;
  if (request.tool_tokens) input.budget.tool_definitions_reserve = 0;
  if (Status st = input.budget.Validate(); !st.ok()) {
    return Status::InvalidArgument("budget is invalid for this window: " + st.message(),
                                   "context_window");
  }
  // Calibration: when the provider reported more (or fewer) tokens than we counted, our
  // counts are scaled by that ratio, so the budget in our units is total / ratio.
  ContextOutcome& out = p->outcome;
  out.raw_total = input.budget.total;
  if (Result<Calibration> c = deps_.stores->calibration.Get(CalibrationKey(*session)); c.ok()) {
    out.calibration.ratio = c->ratio;
    out.calibration.samples = c->samples;
  }
  if (out.calibration.samples > 0 && out.calibration.ratio > 0) {
    TokenBudget scaled = input.budget;
    scaled.total = static_cast<int64_t>(static_cast<double>(out.raw_total) / out.calibration.ratio);
    if (scaled.Validate().ok()) input.budget = scaled;
  }
  out.calibrated_total = input.budget.total;
  out.encoding = p->counter.counter().Name();
  out.factor = p->counter.options().factor;

  input.new_message = std::move(request.new_message);
  p->query = std::move(request.query);
  p->reset_anchor = request.reset_anchor;

  // Summaries: the top of the hierarchy (not yet condensed), oldest first; all of them
  // are kept for the anchor's snapshot (Assemble), with the text of those it may show.
  p->summaries_through = request.reset_anchor ? 0 : Anchor(*session).summaries;
  Result<std::vector<SummaryRecord>> summaries =
      deps_.stores->summaries.ListForContext(id, p->summaries_through);
  if (!summaries.ok()) return summaries.status();
  p->summaries = std::move(*summaries);
  input.summaries = TopSummaries(p->summaries);
  if (input.budget.learnings_fraction > 0) {
    ListOptions newest;
    newest.limit = static_cast<int>(input.max_learnings);
    Result<std::vector<LearningRecord>> learnings = deps_.stores->memory.ListLearnings(newest);
    if (learnings.ok()) {
      for (const LearningRecord& l : *learnings) input.learnings.push_back(ToLearning(l));
    }
  }
  return p;
}

void ContextService::Build(ContextRequest request, Done<ContextOutcome> done) {
  Result<std::shared_ptr<Prepared>> prepared = Prepare(request);
  if (!prepared.ok()) return done(prepared.status());
  std::shared_ptr<Prepared> p = std::move(*prepared);
  p->done = std::move(done);
  queue_.Run(p->session.id,
             [this, p](SessionQueue::Release release) { Assemble(p, std::move(release)); });
}

void ContextService::Assemble(std::shared_ptr<Prepared> p, std::function<void()> release) {
  const std::string id = p->session.id;
  ContextInput& input = p->input;
  const WindowKeep keep = KeepFor(*p->config, input.budget.total);
  auto history = history_.GetOrLoad(
      id, [&] { return LoadHistoryWindow(deps_.stores->messages, id, keep, p->counter); });
  if (!history.ok()) {
    release();
    return p->done(history.status());
  }
  // The window is borrowed from the cache entry for the assembly (the session's queue
  // keeps every other user out) and given back right after it.
  std::shared_ptr<HistoryWindow> entry = *history;
  entry->set_keep(keep);
  if (const StoredMessage* task = entry->task()) input.task = *task;

  // The session's summaries listed again, with the texts of those the anchor's snapshot
  // `through` may show.
  auto relist = [&](int64_t through) -> Status {
    Result<std::vector<SummaryRecord>> relisted =
        deps_.stores->summaries.ListForContext(id, through);
    if (!relisted.ok()) return relisted.status();
    p->summaries = std::move(*relisted);
    p->summaries_through = through;
    return Status::Ok();
  };
  AnchorState anchor = p->reset_anchor ? AnchorState{} : Anchor(p->session);
  const AnchorState was = anchor;  // the anchor in force, as persisted
  if (anchor.summaries != p->summaries_through) {
    // A context queued before this one moved the anchor: list for the snapshot in force.
    if (Status st = relist(anchor.summaries); !st.ok()) {
      release();
      return p->done(st);
    }
  }
  input.eviction.anchor_seq = anchor.seq;
  input.anchored_stub_through = anchor.stub_through;
  input.anchored_squeezed_through = anchor.squeezed_through;
  // While the anchor holds, the context shows the summaries as they were when it was set
  // (a newer one waits for the next eviction, so the prefix changes once, not twice),
  // unless a newer one covers history evicted before it existed: that is shown now, and
  // since the prefix changes anyway, the anchor moves with it (freeing its slack).
  bool snapshot_renewed = false;
  if (anchor.seq > 0) {
    std::vector<SummaryView> snapshot = SummariesAsOf(p->summaries, anchor.summaries);
    if (CoversMoreBefore(snapshot, input.summaries, anchor.seq)) {
      snapshot = input.summaries;
      for (const SummaryRecord& s : p->summaries) {
        anchor.summaries = std::max(anchor.summaries, s.ordinal);
      }
      snapshot_renewed = true;
      input.eviction.move = true;
    }
    input.anchored_summaries = std::move(snapshot);
  }
  summary_tokens_.Fill(input.summaries, p->counter);
  if (input.anchored_summaries) summary_tokens_.Fill(*input.anchored_summaries, p->counter);
  // Memory: the agent's query, or the new user message, or the last user message. While
  // the anchor holds, the hits it was set with: the enriched system message stays the
  // same bytes (a prompt-cache hit for the whole request). It is searched afresh when
  // the prefix changes anyway (no anchor yet, renewed summaries, a moved anchor: below)
  // or when the agent asks with a query of its own.
  std::string query = p->query;
  if (query.empty() && input.new_message && input.new_message->role == Role::kUser) {
    query = input.new_message->PlainText();
  }
  if (query.empty()) query = entry->last_user_text();
  auto search_memory = [&] {
    input.memory.clear();
    if (!query.empty() && input.budget.memory_fraction > 0) input.memory = SearchMemory(id, query);
  };
  const bool sticky_memory =
      anchor.seq > 0 && anchor.memory != nullptr && p->query.empty() && !snapshot_renewed;
  if (sticky_memory) {
    input.memory = *anchor.memory;
  } else {
    search_memory();
  }
  // Assemble over the window; when the result would depend on folded messages, load
  // their content and assemble again (the result is then exactly the whole history's).
  auto assemble = [&]() -> Result<AssembledContext> {
    for (;;) {
      input.history = std::move(entry->window());
      input.folded = &entry->folded();
      Result<AssembledContext> assembled = AssembleContext(input, p->counter);
      entry->window() = std::move(input.history);
      input.folded = nullptr;
      if (!assembled.ok() || !assembled->needs_more_history) return assembled;
      MISSY_RETURN_IF_ERROR(WidenHistoryWindow(*entry, deps_.stores->messages, id));
    }
  };
  Result<AssembledContext> assembled = assemble();
  bool fresh_memory = !sticky_memory;
  if (sticky_memory && assembled.ok() && assembled->report.first_kept_seq != anchor.seq) {
    // The anchor moves: the prefix changes anyway, so the memory is brought up to date,
    // and the anchor still moves even if the new hits take less room.
    input.eviction.move = true;
    search_memory();
    fresh_memory = true;
    assembled = assemble();
  }
  // The moved anchor evicted history no summary covers: the leaves due are written now
  // (extractive only) and this context shows them. A few rounds at most: a new summary
  // takes room, and the anchor may move a group or two further.
  for (int round = 0;
       round < 3 && summarize_evicted_ && p->config->context.summarize_evicted && assembled.ok() &&
       assembled->report.eviction == "anchor_moved" && assembled->report.dropped_messages > 0;
       ++round) {
    Result<int64_t> leaves = summarize_evicted_(id, assembled->report.first_kept_seq - 1);
    if (!leaves.ok()) {
      spdlog::warn("summarizing what the context of {} evicted: {}", id,
                   leaves.status().ToString());
      break;
    }
    if (*leaves == 0) break;
    if (Status st = relist(anchor.summaries); !st.ok()) {
      release();
      return p->done(st);
    }
    input.summaries = TopSummaries(p->summaries);
    summary_tokens_.Fill(input.summaries, p->counter);
    input.eviction.move = true;
    assembled = assemble();
  }
  // What the context is made of (GET /v1/contexts/{id}), read before the window folds.
  const int64_t next_seq = entry->last_seq() + 1;
  std::string composition =
      assembled.ok() ? ComposeRecord(input, entry->window(), *assembled, next_seq) : "";
  // The messages before the anchor this context leaves (its first kept one) are shown by
  // no context while it holds: they keep no content in memory.
  entry->Fold(p->counter, assembled.ok() ? assembled->report.first_kept_seq : 0);
  history_.Recharge(id);
  if (!assembled.ok()) {
    release();
    return p->done(assembled.status());
  }
  ContextOutcome& out = p->outcome;
  out.context = std::move(*assembled);
  const ContextReport& report = out.context.report;
  if (metrics::DaemonMetrics* m = deps_.metrics) {
    m->context_builds.With({report.zone}).Inc();
    m->context_evicted_messages.Inc(static_cast<uint64_t>(report.dropped_messages));
    m->context_pruned_messages.Inc(report.newly_pruned_seqs.size());
    m->context_truncated_messages.Inc(report.truncated.size());
  }
  // A moved anchor shows every summary there is: they are the new anchor's snapshot.
  const bool anchor_moved = report.first_kept_seq != input.eviction.anchor_seq;
  AnchorState new_anchor = anchor;
  if (report.eviction != "anchored") {
    new_anchor.stub_through = report.stub_through_seq;
    new_anchor.squeezed_through = report.squeezed_through_seq;
  }
  if (anchor_moved) {
    new_anchor.seq = report.first_kept_seq;
    for (const SummaryRecord& s : p->summaries) {
      new_anchor.summaries = std::max(new_anchor.summaries, s.ordinal);
    }
  }
  // Everything a context at the anchor depends on is persisted when it changes (the
  // summary forms and the memory hits too), so that after a release of the session's
  // cached state or a restart, the next context is the same bytes.
  const bool anchor_changed = anchor_moved || snapshot_renewed ||
                              new_anchor.stub_through != was.stub_through ||
                              new_anchor.squeezed_through != was.squeezed_through ||
                              new_anchor.summaries != was.summaries || new_anchor.seq != was.seq;
  const bool memory_changed =
      fresh_memory && (was.memory == nullptr || !SameHits(*was.memory, input.memory));
  if (fresh_memory) {
    new_anchor.memory = std::make_shared<const std::vector<MemoryHit>>(input.memory);
  }
  if (anchor_changed || fresh_memory) SetAnchor(id, new_anchor);
  auto persist_anchor =
      [this, id, anchor_changed, new_anchor,
       memory = memory_changed ? std::make_shared<const std::string>(EncodeMemory(input.memory))
                               : nullptr](Txn& txn) -> Status {
    if (anchor_changed) {
      MISSY_RETURN_IF_ERROR(deps_.stores->sessions.SetAnchor(
          txn, id, new_anchor.seq, new_anchor.summaries, new_anchor.stub_through,
          new_anchor.squeezed_through));
    }
    if (memory) MISSY_RETURN_IF_ERROR(deps_.stores->sessions.SetAnchorMemory(txn, id, *memory));
    return Status::Ok();
  };

  out.context_id = "ctx_" + deps_.ids->NewId();
  out.estimated_tokens = report.used_tokens;
  if (!report.tools_measured) out.estimated_tokens -= report.tool_tokens;
  if (!report.system_measured) {
    out.estimated_tokens -=
        std::max<int64_t>(0, report.system_tokens - report.system_message_tokens);
  }
  out.calibrated_tokens = Calibrated(out.calibration, out.estimated_tokens);
  issued_.Remember(out.context_id,
                   IssuedContext{id, CalibrationKey(p->session), out.estimated_tokens});

  AuditRecord built{"context.built", "context", "allow", id,
                    AuditDetail()
                        .Add("context_id", out.context_id)
                        .Add("used_tokens", report.used_tokens)
                        .Add("total", report.total)
                        .Add("kept_messages", report.kept_messages)
                        .Add("dropped_messages", report.dropped_messages)
                        .Add("summaries", report.summaries_included)
                        .Add("sanitized", report.sanitized.size())
                        .Add("zone", report.zone)};
  if (report.last_turn_truncated) {
    // The last turn alone did not fit: it was cut rather than refused (its originals stay).
    built.detail.Add("last_turn_truncated", true);
  }
  AddContextRecord(built.detail, out.context, p->reset_anchor, std::move(composition));
  // Over the thresholds on the budget this request asked for: the trigger checks, off
  // this path, whether a job would have work (and queues it, once a chunk's worth).
  if (report.should_summarize && trigger_ != nullptr) {
    trigger_->Warned(p->session);
  }

  if (report.newly_pruned_seqs.empty()) {
    // Nothing durable changed: answer now; the event (and the anchor) commit afterwards.
    RunOnWorker(deps_, release);  // the session's next task runs beside this answer
    auto event = std::make_shared<AuditRecord>(std::move(built));
    CommitAsync(
        deps_,
        [this, event, persist_anchor](Txn& txn) -> Status {
          MISSY_RETURN_IF_ERROR(persist_anchor(txn));
          return deps_.audit->Append(txn, *event);
        },
        [id](Status st) {
          if (!st.ok()) spdlog::error("context.built for {} not persisted: {}", id, st.ToString());
        });
    Result<ContextOutcome> answer(std::move(out));
    return p->done(std::move(answer));
  }

  // Pruning is sticky: one write transaction, then the answer.
  auto event = std::make_shared<AuditRecord>(std::move(built));
  CommitAsync(
      deps_,
      [this, p, event, id, persist_anchor](Txn& txn) -> Status {
        const ContextReport& r = p->outcome.context.report;
        if (!r.newly_pruned_seqs.empty()) {
          MISSY_RETURN_IF_ERROR(
              deps_.stores->messages.AddFlags(txn, id, r.newly_pruned_seqs, kFlagPruned));
          MISSY_RETURN_IF_ERROR(deps_.audit->Append(
              txn, AuditRecord{"context.pruned", "context", "allow", id,
                               AuditDetail()
                                   .Add("messages", r.newly_pruned_seqs.size())
                                   .Add("freed_tokens", r.pruned_freed_tokens)}));
        }
        MISSY_RETURN_IF_ERROR(persist_anchor(txn));
        return deps_.audit->Append(txn, *event);
      },
      [this, p, id, release = std::move(release)](Status st) {
        if (!st.ok()) {
          release();
          return p->done(st);
        }
        history_.FlagsAdded(id, p->outcome.context.report.newly_pruned_seqs, kFlagPruned);
        release();
        p->outcome.wrote = true;
        p->done(std::move(p->outcome));
      });
}

void ContextService::ForgetSession(const std::string& session_id) {
  std::lock_guard lock(anchors_mu_);
  anchors_.erase(session_id);
}

}  // namespace missy

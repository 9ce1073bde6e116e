#include "daemon/service/past_contexts.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "daemon/audit/audit_bus.h"
#include "storage/stores.h"

namespace missy {

namespace {

// The seqs of the session's messages the composition refers to.
std::vector<int64_t> SeqsOf(const ContextComposition& c) {
  std::vector<int64_t> seqs;
  for (const ContextPart& p : c.parts) {
    if (p.kind == PartKind::kSummary) continue;
    const int64_t last = p.kind == PartKind::kKept ? std::max(p.seq, p.last) : p.seq;
    for (int64_t s = p.seq; s <= last; ++s) seqs.push_back(s);
  }
  return seqs;
}

// Runs `read` on a worker once the audit events emitted before now have committed.
template <typename T>
void AfterPendingOnWorker(const ServiceDeps& deps, std::function<Result<T>()> read, Done<T> done) {
  auto shared = std::make_shared<Done<T>>(std::move(done));
  deps.audit->AfterPending([deps, read = std::move(read), shared](Status st) {
    RunOnWorker(deps, [read, shared, st] {
      if (!st.ok()) return (*shared)(st);
      (*shared)(read());
    });
  });
}

}  // namespace

Result<PastContext> LoadPastContext(const ServiceDeps& deps, const std::string& context_id) {
  Stores& stores = *deps.stores;
  PastContext past;
  Result<AuditEvent> event = stores.audit.FindContextBuilt(context_id);
  if (!event.ok()) {
    if (event.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("context '" + context_id + "' not found", "context_id");
    }
    return event.status();
  }
  past.event = std::move(*event);
  Result<ContextComposition> composition = CompositionFromDetail(past.event.detail_json);
  if (!composition.ok()) {
    if (composition.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("context '" + context_id +
                                  "' was recorded without its composition (before missyd "
                                  "recorded them): it cannot be rebuilt",
                              "context_id");
    }
    return composition.status();
  }
  const std::string& session_id = past.event.session_id;
  RebuildSources sources;
  std::map<int64_t, Message> messages;
  Result<Session> session = stores.sessions.Get(session_id);
  // A session created again under the same id after this context holds other messages.
  if (session.ok() && session->created_at_ms <= past.event.timestamp_ms) {
    sources.base_prompt = session->system_prompt;
    Result<std::vector<StoredMessage>> loaded =
        stores.messages.Load(session_id, SeqsOf(*composition));
    if (!loaded.ok() && loaded.status().code() != StatusCode::kNotFound) return loaded.status();
    if (loaded.ok()) {
      for (StoredMessage& m : *loaded) messages.emplace(m.seq, std::move(m.message));
    }
  } else if (!session.ok() && session.status().code() != StatusCode::kNotFound) {
    return session.status();
  }
  sources.message = [&messages](int64_t seq) -> std::optional<Message> {
    auto it = messages.find(seq);
    return it == messages.end() ? std::nullopt : std::optional<Message>(it->second);
  };
  sources.summary = [&stores, &session_id](const std::string& id) -> std::optional<SummaryView> {
    Result<SummaryRecord> s = stores.summaries.Get(id);
    if (!s.ok() || s->session_id != session_id) return std::nullopt;
    return ToSummaryView(*s);
  };
  sources.memory_text = [&stores](const std::string& id) -> std::optional<std::string> {
    Result<MemoryItem> m = stores.memory.Get(id);
    return m.ok() ? std::optional<std::string>(m->text) : std::nullopt;
  };
  sources.learning = [&stores](const std::string& id) -> std::optional<Learning> {
    Result<LearningRecord> l = stores.memory.GetLearning(id);
    return l.ok() ? std::optional<Learning>(ToLearning(*l)) : std::nullopt;
  };
  past.messages = Rebuild(*composition, sources);
  past.complete = composition->complete;
  for (const RebuiltMessage& m : past.messages) {
    if (!m.message || m.base_missing || !m.missing_ids.empty() || !m.changed_ids.empty()) {
      past.complete = false;
    }
  }
  return past;
}

void FindPastContext(const ServiceDeps& deps, std::string context_id, Done<PastContext> done) {
  AfterPendingOnWorker<PastContext>(
      deps, [deps, id = std::move(context_id)] { return LoadPastContext(deps, id); },
      std::move(done));
}

void ListPastContexts(const ServiceDeps& deps, std::string session_id, int64_t before_seq,
                      int limit, Done<std::vector<AuditEvent>> done) {
  AfterPendingOnWorker<std::vector<AuditEvent>>(
      deps,
      [deps, id = std::move(session_id), before_seq, limit]() -> Result<std::vector<AuditEvent>> {
        if (Result<Session> s = deps.stores->sessions.Get(id); !s.ok()) {
          if (s.status().code() == StatusCode::kNotFound) {
            return Status::NotFound("session '" + id + "' not found", "session_id");
          }
          return s.status();
        }
        return deps.stores->audit.ContextsBuilt(id, before_seq, limit);
      },
      std::move(done));
}

}  // namespace missy

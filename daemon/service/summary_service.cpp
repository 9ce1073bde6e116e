#include "daemon/service/summary_service.h"

#include <algorithm>
#include <memory>

#include "daemon/audit/audit_bus.h"
#include "storage/database.h"
#include "storage/stores.h"

namespace missy {

namespace {

Status SessionMissing(const std::string& id) {
  return Status::NotFound("session '" + id + "' not found");
}

}  // namespace

Result<std::vector<SummaryRecord>> SummaryService::List(const std::string& session_id) {
  if (!deps_.stores->sessions.Get(session_id).ok()) return SessionMissing(session_id);
  return deps_.stores->summaries.List(session_id, /*uncondensed_only=*/false);
}

Result<SummaryExpansion> SummaryService::Expand(const std::string& summary_id) {
  SummaryExpansion out;
  Result<SummaryRecord> summary = deps_.stores->summaries.Get(summary_id);
  if (!summary.ok()) return summary.status();
  out.summary = std::move(*summary);
  Result<std::vector<SummaryRecord>> children = deps_.stores->summaries.Children(summary_id);
  if (!children.ok()) return children.status();
  out.children = std::move(*children);
  Result<std::vector<StoredMessage>> messages = deps_.stores->summaries.Messages(summary_id);
  if (!messages.ok()) return messages.status();
  out.messages = std::move(*messages);
  return out;
}

Result<UncoveredHistory> SummaryService::LoadUncovered(const std::string& session_id) {
  UncoveredHistory out;
  Result<Session> session = deps_.stores->sessions.Get(session_id);
  if (!session.ok()) return SessionMissing(session_id);
  out.session = std::move(*session);
  Result<std::vector<SummaryRecord>> all = deps_.stores->summaries.List(session_id, false);
  if (!all.ok()) return all.status();
  for (SummaryRecord& s : *all) {
    if (s.depth == 0) out.covered_through_seq = std::max(out.covered_through_seq, s.last_seq);
    if (s.parent_id.empty()) out.uncondensed.push_back(std::move(s));
  }
  Result<std::vector<StoredMessage>> messages =
      deps_.stores->messages.LoadWithExtracts(session_id, out.covered_through_seq);
  if (!messages.ok()) return messages.status();
  out.messages = std::move(*messages);
  return out;
}

void SummaryService::Commit(SummaryRecord summary, Done<SummaryRecord> done) {
  auto in = std::make_shared<SummaryRecord>(std::move(summary));
  auto out = std::make_shared<SummaryRecord>();
  CommitAsync(
      deps_,
      [this, in, out](Txn& txn) -> Status {
        Result<SummaryRecord> stored = deps_.stores->summaries.Insert(txn, *in);
        if (!stored.ok()) return stored.status();
        *out = std::move(*stored);
        return deps_.audit->Append(
            txn, AuditRecord{"summary.stored", "context", "allow", out->session_id,
                             AuditDetail()
                                 .Add("summary_id", out->id)
                                 .Add("depth", out->depth)
                                 .Add("first_seq", out->first_seq)
                                 .Add("last_seq", out->last_seq)
                                 .Add("tokens", out->tokens)});
      },
      [this, out, done = std::move(done)](Status st) {
        if (!st.ok()) return done(st);
        SearchableChanged(deps_, out->session_id);
        done(std::move(*out));
      });
}

}  // namespace missy

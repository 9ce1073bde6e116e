#include "daemon/service/usage_service.h"

#include <memory>

#include "daemon/audit/audit_bus.h"
#include "daemon/metrics/daemon_metrics.h"
#include "daemon/service/issued_contexts.h"
#include "daemon/service/ports.h"
#include "daemon/service/session_queue.h"
#include "storage/database.h"
#include "storage/stores.h"

namespace missy {

namespace {

uint64_t Tokens(int64_t n) { return n > 0 ? static_cast<uint64_t>(n) : 0; }

}  // namespace

UsageService::UsageService(const ServiceDeps& deps, SessionQueue& queue, IssuedContexts& issued)
    : deps_(deps), queue_(queue), issued_(issued) {}

void UsageService::Report(UsageReport report, Done<UsageOutcome> done) {
  std::optional<IssuedContext> issued = issued_.Find(report.context_id);
  if (!issued || issued->session_id != report.session_id) {
    return done(Status::NotFound("context '" + report.context_id + "' is unknown for session '" +
                                     report.session_id + "' (the daemon remembers the last " +
                                     std::to_string(issued_.capacity()) + " contexts)",
                                 "context_id"));
  }
  auto r = std::make_shared<UsageReport>(std::move(report));
  auto ctx = std::make_shared<IssuedContext>(std::move(*issued));
  auto shared_done = std::make_shared<Done<UsageOutcome>>(std::move(done));
  // Serialised per model: the queue key cannot collide with a session id (those have no '/').
  queue_.Run("calibration/" + ctx->calibration_key, [this, r, ctx,
                                                     shared_done](SessionQueue::Release release) {
    auto out = std::make_shared<UsageOutcome>();
    out->model = ctx->calibration_key;
    out->estimated_tokens = ctx->estimated_tokens;
    if (Result<Calibration> c = deps_.stores->calibration.Get(ctx->calibration_key); c.ok()) {
      out->before.ratio = c->ratio;
      out->before.samples = c->samples;
    }
    out->after = Update(out->before, ctx->estimated_tokens, r->prompt_tokens,
                        deps_.config->Get()->calibration);
    Calibration row;
    row.model = ctx->calibration_key;
    row.ratio = out->after.ratio;
    row.samples = out->after.samples;
    row.updated_at_ms = deps_.clock->NowMs();
    CommitAsync(
        deps_,
        [this, r, out, row](Txn& txn) -> Status {
          MISSY_RETURN_IF_ERROR(deps_.stores->calibration.Put(txn, row));
          return deps_.audit->Append(
              txn, AuditRecord{"calibration.updated", "provider", "allow", r->session_id,
                               AuditDetail()
                                   .Add("context_id", r->context_id)
                                   .Add("model", out->model)
                                   .Add("estimated_tokens", out->estimated_tokens)
                                   .Add("prompt_tokens", r->prompt_tokens)
                                   .Add("completion_tokens", r->completion_tokens)
                                   .Add("ratio_before", out->before.ratio)
                                   .Add("ratio", out->after.ratio)
                                   .Add("samples", out->after.samples)});
        },
        [this, r, out, shared_done, release](Status st) {
          release();
          if (!st.ok()) return (*shared_done)(st);
          if (metrics::DaemonMetrics* m = deps_.metrics) {
            m->usage_reports.With({out->model}).Inc();
            m->usage_prompt_tokens.With({out->model}).Inc(Tokens(r->prompt_tokens));
            m->usage_completion_tokens.With({out->model}).Inc(Tokens(r->completion_tokens));
          }
          (*shared_done)(*out);
        });
  });
}

}  // namespace missy

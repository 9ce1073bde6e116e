// /v1/health, /v1/config, /v1/config/reload, /v1/audit, /v1/audit/verify, /v1/jobs,
// summaries, import
#include <boost/json/parse.hpp>

#include "daemon/http/api.h"
#include "daemon/http/encode.h"
#include "daemon/service/config_reloader.h"
#include "daemon/service/services.h"
#include "daemon/service/summary_dispatch.h"

namespace missy::http {

void Api::AddAdminRoutes() {
  Services& s = services_;
  router_.Add("GET", "/v1/health", [this, &s](const std::shared_ptr<Call>& call) {
    auto cfg = s.deps.config->Get();
    const HealthFigures h = s.admin.Health();
    json::value broker = nullptr;  // null: no broker configured
    if (s.deps.broker_stats) {
      const AuditPublisherStats b = s.deps.broker_stats();
      broker = json::object{{"connected", b.connected},   {"published", b.published},
                            {"duplicates", b.duplicates}, {"failures", b.failures},
                            {"cursor", b.cursor},         {"backlog", b.backlog()},
                            {"rate", b.rate},
                            {"last_error", b.last_error}};
    }
    if (s.deps.dispatcher != nullptr) {  // distributed summarization
      const DispatchStats j = s.deps.dispatcher->Stats();
      if (broker.is_null()) broker = json::object{};
      broker.as_object()["jobs"] =
          json::object{{"connected", j.connected},   {"dispatched", j.dispatched}, {"not_sent", j.not_sent},
                       {"completed", j.completed},   {"worker_errors", j.worker_errors},
                       {"exhausted", j.exhausted},
                       {"timeouts", j.timeouts},     {"duplicates", j.duplicates},
                       {"stale", j.stale},           {"in_flight", j.in_flight},
                       {"last_error", j.last_error}};
    }
    call->Reply(
        200, json::object{
                 {"status", "ok"},
                 {"version", version_},
                 {"uptime_ms", h.uptime_ms},
                 {"requests", requests_.load()},
                 {"schema_version", h.schema_version},
                 {"socket", cfg->socket_path},
                 {"audit_socket", cfg->audit_socket_path},
                 {"memory",
                  json::object{{"rss_bytes", h.rss_bytes},
                               {"limit_mb", cfg->limits.memory_mb},
                               {"history_cache", json::object{{"sessions", h.cached_sessions},
                                                              {"messages", h.cached_messages},
                                                              {"known_messages", h.known_messages},
                                                              {"bytes", h.cached_bytes},
                                                              {"max_bytes", h.cache_max_bytes}}},
                               {"sqlite",
                                json::object{{"bytes", h.sqlite.sqlite_bytes},
                                             {"high_water_bytes", h.sqlite.sqlite_high_water_bytes},
                                             {"cache_bytes", h.sqlite.cache_bytes},
                                             {"cache_budget_bytes", h.sqlite.cache_budget_bytes},
                                             {"open_readers", h.sqlite.open_readers}}}}},
                 {"storage", json::object{{"write_transactions", h.write_transactions},
                                          {"commits_with_fsync", h.commits_with_fsync}}},
                 {"broker", std::move(broker)}});
  });

  router_.Add("GET", "/v1/config", [&s](const std::shared_ptr<Call>& call) {
    HttpResponse r;
    r.body = EffectiveConfigJson(*s.deps.config->Get()) + "\n";
    call->Reply(std::move(r));
  });

  // The SIGHUP path (ConfigReloader), on a worker: it reads a file.
  router_.Add("POST", "/v1/config/reload", [&s](const std::shared_ptr<Call>& call) {
    Result<json::object> body = ParseBody(call->request.body, /*empty_ok=*/true);
    if (!body.ok()) return call->Fail(body.status());
    if (Status st = CheckKnownKeys(*body, {}); !st.ok()) return call->Fail(st);
    ConfigReloader* reloader = ConfigReloader::For(s.deps.config);
    if (reloader == nullptr) {
      return call->Fail(Status::Unavailable("config reload is not available in this process"));
    }
    RunOnWorker(s.deps, [call, reloader] {
      Result<ReloadOutcome> r = reloader->Reload();
      if (!r.ok()) return call->Fail(r.status());
      json::array changed, restart;
      for (const std::string& k : r->changed) changed.emplace_back(k);
      for (const std::string& k : r->restart_required) restart.emplace_back(k);
      call->Reply(200, json::object{{"reloaded", true},
                                    {"changed", std::move(changed)},
                                    {"restart_required", std::move(restart)}});
    });
  });

  router_.Add("GET", "/v1/audit", [&s](const std::shared_ptr<Call>& call) {
    int64_t since = 0, limit = 100;
    Status st = QueryInt(call->target, "since", 0, int64_t{1} << 62, since);
    if (st.ok()) st = QueryInt(call->target, "limit", 1, 10000, limit);
    if (!st.ok()) return call->Fail(st);
    s.admin.Audit(since, static_cast<int>(limit), QueryString(call->target, "type"),
                  [call](Result<std::vector<AuditEvent>> events) {
                    if (!events.ok()) return call->Fail(events.status());
                    json::array out;
                    for (const AuditEvent& e : *events) {
                      out.push_back(json::parse(AuditEventToJsonLine(e)));
                    }
                    call->Reply(200, json::object{{"events", std::move(out)}});
                  });
  });

  router_.Add("GET", "/v1/audit/verify", [&s](const std::shared_ptr<Call>& call) {
    Result<AuditVerifyReport> report = s.admin.VerifyAudit();
    if (!report.ok()) return call->Fail(report.status());
    call->Reply(200, json::object{{"ok", report->ok},
                                  {"checked", report->checked},
                                  {"first_seq", report->first_seq},
                                  {"last_seq", report->last_seq},
                                  {"broken_seq", report->broken_seq},
                                  {"reason", report->reason}});
  });

  router_.Add("GET", "/v1/jobs", [&s](const std::shared_ptr<Call>& call) {
    Result<ListOptions> paging = Paging(call->target);
    if (!paging.ok()) return call->Fail(paging.status());
    Result<std::vector<Job>> jobs = s.admin.Jobs(*paging, QueryString(call->target, "state"));
    if (!jobs.ok()) return call->Fail(jobs.status());
    json::array out;
    for (const Job& j : *jobs) out.push_back(JobToJson(j));
    call->Reply(200, json::object{{"jobs", std::move(out)}});
  });

  router_.Add("GET", "/v1/sessions/{session_id}/summaries",
              [&s](const std::shared_ptr<Call>& call) {
                const std::string& id = call->params[0];
                Result<std::vector<SummaryRecord>> list = s.summaries.List(id);
                if (!list.ok()) return call->Fail(list.status(), id);
                json::array out;
                for (const SummaryRecord& r : *list) out.push_back(SummaryToJson(r));
                call->Reply(200, json::object{{"session_id", id}, {"summaries", std::move(out)}});
              });

  router_.Add("GET", "/v1/summaries/{id}", [&s](const std::shared_ptr<Call>& call) {
    Result<SummaryExpansion> e = s.summaries.Expand(call->params[0]);
    if (!e.ok()) return call->Fail(e.status());
    json::object out = SummaryToJson(e->summary);
    json::array kids, msgs;
    for (const SummaryRecord& c : e->children) kids.push_back(SummaryToJson(c));
    for (const StoredMessage& m : e->messages) msgs.push_back(StoredMessageToJson(m));
    out["children"] = std::move(kids);
    out["messages"] = std::move(msgs);
    call->Reply(200, out);
  });

  router_.Add("POST", "/v1/import/missy", [&s](const std::shared_ptr<Call>& call) {
    Result<json::object> body = ParseBody(call->request.body, /*empty_ok=*/true);
    if (!body.ok()) return call->Fail(body.status());
    std::string path;
    Status st = CheckKnownKeys(*body, {"path"});
    if (st.ok()) st = OptString(*body, "path", path);
    if (!st.ok()) return call->Fail(st);
    s.admin.ImportMissy(std::move(path), [call](Result<ImportOutcome> r) {
      if (!r.ok()) return call->Fail(r.status());
      const MissyImportReport& report = r->report;
      call->Reply(200, json::object{{"path", r->path},
                                    {"sessions", report.sessions},
                                    {"messages", report.messages},
                                    {"summaries", report.summaries},
                                    {"learnings", report.learnings},
                                    {"skipped", report.skipped}});
    });
  });
}

}  // namespace missy::http

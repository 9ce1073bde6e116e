// /v1/memory, /v1/memory/{id}, /v1/memory/search, /v1/learnings
#include "daemon/http/api.h"
#include "daemon/http/encode.h"
#include "daemon/service/services.h"

namespace missy::http {

void Api::AddMemoryRoutes() {
  Services& s = services_;
  router_.Add("GET", "/v1/memory", [&s](const std::shared_ptr<Call>& call) {
    Result<ListOptions> paging = Paging(call->target);
    if (!paging.ok()) return call->Fail(paging.status());
    auto items = s.memory.List(*paging, QueryString(call->target, "session_id"));
    if (!items.ok()) return call->Fail(items.status());
    json::array out;
    for (const MemoryItem& m : *items) out.push_back(MemoryToJson(m));
    call->Reply(200, json::object{{"items", std::move(out)}});
  });

  router_.Add("POST", "/v1/memory", [&s](const std::shared_ptr<Call>& call) {
    Result<json::object> body = ParseBody(call->request.body, /*empty_ok=*/false);
    if (!body.ok()) return call->Fail(body.status());
    MemoryItem item;
    std::optional<bool> pinned;
    Status st = CheckKnownKeys(*body, {"text", "tags", "session_id", "pinned"});
    if (st.ok()) st = OptString(*body, "text", item.text);
    if (st.ok()) st = OptStrings(*body, "tags", item.tags);
    if (st.ok()) st = OptString(*body, "session_id", item.session_id);
    if (st.ok()) st = OptBool(*body, "pinned", pinned);
    if (!st.ok()) return call->Fail(st);
    item.pinned = pinned.value_or(false);
    s.memory.Add(std::move(item), [call](Result<MemoryItem> stored) {
      if (!stored.ok()) return call->Fail(stored.status());
      call->Reply(201, MemoryToJson(*stored));
    });
  });

  router_.Add("GET", "/v1/memory/search", [&s](const std::shared_ptr<Call>& call) {
    const std::string q = QueryString(call->target, "q");
    if (q.empty()) return call->Fail(Status::InvalidArgument("the search text is required", "q"));
    int64_t limit = 10;
    if (Status st = QueryInt(call->target, "limit", 1, 100, limit); !st.ok()) return call->Fail(st);
    SearchOptions options;
    options.query = q;
    options.max_results = static_cast<int>(limit);
    options.session_id = QueryString(call->target, "session_id");
    options.exclude_session_id = QueryString(call->target, "exclude_session_id");
    s.memory.Search(std::move(options), [call, q](Result<std::vector<MemoryHit>> hits) {
      if (!hits.ok()) return call->Fail(hits.status());
      json::array out;
      for (const MemoryHit& h : *hits) {
        out.push_back(
            json::object{{"source", h.source}, {"id", h.id}, {"text", h.text}, {"score", h.score}});
      }
      call->Reply(200, json::object{{"query", q}, {"results", std::move(out)}});
    });
  });

  router_.Add("GET", "/v1/memory/{id}", [&s](const std::shared_ptr<Call>& call) {
    Result<MemoryItem> item = s.memory.Get(call->params[0]);
    if (!item.ok()) return call->Fail(item.status());
    call->Reply(200, MemoryToJson(*item));
  });

  router_.Add("DELETE", "/v1/memory/{id}", [&s](const std::shared_ptr<Call>& call) {
    s.memory.Delete(call->params[0], [call](Result<std::string> id) {
      if (!id.ok()) return call->Fail(id.status());
      call->Reply(200, json::object{{"deleted", *id}});
    });
  });

  router_.Add("GET", "/v1/learnings", [&s](const std::shared_ptr<Call>& call) {
    Result<ListOptions> paging = Paging(call->target);
    if (!paging.ok()) return call->Fail(paging.status());
    auto list = s.memory.ListLearnings(*paging, QueryString(call->target, "task_type"));
    if (!list.ok()) return call->Fail(list.status());
    json::array out;
    for (const LearningRecord& l : *list) out.push_back(LearningToJson(l));
    call->Reply(200, json::object{{"learnings", std::move(out)}});
  });

  router_.Add("POST", "/v1/learnings", [&s](const std::shared_ptr<Call>& call) {
    Result<json::object> body = ParseBody(call->request.body, /*empty_ok=*/false);
    if (!body.ok()) return call->Fail(body.status());
    LearningRecord l;
    Status st = CheckKnownKeys(*body, {"task_type", "outcome", "lesson", "approach", "session_id"});
    if (st.ok()) st = OptString(*body, "task_type", l.task_type);
    if (st.ok()) st = OptString(*body, "outcome", l.outcome);
    if (st.ok()) st = OptString(*body, "lesson", l.lesson);
    if (st.ok()) st = OptStrings(*body, "approach", l.approach);
    if (st.ok()) st = OptString(*body, "session_id", l.session_id);
    if (!st.ok()) return call->Fail(st);
    s.memory.AddLearning(std::move(l), [call](Result<LearningRecord> stored) {
      if (!stored.ok()) return call->Fail(stored.status());
      call->Reply(201, LearningToJson(*stored));
    });
  });
}

}  // namespace missy::http

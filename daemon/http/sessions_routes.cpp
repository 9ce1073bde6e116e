// /v1/sessions, /v1/sessions/{id} (GET, DELETE), /v1/sessions/{id}/messages
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/message_json.h"
#include "core/sanitizer.h"
#include "daemon/http/api.h"
#include "daemon/http/encode.h"
#include "daemon/service/services.h"

namespace missy::http {

namespace {

json::array WarningsJson(const std::vector<AppendWarning>& warnings) {
  json::array out;
  for (const AppendWarning& w : warnings) out.push_back(AppendWarningToJson(w));
  return out;
}

Status ParseSession(const json::object& o, Session& session, std::optional<bool>& strict) {
  MISSY_RETURN_IF_ERROR(CheckKnownKeys(
      o, {"id", "model", "system_prompt", "tools", "metadata", "context_window", "strict",
          "summarizer"}));
  MISSY_RETURN_IF_ERROR(OptString(o, "id", session.id));
  if (o.contains("id") && !ValidSessionId(session.id)) {
    return Status::InvalidArgument("session id must be 1-128 characters of [A-Za-z0-9._:-]", "id");
  }
  MISSY_RETURN_IF_ERROR(OptString(o, "model", session.model));
  MISSY_RETURN_IF_ERROR(OptString(o, "system_prompt", session.system_prompt));
  if (const json::value* tools = o.if_contains("tools"); tools && !tools->is_null()) {
    if (!tools->is_array()) {
      return Status::InvalidArgument("expected an array of tool definitions", "tools");
    }
    for (size_t i = 0; i < tools->get_array().size(); ++i) {
      if (!tools->get_array()[i].is_object()) {
        return Status::InvalidArgument("expected a tool definition object",
                                       "tools[" + std::to_string(i) + "]");
      }
    }
    session.tools_json = json::serialize(*tools);
  }
  if (const json::value* meta = o.if_contains("metadata"); meta && !meta->is_null()) {
    if (!meta->is_object()) return Status::InvalidArgument("expected an object", "metadata");
    session.metadata_json = json::serialize(*meta);
  }
  MISSY_RETURN_IF_ERROR(OptInt(o, "context_window", 1, int64_t{1} << 40, session.context_window));
  if (const json::value* sum = o.if_contains("summarizer"); sum && !sum->is_null()) {
    if (!sum->is_object()) {
      return Status::InvalidArgument("expected an object {backend, provider}", "summarizer");
    }
    const json::object& so = sum->get_object();
    Status st = CheckKnownKeys(so, {"backend", "provider"});
    if (st.ok()) st = OptString(so, "backend", session.summarizer_backend);
    if (st.ok()) st = OptString(so, "provider", session.summarizer_provider);
    if (!st.ok()) return Status::InvalidArgument(st.message(), "summarizer." + st.field());
  }
  return OptBool(o, "strict", strict);
}

Status ParseAppend(json::object& o, AppendRequest& request) {
  MISSY_RETURN_IF_ERROR(CheckKnownKeys(o, {"messages", "strict"}));
  json::value* messages = o.if_contains("messages");
  if (messages == nullptr) return Status::InvalidArgument("is required", "messages");
  if (!messages->is_array()) {
    return Status::InvalidArgument("expected an array of messages", "messages");
  }
  json::array& list = messages->get_array();
  if (list.empty()) return Status::InvalidArgument("must not be empty", "messages");
  if (list.size() > SessionService::kMaxBatch) {
    return Status::PayloadTooLarge("at most " + std::to_string(SessionService::kMaxBatch) +
                                   " messages per append");
  }
  MISSY_RETURN_IF_ERROR(OptBool(o, "strict", request.strict));
  request.messages.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    Result<Message> m = ParseMessage(list[i], "messages[" + std::to_string(i) + "]");
    if (!m.ok()) return m.status();
    if (const json::value* pin = list[i].as_object().if_contains("pin"); pin != nullptr) {
      if (!pin->is_bool()) {
        return Status::InvalidArgument("must be true or false",
                                       "messages[" + std::to_string(i) + "].pin");
      }
      if (pin->get_bool()) {
        if (m->role != Role::kUser) {
          return Status::InvalidArgument("only a user message can be pinned as the task",
                                         "messages[" + std::to_string(i) + "].pin");
        }
        request.pinned.resize(list.size(), false);
        request.pinned[i] = true;
      }
    }
    request.messages.push_back(std::move(*m));
    list[i] = nullptr;  // the parsed copy is all that is kept
  }
  return Status::Ok();
}

}  // namespace

void Api::AddSessionRoutes() {
  Services& s = services_;
  router_.Add("GET", "/v1/sessions", [&s](const std::shared_ptr<Call>& call) {
    Result<ListOptions> paging = Paging(call->target);
    if (!paging.ok()) return call->Fail(paging.status());
    Result<std::vector<Session>> sessions = s.sessions.List(*paging);
    if (!sessions.ok()) return call->Fail(sessions.status());
    json::array out;
    for (const Session& session : *sessions) out.push_back(SessionToJson(session));
    call->Reply(200, json::object{{"sessions", std::move(out)}});
  });

  router_.Add("POST", "/v1/sessions", [&s](const std::shared_ptr<Call>& call) {
    Result<json::object> body = ParseBody(call->request.body, /*empty_ok=*/true);
    if (!body.ok()) return call->Fail(body.status());
    Session session;
    std::optional<bool> strict;
    if (Status st = ParseSession(*body, session, strict); !st.ok()) return call->Fail(st);
    const std::string id = session.id;
    s.sessions.Create(std::move(session), strict, [call, id](Result<Session> created) {
      if (!created.ok()) return call->Fail(created.status(), id);
      call->Reply(201, SessionToJson(*created));
    });
  });

  router_.Add("GET", "/v1/sessions/{session_id}", [&s](const std::shared_ptr<Call>& call) {
    const std::string& id = call->params[0];
    Result<Session> session = s.sessions.Get(id);
    if (!session.ok()) return call->Fail(session.status(), id);
    call->Reply(200, SessionToJson(*session));
  });

  router_.Add("DELETE", "/v1/sessions/{session_id}", [&s](const std::shared_ptr<Call>& call) {
    const std::string id = call->params[0];
    s.sessions.Delete(id, [call, id](Result<SessionDeletion> removed) {
      if (!removed.ok()) return call->Fail(removed.status(), id);
      call->Reply(200, json::object{{"deleted", id},
                                    {"messages", removed->messages},
                                    {"summaries", removed->summaries},
                                    {"memory_items", removed->memory_items},
                                    {"jobs", removed->jobs}});
    });
  });

  router_.Add("GET", "/v1/sessions/{session_id}/messages", [&s](const std::shared_ptr<Call>& call) {
    const std::string& id = call->params[0];
    int64_t after = 0, limit = 1000;
    Status st = QueryInt(call->target, "after", 0, int64_t{1} << 62, after);
    if (st.ok()) st = QueryInt(call->target, "limit", 1, 10000, limit);
    if (!st.ok()) return call->Fail(st, id);
    Result<std::vector<StoredMessage>> stored = s.sessions.Messages(id, after, limit);
    if (!stored.ok()) return call->Fail(stored.status(), id);
    json::array out;
    for (const StoredMessage& m : *stored) out.push_back(StoredMessageToJson(m));
    call->Reply(200, json::object{{"session_id", id}, {"messages", std::move(out)}});
  });

  router_.Add("POST", "/v1/sessions/{session_id}/messages",
              [&s](const std::shared_ptr<Call>& call) {
                const std::string id = call->params[0];
                Result<json::object> body = ParseBody(call->request.body, /*empty_ok=*/false);
                if (!body.ok()) return call->Fail(body.status(), id);
                call->request.body.clear();
                call->request.body.shrink_to_fit();
                AppendRequest request;
                request.session_id = id;
                if (Status st = ParseAppend(*body, request); !st.ok()) return call->Fail(st, id);
                s.sessions.Append(std::move(request), [call, id](AppendOutcome out) {
                  if (!out.status.ok()) {
                    json::object extra;
                    if (!out.warnings.empty()) extra["warnings"] = WarningsJson(out.warnings);
                    return call->Fail(out.status, id, out.warnings.empty() ? nullptr : &extra);
                  }
                  json::array rows;
                  for (const AppendedMessage& m : out.messages) {
                    json::object row{{"seq", m.seq}, {"tokens", m.tokens}};
                    if (m.flags != kFlagNone) row["flags"] = FlagNames(m.flags);
                    rows.push_back(std::move(row));
                  }
                  call->Reply(200, json::object{{"session_id", id},
                                                {"appended", out.messages.size()},
                                                {"messages", std::move(rows)},
                                                {"warnings", WarningsJson(out.warnings)},
                                                {"message_count", out.session.message_count},
                                                {"total_tokens", out.session.total_tokens},
                                                {"last_seq", out.session.last_seq}});
                });
              });
}

}  // namespace missy::http

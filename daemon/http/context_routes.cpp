// /v1/sessions/{id}/context, /compact, /recall, /usage
#include "core/context_report_json.h"
#include "core/message_json.h"
#include "daemon/http/api.h"
#include "daemon/http/encode.h"
#include "daemon/service/services.h"

namespace missy::http {

namespace {

Status ParseContextRequest(const json::object& o, ContextRequest& request) {
  MISSY_RETURN_IF_ERROR(
      CheckKnownKeys(o, {"message", "context_window", "max_output_tokens", "query"}));
  MISSY_RETURN_IF_ERROR(OptInt(o, "context_window", 1, int64_t{1} << 40, request.context_window));
  MISSY_RETURN_IF_ERROR(
      OptInt(o, "max_output_tokens", 0, int64_t{1} << 40, request.max_output_tokens));
  if (const json::value* m = o.if_contains("message"); m && !m->is_null()) {
    Result<Message> parsed = ParseMessage(*m, "message");
    if (!parsed.ok()) return parsed.status();
    request.new_message = std::move(*parsed);
  }
  return OptString(o, "query", request.query);
}

json::object ContextToJson(const ContextOutcome& out, const std::string& session_id) {
  const ContextReport& report = out.context.report;
  json::array messages;
  for (const Message& m : out.context.messages) messages.push_back(MessageToJson(m));
  json::object budget = ContextReportToJson(report);
  budget["encoding"] = out.encoding;
  budget["factor"] = out.factor;
  budget["calibration"] = json::object{{"ratio", out.calibration.ratio},
                                       {"samples", out.calibration.samples},
                                       {"raw_total", out.raw_total},
                                       {"calibrated_total", out.calibrated_total},
                                       {"estimated_tokens", out.estimated_tokens},
                                       {"calibrated_tokens", out.calibrated_tokens}};
  return json::object{{"context_id", out.context_id},
                      {"session_id", session_id},
                      {"messages", std::move(messages)},
                      {"system", out.context.system},
                      {"budget", std::move(budget)}};
}

}  // namespace

void Api::AddContextRoutes() {
  Services& s = services_;
  router_.Add("POST", "/v1/sessions/{session_id}/context", [&s](const std::shared_ptr<Call>& call) {
    const std::string id = call->params[0];
    Result<json::object> body = ParseBody(call->request.body, /*empty_ok=*/true);
    if (!body.ok()) return call->Fail(body.status(), id);
    ContextRequest request;
    request.session_id = id;
    if (Status st = ParseContextRequest(*body, request); !st.ok()) return call->Fail(st, id);
    s.context.Build(std::move(request), [call, id](Result<ContextOutcome> out) {
      if (!out.ok()) return call->Fail(out.status(), id);
      call->Reply(200, ContextToJson(*out, id));
    });
  });

  // Forced compaction: summarize now (whatever is uncovered outside the fresh tail), then
  // answer with the context the next request would get.
  router_.Add("POST", "/v1/sessions/{session_id}/compact", [&s](const std::shared_ptr<Call>& call) {
    const std::string id = call->params[0];
    Result<json::object> body = ParseBody(call->request.body, /*empty_ok=*/true);
    if (!body.ok()) return call->Fail(body.status(), id);
    SummarizeRequest request;
    request.session_id = id;
    ContextRequest context;
    context.session_id = id;
    context.reset_anchor = true;  // the new summaries replace what they cover, now
    Status st = CheckKnownKeys(*body, {"reason", "context_window", "max_output_tokens"});
    if (st.ok()) st = OptString(*body, "reason", request.reason);
    if (st.ok()) st = OptInt(*body, "context_window", 1, int64_t{1} << 40, context.context_window);
    if (st.ok()) {
      st = OptInt(*body, "max_output_tokens", 0, int64_t{1} << 40, context.max_output_tokens);
    }
    if (!st.ok()) return call->Fail(st, id);
    s.summarization.Compact(std::move(request), [&s, call, id, context = std::move(context)](
                                                    Result<SummarizeOutcome> done) mutable {
      if (!done.ok()) return call->Fail(done.status(), id);
      json::object compaction{{"leaves", done->leaves},
                              {"condensed", done->condensed},
                              {"messages_covered", done->messages_covered},
                              {"tokens_before", done->tokens_before},
                              {"tokens_after", done->tokens_after},
                              {"backend", done->backend},
                              {"stopped", done->stopped}};
      s.context.Build(std::move(context), [call, id, compaction = std::move(compaction)](
                                              Result<ContextOutcome> out) mutable {
        if (!out.ok()) return call->Fail(out.status(), id);
        json::object answer = ContextToJson(*out, id);
        answer["compaction"] = std::move(compaction);
        call->Reply(200, std::move(answer));
      });
    });
  });

  // Recall: the originals behind summaries, by query or by summary id (docs/API.md).
  router_.Add("POST", "/v1/sessions/{session_id}/recall", [&s](const std::shared_ptr<Call>& call) {
    const std::string id = call->params[0];
    Result<json::object> body = ParseBody(call->request.body, /*empty_ok=*/false);
    if (!body.ok()) return call->Fail(body.status(), id);
    RecallRequest request;
    request.session_id = id;
    Status st = CheckKnownKeys(*body, {"query", "summary_id", "max_tokens", "after_seq"});
    if (st.ok()) st = OptString(*body, "query", request.query);
    if (st.ok()) st = OptString(*body, "summary_id", request.summary_id);
    if (st.ok()) {
      st = OptInt(*body, "max_tokens", 1, RecallService::kMaxTokensLimit, request.max_tokens);
    }
    if (st.ok()) st = OptInt(*body, "after_seq", 0, int64_t{1} << 62, request.after_seq);
    if (!st.ok()) return call->Fail(st, id);
    const RecallRequest echo{id, request.query, request.summary_id, request.max_tokens, 0};
    s.recall.Recall(std::move(request), [call, echo](Result<RecallOutcome> out) {
      if (!out.ok()) return call->Fail(out.status(), echo.session_id);
      json::array messages, summaries;
      for (const RecalledMessage& m : out->messages) {
        json::object o = StoredMessageToJson(m.message);
        if (m.truncated) o["truncated"] = true;
        messages.push_back(std::move(o));
      }
      for (const SummaryRecord& r : out->summaries) summaries.push_back(SummaryToJson(r));
      json::object answer{{"session_id", echo.session_id}};
      if (!echo.query.empty()) answer["query"] = echo.query;
      if (!echo.summary_id.empty()) answer["summary_id"] = echo.summary_id;
      answer["messages"] = std::move(messages);
      answer["summaries"] = std::move(summaries);
      answer["tokens"] = out->tokens;
      answer["max_tokens"] = echo.max_tokens;
      answer["truncated"] = out->truncated;
      answer["next_after_seq"] =
          out->next_after_seq > 0 ? json::value(out->next_after_seq) : json::value(nullptr);
      answer["text"] = out->text;
      call->Reply(200, std::move(answer));
    });
  });

  router_.Add("POST", "/v1/sessions/{session_id}/usage", [&s](const std::shared_ptr<Call>& call) {
    const std::string id = call->params[0];
    Result<json::object> body = ParseBody(call->request.body, /*empty_ok=*/false);
    if (!body.ok()) return call->Fail(body.status(), id);
    UsageReport report;
    report.session_id = id;
    report.prompt_tokens = -1;
    Status st = CheckKnownKeys(*body, {"context_id", "prompt_tokens", "completion_tokens"});
    if (st.ok()) st = OptString(*body, "context_id", report.context_id);
    if (st.ok() && report.context_id.empty())
      st = Status::InvalidArgument("is required", "context_id");
    if (st.ok()) st = OptInt(*body, "prompt_tokens", 1, int64_t{1} << 40, report.prompt_tokens);
    if (st.ok() && report.prompt_tokens < 0) {
      st = Status::InvalidArgument("is required", "prompt_tokens");
    }
    if (st.ok()) {
      st = OptInt(*body, "completion_tokens", 0, int64_t{1} << 40, report.completion_tokens);
    }
    if (!st.ok()) return call->Fail(st, id);
    const UsageReport echo = report;
    s.usage.Report(std::move(report), [call, id, echo](Result<UsageOutcome> out) {
      if (!out.ok()) return call->Fail(out.status(), id);
      call->Reply(200, json::object{{"context_id", echo.context_id},
                                    {"model", out->model},
                                    {"estimated_tokens", out->estimated_tokens},
                                    {"prompt_tokens", echo.prompt_tokens},
                                    {"completion_tokens", echo.completion_tokens},
                                    {"ratio_before", out->before.ratio},
                                    {"ratio", out->after.ratio},
                                    {"samples", out->after.samples}});
    });
  });
}

}  // namespace missy::http

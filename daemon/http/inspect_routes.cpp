// Past contexts and the live audit feed (issue 30, docs/API.md "Inspecting contexts"):
// GET /v1/contexts/{context_id}, GET /v1/sessions/{id}/contexts, GET /v1/audit/stream.
#include <algorithm>
#include <boost/json/parse.hpp>
#include <memory>
#include <sstream>

#include "core/audit_event.h"
#include "core/message_json.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/http/api.h"
#include "daemon/service/past_contexts.h"
#include "daemon/service/services.h"

namespace missy::http {

namespace {

json::object DetailOf(const AuditEvent& e) {
  boost::system::error_code ec;
  json::value v = json::parse(e.detail_json, ec);
  return !ec && v.is_object() ? std::move(v.as_object()) : json::object{};
}

json::value Field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr ? *v : json::value(nullptr);
}

// The figures a context's event records, shared by both context endpoints.
json::object ContextFigures(const AuditEvent& e, const json::object& d, bool with_session) {
  json::object out{{"context_id", Field(d, "context_id")}};
  if (with_session) out["session_id"] = e.session_id;
  for (auto& [key, value] : json::object{{"seq", e.seq},
                                         {"at", FormatIsoTimestampMs(e.timestamp_ms)},
                                         {"used_tokens", Field(d, "used_tokens")},
                                         {"budget", Field(d, "total")},
                                         {"window", Field(d, "window")},
                                         {"zone", Field(d, "zone")},
                                         {"sections", Field(d, "sections")}}) {
    out[key] = value;
  }
  return out;
}

json::object MarkOf(const RebuiltMessage& m) {
  json::object mark{{"entry", m.entry}};
  if (m.seq > 0) mark["seq"] = m.seq;
  if (m.entry == "summary") {
    mark["summary_id"] = m.summary_id;
    mark["form"] = m.form;
    if (m.message) {
      mark["depth"] = m.depth;
      mark["covered"] = json::array{m.first_seq, m.last_seq};
    }
  }
  if (m.entry == "truncated") mark["original_tokens"] = m.original_tokens;
  if (m.entry == "system") {
    auto in = [](const std::vector<std::string>& ids, const std::string& id) {
      return std::find(ids.begin(), ids.end(), id) != ids.end();
    };
    auto missing = [&](const std::string& id) { return in(m.missing_ids, id); };
    auto changed = [&](const std::string& id) { return in(m.changed_ids, id); };
    json::array memory, learnings;
    for (const SystemItem& i : m.memory) {
      json::object o{{"entry", "memory"}, {"source", i.source}, {"id", i.id}, {"cut", i.keep >= 0}};
      if (missing(i.id)) o["missing"] = true;
      if (changed(i.id)) o["changed"] = true;
      memory.push_back(std::move(o));
    }
    for (const SystemItem& i : m.learnings) {
      json::object o{{"entry", "learning"}, {"id", i.id}};
      if (missing(i.id)) o["missing"] = true;
      if (changed(i.id)) o["changed"] = true;
      learnings.push_back(std::move(o));
    }
    mark["memory"] = std::move(memory);
    mark["learnings"] = std::move(learnings);
    if (m.base_missing) mark["base_missing"] = true;
  }
  if (!m.message) mark["missing"] = true;
  return mark;
}

json::object PastContextToJson(const PastContext& p) {
  const json::object d = DetailOf(p.event);
  json::object out = ContextFigures(p.event, d, true);
  json::array messages;
  for (const RebuiltMessage& m : p.messages) {
    json::object o = m.message ? MessageToJson(*m.message)
                               : json::object{{"role", nullptr}, {"content", nullptr}};
    o["missy"] = MarkOf(m);
    messages.push_back(std::move(o));
  }
  out["complete"] = p.complete;
  out["messages"] = std::move(messages);
  return out;
}

json::object ListItem(const AuditEvent& e) {
  const json::object d = DetailOf(e);
  json::object out = ContextFigures(e, d, false);
  for (const char* key : {"summaries", "summaries_short", "kept_messages", "dropped_messages",
                          "fresh_tail_messages", "pruned", "truncated", "eviction"}) {
    out[key] = Field(d, key);
  }
  const json::value forced = Field(d, "forced");
  out["forced"] = forced.is_bool() && forced.as_bool();
  return out;
}

std::vector<std::string> SplitTypes(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string t; std::getline(in, t, ',');) {
    if (!t.empty()) out.push_back(t);
  }
  return out;
}

}  // namespace

void Api::AddInspectRoutes() {
  Services& s = services_;
  router_.Add("GET", "/v1/contexts/{context_id}", [&s](const std::shared_ptr<Call>& call) {
    FindPastContext(s.deps, call->params[0], [call](Result<PastContext> past) {
      if (!past.ok()) return call->Fail(past.status());
      call->Reply(200, PastContextToJson(*past));
    });
  });

  router_.Add("GET", "/v1/sessions/{session_id}/contexts", [&s](const std::shared_ptr<Call>& call) {
    const std::string id = call->params[0];
    int64_t limit = 50, before = 0;
    Status st = QueryInt(call->target, "limit", 1, 1000, limit);
    if (st.ok()) st = QueryInt(call->target, "before", 0, int64_t{1} << 62, before);
    if (!st.ok()) return call->Fail(st, id);
    ListPastContexts(s.deps, id, before, static_cast<int>(limit),
                     [call, id, limit](Result<std::vector<AuditEvent>> events) {
                       if (!events.ok()) return call->Fail(events.status(), id);
                       json::array contexts;
                       for (const AuditEvent& e : *events) contexts.push_back(ListItem(e));
                       json::value next = nullptr;
                       if (static_cast<int64_t>(events->size()) == limit && !events->empty()) {
                         next = events->back().seq;
                       }
                       call->Reply(200, json::object{{"session_id", id},
                                                     {"contexts", std::move(contexts)},
                                                     {"next_before", std::move(next)}});
                     });
  });

  // Server-sent events: one "data: <event line>" per audit event committed from now on.
  router_.Add("GET", "/v1/audit/stream", [&s](const std::shared_ptr<Call>& call) {
    const std::vector<std::string> types = SplitTypes(QueryString(call->target, "types"));
    std::shared_ptr<BodyStream> stream = call->exchange().Stream(200, "text/event-stream");
    stream->Write(": missyd audit stream\n\n");  // the headers and a first chunk, at once
    AuditFeed::Subscriber sub;
    sub.on_line = [stream, types](int64_t, const std::string& type, const std::string& line) {
      if (stream->closed()) return false;
      bool wanted = types.empty();
      for (const std::string& t : types) wanted = wanted || t == type;
      if (wanted) stream->Write("data: " + line + "\n\n");
      return !stream->closed();
    };
    sub.on_close = [stream] { stream->End(); };
    s.deps.audit->feed().Subscribe(std::move(sub));
  });
}

}  // namespace missy::http

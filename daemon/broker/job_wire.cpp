#include "daemon/broker/job_wire.h"

#include <boost/json.hpp>
#include <utility>

#include "core/artifact_extraction.h"
#include "core/message_json.h"

namespace missy::broker {

namespace json = boost::json;

namespace {

json::value ArtifactsValue(const ArtifactTrail& trail) {
  return json::parse(ArtifactsToJson(trail));
}

// Each reader returns false (and names the field in `error`) when the value is not there
// or has another type.
struct Reader {
  const json::object& obj;
  std::string prefix;
  std::string error;

  const json::value* Find(std::string_view key, bool required) {
    const json::value* v = obj.if_contains(key);
    if (v == nullptr && required && error.empty()) error = prefix + std::string(key) + ": missing";
    return v;
  }
  bool Fail(std::string_view key, std::string_view want) {
    if (error.empty()) error = prefix + std::string(key) + ": expected " + std::string(want);
    return false;
  }
  bool Str(std::string_view key, std::string& out, bool required = false) {
    const json::value* v = Find(key, required);
    if (v == nullptr) return !required;
    if (!v->is_string()) return Fail(key, "a string");
    out = std::string(v->get_string());
    return true;
  }
  bool Int(std::string_view key, int64_t& out, bool required = false) {
    const json::value* v = Find(key, required);
    if (v == nullptr) return !required;
    if (!v->is_int64()) return Fail(key, "an integer");
    out = v->get_int64();
    return true;
  }
  bool Bool(std::string_view key, bool& out) {
    const json::value* v = Find(key, false);
    if (v == nullptr) return true;
    if (!v->is_bool()) return Fail(key, "true or false");
    out = v->get_bool();
    return true;
  }
  bool Artifacts(std::string_view key, ArtifactTrail& out) {
    const json::value* v = Find(key, false);
    if (v == nullptr) return true;
    if (!v->is_object()) return Fail(key, "an object");
    Result<ArtifactTrail> trail = ArtifactsFromJson(json::serialize(*v));
    if (!trail.ok()) return Fail(key, "an artifact trail");
    out = std::move(*trail);
    return true;
  }
};

Result<json::object> ParseObject(std::string_view text, const char* what) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Status::InvalidArgument(std::string(what) + ": not JSON: " + ec.message());
  if (!v.is_object()) return Status::InvalidArgument(std::string(what) + ": not a JSON object");
  json::object& o = v.as_object();
  const json::value* version = o.if_contains("v");
  if (version == nullptr || !version->is_int64() || version->get_int64() != kJobWireVersion) {
    return Status::InvalidArgument(std::string(what) + ": unsupported version (v must be " +
                                   std::to_string(kJobWireVersion) + ")");
  }
  return std::move(o);
}

}  // namespace

std::string TaskToJson(const SummaryTask& task) {
  json::object o;
  o["v"] = kJobWireVersion;
  o["task_id"] = task.task_id;
  o["job_id"] = task.job_id;
  o["session_id"] = task.session_id;
  o["kind"] = task.condense ? "condense" : "leaf";
  if (task.condense) {
    json::array children;
    for (const ChildSummary& c : task.children) {
      children.push_back(json::object{
          {"text", c.text}, {"artifacts", ArtifactsValue(c.artifacts)}, {"tokens", c.tokens}});
    }
    o["children"] = std::move(children);
  } else {
    json::array messages;
    for (const StoredMessage& m : task.messages) {
      messages.push_back(json::object{{"seq", m.seq},
                                      {"created_at_ms", m.created_at_ms},
                                      {"tokens", m.tokens},
                                      {"flags", m.flags},
                                      {"message", MessageToJson(m.message)}});
    }
    o["messages"] = std::move(messages);
    o["prior"] = task.prior;
  }
  o["target_tokens"] = task.target_tokens;
  o["backend"] = task.backend;
  o["provider"] = task.provider;
  o["model"] = task.model;
  o["deadline_ms"] = task.deadline_ms;
  return json::serialize(o);
}

Result<SummaryTask> TaskFromJson(std::string_view text) {
  Result<json::object> parsed = ParseObject(text, "job");
  if (!parsed.ok()) return parsed.status();
  Reader r{*parsed, "job.", {}};
  SummaryTask t;
  std::string kind;
  if (!r.Str("task_id", t.task_id, true) || !r.Int("job_id", t.job_id) ||
      !r.Str("session_id", t.session_id) || !r.Str("kind", kind, true) ||
      !r.Int("target_tokens", t.target_tokens, true) || !r.Str("backend", t.backend) ||
      !r.Str("provider", t.provider) || !r.Str("model", t.model) ||
      !r.Int("deadline_ms", t.deadline_ms) || !r.Str("prior", t.prior)) {
    return Status::InvalidArgument(r.error);
  }
  if (kind != "leaf" && kind != "condense") {
    return Status::InvalidArgument("job.kind: expected \"leaf\" or \"condense\", got \"" + kind +
                                   "\"");
  }
  t.condense = kind == "condense";
  const char* list = t.condense ? "children" : "messages";
  const json::value* items = parsed->if_contains(list);
  if (items == nullptr || !items->is_array() || items->get_array().empty()) {
    return Status::InvalidArgument(std::string("job.") + list + ": expected a non-empty array");
  }
  size_t i = 0;
  for (const json::value& item : items->get_array()) {
    const std::string field = std::string("job.") + list + "[" + std::to_string(i++) + "]";
    if (!item.is_object()) return Status::InvalidArgument(field + ": expected an object");
    Reader ir{item.get_object(), field + ".", {}};
    if (t.condense) {
      ChildSummary c;
      if (!ir.Str("text", c.text, true) || !ir.Artifacts("artifacts", c.artifacts) ||
          !ir.Int("tokens", c.tokens)) {
        return Status::InvalidArgument(ir.error);
      }
      t.children.push_back(std::move(c));
      continue;
    }
    StoredMessage m;
    int64_t flags = 0;
    if (!ir.Int("seq", m.seq, true) || !ir.Int("created_at_ms", m.created_at_ms) ||
        !ir.Int("tokens", m.tokens) || !ir.Int("flags", flags)) {
      return Status::InvalidArgument(ir.error);
    }
    m.flags = static_cast<uint32_t>(flags);
    const json::value* message = item.get_object().if_contains("message");
    if (message == nullptr) return Status::InvalidArgument(field + ".message: missing");
    Result<Message> msg = ParseMessage(*message, field + ".message");
    if (!msg.ok()) {
      const std::string& at = msg.status().field();
      return Status::InvalidArgument((at.empty() ? field + ".message" : at) + ": " +
                                     msg.status().message());
    }
    m.message = std::move(*msg);
    t.messages.push_back(std::move(m));
  }
  return t;
}

std::string TaskIdOf(std::string_view text) {
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return "";
  const json::value* id = v.get_object().if_contains("task_id");
  return id != nullptr && id->is_string() ? std::string(id->get_string()) : "";
}

uint64_t AdvisoryStreamSeq(std::string_view text) {
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return 0;
  const json::value* seq = v.get_object().if_contains("stream_seq");
  if (seq == nullptr) return 0;
  if (seq->is_uint64()) return seq->get_uint64();
  return seq->is_int64() && seq->get_int64() > 0 ? static_cast<uint64_t>(seq->get_int64()) : 0;
}

std::string ResultToJson(const SummaryTaskResult& result) {
  json::object o;
  o["v"] = kJobWireVersion;
  o["task_id"] = result.task_id;
  o["ok"] = result.ok;
  o["worker"] = result.worker;
  if (!result.ok) {
    o["error"] = result.error;
    return json::serialize(o);
  }
  o["text"] = result.text;
  o["artifacts"] = ArtifactsValue(result.artifacts);
  o["backend"] = result.backend;
  o["fallback"] = result.fallback;
  o["llm_requests"] = result.llm_requests;
  return json::serialize(o);
}

Result<SummaryTaskResult> ResultFromJson(std::string_view text) {
  Result<json::object> parsed = ParseObject(text, "result");
  if (!parsed.ok()) return parsed.status();
  Reader r{*parsed, "result.", {}};
  SummaryTaskResult out;
  int64_t requests = 0;
  if (!r.Str("task_id", out.task_id, true) || !r.Bool("ok", out.ok) ||
      !r.Str("worker", out.worker) || !r.Str("error", out.error) ||
      !r.Str("text", out.text, out.ok) || !r.Artifacts("artifacts", out.artifacts) ||
      !r.Str("backend", out.backend) || !r.Str("fallback", out.fallback) ||
      !r.Int("llm_requests", requests)) {
    return Status::InvalidArgument(r.error);
  }
  out.llm_requests = static_cast<int>(requests);
  return out;
}

}  // namespace missy::broker

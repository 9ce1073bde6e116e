#include "daemon/http/encode.h"

#include "core/audit_event.h"
#include "daemon/http/json_io.h"

namespace missy::http {

json::array StringsToJson(const std::vector<std::string>& v) {
  json::array out;
  for (const std::string& s : v) out.push_back(json::string(s));
  return out;
}

json::array FlagNames(uint32_t flags) {
  json::array out;
  if (flags & kFlagPruned) out.push_back("pruned");
  if (flags & kFlagOrphanResult) out.push_back("orphan_result");
  if (flags & kFlagDuplicateResult) out.push_back("duplicate_result");
  if (flags & kFlagUnansweredCall) out.push_back("unanswered_call");
  if (flags & kFlagRepairedId) out.push_back("repaired_id");
  return out;
}

json::object SessionToJson(const Session& s) {
  return json::object{
      {"id", s.id},
      {"model", s.model},
      {"system_prompt", s.system_prompt},
      {"tools", ParseStoredJson(s.tools_json, json::array{})},
      {"metadata", ParseStoredJson(s.metadata_json, json::object{})},
      {"context_window", s.context_window},
      {"strict", s.strict},
      {"created_at", FormatIsoTimestampMs(s.created_at_ms)},
      {"updated_at", FormatIsoTimestampMs(s.updated_at_ms)},
      {"message_count", s.message_count},
      {"total_tokens", s.total_tokens},
      {"last_seq", s.last_seq},
      {"summarizer", json::object{{"backend", s.summarizer_backend.empty()
                                                  ? json::value(nullptr)
                                                  : json::value(s.summarizer_backend)},
                                  {"provider", s.summarizer_provider.empty()
                                                   ? json::value(nullptr)
                                                   : json::value(s.summarizer_provider)}}},
  };
}

json::object StoredMessageToJson(const StoredMessage& m) {
  json::object o = MessageToJson(m.message);
  o["seq"] = m.seq;
  o["tokens"] = m.tokens;
  o["created_at"] = FormatIsoTimestampMs(m.created_at_ms);
  if (m.flags != kFlagNone) o["flags"] = FlagNames(m.flags);
  return o;
}

json::object SummaryToJson(const SummaryRecord& r) {
  return json::object{{"id", r.id},
                      {"session_id", r.session_id},
                      {"depth", r.depth},
                      {"content", r.content},
                      {"tokens", r.tokens},
                      {"first_seq", r.first_seq},
                      {"last_seq", r.last_seq},
                      {"child_ids", StringsToJson(r.child_ids)},
                      {"parent_id", r.parent_id},
                      {"start", FormatIsoTimestampMs(r.start_ms)},
                      {"end", FormatIsoTimestampMs(r.end_ms)},
                      {"descendant_count", r.descendant_count},
                      {"artifacts", ParseStoredJson(r.artifacts_json, json::object{})}};
}

json::object MemoryToJson(const MemoryItem& m) {
  return json::object{{"id", m.id},
                      {"text", m.text},
                      {"tags", StringsToJson(m.tags)},
                      {"session_id", m.session_id},
                      {"pinned", m.pinned},
                      {"created_at", FormatIsoTimestampMs(m.created_at_ms)}};
}

json::object LearningToJson(const LearningRecord& l) {
  return json::object{{"id", l.id},
                      {"task_type", l.task_type},
                      {"outcome", l.outcome},
                      {"lesson", l.lesson},
                      {"approach", StringsToJson(l.approach)},
                      {"session_id", l.session_id},
                      {"created_at", FormatIsoTimestampMs(l.created_at_ms)}};
}

json::object JobToJson(const Job& j) {
  return json::object{
      {"id", j.id},
      {"kind", j.kind},
      {"session_id", j.session_id},
      {"state", j.state},
      {"attempts", j.attempts},
      {"payload", ParseStoredJson(j.payload_json, json::object{})},
      {"next_run_at", FormatIsoTimestampMs(j.next_run_at_ms)},
      {"lease_until", j.lease_until_ms ? json::value(FormatIsoTimestampMs(j.lease_until_ms))
                                       : json::value(nullptr)},
      {"last_error", j.last_error},
      {"created_at", FormatIsoTimestampMs(j.created_at_ms)},
      {"updated_at", FormatIsoTimestampMs(j.updated_at_ms)}};
}

}  // namespace missy::http

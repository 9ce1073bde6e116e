#include "core/context_report_json.h"

#include <boost/json.hpp>
#include <utility>

namespace missy {

boost::json::object ContextReportToJson(const ContextReport& r) {
  namespace json = boost::json;
  json::object o;
  o["context_window"] = r.context_window;
  o["max_output_tokens"] = r.max_output_tokens;
  o["total"] = r.total;
  o["used_tokens"] = r.used_tokens;
  o["available"] = r.available;
  o["zone"] = r.zone;
  o["should_summarize"] = r.should_summarize;
  o["system"] = json::object{{"tokens", r.system_tokens},
                             {"measured", r.system_measured},
                             {"message_tokens", r.system_message_tokens}};
  o["tools"] = json::object{{"tokens", r.tool_tokens}, {"measured", r.tools_measured}};
  o["memory"] = json::object{
      {"budget", r.memory_budget}, {"tokens", r.memory_tokens}, {"items", r.memory_items}};
  o["learnings"] = json::object{
      {"budget", r.learnings_budget}, {"tokens", r.learnings_tokens}, {"items", r.learnings_items}};
  json::array inc, skip;
  for (const auto& id : r.included_summary_ids) inc.emplace_back(id);
  for (const auto& id : r.skipped_summary_ids) skip.emplace_back(id);
  o["summaries"] = json::object{{"tokens", r.summary_tokens},
                                {"included", r.summaries_included},
                                {"skipped", r.summaries_skipped},
                                {"short", r.summaries_stubbed},
                                {"short_through_seq", r.stub_through_seq},
                                {"included_ids", std::move(inc)},
                                {"skipped_ids", std::move(skip)}};
  o["history"] = json::object{{"budget", r.history_budget},
                              {"tokens", r.history_tokens},
                              {"demand_tokens", r.history_demand_tokens},
                              {"threshold_tokens", r.threshold_tokens},
                              {"uncovered_messages", r.uncovered_messages},
                              {"kept_messages", r.kept_messages},
                              {"fresh_tail_messages", r.fresh_tail_messages},
                              {"dropped_messages", r.dropped_messages},
                              {"covered_messages", r.covered_messages},
                              {"first_kept_seq", r.first_kept_seq},
                              {"first_fresh_seq", r.first_fresh_seq},
                              {"squeezed_through_seq", r.squeezed_through_seq},
                              {"eviction", r.eviction}};
  o["task"] = json::object{{"seq", r.task_seq},
                           {"pinned", r.task_pinned},
                           {"tokens", r.task_tokens},
                           {"truncated", r.task_truncated}};
  o["new_message"] =
      json::object{{"tokens", r.new_message_tokens}, {"dropped", r.new_message_dropped}};
  json::array sanitized;
  for (const SanitizedItem& s : r.sanitized) {
    sanitized.emplace_back(json::object{{"seq", s.seq},
                                        {"tool_call_id", s.tool_call_id},
                                        {"reason", s.reason},
                                        {"detail", s.detail}});
  }
  o["sanitized"] = std::move(sanitized);
  json::array truncated;
  for (const TruncatedItem& t : r.truncated) {
    truncated.emplace_back(
        json::object{{"seq", t.seq}, {"original_tokens", t.original_tokens}, {"tokens", t.tokens}});
  }
  o["truncated"] = std::move(truncated);
  json::array newly;
  for (int64_t s : r.newly_pruned_seqs) newly.emplace_back(s);
  o["pruned"] = json::object{{"messages", r.pruned_messages},
                             {"newly_pruned_seqs", std::move(newly)},
                             {"freed_tokens", r.pruned_freed_tokens}};
  o["fresh_tail"] =
      json::object{{"squeezed", r.tail_squeezed},
                   {"dropped_messages", r.tail_dropped_messages},
                   {"last_turn_truncated", r.last_turn_truncated}};
  return o;
}

}  // namespace missy

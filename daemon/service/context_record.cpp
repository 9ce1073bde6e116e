#include "daemon/service/context_record.h"

#include <algorithm>
#include <utility>

#include "core/context_rebuild.h"

namespace missy {

std::string ComposeRecord(const ContextInput& input, const std::vector<StoredMessage>& window,
                          const AssembledContext& ctx, int64_t next_seq) {
  return CompositionToJson(Compose(input, window, ctx, next_seq));
}

void AddContextRecord(AuditDetail& detail, const AssembledContext& ctx, bool forced,
                      std::string composition) {
  const ContextReport& r = ctx.report;
  // What the system side costs as ContextReport::used_tokens counts it: the message as
  // sent, or the base prompt's reserve plus the sections added to it.
  const int64_t system_side =
      r.system_measured ? r.system_message_tokens
                        : r.system_tokens + (ctx.system.empty() ? 0 : r.system_message_tokens);
  const int64_t base = std::max<int64_t>(0, system_side - r.memory_tokens - r.learnings_tokens);
  detail.Add("window", r.context_window)
      .AddJson("sections", AuditDetail()
                               .Add("system", base)
                               .Add("tools", r.tool_tokens)
                               .Add("task", r.task_tokens)
                               .Add("memory", r.memory_tokens)
                               .Add("learnings", r.learnings_tokens)
                               .Add("summaries", r.summary_tokens)
                               .Add("history", r.history_tokens)
                               .Add("new_message", r.new_message_tokens)
                               .ToJson())
      .Add("summaries_short", r.summaries_stubbed)
      .Add("fresh_tail_messages", r.fresh_tail_messages)
      .Add("pruned", r.pruned_messages)
      .Add("truncated", r.truncated.size())
      .Add("eviction", r.eviction)
      .Add("forced", forced);
  if (!composition.empty()) detail.AddJson("composition", std::move(composition));
}

}  // namespace missy

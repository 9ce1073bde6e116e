#include "core/context_checks.h"

#include <algorithm>
#include <unordered_set>

namespace missy {

std::string FindToolPairProblem(std::span<const Message> msgs) {
  size_t i = 0;
  while (i < msgs.size()) {
    const Message& m = msgs[i];
    if (m.role == Role::kTool) {
      return "tool result " + m.tool_call_id + " at " + std::to_string(i) + " answers no call";
    }
    if (m.role == Role::kAssistant && m.HasToolCalls()) {
      std::unordered_set<std::string> open;
      for (const ToolCall& c : m.tool_calls) {
        if (c.id.empty()) return "empty call id at " + std::to_string(i);
        if (!open.insert(c.id).second)
          return "call id " + c.id + " repeated at " + std::to_string(i);
      }
      size_t j = i + 1;
      for (; j < msgs.size() && msgs[j].role == Role::kTool; ++j) {
        if (open.erase(msgs[j].tool_call_id) != 1) {
          return "tool result " + msgs[j].tool_call_id + " at " + std::to_string(j) +
                 " is an orphan or a duplicate";
        }
      }
      if (!open.empty()) {
        return "call " + *open.begin() + " at " + std::to_string(i) + " has no result";
      }
      i = j;
      continue;
    }
    ++i;
  }
  return "";
}

size_t LeadingNonHistoryMessages(const AssembledContext& ctx) {
  return (ctx.system.empty() ? 0 : 1) + static_cast<size_t>(ctx.report.summaries_included);
}

PrefixComparison ComparePrefix(const AssembledContext& prev, const AssembledContext& cur) {
  PrefixComparison out;
  const size_t n = std::min(prev.messages.size(), cur.messages.size());
  while (out.common_messages < n &&
         prev.messages[out.common_messages] == cur.messages[out.common_messages]) {
    ++out.common_messages;
  }
  out.identical = out.common_messages == prev.messages.size();
  if (out.identical) return out;
  const size_t lead_prev = LeadingNonHistoryMessages(prev);
  const size_t lead_cur = LeadingNonHistoryMessages(cur);
  if (lead_prev != lead_cur || out.common_messages < lead_prev) return out;
  // Find where cur's first history message sits in prev's history part.
  if (cur.kept_seqs.empty() || prev.kept_seqs.empty()) return out;
  auto it = std::lower_bound(prev.kept_seqs.begin(), prev.kept_seqs.end(), cur.kept_seqs.front());
  if (it == prev.kept_seqs.end()) {
    out.front_evicted_only = true;  // everything old evicted: nothing left to compare
    return out;
  }
  if (*it != cur.kept_seqs.front()) return out;
  const size_t skip = static_cast<size_t>(it - prev.kept_seqs.begin());
  const size_t prev_hist = prev.kept_seqs.size() - skip;
  if (prev_hist > cur.kept_seqs.size()) return out;
  for (size_t k = 0; k < prev_hist; ++k) {
    if (prev.messages[lead_prev + skip + k] != cur.messages[lead_cur + k]) return out;
  }
  out.front_evicted_only = true;
  return out;
}

}  // namespace missy

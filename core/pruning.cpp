#include "core/pruning.h"

#include <algorithm>

namespace missy {

PruneDecision DecidePruning(std::span<const PruneEntry> entries, const PruningOptions& options) {
  PruneDecision out;
  if (!options.enabled) return out;
  int64_t user_turns = 0;
  int64_t tool_total = 0;
  std::vector<int64_t> candidates;
  for (size_t i = entries.size(); i > 0; --i) {
    const PruneEntry& e = entries[i - 1];
    if (e.role == Role::kUser) ++user_turns;
    if (user_turns < options.protect_user_turns) continue;
    if (e.role != Role::kTool || e.already_pruned) continue;
    tool_total += e.tokens;
    // A result smaller than the placeholder is never worth pruning.
    if (tool_total > options.protect_tool_tokens && e.pruned_tokens < e.tokens) {
      candidates.push_back(e.seq);
      out.candidate_freed_tokens += std::max<int64_t>(0, e.tokens - e.pruned_tokens);
    }
  }
  if (out.candidate_freed_tokens >= options.minimum_freed_tokens && !candidates.empty()) {
    std::reverse(candidates.begin(), candidates.end());
    out.seqs = std::move(candidates);
    out.freed_tokens = out.candidate_freed_tokens;
  }
  return out;
}

Message PrunedMessage(const Message& m) {
  Message p;
  p.role = m.role;
  p.content_form = ContentForm::kString;
  p.text = kPrunedPlaceholder;
  p.tool_call_id = m.tool_call_id;
  p.name = m.name;
  p.tool_calls = m.tool_calls;
  return p;
}

}  // namespace missy

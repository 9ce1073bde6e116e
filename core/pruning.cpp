#include "core/pruning.h"

#include <algorithm>

namespace missy {

void PruneWalk::Step(const PruneEntry& e) {
  if (e.role == Role::kUser) ++user_turns_;
  if (user_turns_ < options_.protect_user_turns) return;
  if (e.role != Role::kTool || e.already_pruned) return;
  tool_total_ += e.tokens;
  // A result smaller than the placeholder is never worth pruning.
  if (tool_total_ > options_.protect_tool_tokens && e.pruned_tokens < e.tokens) {
    newest_first_.push_back(e.seq);
    freed_ += std::max<int64_t>(0, e.tokens - e.pruned_tokens);
  }
}

void PruneWalk::AddOlder(std::span<const int64_t> ascending_seqs, int64_t freed_tokens) {
  bulk_ascending_.insert(bulk_ascending_.end(), ascending_seqs.begin(), ascending_seqs.end());
  freed_ += freed_tokens;
}

PruneDecision PruneWalk::Finish() {
  PruneDecision out;
  if (!options_.enabled) return out;
  out.candidate_freed_tokens = freed_;
  if (freed_ >= options_.minimum_freed_tokens &&
      !(newest_first_.empty() && bulk_ascending_.empty())) {
    out.seqs = std::move(bulk_ascending_);
    out.seqs.insert(out.seqs.end(), newest_first_.rbegin(), newest_first_.rend());
    out.freed_tokens = freed_;
  }
  return out;
}

PruneDecision DecidePruning(std::span<const PruneEntry> entries, const PruningOptions& options) {
  PruneWalk walk(options);
  if (!options.enabled) return walk.Finish();
  for (size_t i = entries.size(); i > 0; --i) walk.Step(entries[i - 1]);
  return walk.Finish();
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

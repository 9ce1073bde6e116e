// ContextOptions: the knobs of context assembly (DESIGN.md §4) that come from
// configuration rather than from the request. Plain data with its defaults in-class; the
// assembler reads it, config/ fills it from `context:` in config.yaml.
#pragma once

#include <cstdint>

namespace missy {

struct ContextOptions {
  double threshold_pct = 0.75;            // warning zone starts at this share of history budget
  int64_t message_threshold = 200;        // uncovered message count that triggers summarization
  int64_t tool_output_max_tokens = 2500;  // longer tool outputs are truncated middle-out (rule 6)
  int64_t min_tool_output_tokens = 128;   // floor when the fresh tail must be squeezed (rule 1)
  int64_t max_learnings = 5;              // at most this many learnings, as many as fit
  double eviction_slack_fraction = 0.2;   // share of the room left free when the anchor moves
  int64_t task_max_tokens = 2000;         // the pinned task's share (middle-out beyond it)
  // When a moved anchor evicts history no summary covers, the leaves the background job
  // would write are written in the same request (extractive sessions only: one commit,
  // no llm), so the context shows them.
  bool summarize_evicted = true;
  // A moved anchor cuts every kept tool output but the newest two to a quarter of
  // tool_output_max_tokens until the next move (EvictionOptions::squeeze_older_outputs).
  bool squeeze_at_move = true;
};

}  // namespace missy

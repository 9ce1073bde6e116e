#include "core/summary_plan.h"

#include <algorithm>
#include <map>

namespace missy {

std::vector<LeafChunk> PlanLeafChunks(std::span<const PlanMessage> uncovered,
                                      int64_t fresh_tail_count, const SummarizerOptions& options,
                                      bool force) {
  std::vector<LeafChunk> chunks;
  const size_t n = uncovered.size();
  // The fresh tail: the last fresh_tail_count messages, its start moved back so that no
  // group is split (a tool result never starts a cut).
  size_t end = fresh_tail_count <= 0 ? n
               : static_cast<size_t>(fresh_tail_count) >= n
                   ? 0
                   : n - static_cast<size_t>(fresh_tail_count);
  while (end > 0 && end < n && uncovered[end].role == Role::kTool) --end;
  const int64_t max_tokens = std::max<int64_t>(1, options.leaf_chunk_tokens);
  size_t begin = 0;
  while (begin < end) {
    LeafChunk c{begin, begin, 0};
    // Whole groups while they fit; a group larger than a chunk forms a chunk of its own.
    while (c.end < end) {
      size_t group_end = c.end + 1;
      while (group_end < end && uncovered[group_end].role == Role::kTool) ++group_end;
      int64_t group_tokens = 0;
      for (size_t i = c.end; i < group_end; ++i) group_tokens += uncovered[i].tokens;
      if (c.end > c.begin && c.tokens + group_tokens > max_tokens) break;
      c.tokens += group_tokens;
      c.end = group_end;
    }
    chunks.push_back(c);
    begin = c.end;
  }
  if (!force && !chunks.empty() && chunks.back().tokens * 2 < max_tokens) chunks.pop_back();
  return chunks;
}

std::vector<std::string> PlanCondensation(std::span<const PlanSummary> uncondensed,
                                          const SummarizerOptions& options, int64_t room_tokens) {
  if (room_tokens > 0) {
    int64_t total = 0;
    for (const PlanSummary& s : uncondensed) total += s.tokens;
    if (total <= room_tokens) return {};
  }
  const size_t fanout = static_cast<size_t>(std::max<int64_t>(2, options.condensed_fanout));
  std::map<int, std::vector<const PlanSummary*>> by_depth;
  for (const PlanSummary& s : uncondensed) by_depth[s.depth].push_back(&s);
  for (auto& [depth, list] : by_depth) {
    if (list.size() < fanout) continue;
    std::stable_sort(list.begin(), list.end(), [](const PlanSummary* a, const PlanSummary* b) {
      return a->first_seq < b->first_seq;
    });
    std::vector<std::string> ids;
    for (size_t i = 0; i < fanout; ++i) ids.push_back(list[i]->id);
    return ids;
  }
  return {};
}

}  // namespace missy

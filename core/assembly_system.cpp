// The assembler's enriched system prompt (core/assembly_state.h): the base prompt,
// "## Relevant Memory" and "## Past Learnings", within their budgets (rule 4).
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "core/assembly_state.h"
#include "core/system_sections.h"
#include "core/truncation.h"

namespace missy::assembly {
namespace {

// What the system message costs with these sections (0: no system message).
int64_t SystemCost(const AssemblyState& s, const std::string& memory,
                   const std::string& learnings) {
  const std::string joined = JoinSystemSections(s.in.system_prompt, memory, learnings);
  return joined.empty() ? 0 : s.counter.CountMessage(Message::System(joined));
}

// Longest UTF-8 prefix of `text` for which fits(prefix) holds (fits must be monotone).
template <typename Fits>
size_t LongestFittingPrefix(std::string_view text, const Fits& fits) {
  size_t lo = 0, hi = text.size();
  while (lo < hi) {
    size_t mid = Utf8BoundaryAtOrBefore(text, lo + (hi - lo + 1) / 2);
    if (mid <= lo) {
      mid = Utf8BoundaryAtOrAfter(text, lo + 1);
      if (mid > hi) break;
    }
    if (fits(text.substr(0, mid))) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return Utf8BoundaryAtOrBefore(text, lo);
}

// The memory section within report.memory_budget: hits in order, the first that does not
// fit truncated to what is left, then none; empty when no hit fits.
std::string MemorySection(AssemblyState& s) {
  ContextReport& r = s.ctx.report;
  if (s.in.memory.empty() || r.memory_budget <= 0) return "";
  std::string section(kMemoryHeading);
  auto cost_of = [&](const std::string& m) { return SystemCost(s, m, "") - s.base_system_cost; };
  if (cost_of(section) < r.memory_budget) {
    for (const MemoryHit& hit : s.in.memory) {
      std::string candidate = section + "\n- " + hit.text;
      if (cost_of(candidate) <= r.memory_budget) {
        section = std::move(candidate);
        ++r.memory_items;
        continue;
      }
      // Truncate this hit to what is left, then stop.
      size_t keep = LongestFittingPrefix(hit.text, [&](std::string_view prefix) {
        return cost_of(section + "\n- " + std::string(prefix) + "…") <= r.memory_budget;
      });
      if (keep > 0) {
        section += "\n- " + hit.text.substr(0, keep) + "…";
        ++r.memory_items;
      }
      break;
    }
  }
  if (r.memory_items == 0) return "";
  r.memory_tokens = cost_of(section);
  return section;
}

// The learnings section within report.learnings_budget: at most max_learnings, newest
// first, skipping one that does not fit (as many as fit); empty when none fits.
std::string LearningsSection(AssemblyState& s, const std::string& memory_section) {
  ContextReport& r = s.ctx.report;
  if (s.in.learnings.empty() || r.learnings_budget <= 0) return "";
  const int64_t cost_with_memory = SystemCost(s, memory_section, "");
  std::string section(kLearningsHeading);
  auto cost_of = [&](const std::string& l) {
    return SystemCost(s, memory_section, l) - cost_with_memory;
  };
  for (const Learning& l : s.in.learnings) {
    if (r.learnings_items >= s.in.max_learnings) break;
    std::string candidate = section + std::string(kSectionItem) + LearningLine(l);
    if (cost_of(candidate) <= r.learnings_budget) {
      section = std::move(candidate);
      ++r.learnings_items;
    }  // else skip this one and try the next: as many as fit
  }
  if (r.learnings_items == 0) return "";
  r.learnings_tokens = cost_of(section);
  return section;
}

}  // namespace

void AddMemoryAndLearnings(AssemblyState& s) {
  const TokenBudget& b = s.in.budget;
  ContextReport& r = s.ctx.report;
  // Capped by their fractions and by what the tail and the task leave.
  s.pin_task = s.in.task && !TaskInTail(s);
  const int64_t room_after_tail =
      std::max<int64_t>(0, r.available - s.tail - (s.pin_task ? PinnedTaskCost(s) : 0));
  r.memory_budget = std::min(b.MemoryBudget(r.available), room_after_tail);
  const std::string memory_section = MemorySection(s);
  r.learnings_budget = std::min(b.LearningsBudget(r.available), room_after_tail - r.memory_tokens);
  const std::string learnings_section = LearningsSection(s, memory_section);
  s.ctx.system = JoinSystemSections(s.in.system_prompt, memory_section, learnings_section);
  r.system_message_tokens =
      s.ctx.system.empty() ? 0 : s.counter.CountMessage(Message::System(s.ctx.system));
  // What the system side costs: measured message, or the reserve plus our sections.
  s.system_side = r.system_measured
                      ? r.system_message_tokens
                      : r.system_tokens + (s.ctx.system.empty() ? 0 : r.system_message_tokens);
  r.history_budget = b.total - r.tool_tokens - s.system_side;
  s.remaining = r.history_budget - s.tail;
}

}  // namespace missy::assembly

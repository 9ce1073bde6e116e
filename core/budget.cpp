#include "core/budget.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace missy {

namespace {

// floor(value * fraction), robust to binary fractions: 26000 * 0.15 is 3899.9999...
int64_t Share(int64_t value, double fraction) {
  return static_cast<int64_t>(std::floor(static_cast<double>(value) * fraction + 1e-6));
}

Status CheckFraction(double f, const char* field) {
  if (!(f >= 0.0 && f <= 1.0)) {  // also rejects NaN
    return Status::InvalidArgument("must be between 0 and 1, got " + std::to_string(f), field);
  }
  return Status::Ok();
}

}  // namespace

Status TokenBudget::Validate() const {
  if (total < 0) {
    return Status::InvalidArgument("must not be negative, got " + std::to_string(total), "total");
  }
  if (system_reserve < 0) {
    return Status::InvalidArgument("must not be negative", "system_reserve");
  }
  if (tool_definitions_reserve < 0) {
    return Status::InvalidArgument("must not be negative", "tool_definitions_reserve");
  }
  MISSY_RETURN_IF_ERROR(CheckFraction(memory_fraction, "memory_fraction"));
  MISSY_RETURN_IF_ERROR(CheckFraction(learnings_fraction, "learnings_fraction"));
  if (memory_fraction + learnings_fraction > 1.0 + 1e-9) {
    return Status::InvalidArgument("memory_fraction + learnings_fraction must not exceed 1",
                                   "learnings_fraction");
  }
  if (fresh_tail_count < 0) {
    return Status::InvalidArgument("must not be negative", "fresh_tail_count");
  }
  if (system_reserve + tool_definitions_reserve > total) {
    return Status::InvalidArgument("system_reserve + tool_definitions_reserve (" +
                                       std::to_string(system_reserve + tool_definitions_reserve) +
                                       ") exceed total (" + std::to_string(total) + ")",
                                   "system_reserve");
  }
  return Status::Ok();
}

int64_t TokenBudget::Available(int64_t system_tokens, int64_t tool_tokens) const {
  const int64_t system = system_tokens >= 0 ? system_tokens : system_reserve;
  const int64_t tools = tool_tokens >= 0 ? tool_tokens : tool_definitions_reserve;
  return std::max<int64_t>(0, total - system - tools);
}

int64_t TokenBudget::MemoryBudget(int64_t available) const {
  return Share(available, memory_fraction);
}

int64_t TokenBudget::LearningsBudget(int64_t available) const {
  return Share(available, learnings_fraction);
}

int64_t TokenBudget::HistoryBudget(int64_t available) const {
  return available - MemoryBudget(available) - LearningsBudget(available);
}

}  // namespace missy

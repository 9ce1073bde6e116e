// TokenBudget: Missy's budget split (DESIGN.md §4, §9). Validate() rejects
// total < 0, fractions outside [0,1], fresh_tail_count < 0 and reserves > total.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace missy {

struct TokenBudget {
  int64_t total = 30000;                    // tokens the assembled context may use
  int64_t system_reserve = 2000;            // assumed system prompt size when unknown
  int64_t tool_definitions_reserve = 2000;  // assumed tool schema size when unknown
  double memory_fraction = 0.15;            // share of `available` for ## Relevant Memory
  double learnings_fraction = 0.05;         // share of `available` for ## Past Learnings
  int64_t fresh_tail_count = 16;            // newest messages always kept

  Status Validate() const;

  // total - system - tools, where a measured size replaces its reserve (>= 0 each).
  int64_t Available(int64_t system_tokens = -1, int64_t tool_tokens = -1) const;
  int64_t MemoryBudget(int64_t available) const;     // floor(available * memory_fraction)
  int64_t LearningsBudget(int64_t available) const;  // floor(available * learnings_fraction)
  // What history gets when memory and learnings use their full shares.
  int64_t HistoryBudget(int64_t available) const;
};

}  // namespace missy

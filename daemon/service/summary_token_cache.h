// SummaryTokenCache: what each summary's context message costs (core/assembler.h: its
// SummaryHeader line and its text), per token counter. A summary does not change once
// written, so the contexts of a session count each of its summaries once instead of on
// every request (with dozens of summaries, counting them was a tenth of a context's CPU).
// Bounded: at most kMaxEntries counts, forgotten all at once past that. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/context_types.h"
#include "core/token_counter.h"

namespace missy {

class SummaryTokenCache {
 public:
  static constexpr size_t kMaxEntries = 16384;

  // Sets each view's message_tokens and stub_tokens (its short form, core/summary_stub.h),
  // counting with `counter` those not known yet.
  void Fill(std::vector<SummaryView>& views, const MessageTokenCounter& counter);

  size_t size() const;

 private:
  mutable std::mutex mu_;
  struct Counts {
    int64_t message = 0;
    int64_t stub = 0;
  };
  std::unordered_map<std::string, Counts> counts_;  // Key() -> the messages' tokens
};

}  // namespace missy

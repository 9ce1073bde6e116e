// The context assembler (DESIGN.md §4): given a session's stored history and what the
// daemon found for it (summaries, memory hits, learnings), builds the message list to
// send to the provider and a budget report. Pure: no I/O, no clock; same input, same
// output. The result never exceeds the budget; tool-call groups are never split.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "core/budget.h"
#include "core/message.h"
#include "core/status.h"
#include "core/token_counter.h"

namespace missy {

struct SummaryView {
  std::string id;
  int depth = 0;
  int64_t first_seq = 0;  // covered message range (inclusive)
  int64_t last_seq = 0;
  int64_t message_count = 0;  // descendant messages
  int64_t start_ms = 0;       // time range covered
  int64_t end_ms = 0;
  std::string text;
  int64_t tokens = 0;
};

struct MemoryHit {
  std::string source;  // "memory", "summary", "message"
  std::string id;
  std::string text;
  double score = 0;  // higher is more relevant
};

struct Learning {
  std::string id;
  std::string task_type;
  std::string outcome;
  std::string lesson;
  int64_t created_at_ms = 0;
};

struct ContextInput {
  TokenBudget budget;          // budget.total already reflects the model window
  int64_t context_window = 0;  // the model's window (report only; 0 = unknown)
  int64_t max_output_tokens = 0;
  std::string system_prompt;   // base system prompt (empty = none known)
  int64_t tool_tokens = -1;    // measured tool definitions; -1 = unknown (reserve applies)
  std::vector<StoredMessage> history;  // whole session history, seq order
  std::vector<SummaryView> summaries;  // oldest first
  std::vector<MemoryHit> memory;       // most relevant first
  std::vector<Learning> learnings;     // newest first
  std::optional<Message> new_message;  // appended last (not stored by the assembler)
  double threshold_pct = 0.75;         // warning zone starts at this share of history budget
  int64_t message_threshold = 200;     // summarization trigger by count
  int64_t tool_output_max_tokens = 2500;
};

struct ContextReport {
  int64_t context_window = 0;
  int64_t max_output_tokens = 0;
  int64_t total = 0;       // budget.total
  int64_t system_tokens = 0;
  bool system_measured = false;
  int64_t tool_tokens = 0;
  bool tools_measured = false;
  int64_t available = 0;
  int64_t memory_budget = 0, memory_tokens = 0, memory_items = 0;
  int64_t learnings_budget = 0, learnings_tokens = 0, learnings_items = 0;
  int64_t history_budget = 0, history_tokens = 0;
  int64_t summary_tokens = 0, summaries_included = 0, summaries_skipped = 0;
  int64_t new_message_tokens = 0;
  int64_t used_tokens = 0;  // everything in the assembled context
  int64_t kept_messages = 0, dropped_messages = 0, fresh_tail_messages = 0;
  int64_t first_kept_seq = 0;  // 0 when no stored message is kept
  std::string zone;           // "safe" | "warning" | "overflow"
  bool should_summarize = false;
};

struct AssembledContext {
  std::vector<Message> messages;  // system (enriched) first when there is one
  std::string system;             // the enriched system prompt alone (Anthropic-style)
  ContextReport report;
  std::vector<int64_t> kept_seqs;  // stored messages included, in order
};

Result<AssembledContext> AssembleContext(const ContextInput& input, const MessageTokenCounter& counter);

boost::json::object ContextReportToJson(const ContextReport& report);

}  // namespace missy

// What the daemon finds for a context besides the session's own messages: summaries,
// memory search hits and past learnings, as the assembler consumes them. Plain data,
// shared by core/ (the assembler) and storage/ (which produces them).
#pragma once

#include <cstdint>
#include <string>

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
  int64_t tokens = 0;  // informative: the rendered summary message is counted here
  // The rendered summary message (header + text) as the assembly's counter counts it,
  // when the caller knows it (a cache); 0: the assembler counts it.
  int64_t message_tokens = 0;
  // Its short form's message (core/summary_stub.h) likewise; 0: the assembler counts it.
  int64_t stub_tokens = 0;
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

}  // namespace missy

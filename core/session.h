// A session: one agent conversation. Plain data shared by storage and the daemon.
#pragma once

#include <cstdint>
#include <string>

namespace missy {

struct Session {
  std::string id;
  std::string model;                 // may be empty: the budget defaults then apply
  std::string system_prompt;         // may be empty
  std::string tools_json = "[]";     // tool definitions (JSON array text, as the agent sent it)
  std::string metadata_json = "{}";  // free-form JSON object text
  int64_t context_window = 0;        // 0: from the model table / budget default
  bool strict = false;               // reject (422) instead of flagging invalid appends
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
  // Maintained by storage on append.
  int64_t message_count = 0;
  int64_t total_tokens = 0;
  int64_t last_seq = 0;
  // The first kept seq of the session's last context (0: none yet), persisted so that a
  // restarted daemon rebuilds the same prompt-cache-stable prefix (EvictionOptions).
  int64_t anchor_seq = 0;
  // The summaries a context at that anchor shows: those inserted up to this ordinal
  // (SummaryRecord::ordinal) and not condensed by then. New summaries wait for the next
  // eviction, so that they change the prefix only when eviction changes it anyway.
  int64_t anchor_summaries = 0;
  // Those of them sent short there: last_seq <= this (0: none; ContextInput).
  int64_t anchor_stub_through = 0;
  // The tool outputs sent squeezed there: seq <= this (0: none; ContextInput).
  int64_t anchor_squeezed_through = 0;
  // The memory hits a context at that anchor shows, as the service encodes them (a JSON
  // array; "": none chosen yet, the next context searches).
  std::string anchor_memory;
  // Which summarizer this session's history gets ("": context.summarizer's), and the
  // providers.<name> its llm backend calls ("": context.summarizer.provider's).
  std::string summarizer_backend;
  std::string summarizer_provider;
};

}  // namespace missy

// Token counting seam. A TokenCounter counts plain text; MessageTokenCounter applies
// the per-message rules (content, tool-call ids/names/arguments, tool_call_id, name,
// per-message overhead, images at a fixed cost). Implementations are immutable after
// construction and safe to call from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/message.h"

namespace missy {

class TokenCounter {
 public:
  virtual ~TokenCounter() = default;
  // Tokens of `text` encoded as plain text (special-token strings are ordinary text).
  virtual int64_t Count(std::string_view text) const = 0;
  // "o200k_base", "cl100k_base", "heuristic".
  virtual std::string Name() const = 0;
};

// Conservative estimate for text without an exact tokenizer: it must not undercount
// JSON, logs or CJK badly. Formula documented in token_counter.cpp.
class HeuristicTokenCounter final : public TokenCounter {
 public:
  int64_t Count(std::string_view text) const override;
  std::string Name() const override { return "heuristic"; }
};

struct MessageCountingOptions {
  int64_t per_message_overhead = 4;    // role and framing tokens per message (OpenAI: 3-4)
  int64_t per_tool_call_overhead = 8;  // id, type, function wrapper per tool call
  int64_t image_tokens = 765;          // an image part whose size cannot be read (image_tokens.h)
  double factor = 1.0;                 // per-model multiplier (models without an offline tokenizer)
};

class MessageTokenCounter {
 public:
  MessageTokenCounter(std::shared_ptr<const TokenCounter> counter,
                      MessageCountingOptions options = {});
  int64_t CountMessage(const Message& m) const;
  int64_t CountText(std::string_view text) const;  // factor applied
  // A bound CountText(text) never exceeds, without counting: no counter makes more than
  // one token of a byte (a BPE token is at least one byte; the heuristic's ceiling adds
  // at most one to its sum), so bytes + 1, factor applied.
  int64_t AtMost(std::string_view text) const;
  // Tool definitions (the JSON schema array as sent by the agent).
  int64_t CountToolDefinitions(std::string_view tools_json) const;
  // What the message's image parts cost (0 for a message of text alone).
  int64_t CountImages(const Message& m) const;
  const TokenCounter& counter() const { return *counter_; }
  const MessageCountingOptions& options() const { return options_; }

 private:
  std::shared_ptr<const TokenCounter> counter_;
  MessageCountingOptions options_;
};

}  // namespace missy

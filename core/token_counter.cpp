#include "core/token_counter.h"

#include <algorithm>
#include <cmath>

#include "core/image_tokens.h"

namespace missy {

MessageTokenCounter::MessageTokenCounter(std::shared_ptr<const TokenCounter> counter,
                                         MessageCountingOptions options)
    : counter_(std::move(counter)), options_(options) {}

int64_t MessageTokenCounter::CountText(std::string_view text) const {
  if (text.empty()) return 0;
  const int64_t raw = counter_->Count(text);
  if (options_.factor == 1.0) return raw;
  return static_cast<int64_t>(std::ceil(static_cast<double>(raw) * options_.factor));
}

int64_t MessageTokenCounter::AtMost(std::string_view text) const {
  if (text.empty()) return 0;
  const double bound = static_cast<double>(text.size() + 1) * std::max(options_.factor, 1.0);
  return static_cast<int64_t>(std::ceil(bound));
}

// Per message: overhead + content text + images by their size (image_tokens.h) + for each tool call
// (overhead + id + name + arguments) + tool_call_id + name.
int64_t MessageTokenCounter::CountMessage(const Message& m) const {
  int64_t tokens = options_.per_message_overhead;
  if (m.content_form == ContentForm::kString) {
    tokens += CountText(m.text);
  } else if (m.content_form == ContentForm::kParts) {
    for (const ContentPart& p : m.parts) {
      tokens += p.kind == ContentPart::Kind::kText ? CountText(p.text)
                                                   : ImagePartTokens(p, options_.image_tokens);
    }
  }
  for (const ToolCall& c : m.tool_calls) {
    tokens += options_.per_tool_call_overhead + CountText(c.id) + CountText(c.name) +
              CountText(c.arguments);
  }
  tokens += CountText(m.tool_call_id);
  tokens += CountText(m.name);
  return tokens;
}

int64_t MessageTokenCounter::CountImages(const Message& m) const {
  int64_t tokens = 0;
  for (const ContentPart& p : m.parts) {
    if (p.kind == ContentPart::Kind::kImage) tokens += ImagePartTokens(p, options_.image_tokens);
  }
  return tokens;
}

int64_t MessageTokenCounter::CountToolDefinitions(std::string_view tools_json) const {
  if (tools_json.empty() || tools_json == "[]" || tools_json == "null") return 0;
  return CountText(tools_json);
}

}  // namespace missy

// Helpers shared by the context-engine tests: a compact notation for conversations
// ("u aTC(A,B) t(A) t(B) a"), an exact byte counter, and stored histories.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/assembler.h"
#include "core/message.h"
#include "core/token_counter.h"

namespace missy::testing {

// One token per byte: additive, so expected sizes can be computed by hand.
class ByteCounter final : public TokenCounter {
 public:
  int64_t Count(std::string_view text) const override { return static_cast<int64_t>(text.size()); }
  std::string Name() const override { return "bytes"; }
};

inline MessageTokenCounter BytesCounter() {
  return MessageTokenCounter(std::make_shared<ByteCounter>());
}

inline std::vector<std::string> SplitIds(const std::string& inside) {
  std::vector<std::string> ids;
  std::string cur;
  for (char c : inside) {
    if (c == ',') {
      ids.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  ids.push_back(cur);
  return ids;
}

// Tokens: u, a, s (system), aTC(A,B) (assistant calls; "aTC()" = one call with an empty id),
// t(A) (tool result for A). Content is the token itself plus an index, so messages differ.
inline std::vector<Message> Conv(const std::string& notation) {
  std::vector<Message> out;
  std::istringstream in(notation);
  std::string tok;
  while (in >> tok) {
    std::string text = tok + "#" + std::to_string(out.size());
    if (tok == "u") {
      out.push_back(Message::User(text));
    } else if (tok == "a") {
      out.push_back(Message::Assistant(text));
    } else if (tok == "s") {
      out.push_back(Message::System(text));
    } else if (tok.rfind("aTC(", 0) == 0) {
      std::vector<ToolCall> calls;
      for (const std::string& id : SplitIds(tok.substr(4, tok.size() - 5))) {
        calls.push_back({id, "function", "bash", "{}"});
      }
      out.push_back(Message::AssistantCalls(std::move(calls)));
    } else if (tok.rfind("t(", 0) == 0) {
      out.push_back(Message::ToolResult(tok.substr(2, tok.size() - 3), text));
    } else {
      ADD_FAILURE() << "bad notation token " << tok;
    }
  }
  return out;
}

// The inverse, for readable failure messages and expectations.
inline std::string Shape(const std::vector<Message>& messages) {
  std::string out;
  for (const Message& m : messages) {
    if (!out.empty()) out += " ";
    switch (m.role) {
      case Role::kUser:
        out += "u";
        break;
      case Role::kSystem:
        out += "s";
        break;
      case Role::kTool:
        out += "t(" + m.tool_call_id + ")";
        break;
      case Role::kAssistant:
        if (m.HasToolCalls()) {
          out += "aTC(";
          for (size_t i = 0; i < m.tool_calls.size(); ++i) {
            out += (i ? "," : "") + m.tool_calls[i].id;
          }
          out += ")";
        } else {
          out += "a";
        }
        break;
    }
  }
  return out;
}

// A budget where nothing but history matters: measured empty tools, no reserve games.
inline ContextInput BaseInput(int64_t total, int64_t tail_count = 4) {
  ContextInput in;
  in.budget.total = total;
  in.budget.system_reserve = 0;
  in.budget.tool_definitions_reserve = 0;
  in.budget.memory_fraction = 0;
  in.budget.learnings_fraction = 0;
  in.budget.fresh_tail_count = tail_count;
  in.tool_tokens = 0;
  in.pruning.enabled = false;
  return in;
}

inline std::vector<StoredMessage> Store(const std::vector<Message>& messages,
                                        const MessageTokenCounter& counter, int64_t first_seq = 1) {
  std::vector<StoredMessage> out;
  for (const Message& m : messages) {
    StoredMessage s;
    s.seq = first_seq + static_cast<int64_t>(out.size());
    s.created_at_ms = 1'700'000'000'000 + s.seq * 1000;
    s.tokens = counter.CountMessage(m);
    s.message = m;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace missy::testing

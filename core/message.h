// The message model: OpenAI chat shape (DESIGN.md §2), which every agent SDK produces.
// Parsing validates and names the offending field ("messages[3].tool_calls[0].id");
// serialising reproduces the same JSON shape (string content stays a string, parts
// stay parts, null content stays null).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace missy {

enum class Role { kSystem, kUser, kAssistant, kTool };

std::string_view RoleName(Role role);
std::optional<Role> ParseRole(std::string_view name);

struct ToolCall {
  std::string id;
  std::string type = "function";
  std::string name;       // function.name
  std::string arguments;  // function.arguments (a JSON document as text, per OpenAI)
  bool operator==(const ToolCall&) const = default;
};

struct ContentPart {
  enum class Kind { kText, kImage };
  Kind kind = Kind::kText;
  std::string text;       // kText
  std::string image_url;  // kImage: image_url.url
  std::string detail;     // kImage: image_url.detail ("auto", "low", "high" or empty)
  bool operator==(const ContentPart&) const = default;
};

enum class ContentForm { kNull, kString, kParts };

struct Message {
  Role role = Role::kUser;
  ContentForm content_form = ContentForm::kString;
  std::string text;                  // content when content_form == kString
  std::vector<ContentPart> parts;    // content when content_form == kParts
  std::vector<ToolCall> tool_calls;  // assistant only
  std::string tool_call_id;          // tool only (may arrive empty: see kFlagRepairedId)
  std::string name;                  // optional (tool name, or participant name)

  // All text of the content: the string, or the text parts joined by "\n".
  std::string PlainText() const;
  size_t ImageCount() const;
  bool HasToolCalls() const { return !tool_calls.empty(); }

  static Message User(std::string text);
  static Message Assistant(std::string text);
  static Message System(std::string text);
  static Message AssistantCalls(std::vector<ToolCall> calls, std::string text = {});
  static Message ToolResult(std::string call_id, std::string text, std::string name = {});

  bool operator==(const Message&) const = default;
};

// ParseMessage and MessageToJson: core/message_json.h.

// Content and tool calls as JSON text, the form storage keeps them in.
std::string ContentToJsonText(const Message& m);                      // "\"hi\"", "[...]" or "null"
Status ContentFromJsonText(std::string_view json, Message& m);        // inverse
std::string ToolCallsToJsonText(const std::vector<ToolCall>& calls);  // "[]" when none
Result<std::vector<ToolCall>> ToolCallsFromJsonText(std::string_view json);

// Flags stored with a message (bit set).
enum MessageFlags : uint32_t {
  kFlagNone = 0,
  kFlagPruned = 1u << 0,           // old tool output replaced in contexts (sticky)
  kFlagOrphanResult = 1u << 1,     // tool result answering no open call
  kFlagDuplicateResult = 1u << 2,  // second result for the same call
  kFlagUnansweredCall = 1u << 3,   // assistant call left unanswered before a new message
  kFlagPinned = 1u << 4,           // the agent marked it as the session's task ("pin": true)
  kFlagRepairedId = 1u << 5,       // the agent sent an empty call id: missy generated it (call)
                                   // or paired the result by position; with kFlagOrphanResult:
                                   // the result could not be paired (stored with an empty id)
};

// A message as stored: its position and cached token count.
struct StoredMessage {
  int64_t seq = 0;            // per-session, monotonically increasing from 1
  int64_t created_at_ms = 0;  // unix epoch milliseconds
  int64_t tokens = 0;         // counted once, on append
  uint32_t flags = kFlagNone;
  Message message;
  // Its extract (core/message_extract.h), made on append; loaded only for summarizing.
  // Empty when not loaded or never made: the summarizer then extracts the message itself.
  std::string extract;
};

}  // namespace missy

// What the proxy's codecs share: an agent's request as the context engine reads it
// (engine messages) beside its native JSON, what the proxy sends instead of the agent's
// list, and the assistant message rebuilt from an answer. Each API's shape lives in its
// own codec (anthropic_wire.h, chat_wire.h); nothing here knows one API from another
// except Api itself. Pure: no I/O.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/message.h"
#include "core/status.h"

namespace missy::proxy {

enum class Api { kAnthropic, kChat, kResponses };
std::string_view ApiName(Api api);  // "anthropic" | "chat" | "responses"

// One message of the agent's list: as it came, and the engine messages it stands for
// (at least one: an Anthropic user message of tool results and text is several).
struct NativeMessage {
  boost::json::value native;
  std::vector<Message> engine;
  std::string hash;  // CanonicalHash(engine): what prefix matching compares
  int cache_markers = 0;  // "cache_control" markers in `native`, counted once at the parse
};

// Equal for two messages that the context engine cannot tell apart: the agent may move
// its cache markers, add fields or send a text as a string or as one text part between
// turns without breaking the match. 32 hex digits; fast, not cryptographic.
std::string CanonicalHash(const std::vector<Message>& engine);

struct ParsedRequest {
  Api api = Api::kAnthropic;
  // The request body as sent, except that the history's messages were moved into
  // `messages` (their places here hold empty objects; chat's leading system messages stay).
  boost::json::object body;
  std::string model;
  int64_t max_tokens = 0;  // 0: the request named none
  bool stream = false;
  std::string system_text;        // the agent's system prompt as plain text ("" = none)
  std::string tools_json = "[]";  // `tools` as JSON text, for counting
  int field_cache_markers = 0;    // "cache_control" markers in `system` and `tools`
  // The history: every message of the list except, for chat, the leading system and
  // developer ones (`leading` of them, kept in `body` and sent first as they are).
  std::vector<NativeMessage> messages;
  size_t leading = 0;
};

// One message of what the proxy sends.
struct OutItem {
  enum class Kind {
    kNative,     // request.messages[index], sent as the agent sent it
    kRewritten,  // request.messages[index] as the context engine changed it (`engine`:
                 // the kept part, pruned or truncated)
    kInjected,   // a message missyd adds: a summary, the pinned task (`engine`, one)
  };
  Kind kind = Kind::kNative;
  size_t index = 0;
  std::vector<Message> engine;
};

// Where each element of the request's list lies in the agent's body text: an unchanged
// message goes out as the agent's own bytes, not serialized again.
struct RawList {
  std::string_view text;
  const std::vector<std::pair<size_t, size_t>>* spans = nullptr;  // null: not known
  // The list's '[' and ']' in `text` (npos: not known): everything outside them, the
  // request's other members, goes out as the agent's bytes too.
  size_t open = std::string_view::npos;
  size_t close = std::string_view::npos;
  // List element `i`'s text (chat's leading system messages count), or "" when not known.
  std::string_view Element(size_t i) const {
    if (spans == nullptr || i >= spans->size()) return {};
    const auto& [begin, end] = (*spans)[i];
    return text.substr(begin, end - begin);
  }
};

struct Outgoing {
  std::vector<OutItem> items;
  RawList raw;  // the agent's body, for the kNative items (optional)
  // Put one cache breakpoint on the last injected message (the summaries: the stable
  // start of what is sent), unless the request already holds the API's four.
  bool mark_injected_for_cache = true;
};

// The assistant message an answer carried, rebuilt from the stream or the JSON body.
struct Rebuilt {
  boost::json::value native;  // as the agent will send it back next turn
  std::vector<Message> engine;
  int64_t input_tokens = 0;  // the prompt as the provider counted it (cache reads included)
  int64_t output_tokens = 0;
  std::string stop_reason;
  std::string id;  // the provider's message/response id
};

// Reads an answer's body as it arrives (the bytes relayed to the agent, unchanged).
class AnswerReader {
 public:
  virtual ~AnswerReader() = default;
  virtual void Feed(std::string_view piece) = 0;
  // The body ended. The message when the answer held a complete one (a stream that
  // reached its end event; a JSON body that parsed), else why not.
  virtual Result<Rebuilt> Finish() = 0;
  // What was rebuilt so far (a stream cut short), for the audit event.
  virtual size_t partial_chars() const = 0;
  // What names a stream's last event in its bytes (message_stop, [DONE],
  // response.completed): the relay holds the answer from there on until the request is
  // stored (a text that names it only holds the rest of the stream early). Empty for a
  // JSON body, which is held whole.
  virtual std::string_view end_marker() const { return {}; }
};

// Counts "cache_control" markers in a JSON value (the API allows four per request).
int CountCacheMarkers(const boost::json::value& v);

}  // namespace missy::proxy

#include "daemon/proxy/anthropic_wire.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>

#include "core/image_tokens.h"
#include "daemon/proxy/json_read.h"
#include "daemon/proxy/sse.h"

namespace missy::proxy {
namespace {

namespace json = boost::json;

// An image, or a document whose source is not text (a base64 PDF, a file id, a URL): the
// engine keeps it as a media part, counted at the counter's fixed cost per image, never
// as its JSON (a PDF's base64 read as text counted hundreds of thousands of tokens, and
// a cut of it sent the model half an encoding).
bool IsMedia(const json::object& block) {
  const std::string type = Str(block, "type");
  if (type == "image") return true;
  if (type != "document") return false;
  const json::value* source = block.if_contains("source");
  const std::string kind = source && source->is_object() ? Str(source->get_object(), "type") : "";
  return kind != "text" && kind != "content";
}

// The engine's stand-in for an image or a document: its marker, with an inline image's
// size, so that it is counted by Anthropic's rule (core/image_tokens.h).
ContentPart MediaPart(const json::object& block) {
  ContentPart part;
  part.kind = ContentPart::Kind::kImage;
  std::optional<ImageSize> size;
  const json::value* source = block.if_contains("source");
  if (Str(block, "type") == "image" && source && source->is_object() &&
      Str(source->get_object(), "type") == "base64") {
    const json::value* data = source->get_object().if_contains("data");
    if (data != nullptr && data->is_string()) {
      size = Base64ImageSize(StrView(*data));
    }
  }
  part.image_url = ImageMarker("anthropic:" + Str(block, "type"), size);
  return part;
}

// A tool_result as the engine reads it: its text (a string, or its blocks joined: text
// blocks' text, other blocks' JSON, as AddOtherBlock), and its images and non-text
// documents as media parts after the text.
Message ToolResultMessage(std::string id, const json::value* content) {
  std::string text;
  std::vector<ContentPart> media;
  if (content != nullptr && content->is_string()) {
    text = std::string(content->get_string());
  } else if (content != nullptr && !content->is_null() && !content->is_array()) {
    text = json::serialize(*content);
  } else if (content != nullptr && content->is_array()) {
    for (const json::value& b : content->get_array()) {
      if (!b.is_object()) continue;
      const json::object& o = b.get_object();
      if (IsMedia(o)) {
        media.push_back(MediaPart(o));
        continue;
      }
      if (!text.empty()) text.push_back('\n');
      text += Str(o, "type") == "text" ? Str(o, "text") : json::serialize(o);
    }
  }
  Message m = Message::ToolResult(std::move(id), std::move(text));
  if (!media.empty()) {
    m.content_form = ContentForm::kParts;
    m.parts.push_back({ContentPart::Kind::kText, std::move(m.text), {}, {}});
    m.text.clear();
    for (ContentPart& p : media) m.parts.push_back(std::move(p));
  }
  return m;
}

// A block the engine keeps as text: server tool calls and their results, documents of
// text, search results: their JSON (so they are counted and summarized); images and
// other documents as media parts.
void AddOtherBlock(const json::object& o, Message& m) {
  ContentPart part;
  if (IsMedia(o)) {
    part = MediaPart(o);
  } else {
    part.kind = ContentPart::Kind::kText;
    part.text = json::serialize(o);
  }
  m.parts.push_back(std::move(part));
}

Status BlocksOnly(const json::value& content, const std::string& field) {
  if (!content.is_array()) {
    return Status::InvalidArgument("content must be a string or an array of blocks", field);
  }
  const json::array& a = content.get_array();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_object() || !a[i].get_object().if_contains("type") ||
        !a[i].get_object().at("type").is_string()) {
      return Status::InvalidArgument("a content block must be an object with a string type",
                                     field + "[" + std::to_string(i) + "]");
    }
  }
  return Status::Ok();
}

Result<std::vector<Message>> UserToEngine(const json::value& content, const std::string& field) {
  std::vector<Message> out;
  if (content.is_string()) {
    out.push_back(Message::User(std::string(content.get_string())));
    return out;
  }
  MISSY_RETURN_IF_ERROR(BlocksOnly(content, field));
  Message user;
  user.role = Role::kUser;
  user.content_form = ContentForm::kParts;
  const json::array& a = content.get_array();
  for (size_t i = 0; i < a.size(); ++i) {
    const json::object& o = a[i].get_object();
    const std::string type = Str(o, "type");
    if (type == "tool_result") {
      std::string id = Str(o, "tool_use_id");
      if (id.empty()) {
        return Status::InvalidArgument("a tool_result needs its tool_use_id",
                                       field + "[" + std::to_string(i) + "].tool_use_id");
      }
      out.push_back(ToolResultMessage(std::move(id), o.if_contains("content")));
    } else if (type == "text") {
      ContentPart part;
      part.text = Str(o, "text");
      user.parts.push_back(std::move(part));
    } else {
      AddOtherBlock(o, user);
    }
  }
  if (!user.parts.empty() || out.empty()) {
    // Text only: the same message as a string content (agents send one form, then the
    // other, for the same message, as a cache marker comes and goes).
    const bool text_only =
        std::all_of(user.parts.begin(), user.parts.end(),
                    [](const ContentPart& p) { return p.kind == ContentPart::Kind::kText; });
    if (text_only)
      out.push_back(Message::User(user.PlainText()));
    else
      out.push_back(std::move(user));
  }
  return out;
}

Result<std::vector<Message>> AssistantToEngine(const json::value& content,
                                               const std::string& field) {
  Message m;
  m.role = Role::kAssistant;
  if (content.is_string()) {
    m.text = std::string(content.get_string());
    return std::vector<Message>{std::move(m)};
  }
  MISSY_RETURN_IF_ERROR(BlocksOnly(content, field));
  std::string text;
  const json::array& a = content.get_array();
  for (size_t i = 0; i < a.size(); ++i) {
    const json::object& o = a[i].get_object();
    const std::string type = Str(o, "type");
    if (type == "text") {
      if (!text.empty()) text.push_back('\n');
      text += Str(o, "text");
    } else if (type == "tool_use") {
      ToolCall call;
      call.id = Str(o, "id");
      call.name = Str(o, "name");
      if (call.id.empty() || call.name.empty()) {
        return Status::InvalidArgument("a tool_use needs an id and a name",
                                       field + "[" + std::to_string(i) + "]");
      }
      const json::value* input = o.if_contains("input");
      call.arguments = input != nullptr ? json::serialize(*input) : "{}";
      m.tool_calls.push_back(std::move(call));
    } else if (type == "thinking" || type == "redacted_thinking") {
      // Kept in the native form only: the model reads them, the engine does not need to.
    } else {
      if (!text.empty()) text.push_back('\n');
      text += json::serialize(o);
    }
  }
  m.text = std::move(text);
  m.content_form =
      m.text.empty() && !m.tool_calls.empty() ? ContentForm::kNull : ContentForm::kString;
  return std::vector<Message>{std::move(m)};
}

std::string JoinSystem(const json::value& system) {
  if (system.is_string()) return std::string(system.get_string());
  std::string out;
  if (!system.is_array()) return out;
  for (const json::value& b : system.get_array()) {
    if (!b.is_object()) continue;
    if (!out.empty()) out += "\n";
    out += Str(b.get_object(), "text");
  }
  return out;
}

json::object TextBlock(std::string text) {
  return json::object{{"type", "text"}, {"text", std::move(text)}};
}

// The block of `message` of type `type` whose `id_key` is `id` (a tool_use by its id, a
// tool_result by its tool_use_id); empty when there is none.
json::object OriginalBlock(const json::object& message, std::string_view type,
                           std::string_view id_key, const std::string& id) {
  const json::value* content = message.if_contains("content");
  if (content == nullptr || !content->is_array()) return {};
  for (const json::value& b : content->get_array()) {
    if (b.is_object() && Str(b.get_object(), "type") == type && Str(b.get_object(), id_key) == id) {
      return b.get_object();
    }
  }
  return {};
}

// What the engine kept of a message with media, as blocks: its kept text, then the
// agent's own image and document blocks of `content` (a cut keeps them: WithText).
json::array KeptWithMedia(const json::value* content, const Message& m) {
  json::array out;
  if (!m.PlainText().empty()) out.push_back(TextBlock(m.PlainText()));
  if (content == nullptr || !content->is_array()) return out;
  for (const json::value& b : content->get_array()) {
    if (b.is_object() && IsMedia(b.get_object())) out.push_back(b);
  }
  return out;
}

// A kept tool result's content: its text as a string, or, while the engine keeps its
// media (a cut leaves them; a pruned result has none), the text as a block followed by
// the agent's own image and document blocks.
json::value KeptToolResultContent(const json::object& agents_block, const Message& m) {
  if (m.ImageCount() == 0) return json::value(m.PlainText());
  return KeptWithMedia(agents_block.if_contains("content"), m);
}

// Whether `m` is the user message UserToEngine made of the blocks of `original` that are
// not tool results (one at most), as it was: then those blocks can go out as they came.
bool IsUnchangedUserPart(const NativeMessage& original, const Message& m) {
  const json::value* content = original.native.get_object().if_contains("content");
  if (m.role != Role::kUser || content == nullptr || !content->is_array()) return false;
  return std::any_of(original.engine.begin(), original.engine.end(),
                     [&](const Message& e) { return e.role == Role::kUser && e == m; });
}

// A rewritten message in the API's shape: the kept engine messages of one native one.
json::value Rewrite(const NativeMessage& original, const std::vector<Message>& engine) {
  const json::object& o = original.native.get_object();
  const std::string role = Str(o, "role");
  json::array blocks;
  if (role == "assistant") {
    // Thinking blocks stay with their signatures (the API checks them in a tool loop).
    if (const json::value* content = o.if_contains("content"); content && content->is_array()) {
      for (const json::value& b : content->get_array()) {
        std::string type = b.is_object() ? Str(b.get_object(), "type") : "";
        if (type == "thinking" || type == "redacted_thinking") blocks.push_back(b);
      }
    }
    for (const Message& m : engine) {
      if (!m.PlainText().empty()) blocks.push_back(TextBlock(m.PlainText()));
      for (const ToolCall& c : m.tool_calls) {
        json::value input;
        boost::system::error_code ec;
        input = json::parse(c.arguments, ec);
        if (ec || !input.is_object()) input = json::object{};
        // The agent's own block (its cache marker, any field of its own) with the input
        // as the engine keeps it (cut, for an oversized last turn).
        json::object block = OriginalBlock(o, "tool_use", "id", c.id);
        if (block.empty()) block = {{"type", "tool_use"}, {"id", c.id}, {"name", c.name}};
        block["input"] = std::move(input);
        blocks.push_back(std::move(block));
      }
    }
    return json::object{{"role", "assistant"}, {"content", std::move(blocks)}};
  }
  const std::string other_role = role == "system" ? "system" : "user";
  for (const Message& m : engine) {
    if (m.role == Role::kTool) {
      // The agent's own block (`is_error`: the model must still read a failed command as
      // one; its cache marker) with the content as the engine keeps it (pruned or cut).
      json::object block = OriginalBlock(o, "tool_result", "tool_use_id", m.tool_call_id);
      if (block.empty()) block = {{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}};
      block["content"] = KeptToolResultContent(block, m);
      blocks.push_back(std::move(block));
    } else if (IsUnchangedUserPart(original, m)) {
      // The agent's other blocks as it sent them (images, documents, a reminder with the
      // conversation's cache marker): the engine changed only the tool results beside.
      for (const json::value& b : o.at("content").get_array()) {
        if (Str(b.get_object(), "type") != "tool_result") blocks.push_back(b);
      }
    } else {
      // Cut: its kept text, then the agent's images and documents, which a cut keeps.
      if (m.ImageCount() == 0) {
        blocks.push_back(TextBlock(m.PlainText()));
      } else {
        for (json::value& b : KeptWithMedia(o.if_contains("content"), m)) {
          blocks.push_back(std::move(b));
        }
      }
    }
  }
  return json::object{{"role", other_role}, {"content", std::move(blocks)}};
}

// The prompt as counted: fresh input plus what was written to and read from the cache.
int64_t PromptTokens(const json::value& usage) {
  return IntAt(usage, "input_tokens") + IntAt(usage, "cache_creation_input_tokens") +
         IntAt(usage, "cache_read_input_tokens");
}

Result<Rebuilt> FromMessage(json::object message, int64_t input_tokens, int64_t output_tokens) {
  Rebuilt r;
  r.id = Str(message, "id");
  r.stop_reason = Str(message, "stop_reason");
  json::value content = message.contains("content") ? message["content"] : json::array{};
  r.native = json::object{{"role", "assistant"}, {"content", std::move(content)}};
  Result<std::vector<Message>> engine = AnthropicToEngine(r.native, "answer");
  if (!engine.ok()) return engine.status();
  r.engine = std::move(*engine);
  r.input_tokens = input_tokens;
  r.output_tokens = output_tokens;
  return r;
}

class JsonAnswer final : public JsonBodyAnswer {
 protected:
  Result<Rebuilt> FromJson(json::value v) override {
    if (!v.is_object() || Str(v.get_object(), "type") != "message") {
      return Status::InvalidArgument("the answer is not a Messages response");
    }
    const json::value* usage = Find(v, "usage");
    const int64_t in = usage ? PromptTokens(*usage) : 0;
    const int64_t out = usage ? IntAt(*usage, "output_tokens") : 0;
    return FromMessage(std::move(v.get_object()), in, out);
  }
};

class StreamAnswer final : public SseAnswer {
 public:
  Result<Rebuilt> Complete() override {
    if (!stopped_) return Status::Unavailable("the stream ended before message_stop");
    for (size_t i = 0; i < content_.size(); ++i) Flush(i);
    message_["content"] = std::move(content_);
    message_["stop_reason"] = stop_reason_;
    return FromMessage(std::move(message_), input_tokens_, output_tokens_);
  }
  size_t partial_chars() const override { return chars_; }
  std::string_view end_marker() const override { return "message_stop"; }

 private:
  void OnEvent(const SseEvent& e) override {
    if (TextDelta(e.data)) return;
    boost::system::error_code ec;
    json::value v = json::parse(e.data, ec);
    if (ec || !v.is_object()) return;
    const std::string type = Str(v.get_object(), "type");
    if (type == "message_start") {
      if (const json::value* m = Find(v, "message"); m && m->is_object()) {
        message_ = m->get_object();
        if (const json::value* u = Find(*m, "usage")) {
          input_tokens_ = PromptTokens(*u);
          output_tokens_ = IntAt(*u, "output_tokens");
        }
      }
    } else if (type == "content_block_start") {
      // A block's place: the API counts them from 0, one after the other. Any other
      // index (negative, or past the next) is not read: a negative one was a write
      // before the blocks, a huge one an allocation of that many.
      const int64_t at = IntAt(v, "index");
      if (at < 0 || at > static_cast<int64_t>(content_.size())) return;
      const size_t index = static_cast<size_t>(at);
      const json::value* block = Find(v, "content_block");
      if (block == nullptr || !block->is_object()) return;
      if (content_.size() <= index) content_.resize(index + 1);
      if (partial_json_.size() <= index) partial_json_.resize(index + 1);
      if (pending_.size() <= index) pending_.resize(index + 1);
      content_[index] = *block;
    } else if (type == "content_block_delta") {
      const size_t index = static_cast<size_t>(IntAt(v, "index"));
      const json::value* delta = Find(v, "delta");
      if (delta == nullptr || !delta->is_object() || index >= content_.size() ||
          !content_[index].is_object()) {
        return;
      }
      json::object& block = content_[index].get_object();
      const std::string kind = Str(delta->get_object(), "type");
      // Deltas gather in pending_ (appending to the JSON string would copy all of it on
      // every delta); the block gets them at its stop.
      const auto append = [&](std::string_view key, std::string_view from) {
        const json::value* add = delta->get_object().if_contains(from);
        if (add == nullptr || !add->is_string()) return;
        chars_ += add->get_string().size();
        pending_[index][std::string(key)].append(add->get_string());
      };
      if (kind == "text_delta") {
        append("text", "text");
      } else if (kind == "thinking_delta") {
        append("thinking", "thinking");
      } else if (kind == "signature_delta") {
        append("signature", "signature");
      } else if (kind == "input_json_delta") {
        std::string add = Str(delta->get_object(), "partial_json");
        chars_ += add.size();
        partial_json_[index] += add;
      } else if (kind == "citations_delta") {
        if (const json::value* c = Find(*delta, "citation")) {
          json::value& list = block["citations"];
          if (!list.is_array()) list = json::array{};
          list.get_array().push_back(*c);
        }
      }
    } else if (type == "content_block_stop") {
      const size_t index = static_cast<size_t>(IntAt(v, "index"));
      if (index >= content_.size() || !content_[index].is_object()) return;
      Flush(index);
      json::object& block = content_[index].get_object();
      if (block.contains("input") && index < partial_json_.size() &&
          !partial_json_[index].empty()) {
        json::value input = json::parse(partial_json_[index], ec);
        block["input"] = ec ? json::value(json::object{}) : input;
      }
    } else if (type == "message_delta") {
      if (const json::value* d = Find(v, "delta"); d && d->is_object()) {
        stop_reason_ = Str(d->get_object(), "stop_reason");
      }
      if (const json::value* u = Find(v, "usage")) {
        if (IntAt(*u, "output_tokens") > 0) output_tokens_ = IntAt(*u, "output_tokens");
        if (PromptTokens(*u) > 0) input_tokens_ = PromptTokens(*u);
      }
    } else if (type == "message_stop") {
      stopped_ = true;
    } else if (type == "error") {
      const json::value* err = Find(v, "error");
      error_ = err && err->is_object() ? Str(err->get_object(), "message") : "error";
      if (error_.empty()) error_ = "error";
    }
  }

  // Most of a stream is text deltas, written by the API in one shape:
  // {"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"..."}}.
  // Those are read without building a JSON value; anything else (another key order,
  // spaces, an unknown block) returns false and is parsed whole.
  bool TextDelta(std::string_view data) {
    constexpr std::string_view kHead = R"({"type":"content_block_delta","index":)";
    constexpr std::string_view kMid = R"(,"delta":{"type":"text_delta","text":")";
    constexpr std::string_view kTail = R"("}})";
    if (!data.starts_with(kHead) || !data.ends_with(kTail)) return false;
    size_t p = kHead.size();
    size_t index = 0;
    const size_t digits = p;
    while (p < data.size() && p - digits < 6 && data[p] >= '0' && data[p] <= '9') {
      index = index * 10 + static_cast<size_t>(data[p++] - '0');
    }
    if (p == digits || data.substr(p, kMid.size()) != kMid) return false;
    p += kMid.size();
    // The string's body: up to the closing quote that kTail starts with.
    const size_t end = data.size() - kTail.size();
    if (end < p || index >= content_.size() || index >= pending_.size() ||
        !content_[index].is_object()) {
      return false;
    }
    const std::string_view text = data.substr(p, end - p);
    if (text.find('"') != std::string_view::npos && text.find('\\') == std::string_view::npos) {
      return false;  // an unescaped quote: not one string
    }
    std::string& into = pending_[index]["text"];
    if (text.find('\\') == std::string_view::npos) {
      into.append(text);
      chars_ += text.size();
      return true;
    }
    // Escapes: the string alone is decoded by the JSON parser.
    boost::system::error_code ec;
    json::value v = json::parse(data.substr(p - 1, end - p + 2), ec);
    if (ec || !v.is_string()) return false;
    into.append(v.get_string());
    chars_ += v.get_string().size();
    return true;
  }

  // The deltas of block `index` not yet in it, by field ("text", "thinking", ...).
  void Flush(size_t index) {
    if (index >= pending_.size() || index >= content_.size() || !content_[index].is_object()) {
      return;
    }
    json::object& block = content_[index].get_object();
    for (auto& [key, text] : pending_[index]) block[key] = Str(block, key) + text;
    pending_[index].clear();
  }

  json::object message_;
  json::array content_;
  std::vector<std::map<std::string, std::string>> pending_;
  std::vector<std::string> partial_json_;
  std::string stop_reason_;
  int64_t input_tokens_ = 0;
  int64_t output_tokens_ = 0;
  size_t chars_ = 0;
  bool stopped_ = false;
};

}  // namespace

Result<std::vector<Message>> AnthropicToEngine(const json::value& native, std::string_view field) {
  const std::string f(field);
  if (!native.is_object()) return Status::InvalidArgument("a message must be an object", f);
  const json::object& o = native.get_object();
  const std::string role = Str(o, "role");
  const json::value* content = o.if_contains("content");
  if (content == nullptr) return Status::InvalidArgument("a message needs content", f + ".content");
  // "system" amid the messages: Claude Code sends its environment so; the engine reads
  // it as the user's text.
  if (role == "user" || role == "system") return UserToEngine(*content, f + ".content");
  if (role == "assistant") return AssistantToEngine(*content, f + ".content");
  return Status::InvalidArgument("role must be user, assistant or system", f + ".role");
}

Result<ParsedRequest> ParseAnthropicRequest(std::string_view body) {
  Result<ParsedRequest> head = ParseRequestHead(body, Api::kAnthropic);
  if (!head.ok()) return head.status();
  ParsedRequest& r = *head;
  // Not an integer (1.5, 1e30): none named; the upstream answers for the field.
  r.max_tokens = IntAt(r.body, "max_tokens");
  if (const json::value* s = r.body.if_contains("system")) r.system_text = JoinSystem(*s);
  // Counted once: a later turn whose fields are the same bytes keeps this parse's.
  for (const char* field : {"system", "tools"}) {
    // Read in place: a conditional with a temporary copied the tools' ~90 KB of JSON.
    if (const json::value* v = r.body.if_contains(field))
      r.field_cache_markers += CountCacheMarkers(*v);
  }
  json::value* messages = r.body.if_contains("messages");
  if (messages == nullptr || !messages->is_array()) {
    return Status::InvalidArgument("messages must be an array", "messages");
  }
  MISSY_RETURN_IF_ERROR(TakeNatives(messages->get_array(), 0, AnthropicToEngine, r.messages));
  return head;
}

std::string BuildAnthropicRequest(const ParsedRequest& request, const Outgoing& out) {
  const json::object& body = request.body;
  OutList messages;
  int markers = request.field_cache_markers;
  json::value* last_injected = nullptr;
  for (const OutItem& item : out.items) {
    switch (item.kind) {
      case OutItem::Kind::kNative:
        messages.Ref(request.messages[item.index].native, out.raw.Element(item.index));
        markers += request.messages[item.index].cache_markers;
        break;
      case OutItem::Kind::kRewritten:
        markers += CountCacheMarkers(
            messages.Own(Rewrite(request.messages[item.index], item.engine)));
        break;
      case OutItem::Kind::kInjected: {
        json::array blocks;
        for (const Message& m : item.engine) blocks.push_back(TextBlock(m.PlainText()));
        last_injected =
            &messages.Own(json::object{{"role", "user"}, {"content", std::move(blocks)}});
        break;
      }
    }
  }
  if (messages.empty() || Str(messages.items().front()->get_object(), "role") != "user") {
    // The API wants a user message first; the kept history starts with an answer.
    messages.Own(json::object{{"role", "user"},
                              {"content", "[earlier conversation left out by missyd to fit "
                                          "the context window; missyd keeps the originals]"}},
                 /*front=*/true);
  }
  if (out.mark_injected_for_cache && last_injected != nullptr && markers < 4) {
    json::array& blocks = last_injected->get_object()["content"].get_array();
    if (!blocks.empty()) blocks.back().get_object()["cache_control"] = {{"type", "ephemeral"}};
  }
  return WriteBody(body, "messages", messages, out.raw);
}

std::unique_ptr<AnswerReader> MakeAnthropicReader(bool stream) {
  if (stream) return std::make_unique<StreamAnswer>();
  return std::make_unique<JsonAnswer>();
}

std::string AnthropicError(std::string_view type, std::string_view message) {
  return json::serialize(json::object{
      {"type", "error"}, {"error", json::object{{"type", type}, {"message", message}}}});
}

bool IsAnthropicContextLengthError(int status, std::string_view body) {
  if (status == 413) return true;
  if (status != 400) return false;
  return body.find("prompt is too long") != std::string_view::npos ||
         body.find("exceed context limit") != std::string_view::npos ||
         body.find("context window") != std::string_view::npos;
}

}  // namespace missy::proxy

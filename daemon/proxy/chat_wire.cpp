#include "daemon/proxy/chat_wire.h"

#include <boost/json.hpp>
#include <map>

#include "core/message_json.h"
#include "daemon/proxy/json_read.h"
#include "daemon/proxy/sse.h"

namespace missy::proxy {
namespace {

namespace json = boost::json;

bool IsSystemRole(const json::value& m) {
  const json::value* role = Find(m, "role");
  return role != nullptr && role->is_string() &&
         (role->get_string() == "system" || role->get_string() == "developer");
}

// Content parts the engine reads as text: a refusal its text, a part it does not model
// its JSON (so that it is counted and hashed); a file (a base64 PDF) or an audio clip
// is media, counted as an image whose size is not known (context.image_tokens), not as
// the text of its encoding, which a cut would halve.
json::value EngineContent(const json::value& content) {
  if (!content.is_array()) return content;
  json::array parts;
  for (const json::value& p : content.get_array()) {
    const json::value* type = Find(p, "type");
    std::string t = type && type->is_string() ? std::string(type->get_string()) : "";
    if (t == "text" || t == "image_url") {
      parts.push_back(p);
    } else if (t == "refusal") {
      parts.push_back(json::object{{"type", "text"}, {"text", Str(p.get_object(), "refusal")}});
    } else if (t == "file" || t == "input_audio") {
      parts.push_back(
          json::object{{"type", "image_url"}, {"image_url", {{"url", "openai:" + t}}}});
    } else {
      parts.push_back(json::object{{"type", "text"}, {"text", json::serialize(p)}});
    }
  }
  return parts;
}

class JsonAnswer final : public JsonBodyAnswer {
 protected:
  Result<Rebuilt> FromJson(json::value v) override {
    const json::value* choices = Find(v, "choices");
    if (choices == nullptr || !choices->is_array() || choices->get_array().empty()) {
      return Status::InvalidArgument("the answer is not a chat completion");
    }
    const json::value& choice = choices->get_array()[0];
    const json::value* message = Find(choice, "message");
    if (message == nullptr || !message->is_object()) {
      return Status::InvalidArgument("the answer has no message");
    }
    Rebuilt r;
    r.native = *message;
    Result<std::vector<Message>> engine = ChatToEngine(r.native, "answer");
    if (!engine.ok()) return engine.status();
    r.engine = std::move(*engine);
    r.id = Str(v.get_object(), "id");
    r.stop_reason = choice.is_object() ? Str(choice.get_object(), "finish_reason") : "";
    if (const json::value* u = Find(v, "usage")) {
      r.input_tokens = IntAt(*u, "prompt_tokens");
      r.output_tokens = IntAt(*u, "completion_tokens");
    }
    return r;
  }
};

class StreamAnswer final : public SseAnswer {
 public:
  Result<Rebuilt> Complete() override {
    if (!done_ && finish_reason_.empty()) {
      return Status::Unavailable("the stream ended before its last chunk");
    }
    json::object message{{"role", "assistant"}};
    message["content"] = content_.empty() && !calls_.empty() ? json::value(nullptr)
                                                             : json::value(content_);
    if (!refusal_.empty()) message["refusal"] = refusal_;
    if (!calls_.empty()) {
      json::array calls;
      for (auto& [index, call] : calls_) {
        calls.push_back(json::object{
            {"id", call.id},
            {"type", "function"},
            {"function", json::object{{"name", call.name}, {"arguments", call.arguments}}}});
      }
      message["tool_calls"] = std::move(calls);
    }
    Rebuilt r;
    r.native = std::move(message);
    Result<std::vector<Message>> engine = ChatToEngine(r.native, "answer");
    if (!engine.ok()) return engine.status();
    r.engine = std::move(*engine);
    r.id = id_;
    r.stop_reason = finish_reason_;
    r.input_tokens = input_tokens_;
    r.output_tokens = output_tokens_;
    return r;
  }
  size_t partial_chars() const override { return chars_; }
  std::string_view end_marker() const override { return "[DONE]"; }

 private:
  void OnEvent(const SseEvent& e) override {
    if (e.data == "[DONE]") {
      done_ = true;
      return;
    }
    boost::system::error_code ec;
    json::value v = json::parse(e.data, ec);
    if (ec || !v.is_object()) return;
    if (const json::value* err = Find(v, "error")) {
      error_ = err->is_object() ? Str(err->get_object(), "message") : "error";
      if (error_.empty()) error_ = "error";
      return;
    }
    if (id_.empty()) id_ = Str(v.get_object(), "id");
    if (const json::value* u = Find(v, "usage"); u && u->is_object()) {
      input_tokens_ = IntAt(*u, "prompt_tokens");
      output_tokens_ = IntAt(*u, "completion_tokens");
    }
    const json::value* choices = Find(v, "choices");
    if (choices == nullptr || !choices->is_array()) return;
    for (const json::value& choice : choices->get_array()) {
      if (IntAt(choice, "index") != 0) continue;  // n > 1: the first choice is the answer
      if (const json::value* f = Find(choice, "finish_reason"); f && f->is_string()) {
        finish_reason_ = std::string(f->get_string());
      }
      const json::value* delta = Find(choice, "delta");
      if (delta == nullptr || !delta->is_object()) continue;
      const json::object& d = delta->get_object();
      std::string text = Str(d, "content");
      chars_ += text.size();
      content_ += text;
      refusal_ += Str(d, "refusal");
      const json::value* calls = d.if_contains("tool_calls");
      if (calls == nullptr || !calls->is_array()) continue;
      for (const json::value& c : calls->get_array()) {
        Call& call = calls_[IntAt(c, "index")];
        if (!c.is_object()) continue;
        if (std::string id = Str(c.get_object(), "id"); !id.empty()) call.id = id;
        if (const json::value* fn = Find(c, "function"); fn && fn->is_object()) {
          call.name += Str(fn->get_object(), "name");
          std::string args = Str(fn->get_object(), "arguments");
          chars_ += args.size();
          call.arguments += args;
        }
      }
    }
  }

  struct Call {
    std::string id, name, arguments;
  };
  std::string id_, content_, refusal_, finish_reason_;
  std::map<int64_t, Call> calls_;
  int64_t input_tokens_ = 0, output_tokens_ = 0;
  size_t chars_ = 0;
  bool done_ = false;
};

}  // namespace

Result<std::vector<Message>> ChatToEngine(const json::value& native, std::string_view field) {
  if (!native.is_object()) return Status::InvalidArgument("a message must be an object", std::string(field));
  const json::object& o = native.get_object();
  json::object reduced;
  std::string role = Str(o, "role");
  if (role == "developer") role = "system";
  reduced["role"] = role;
  if (const json::value* c = o.if_contains("content")) reduced["content"] = EngineContent(*c);
  if (role == "assistant" && Str(o, "refusal") != "" &&
      (!reduced.contains("content") || reduced["content"].is_null())) {
    reduced["content"] = Str(o, "refusal");
  }
  for (std::string_view key : {"tool_calls", "tool_call_id", "name"}) {
    if (const json::value* x = o.if_contains(key)) reduced[key] = *x;
  }
  if (role == "system") reduced["role"] = "user";  // a system message amid the history
  Result<Message> m = ParseMessage(reduced, field);
  if (!m.ok()) return m.status();
  return std::vector<Message>{std::move(*m)};
}

Result<ParsedRequest> ParseChatRequest(std::string_view body) {
  Result<ParsedRequest> head = ParseRequestHead(body, Api::kChat);
  if (!head.ok()) return head.status();
  ParsedRequest& r = *head;
  for (std::string_view key : {"max_completion_tokens", "max_tokens"}) {
    if (r.max_tokens == 0) r.max_tokens = IntAt(r.body, key);
  }
  json::value* messages = r.body.if_contains("messages");
  if (messages == nullptr || !messages->is_array()) {
    return Status::InvalidArgument("messages must be an array", "messages");
  }
  json::array& list = messages->get_array();
  while (r.leading < list.size() && IsSystemRole(list[r.leading])) {
    const json::value* c = Find(list[r.leading], "content");
    if (!r.system_text.empty()) r.system_text += "\n";
    if (c && c->is_string()) {
      r.system_text += std::string(c->get_string());
    } else if (c && c->is_array()) {
      for (const json::value& p : c->get_array()) {
        if (p.is_object()) r.system_text += Str(p.get_object(), "text");
      }
    }
    ++r.leading;
  }
  MISSY_RETURN_IF_ERROR(TakeNatives(list, r.leading, ChatToEngine, r.messages));
  return head;
}

namespace {

// An assistant message the engine changed (cut, in an oversized last turn), rebuilt from
// the agent's own: every field it had stays (a provider's signature on a call,
// `reasoning_content`, ...), with the engine's text and each call's arguments.
json::object RewrittenAssistant(const json::object& native, const Message& m) {
  json::object out = native;
  if (!m.PlainText().empty() || !out.contains("content") || !out["content"].is_null()) {
    out["content"] = m.PlainText();
  }
  json::value* calls = out.if_contains("tool_calls");
  if (calls == nullptr || !calls->is_array()) return out;
  for (json::value& c : calls->get_array()) {
    json::object* call = c.if_object();
    json::value* function = call ? call->if_contains("function") : nullptr;
    json::object* fn = function ? function->if_object() : nullptr;
    if (fn == nullptr) continue;  // not a call this API knows: as sent
    const std::string id = Str(*call, "id");
    for (const ToolCall& engine : m.tool_calls) {
      if (engine.id == id) (*fn)["arguments"] = engine.arguments;
    }
  }
  return out;
}

// A cut message with media, rebuilt from the agent's own: its kept text, then its images,
// files and audio as it sent them; every other field as it was.
json::object RewrittenWithMedia(const json::object& native, const Message& m) {
  json::object out = native;
  json::array parts;
  if (!m.PlainText().empty())
    parts.push_back(json::object{{"type", "text"}, {"text", m.PlainText()}});
  if (const json::value* content = native.if_contains("content"); content && content->is_array()) {
    for (const json::value& p : content->get_array()) {
      const std::string type = p.is_object() ? Str(p.get_object(), "type") : "";
      if (type == "image_url" || type == "file" || type == "input_audio") parts.push_back(p);
    }
  }
  out["content"] = std::move(parts);
  return out;
}

}  // namespace

std::string BuildChatRequest(const ParsedRequest& request, const Outgoing& out) {
  const json::object& body = request.body;
  const json::array& list = request.body.at("messages").get_array();
  OutList messages;
  for (size_t i = 0; i < request.leading; ++i) messages.Ref(list[i], out.raw.Element(i));
  for (const OutItem& item : out.items) {
    switch (item.kind) {
      case OutItem::Kind::kNative:
        messages.Ref(request.messages[item.index].native,
                     out.raw.Element(request.leading + item.index));
        break;
      case OutItem::Kind::kRewritten: {
        const json::value& native = request.messages[item.index].native;
        if (item.engine.size() == 1 && item.engine[0].role == Role::kAssistant &&
            native.is_object()) {
          messages.Own(RewrittenAssistant(native.get_object(), item.engine[0]));
          break;
        }
        if (item.engine.size() == 1 && item.engine[0].ImageCount() > 0 && native.is_object()) {
          messages.Own(RewrittenWithMedia(native.get_object(), item.engine[0]));
          break;
        }
        for (const Message& m : item.engine) messages.Own(MessageToJson(m));
        break;
      }
      case OutItem::Kind::kInjected:
        for (const Message& m : item.engine) messages.Own(MessageToJson(m));
        break;
    }
  }
  return WriteBody(body, "messages", messages, out.raw);
}

std::unique_ptr<AnswerReader> MakeChatReader(bool stream) {
  if (stream) return std::make_unique<StreamAnswer>();
  return std::make_unique<JsonAnswer>();
}

std::string OpenAiError(std::string_view type, std::string_view message, std::string_view code) {
  return json::serialize(json::object{{"error", json::object{{"message", message},
                                                             {"type", type},
                                                             {"param", nullptr},
                                                             {"code", code}}}});
}

bool IsOpenAiContextLengthError(int status, std::string_view body) {
  if (status != 400 && status != 413) return false;
  return body.find("context_length_exceeded") != std::string_view::npos ||
         body.find("maximum context length") != std::string_view::npos;
}

}  // namespace missy::proxy

#include "daemon/proxy/responses_wire.h"

#include <boost/json.hpp>

#include "core/image_tokens.h"
#include "daemon/proxy/json_read.h"
#include "daemon/proxy/sse.h"

namespace missy::proxy {
namespace {

namespace json = boost::json;

std::string Type(const json::object& item) {
  std::string type = Str(item, "type");
  if (type.empty() && item.contains("role")) return "message";  // the easy input form
  return type;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsOutput(const std::string& type) { return EndsWith(type, "_call_output"); }

// Produced by the model: reasoning, assistant messages and calls of every kind.
bool IsModelItem(const json::object& item) {
  const std::string type = Type(item);
  if (type == "message") return Str(item, "role") == "assistant";
  return !IsOutput(type);
}

// An image or a file in a content list (input_image, input_file), or a computer call's
// screenshot (its whole output): media to the engine, counted at the counter's cost per
// image, not a two-token "[input_image]" nor its base64 as text.
bool IsMedia(const json::value& part) {
  if (!part.is_object()) return false;
  const std::string type = Str(part.get_object(), "type");
  return type == "input_image" || type == "input_file" || type == "computer_screenshot";
}

// The text of a message's content or of a call's output: a string, or its parts' text.
std::string ContentText(const json::value* content) {
  if (content == nullptr || content->is_null()) return {};
  if (content->is_string()) return std::string(content->get_string());
  if (IsMedia(*content)) return {};  // a screenshot: a part of its own (WithMedia)
  if (!content->is_array()) return json::serialize(*content);
  std::string out;
  for (const json::value& p : content->get_array()) {
    if (!p.is_object() || IsMedia(p)) continue;  // media: parts of their own (WithMedia)
    if (!out.empty()) out.push_back('\n');
    const std::string type = Str(p.get_object(), "type");
    if (type == "input_text" || type == "output_text" || type == "text") {
      out += Str(p.get_object(), "text");
    } else if (type == "refusal") {
      out += Str(p.get_object(), "refusal");
    } else {
      out += "[" + type + "]";
    }
  }
  return out;
}

// `m` (its text from ContentText) with the media of `content` (a list's, or a screenshot
// that is the whole output) as parts after the text.
Message WithMedia(Message m, const json::value* content) {
  if (content == nullptr) return m;
  const auto add = [&m](const json::value& p) {
    if (!IsMedia(p)) return;
    if (m.content_form != ContentForm::kParts) {
      m.parts.push_back({ContentPart::Kind::kText, std::move(m.text), {}, {}});
      m.text.clear();
      m.content_form = ContentForm::kParts;
    }
    const json::object& media = p.get_object();
    ContentPart part;
    part.kind = ContentPart::Kind::kImage;
    const json::value* url = media.if_contains("image_url");
    part.image_url = ImageMarker("openai:" + Str(media, "type"),
                                 url && url->is_string()
                                     ? DataUrlImageSize(StrView(*url))
                                     : std::nullopt);
    part.detail = Str(media, "detail");
    m.parts.push_back(std::move(part));
  };
  if (content->is_array()) {
    for (const json::value& p : content->get_array()) add(p);
  } else {
    add(*content);
  }
  return m;
}

// A kept content list: the text, and the agent's own media parts while the engine keeps
// them (a cut leaves them; a pruned output has none). `text_type`: input_text (a user
// message, an output) or output_text. A string when there are none.
json::value KeptContent(const json::value* agents, const Message& m, const char* text_type) {
  // A computer call's output is its screenshot, never a text: it goes as it came while
  // the engine keeps it, and as a blank pixel once pruned (the API takes no text there).
  if (agents != nullptr && IsMedia(*agents)) {
    if (m.ImageCount() > 0) return *agents;
    json::object blank = agents->get_object();
    blank["image_url"] =
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8"
        "AAAAASUVORK5CYII=";
    return blank;
  }
  if (m.ImageCount() == 0 || agents == nullptr || !agents->is_array()) {
    return json::value(m.PlainText());
  }
  json::array out;
  if (!m.PlainText().empty())
    out.push_back(json::object{{"type", text_type}, {"text", m.PlainText()}});
  for (const json::value& p : agents->get_array()) {
    if (IsMedia(p)) out.push_back(p);
  }
  return out;
}

// One assistant engine message for a run of model items.
Message ModelTurn(const json::array& items) {
  Message m;
  m.role = Role::kAssistant;
  for (const json::value& v : items) {
    const json::object& item = v.get_object();
    const std::string type = Type(item);
    if (type == "reasoning") continue;  // opaque (encrypted_content): native only
    if (type == "message") {
      if (!m.text.empty()) m.text.push_back('\n');
      m.text += ContentText(item.if_contains("content"));
      continue;
    }
    const std::string call_id = Str(item, "call_id");
    if (EndsWith(type, "_call") && !call_id.empty()) {
      ToolCall call;
      call.id = call_id;
      call.name = Str(item, "name");
      if (call.name.empty()) call.name = type;
      if (const json::value* a = item.if_contains("arguments"); a && a->is_string()) {
        call.arguments = std::string(a->get_string());
      } else if (const json::value* in = item.if_contains("input")) {
        call.arguments = in->is_string() ? std::string(in->get_string()) : json::serialize(*in);
      } else if (const json::value* action = item.if_contains("action")) {
        call.arguments = json::serialize(*action);
      }
      m.tool_calls.push_back(std::move(call));
      continue;
    }
    // Server-side tool items (web search, ...): their JSON, so they are counted.
    if (!m.text.empty()) m.text.push_back('\n');
    m.text += json::serialize(item);
  }
  m.content_form =
      m.text.empty() && !m.tool_calls.empty() ? ContentForm::kNull : ContentForm::kString;
  return m;
}

json::object InputText(const std::string& role, std::string text) {
  return json::object{
      {"type", "message"},
      {"role", role},
      {"content", json::array{{{"type", role == "assistant" ? "output_text" : "input_text"},
                               {"text", std::move(text)}}}}};
}

// The call item of `items` with call_id `call.id`, as the agent sent it (its type: a
// custom_tool_call stays one, its id and fields), carrying the engine's arguments (cut,
// for an oversized last turn) where the item keeps them: `arguments`, a string `input`,
// or an object `input`/`action` when they still parse as one. A function_call when the
// item is not found.
json::object RewrittenCall(const json::array& items, const ToolCall& call) {
  for (const json::value& v : items) {
    const json::object& item = v.get_object();
    if (!EndsWith(Type(item), "_call") || Str(item, "call_id") != call.id) continue;
    json::object out = item;
    if (json::value* a = out.if_contains("arguments"); a && a->is_string()) {
      *a = call.arguments;
      return out;
    }
    for (const char* key : {"input", "action"}) {
      json::value* field = out.if_contains(key);
      if (field == nullptr) continue;
      if (field->is_string()) {
        *field = call.arguments;
      } else {
        boost::system::error_code ec;
        json::value parsed = json::parse(call.arguments, ec);
        if (!ec && parsed.is_object()) *field = std::move(parsed);
      }
      return out;
    }
    return out;
  }
  return json::object{{"type", "function_call"},
                      {"call_id", call.id},
                      {"name", call.name},
                      {"arguments", call.arguments}};
}

// A rewritten group in the API's shape.
json::array Rewrite(const NativeMessage& original, const std::vector<Message>& engine) {
  json::array out;
  const json::array& items = original.native.get_array();
  const json::object& first = items.front().get_object();
  if (IsModelItem(first)) {
    for (const json::value& v : items) {  // reasoning stays with its encrypted content
      if (Type(v.get_object()) == "reasoning") out.push_back(v);
    }
    for (const Message& m : engine) {
      if (!m.PlainText().empty()) out.push_back(InputText("assistant", m.PlainText()));
      for (const ToolCall& c : m.tool_calls) out.push_back(RewrittenCall(items, c));
    }
    return out;
  }
  if (IsOutput(Type(first))) {
    for (const Message& m : engine) {
      // The agent's own item (its id, status, any field of its own) with the kept output.
      json::object item{{"type", Type(first)}, {"call_id", m.tool_call_id}};
      for (const json::value& v : items) {
        if (Str(v.get_object(), "call_id") == m.tool_call_id) item = v.get_object();
      }
      item["output"] = KeptContent(item.if_contains("output"), m, "input_text");
      out.push_back(std::move(item));
    }
    return out;
  }
  const std::string role = Str(first, "role").empty() ? "user" : Str(first, "role");
  for (const Message& m : engine) {
    json::object message = InputText(role, m.PlainText());
    if (m.ImageCount() > 0) {
      json::value content = KeptContent(first.if_contains("content"), m, "input_text");
      if (content.is_array()) message["content"] = std::move(content);
    }
    out.push_back(std::move(message));
  }
  return out;
}

Result<Rebuilt> FromResponse(const json::value& response) {
  const json::value* output = Find(response, "output");
  if (output == nullptr || !output->is_array()) {
    return Status::InvalidArgument("the answer is not a response object");
  }
  Result<std::vector<NativeMessage>> groups =
      ResponsesItemsToNatives(output->get_array(), "answer");
  if (!groups.ok()) return groups.status();
  Rebuilt r;
  r.native = output->get_array();
  for (NativeMessage& g : *groups) {
    for (Message& m : g.engine) r.engine.push_back(std::move(m));
  }
  if (r.engine.empty()) r.engine.push_back(Message::Assistant(""));
  if (r.engine.size() > 1) {
    // An answer is one turn: fold its parts into one assistant message.
    Message one = Message::Assistant("");
    for (const Message& m : r.engine) {
      if (!m.PlainText().empty()) one.text += (one.text.empty() ? "" : "\n") + m.PlainText();
      for (const ToolCall& c : m.tool_calls) one.tool_calls.push_back(c);
    }
    r.engine = {std::move(one)};
  }
  r.id = response.is_object() ? Str(response.get_object(), "id") : "";
  r.stop_reason = response.is_object() ? Str(response.get_object(), "status") : "";
  if (const json::value* u = Find(response, "usage")) {
    r.input_tokens = IntAt(*u, "input_tokens");
    r.output_tokens = IntAt(*u, "output_tokens");
  }
  return r;
}

class JsonAnswer final : public JsonBodyAnswer {
 protected:
  Result<Rebuilt> FromJson(json::value v) override { return FromResponse(v); }
};

class StreamAnswer final : public SseAnswer {
 public:
  Result<Rebuilt> Complete() override {
    if (!completed_) return Status::Unavailable("the stream ended before response.completed");
    json::value response = completed_response_;
    // Some servers leave the final output empty: the items seen done stand in for it.
    const json::value* output = Find(response, "output");
    if ((output == nullptr || !output->is_array() || output->get_array().empty()) &&
        !items_.empty() && response.is_object()) {
      response.get_object()["output"] = items_;
    }
    return FromResponse(response);
  }
  size_t partial_chars() const override { return chars_; }
  std::string_view end_marker() const override { return "response.completed"; }

 private:
  void OnEvent(const SseEvent& e) override {
    boost::system::error_code ec;
    json::value v = json::parse(e.data, ec);
    if (ec || !v.is_object()) return;
    const std::string type = Str(v.get_object(), "type");
    if (type == "response.output_text.delta" || type == "response.function_call_arguments.delta") {
      chars_ += Str(v.get_object(), "delta").size();
    } else if (type == "response.output_item.done") {
      if (const json::value* item = Find(v, "item")) items_.push_back(*item);
    } else if (type == "response.completed") {
      if (const json::value* r = Find(v, "response")) completed_response_ = *r;
      completed_ = true;
    } else if (type == "response.failed" || type == "response.incomplete" || type == "error") {
      error_ = type;
      if (const json::value* r = Find(v, "response")) {
        if (const json::value* err = Find(*r, "error"); err && err->is_object()) {
          error_ += ": " + Str(err->get_object(), "message");
        }
      }
      if (type == "error") error_ += ": " + Str(v.get_object(), "message");
    }
  }

  json::array items_;
  json::value completed_response_;
  size_t chars_ = 0;
  bool completed_ = false;
};

}  // namespace

Result<std::vector<NativeMessage>> ResponsesItemsToNatives(const json::array& items,
                                                           std::string_view field) {
  std::vector<NativeMessage> out;
  size_t i = 0;
  while (i < items.size()) {
    const std::string f = std::string(field) + "[" + std::to_string(i) + "]";
    if (!items[i].is_object()) return Status::InvalidArgument("an item must be an object", f);
    const json::object& item = items[i].get_object();
    const std::string type = Type(item);
    if (type.empty()) return Status::InvalidArgument("an item needs a type", f + ".type");
    NativeMessage n;
    json::array group;
    if (IsModelItem(item)) {
      while (i < items.size() && items[i].is_object() && IsModelItem(items[i].get_object())) {
        group.push_back(items[i++]);
      }
      n.engine.push_back(ModelTurn(group));
    } else if (IsOutput(type)) {
      const std::string call_id = Str(item, "call_id");
      if (call_id.empty())
        return Status::InvalidArgument("a call's output needs its call_id", f + ".call_id");
      n.engine.push_back(
          WithMedia(Message::ToolResult(call_id, ContentText(item.if_contains("output"))),
                    item.if_contains("output")));
      group.push_back(items[i++]);
    } else if (type == "message") {
      n.engine.push_back(WithMedia(Message::User(ContentText(item.if_contains("content"))),
                                   item.if_contains("content")));
      group.push_back(items[i++]);
    } else {
      // An item the engine does not model (item_reference, ...): kept as user text.
      n.engine.push_back(Message::User(json::serialize(item)));
      group.push_back(items[i++]);
    }
    n.native = std::move(group);
    n.hash = CanonicalHash(n.engine);
    out.push_back(std::move(n));
  }
  return out;
}

Result<ParsedRequest> ParseResponsesRequest(std::string_view body) {
  Result<ParsedRequest> head = ParseRequestHead(body, Api::kResponses);
  if (!head.ok()) return head.status();
  ParsedRequest& r = *head;
  r.max_tokens = IntAt(r.body, "max_output_tokens");
  r.system_text = Str(r.body, "instructions");
  const json::value* input = r.body.if_contains("input");
  if (input == nullptr) return Status::InvalidArgument("input is required", "input");
  if (input->is_string()) {
    json::array items{InputText("user", std::string(input->get_string()))};
    Result<std::vector<NativeMessage>> natives = ResponsesItemsToNatives(items, "input");
    if (!natives.ok()) return natives.status();
    r.messages = std::move(*natives);
    return head;
  }
  if (!input->is_array())
    return Status::InvalidArgument("input must be a string or an array", "input");
  Result<std::vector<NativeMessage>> natives = ResponsesItemsToNatives(input->get_array(), "input");
  if (!natives.ok()) return natives.status();
  r.messages = std::move(*natives);
  return head;
}

std::string BuildResponsesRequest(const ParsedRequest& request, const Outgoing& out) {
  const json::object& body = request.body;
  OutList input;
  for (const OutItem& item : out.items) {
    switch (item.kind) {
      case OutItem::Kind::kNative:
        for (const json::value& v : request.messages[item.index].native.get_array()) input.Ref(v);
        break;
      case OutItem::Kind::kRewritten:
        for (json::value& v : Rewrite(request.messages[item.index], item.engine)) {
          input.Own(std::move(v));
        }
        break;
      case OutItem::Kind::kInjected:
        for (const Message& m : item.engine) input.Own(InputText("user", m.PlainText()));
        break;
    }
  }
  return SerializeReplacing(body, "input", input);
}

std::unique_ptr<AnswerReader> MakeResponsesReader(bool stream) {
  if (stream) return std::make_unique<StreamAnswer>();
  return std::make_unique<JsonAnswer>();
}

}  // namespace missy::proxy

#include "core/message.h"

#include <boost/json.hpp>

#include "core/message_json.h"

namespace missy {

namespace json = boost::json;

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kSystem:
      return "system";
    case Role::kUser:
      return "user";
    case Role::kAssistant:
      return "assistant";
    case Role::kTool:
      return "tool";
  }
  return "user";
}

std::optional<Role> ParseRole(std::string_view name) {
  // OpenAI's "developer" is the system role of its newer models: the same instructions.
  if (name == "system" || name == "developer") return Role::kSystem;
  if (name == "user") return Role::kUser;
  if (name == "assistant") return Role::kAssistant;
  if (name == "tool") return Role::kTool;
  return std::nullopt;
}

std::string Message::PlainText() const {
  if (content_form == ContentForm::kString) return text;
  std::string out;
  for (const ContentPart& p : parts) {
    if (p.kind != ContentPart::Kind::kText) continue;
    if (!out.empty()) out += '\n';
    out += p.text;
  }
  return out;
}

size_t Message::ImageCount() const {
  size_t n = 0;
  for (const ContentPart& p : parts) n += p.kind == ContentPart::Kind::kImage;
  return n;
}

Message Message::User(std::string text) {
  Message m;
  m.role = Role::kUser;
  m.text = std::move(text);
  return m;
}

Message Message::Assistant(std::string text) {
  Message m;
  m.role = Role::kAssistant;
  m.text = std::move(text);
  return m;
}

Message Message::System(std::string text) {
  Message m;
  m.role = Role::kSystem;
  m.text = std::move(text);
  return m;
}

Message Message::AssistantCalls(std::vector<ToolCall> calls, std::string text) {
  Message m;
  m.role = Role::kAssistant;
  m.content_form = text.empty() ? ContentForm::kNull : ContentForm::kString;
  m.text = std::move(text);
  m.tool_calls = std::move(calls);
  return m;
}

Message Message::ToolResult(std::string call_id, std::string text, std::string name) {
  Message m;
  m.role = Role::kTool;
  m.text = std::move(text);
  m.tool_call_id = std::move(call_id);
  m.name = std::move(name);
  return m;
}

namespace {

std::string KindOf(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "a value";
}

Status WrongType(const std::string& field, std::string_view expected, const json::value& got) {
  return Status::InvalidArgument("expected " + std::string(expected) + ", got " + KindOf(got),
                                 field);
}

// Reads an optional string member; absent and null leave `out` untouched.
Status OptionalString(const json::object& o, std::string_view key, const std::string& field,
                      std::string& out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_string()) return WrongType(field + "." + std::string(key), "a string", *v);
  out.assign(v->get_string().begin(), v->get_string().end());
  return Status::Ok();
}

Status ParseContentPart(const json::value& v, const std::string& field, ContentPart& part) {
  if (!v.is_object()) return WrongType(field, "an object", v);
  const json::object& o = v.get_object();
  const json::value* type = o.if_contains("type");
  if (type == nullptr || !type->is_string()) {
    return Status::InvalidArgument("content part needs a string 'type' (text or image_url)",
                                   field + ".type");
  }
  std::string_view t = type->get_string();
  if (t == "text") {
    const json::value* text = o.if_contains("text");
    if (text == nullptr || !text->is_string()) {
      return Status::InvalidArgument("text part needs a string 'text'", field + ".text");
    }
    part.kind = ContentPart::Kind::kText;
    part.text.assign(text->get_string().begin(), text->get_string().end());
    return Status::Ok();
  }
  if (t == "image_url") {
    part.kind = ContentPart::Kind::kImage;
    const json::value* image = o.if_contains("image_url");
    if (image != nullptr && image->is_string()) {
      part.image_url.assign(image->get_string().begin(), image->get_string().end());
      return Status::Ok();
    }
    if (image == nullptr || !image->is_object()) {
      return Status::InvalidArgument("image part needs 'image_url' {url, detail}",
                                     field + ".image_url");
    }
    const json::value* url = image->get_object().if_contains("url");
    if (url == nullptr || !url->is_string()) {
      return Status::InvalidArgument("image part needs a string url", field + ".image_url.url");
    }
    part.image_url.assign(url->get_string().begin(), url->get_string().end());
    return OptionalString(image->get_object(), "detail", field + ".image_url", part.detail);
  }
  return Status::InvalidArgument(
      "unknown content part type '" + std::string(t) + "' (expected text or image_url)",
      field + ".type");
}

Status ParseContent(const json::value& v, const std::string& field, Message& m) {
  if (v.is_null()) {
    m.content_form = ContentForm::kNull;
    return Status::Ok();
  }
  if (v.is_string()) {
    m.content_form = ContentForm::kString;
    m.text.assign(v.get_string().begin(), v.get_string().end());
    return Status::Ok();
  }
  if (!v.is_array()) return WrongType(field, "a string, an array of parts or null", v);
  m.content_form = ContentForm::kParts;
  const json::array& a = v.get_array();
  m.parts.resize(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    MISSY_RETURN_IF_ERROR(
        ParseContentPart(a[i], field + "[" + std::to_string(i) + "]", m.parts[i]));
  }
  return Status::Ok();
}

Status ParseToolCall(const json::value& v, const std::string& field, ToolCall& call) {
  if (!v.is_object()) return WrongType(field, "an object", v);
  const json::object& o = v.get_object();
  // An empty or missing id is accepted (llama.cpp and some Ollama versions send ""): the
  // append repairs it or refuses it in strict mode (core/sanitizer.h).
  MISSY_RETURN_IF_ERROR(OptionalString(o, "id", field, call.id));
  MISSY_RETURN_IF_ERROR(OptionalString(o, "type", field, call.type));
  if (call.type != "function") {
    return Status::InvalidArgument("unsupported tool call type '" + call.type + "'",
                                   field + ".type");
  }
  const json::value* fn = o.if_contains("function");
  if (fn == nullptr || !fn->is_object()) {
    return Status::InvalidArgument("tool call needs a 'function' object", field + ".function");
  }
  const json::object& f = fn->get_object();
  const json::value* name = f.if_contains("name");
  if (name == nullptr || !name->is_string() || name->get_string().empty()) {
    return Status::InvalidArgument("tool call needs a non-empty string function name",
                                   field + ".function.name");
  }
  call.name.assign(name->get_string().begin(), name->get_string().end());
  const json::value* args = f.if_contains("arguments");
  if (args == nullptr || args->is_null()) {
    call.arguments.clear();
  } else if (args->is_string()) {
    call.arguments.assign(args->get_string().begin(), args->get_string().end());
  } else if (args->is_object()) {
    call.arguments = json::serialize(*args);  // some SDKs send parsed arguments
  } else {
    return WrongType(field + ".function.arguments", "a string (JSON text) or an object", *args);
  }
  return Status::Ok();
}

}  // namespace

Result<Message> ParseMessage(const json::value& v, std::string_view field_view) {
  const std::string field(field_view);
  if (!v.is_object()) return WrongType(field, "a message object", v);
  const json::object& o = v.get_object();
  Message m;

  const json::value* role = o.if_contains("role");
  if (role == nullptr) return Status::InvalidArgument("role is required", field + ".role");
  if (!role->is_string()) return WrongType(field + ".role", "a string", *role);
  std::optional<Role> parsed_role = ParseRole(role->get_string());
  if (!parsed_role) {
    return Status::InvalidArgument("unknown role '" + std::string(role->get_string()) +
                                       "' (expected system, developer, user, assistant or tool)",
                                   field + ".role");
  }
  m.role = *parsed_role;

  if (const json::value* calls = o.if_contains("tool_calls"); calls && !calls->is_null()) {
    if (m.role != Role::kAssistant) {
      return Status::InvalidArgument(
          "tool_calls are only allowed on assistant messages, not " + std::string(RoleName(m.role)),
          field + ".tool_calls");
    }
    if (!calls->is_array()) return WrongType(field + ".tool_calls", "an array", *calls);
    const json::array& a = calls->get_array();
    m.tool_calls.resize(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      MISSY_RETURN_IF_ERROR(
          ParseToolCall(a[i], field + ".tool_calls[" + std::to_string(i) + "]", m.tool_calls[i]));
    }
  }

  const json::value* content = o.if_contains("content");
  if (content == nullptr || content->is_null()) {
    if (m.role != Role::kAssistant) {
      return Status::InvalidArgument(
          "content is required on " + std::string(RoleName(m.role)) + " messages",
          field + ".content");
    }
    m.content_form = ContentForm::kNull;
  } else {
    MISSY_RETURN_IF_ERROR(ParseContent(*content, field + ".content", m));
  }

  // Empty or missing on a tool message is accepted, as for call ids (ParseToolCall).
  MISSY_RETURN_IF_ERROR(OptionalString(o, "tool_call_id", field, m.tool_call_id));
  if (m.role != Role::kTool && !m.tool_call_id.empty()) {
    return Status::InvalidArgument(
        "tool_call_id is only allowed on tool messages, not " + std::string(RoleName(m.role)),
        field + ".tool_call_id");
  }
  MISSY_RETURN_IF_ERROR(OptionalString(o, "name", field, m.name));
  return m;
}

namespace {

json::value ContentToJson(const Message& m) {
  switch (m.content_form) {
    case ContentForm::kNull:
      return nullptr;
    case ContentForm::kString:
      return json::string(m.text);
    case ContentForm::kParts:
      break;
  }
  json::array parts;
  parts.reserve(m.parts.size());
  for (const ContentPart& p : m.parts) {
    if (p.kind == ContentPart::Kind::kText) {
      parts.push_back(json::object{{"type", "text"}, {"text", p.text}});
    } else {
      json::object image{{"url", p.image_url}};
      if (!p.detail.empty()) image["detail"] = p.detail;
      parts.push_back(json::object{{"type", "image_url"}, {"image_url", std::move(image)}});
    }
  }
  return parts;
}

json::array ToolCallsToJson(const std::vector<ToolCall>& calls) {
  json::array out;
  out.reserve(calls.size());
  for (const ToolCall& c : calls) {
    out.push_back(
        json::object{{"id", c.id},
                     {"type", c.type},
                     {"function", json::object{{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

}  // namespace

json::object MessageToJson(const Message& m) {
  json::object o;
  o["role"] = RoleName(m.role);
  o["content"] = ContentToJson(m);
  if (!m.tool_calls.empty()) o["tool_calls"] = ToolCallsToJson(m.tool_calls);
  if (!m.tool_call_id.empty()) o["tool_call_id"] = m.tool_call_id;
  if (!m.name.empty()) o["name"] = m.name;
  return o;
}

std::string ContentToJsonText(const Message& m) { return json::serialize(ContentToJson(m)); }

Status ContentFromJsonText(std::string_view text, Message& m) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Status::Corruption("stored content is not valid JSON: " + ec.message());
  m.parts.clear();
  m.text.clear();
  Status s = ParseContent(v, "content", m);
  if (!s.ok()) return Status::Corruption("stored content is invalid: " + s.ToString());
  return Status::Ok();
}

std::string ToolCallsToJsonText(const std::vector<ToolCall>& calls) {
  return json::serialize(ToolCallsToJson(calls));
}

Result<std::vector<ToolCall>> ToolCallsFromJsonText(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_array()) return Status::Corruption("stored tool_calls are not a JSON array");
  std::vector<ToolCall> calls(v.get_array().size());
  for (size_t i = 0; i < calls.size(); ++i) {
    Status s = ParseToolCall(v.get_array()[i], "tool_calls[" + std::to_string(i) + "]", calls[i]);
    if (!s.ok()) return Status::Corruption("stored tool call is invalid: " + s.ToString());
  }
  return calls;
}

}  // namespace missy

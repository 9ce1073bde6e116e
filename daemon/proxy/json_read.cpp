#include "daemon/proxy/json_read.h"

#include <algorithm>
#include <string>

#include "daemon/proxy/json_scan.h"

namespace missy::proxy {

namespace json = boost::json;

Result<ParsedRequest> ParseRequestHead(std::string_view body, Api api) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) return Status::InvalidArgument("the body is not JSON: " + ec.message());
  if (!v.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  // The parser keeps the last of a member named twice, and an upstream may keep the
  // first: the context missyd fits would not be the one the model reads.
  if (const std::string twice = DuplicateMember(body); !twice.empty()) {
    return Status::InvalidArgument("the body names the member '" + twice +
                                       "' twice (a member may appear once)",
                                   twice);
  }
  ParsedRequest r;
  r.api = api;
  r.body = std::move(v.get_object());
  r.model = Str(r.body, "model");
  if (r.model.empty()) return Status::InvalidArgument("model is required", "model");
  if (const json::value* s = r.body.if_contains("stream"); s && s->is_bool()) {
    r.stream = s->get_bool();
  }
  if (const json::value* t = r.body.if_contains("tools"); t && t->is_array()) {
    r.tools_json = json::serialize(*t);
  }
  return r;
}

Status TakeNatives(json::array& list, size_t from, ToEngine to_engine,
                   std::vector<NativeMessage>& out) {
  out.reserve(out.size() + list.size() - std::min(from, list.size()));
  for (size_t i = from; i < list.size(); ++i) {
    Result<std::vector<Message>> engine =
        to_engine(list[i], "messages[" + std::to_string(i) + "]");
    if (!engine.ok()) return engine.status();
    NativeMessage n;
    n.native = std::move(list[i]);
    n.engine = std::move(*engine);
    n.hash = CanonicalHash(n.engine);
    n.cache_markers = CountCacheMarkers(n.native);
    out.push_back(std::move(n));
  }
  return Status::Ok();
}

namespace {

void AppendList(std::string& out, const OutList& list) {
  out += '[';
  for (size_t i = 0; i < list.items().size(); ++i) {
    if (i > 0) out += ',';
    if (std::string_view raw = list.raw(i); !raw.empty()) {
      out += raw;
    } else {
      out += boost::json::serialize(*list.items()[i]);
    }
  }
  out += ']';
}

}  // namespace

std::string SerializeReplacing(const boost::json::object& o, std::string_view key,
                               const OutList& list) {
  std::string out = "{";
  bool replaced = false;
  for (const auto& [k, v] : o) {
    if (out.size() > 1) out += ',';
    out += boost::json::serialize(k);
    out += ':';
    if (k == key) {
      AppendList(out, list);
      replaced = true;
    } else {
      out += boost::json::serialize(v);
    }
  }
  if (!replaced) {
    if (out.size() > 1) out += ',';
    out += boost::json::serialize(boost::json::string_view(key));
    out += ':';
    AppendList(out, list);
  }
  out += '}';
  return out;
}

std::string WriteBody(const boost::json::object& o, std::string_view key, const OutList& list,
                      const RawList& raw) {
  if (raw.open >= raw.close || raw.close >= raw.text.size() || raw.text[raw.open] != '[' ||
      raw.text[raw.close] != ']') {
    return SerializeReplacing(o, key, list);
  }
  size_t size = raw.open + (raw.text.size() - raw.close) + list.items().size();
  for (size_t i = 0; i < list.items().size(); ++i) {
    size += list.raw(i).empty() ? 512 : list.raw(i).size();  // serialized ones: a guess
  }
  std::string out;
  out.reserve(size);
  out.append(raw.text.substr(0, raw.open));
  AppendList(out, list);
  out.append(raw.text.substr(raw.close + 1));
  return out;
}

}  // namespace missy::proxy

// Reading the APIs' JSON (internal to daemon/proxy's codecs): lenient accessors that give
// "" or 0 for what is absent or of another type, and the AnswerReader of a JSON body.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/proxy/sse.h"
#include "daemon/proxy/wire.h"

namespace missy::proxy {

inline std::string Str(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return {};
  return std::string(v->get_string());
}

inline const boost::json::value* Find(const boost::json::value& v, std::string_view key) {
  return v.is_object() ? v.get_object().if_contains(key) : nullptr;
}

inline int64_t IntAt(const boost::json::value& v, std::string_view key) {
  const boost::json::value* x = Find(v, key);
  if (x == nullptr || !x->is_number()) return 0;
  boost::system::error_code ec;
  const int64_t n = x->to_number<int64_t>(ec);
  return ec ? 0 : n;
}

// What every API's request has: a JSON object with a `model`, maybe `stream` and `tools`.
// kInvalidArgument (naming the field) otherwise. The rest is each codec's.
Result<ParsedRequest> ParseRequestHead(std::string_view body, Api api);

// Moves list[from..] into `out` as natives, each read by `to_engine` (its field named
// "messages[i]") and hashed: no copy of a 10,000-message list; their places in `list`
// are left moved-from (empty objects; the body sent upstream rebuilds the list).
using ToEngine = Result<std::vector<Message>> (*)(const boost::json::value&, std::string_view);
Status TakeNatives(boost::json::array& list, size_t from, ToEngine to_engine,
                   std::vector<NativeMessage>& out);

// The JSON text of `o` with `key`'s value replaced by `value`, every other member copied
// as it is and in its order (a request body with its messages rebuilt: the rest goes out
// as the agent sent it, without copying the messages that are replaced).
inline std::string SerializeReplacing(const boost::json::object& o, std::string_view key,
                                      boost::json::value value) {
  boost::json::object out;
  out.reserve(o.size() + 1);
  bool replaced = false;
  for (const auto& [k, v] : o) {
    if (k == key) {
      out.emplace(k, std::move(value));
      replaced = true;
    } else {
      out.emplace(k, v);
    }
  }
  if (!replaced) out.emplace(key, std::move(value));
  return boost::json::serialize(out);
}

// An answer read whole: Finish parses the body and hands it to FromJson.
class JsonBodyAnswer : public AnswerReader {
 public:
  void Feed(std::string_view piece) final { body_.append(piece); }
  Result<Rebuilt> Finish() final {
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(body_, ec);
    if (ec) return Status::InvalidArgument("the answer is not JSON: " + ec.message());
    return FromJson(std::move(v));
  }
  size_t partial_chars() const final { return body_.size(); }

 protected:
  virtual Result<Rebuilt> FromJson(boost::json::value v) = 0;

 private:
  std::string body_;
};

// An answer read as server-sent events: each event goes to OnEvent as it arrives; Finish
// reports the stream's own error event, else asks Complete for the message.
class SseAnswer : public AnswerReader {
 public:
  SseAnswer() : sse_([this](const SseEvent& e) { OnEvent(e); }) {}
  void Feed(std::string_view piece) final { sse_.Feed(piece); }
  Result<Rebuilt> Finish() final {
    sse_.Finish();
    if (!error_.empty()) return Status::Unavailable("the stream reported an error: " + error_);
    return Complete();
  }

 protected:
  virtual void OnEvent(const SseEvent& e) = 0;
  virtual Result<Rebuilt> Complete() = 0;
  std::string error_;  // set by OnEvent for an error event

 private:
  SseParser sse_;
};

}  // namespace missy::proxy

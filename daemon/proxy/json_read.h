// Reading the APIs' JSON (internal to daemon/proxy's codecs): lenient accessors that give
// "" or 0 for what is absent or of another type, and the AnswerReader of a JSON body.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/proxy/sse.h"
#include "daemon/proxy/wire.h"

namespace missy::proxy {

inline std::string Str(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return {};
  return std::string(v->get_string());
}

// A string value's text in place (no copy); `v` must be a string.
inline std::string_view StrView(const boost::json::value& v) {
  return {v.get_string().data(), v.get_string().size()};
}

inline const boost::json::value* Find(const boost::json::value& v, std::string_view key) {
  return v.is_object() ? v.get_object().if_contains(key) : nullptr;
}

// The integer `key` holds; 0 when it holds none (absent, not a number, not an integer,
// out of range). The object's own overload: a request body passed as a value would be
// copied whole first.
inline int64_t IntAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* x = o.if_contains(key);
  if (x == nullptr || !x->is_number()) return 0;
  boost::system::error_code ec;
  const int64_t n = x->to_number<int64_t>(ec);
  return ec ? 0 : n;
}
inline int64_t IntAt(const boost::json::value& v, std::string_view key) {
  return v.is_object() ? IntAt(v.get_object(), key) : 0;
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

// The list a request body goes out with: the agent's own values by reference (never
// copied: a turn's list is hundreds of messages of a 10,000-message request), the ones
// built here owned.
class OutList {
 public:
  // `raw`: the value's JSON text as the agent sent it, written instead of serializing it.
  void Ref(const boost::json::value& v, std::string_view raw = {}) {
    items_.push_back(&v);
    raw_.push_back(raw);
  }
  // Adds `v` (at the front, or at the end); the reference stays valid.
  boost::json::value& Own(boost::json::value v, bool front = false) {
    owned_.push_back(std::move(v));
    boost::json::value& added = owned_.back();
    if (front) {
      items_.insert(items_.begin(), &added);
      raw_.insert(raw_.begin(), std::string_view());
    } else {
      items_.push_back(&added);
      raw_.push_back(std::string_view());
    }
    return added;
  }
  const std::vector<const boost::json::value*>& items() const { return items_; }
  // The agent's text of items()[i], or "" (serialize it).
  std::string_view raw(size_t i) const { return raw_[i]; }
  bool empty() const { return items_.empty(); }

 private:
  std::deque<boost::json::value> owned_;  // stable addresses
  std::vector<const boost::json::value*> items_;
  std::vector<std::string_view> raw_;
};

// The request body sent upstream: the agent's own text with the list's elements replaced
// by `list` when `raw` knows where the list lies (every other member goes out as the
// agent's bytes: `o` holds them unchanged), else SerializeReplacing(o, key, list).
std::string WriteBody(const boost::json::object& o, std::string_view key, const OutList& list,
                      const RawList& raw);

// The JSON text of `o` with `key`'s value replaced by `list` (added last when absent),
// every other member written as it is and in its order: the rest of the request goes out
// as the agent sent it, and nothing is copied to write it.
std::string SerializeReplacing(const boost::json::object& o, std::string_view key,
                               const OutList& list);

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

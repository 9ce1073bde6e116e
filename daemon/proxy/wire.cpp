#include "daemon/proxy/wire.h"

#include <cstdio>
#include <cstring>

namespace missy::proxy {

std::string_view ApiName(Api api) {
  switch (api) {
    case Api::kAnthropic:
      return "anthropic";
    case Api::kChat:
      return "chat";
    case Api::kResponses:
      return "responses";
  }
  return "unknown";
}

namespace {

// A 128-bit digest (two 64-bit lanes, a word at a time) of length-prefixed fields: fast
// enough to run over every message of a 10,000-message request on each turn. Not a
// cryptographic hash: it tells an agent's own messages apart, it guards no secret.
class FieldDigest {
 public:
  void Field(std::string_view s) {
    Word(s.size());
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      Word(w);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    Word(tail);
  }
  void Word(uint64_t w) {
    a_ = Mix(a_ ^ w, 0x9e3779b97f4a7c15ULL);
    b_ = Mix(b_ ^ (w + 0x632be59bd9b4e019ULL), 0xc2b2ae3d27d4eb4fULL);
  }
  std::string Hex() const {
    char out[33];
    std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(Final(a_)),
                  static_cast<unsigned long long>(Final(b_)));
    return std::string(out, 32);
  }

 private:
  static uint64_t Mix(uint64_t h, uint64_t k) {
    h *= k;
    return (h << 31) | (h >> 33);
  }
  static uint64_t Final(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
  }
  uint64_t a_ = 0x243f6a8885a308d3ULL;
  uint64_t b_ = 0x13198a2e03707344ULL;
};

}  // namespace

std::string CanonicalHash(const std::vector<Message>& engine) {
  FieldDigest d;
  d.Word(engine.size());
  for (const Message& m : engine) {
    d.Word(static_cast<uint64_t>(m.role));
    // The content as text, whatever its form: the same message sent as a string or as
    // one text part (agents do both) is the same message.
    d.Field(m.PlainText());
    d.Word(m.ImageCount());
    for (const ContentPart& p : m.parts) {
      if (p.kind == ContentPart::Kind::kImage) d.Field(p.image_url);
    }
    d.Word(m.tool_calls.size());
    for (const ToolCall& c : m.tool_calls) {
      d.Field(c.id);
      d.Field(c.name);
      d.Field(c.arguments);
    }
    d.Field(m.tool_call_id);
    d.Field(m.name);
  }
  return d.Hex();
}

int CountCacheMarkers(const boost::json::value& v) {
  int n = 0;
  if (v.is_object()) {
    for (const auto& [key, value] : v.get_object()) {
      if (key == "cache_control" && !value.is_null()) ++n;
      n += CountCacheMarkers(value);
    }
  } else if (v.is_array()) {
    for (const auto& e : v.get_array()) n += CountCacheMarkers(e);
  }
  return n;
}

}  // namespace missy::proxy

// Fuzzes the proxy's codecs (daemon/proxy/): what an agent sends and what an upstream
// answers, in the three APIs. Input: byte 0 picks the API (Anthropic Messages, Chat
// Completions, Responses), whether the answer is a stream and how it is split; byte 1
// picks how much of the first body the second keeps; the rest, split at its first two
// NUL bytes, is a request body, the second body's own end, and an answer.
// Properties checked:
//  - a body the codec refuses gets kInvalidArgument with a message; nothing escapes;
//  - the parse cache (parse_cache.h) gives what a whole parse gives: for the first body,
//    and for the second (the first's leading bytes and its own end) after the first was
//    kept, whether it was compared after it arrived or while it arrived in pieces: the same
//    refusal, or the same fields, list and messages (native JSON, hash, markers);
//  - a request sent with every message as the agent sent it is valid JSON, the same value
//    whether the unchanged messages go out as the agent's bytes or serialized again, and
//    parses back into the same messages (hashes); with every message rewritten from its
//    engine form, it still parses;
//  - an answer read in pieces is read as it is whole: the same message or the same
//    refusal; a message rebuilt from it hashes as the agent will send it back.
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/proxy/anthropic_wire.h"
#include "daemon/proxy/chat_wire.h"
#include "daemon/proxy/parse_cache.h"
#include "daemon/proxy/responses_wire.h"
#include "daemon/proxy/wire.h"
#include "fuzz/fuzz_check.h"

namespace {

namespace json = boost::json;
using namespace missy;
using namespace missy::proxy;

struct Codec {
  Api api;
  ParseCache::FullParse parse;
  std::string (*build)(const ParsedRequest&, const Outgoing&);
  std::unique_ptr<AnswerReader> (*reader)(bool);
};

Codec CodecOf(uint8_t pick) {
  switch (pick % 3) {
    case 0:
      return {Api::kAnthropic, ParseAnthropicRequest, BuildAnthropicRequest, MakeAnthropicReader};
    case 1:
      return {Api::kChat, ParseChatRequest, BuildChatRequest, MakeChatReader};
    default:
      return {Api::kResponses, ParseResponsesRequest, BuildResponsesRequest, MakeResponsesReader};
  }
}

// The messages' hashes; `skip_note`: without the user message an Anthropic request gets
// first when its list starts with an answer (the API wants a user message first).
std::string Hashes(const ParsedRequest& r, bool skip_note = false) {
  std::string out;
  for (size_t i = 0; i < r.messages.size(); ++i) {
    const std::vector<Message>& e = r.messages[i].engine;
    if (skip_note && i == 0 && r.api == Api::kAnthropic && e.size() == 1 &&
        e[0].PlainText().starts_with("[earlier conversation left out by missyd")) {
      continue;
    }
    out += r.messages[i].hash + " ";
  }
  return out;
}

// A cached parse equals the whole one (the fields, the body with its list's
// placeholders, every message).
void CheckSame(const Result<ParsedBody>& got, const Result<ParsedRequest>& whole,
               std::string_view what) {
  MISSY_FUZZ_CHECK(got.ok() == whole.ok(),
                   std::string(what) + ": cached " + (got.ok() ? "ok" : got.status().ToString()) +
                       ", whole " + (whole.ok() ? "ok" : whole.status().ToString()));
  if (!whole.ok()) {
    MISSY_FUZZ_CHECK(got.status().ToString() == whole.status().ToString(),
                     got.status().ToString() + " vs " + whole.status().ToString());
    return;
  }
  const ParsedRequest& a = got->request;
  const ParsedRequest& b = *whole;
  MISSY_FUZZ_CHECK(a.model == b.model && a.max_tokens == b.max_tokens && a.stream == b.stream &&
                       a.system_text == b.system_text && a.tools_json == b.tools_json &&
                       a.leading == b.leading && a.field_cache_markers == b.field_cache_markers,
                   std::string(what) + ": fields differ");
  MISSY_FUZZ_CHECK(
      json::serialize(a.body) == json::serialize(b.body),
      std::string(what) + ": body " + json::serialize(a.body) + " vs " + json::serialize(b.body));
  MISSY_FUZZ_CHECK(a.messages.size() == b.messages.size(),
                   std::string(what) + ": " + std::to_string(a.messages.size()) + " messages vs " +
                       std::to_string(b.messages.size()));
  for (size_t i = 0; i < a.messages.size(); ++i) {
    MISSY_FUZZ_CHECK(
        a.messages[i].native == b.messages[i].native && a.messages[i].hash == b.messages[i].hash &&
            a.messages[i].cache_markers == b.messages[i].cache_markers &&
            a.messages[i].engine.size() == b.messages[i].engine.size(),
        std::string(what) + ": message " + std::to_string(i) + " differs: " +
            json::serialize(a.messages[i].native) + " vs " + json::serialize(b.messages[i].native));
  }
}

void CheckRefusal(const Result<ParsedRequest>& r) {
  if (r.ok()) return;
  MISSY_FUZZ_CHECK(r.status().code() == StatusCode::kInvalidArgument, r.status().ToString());
  MISSY_FUZZ_CHECK(!r.status().message().empty(), "a refusal without a message");
}

// The request built from `parsed` with every message sent as the agent sent it (with and
// without the agent's bytes) and with every message rewritten.
void CheckBuild(const Codec& c, std::string_view body, const ParsedBody& parsed) {
  const ParsedRequest& request = parsed.request;
  Outgoing native;
  native.mark_injected_for_cache = false;
  for (size_t i = 0; i < request.messages.size(); ++i) {
    native.items.push_back(OutItem{OutItem::Kind::kNative, i, {}});
  }
  const std::string serialized = c.build(request, native);
  json::error_code ec;
  const json::value sent = json::parse(serialized, ec);
  MISSY_FUZZ_CHECK(!ec, "the request built is not JSON: " + serialized);
  if (parsed.spans.size() == request.leading + request.messages.size()) {
    Outgoing raw = native;
    raw.raw = RawList{body, &parsed.spans, parsed.list_open, ListCloseOf(body, parsed)};
    const std::string from_bytes = c.build(request, raw);
    const json::value sent_raw = json::parse(from_bytes, ec);
    MISSY_FUZZ_CHECK(!ec, "the request built from the agent's bytes is not JSON: " + from_bytes);
    MISSY_FUZZ_CHECK(sent_raw == sent,
                     "from the agent's bytes: " + from_bytes + "\nserialized again: " + serialized);
  }
  Result<ParsedRequest> again = c.parse(serialized);
  MISSY_FUZZ_CHECK(again.ok(), "the request built does not parse: " +
                                   (again.ok() ? "" : again.status().ToString()) + "\n" +
                                   serialized);
  MISSY_FUZZ_CHECK(Hashes(*again, true) == Hashes(request),
                   "the request built parses into other messages: " + serialized);

  Outgoing rewritten;
  rewritten.mark_injected_for_cache = false;
  for (size_t i = 0; i < request.messages.size(); ++i) {
    rewritten.items.push_back(OutItem{OutItem::Kind::kRewritten, i, request.messages[i].engine});
  }
  const std::string edited = c.build(request, rewritten);
  Result<ParsedRequest> edited_again = c.parse(edited);
  MISSY_FUZZ_CHECK(edited_again.ok(),
                   "a rewritten request does not parse: " +
                       (edited_again.ok() ? "" : edited_again.status().ToString()) + "\n" + edited);
}

Result<Rebuilt> Read(const Codec& c, bool stream, std::string_view answer, size_t piece) {
  std::unique_ptr<AnswerReader> reader = c.reader(stream);
  for (size_t at = 0; at < answer.size(); at += piece) reader->Feed(answer.substr(at, piece));
  return reader->Finish();
}

void CheckAnswer(const Codec& c, bool stream, std::string_view answer, size_t piece) {
  const Result<Rebuilt> whole = Read(c, stream, answer, answer.size() + 1);
  const Result<Rebuilt> pieces = Read(c, stream, answer, piece);
  MISSY_FUZZ_CHECK(whole.ok() == pieces.ok(),
                   "whole " + (whole.ok() ? std::string("ok") : whole.status().ToString()) +
                       ", in pieces of " + std::to_string(piece) + " " +
                       (pieces.ok() ? std::string("ok") : pieces.status().ToString()));
  if (!whole.ok()) return;
  MISSY_FUZZ_CHECK(whole->native == pieces->native && whole->id == pieces->id &&
                       whole->stop_reason == pieces->stop_reason &&
                       whole->input_tokens == pieces->input_tokens &&
                       whole->output_tokens == pieces->output_tokens &&
                       CanonicalHash(whole->engine) == CanonicalHash(pieces->engine),
                   "in pieces of " + std::to_string(piece) + ": " +
                       json::serialize(pieces->native) + " vs " + json::serialize(whole->native));
  // What the agent sends back next turn hashes as what was stored.
  std::string hash;
  if (c.api == Api::kResponses) {
    if (!whole->native.is_array()) return;
    Result<std::vector<NativeMessage>> back =
        ResponsesItemsToNatives(whole->native.get_array(), "input");
    if (!back.ok() || back->size() != 1) return;  // an answer of no item or of user items
    hash = back->front().hash;
  } else {
    Result<std::vector<Message>> back = c.api == Api::kAnthropic
                                            ? AnthropicToEngine(whole->native, "answer")
                                            : ChatToEngine(whole->native, "answer");
    MISSY_FUZZ_CHECK(back.ok(), "the rebuilt message does not read back: " +
                                    (back.ok() ? "" : back.status().ToString()) + "\n" +
                                    json::serialize(whole->native));
    hash = CanonicalHash(*back);
  }
  MISSY_FUZZ_CHECK(
      hash == CanonicalHash(whole->engine),
      "the rebuilt message hashes otherwise when sent back: " + json::serialize(whole->native));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > (1 << 16)) return 0;
  const Codec c = CodecOf(data[0]);
  const bool stream = (data[0] & 0x04) != 0;
  const size_t piece = 1 + (data[0] >> 3);
  const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
  const size_t end1 = input.find('\0');
  const std::string_view body1 = input.substr(0, end1);
  std::string_view tail, answer;
  if (end1 != std::string_view::npos) {
    const std::string_view rest = input.substr(end1 + 1);
    const size_t end2 = rest.find('\0');
    tail = rest.substr(0, end2);
    if (end2 != std::string_view::npos) answer = rest.substr(end2 + 1);
  }
  const std::string body2 =
      std::string(body1.substr(0, body1.size() * data[1] / 255)) + std::string(tail);

  // Two caches that kept the first body: one compares the second after it arrived, the
  // other while it arrives; then the second is parsed again from itself.
  ParseCache after, watching;
  const Result<ParsedRequest> whole1 = c.parse(body1);
  CheckRefusal(whole1);
  Result<ParsedBody> cached1 = after.Parse(c.api, body1, c.parse);
  CheckSame(cached1, whole1, "first body");
  if (cached1.ok()) {
    CheckBuild(c, body1, *cached1);
    after.Keep(std::string(body1), std::move(*cached1));
    watching.Keep(std::string(body1), *watching.Parse(c.api, body1, c.parse));
  }
  const Result<ParsedRequest> whole2 = c.parse(body2);
  CheckRefusal(whole2);
  Result<ParsedBody> cached2 = after.Parse(c.api, body2, c.parse);
  CheckSame(cached2, whole2, "second body");
  if (cached2.ok()) {
    CheckBuild(c, body2, *cached2);
    after.Keep(body2, std::move(*cached2));
    CheckSame(after.Parse(c.api, body2, c.parse), whole2, "second body again");
  }
  if (std::shared_ptr<PrefixWatch> watch = watching.Watch(c.api)) {
    for (size_t at = 0; at < body2.size(); at += piece) {
      watch->Arrived(at, std::string_view(body2).substr(at, piece));
    }
    CheckSame(watching.Parse(c.api, body2, c.parse, watch), whole2,
              "second body, compared as it arrived");
  }

  if (!answer.empty()) CheckAnswer(c, stream, answer, piece);
  return 0;
}

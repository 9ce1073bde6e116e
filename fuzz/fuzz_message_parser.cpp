// Fuzzes the message model (core/message.h). Input: raw bytes. Whatever Boost.JSON
// accepts goes through ParseMessage, as one value and, for an array, element by element
// (a request's `messages`). Properties checked:
//  - a rejected message is kInvalidArgument naming a field under the given path;
//  - an accepted message survives MessageToJson -> text -> parse -> ParseMessage unchanged,
//    and serialises to the same text the second time;
//  - its content and tool calls survive the storage text forms (ContentToJsonText /
//    ContentFromJsonText, ToolCallsToJsonText / ToolCallsFromJsonText).
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/message.h"
#include "core/message_json.h"
#include "fuzz/fuzz_check.h"

namespace {

namespace json = boost::json;
using missy::Message;
using missy::Result;
using missy::Status;
using missy::StatusCode;

void CheckStorageForms(const Message& m, const std::string& serialised) {
  Message content_back;
  content_back.content_form = m.content_form == missy::ContentForm::kString
                                  ? missy::ContentForm::kNull
                                  : missy::ContentForm::kString;
  const std::string content_text = missy::ContentToJsonText(m);
  Status s = missy::ContentFromJsonText(content_text, content_back);
  MISSY_FUZZ_CHECK(s.ok(), "content " + content_text + ": " + s.ToString());
  MISSY_FUZZ_CHECK(content_back.content_form == m.content_form && content_back.text == m.text &&
                       content_back.parts == m.parts,
                   "content changed through " + content_text + " (message " + serialised + ")");

  const std::string calls_text = missy::ToolCallsToJsonText(m.tool_calls);
  Result<std::vector<missy::ToolCall>> calls = missy::ToolCallsFromJsonText(calls_text);
  MISSY_FUZZ_CHECK(calls.ok(), "tool calls " + calls_text + ": " + calls.status().ToString());
  MISSY_FUZZ_CHECK(*calls == m.tool_calls, "tool calls changed through " + calls_text);
}

void CheckOne(const json::value& v, std::string_view field) {
  Result<Message> parsed = missy::ParseMessage(v, field);
  if (!parsed.ok()) {
    const Status& s = parsed.status();
    MISSY_FUZZ_CHECK(s.code() == StatusCode::kInvalidArgument,
                     "rejection is not invalid_argument: " + s.ToString());
    MISSY_FUZZ_CHECK(
        s.field().rfind(field, 0) == 0 && !s.message().empty(),
        "rejection does not name a field under " + std::string(field) + ": " + s.ToString());
    return;
  }
  const Message& m = *parsed;
  const std::string text = json::serialize(missy::MessageToJson(m));
  boost::system::error_code ec;
  const json::value again = json::parse(text, ec);
  MISSY_FUZZ_CHECK(!ec, "MessageToJson output does not parse: " + text);
  Result<Message> reparsed = missy::ParseMessage(again, field);
  MISSY_FUZZ_CHECK(reparsed.ok(), "MessageToJson output is rejected: " + text + ": " +
                                      reparsed.status().ToString());
  MISSY_FUZZ_CHECK(*reparsed == m, "round trip changed the message: " + json::serialize(v) +
                                       " -> " + text + " -> " +
                                       json::serialize(missy::MessageToJson(*reparsed)));
  const std::string text_again = json::serialize(missy::MessageToJson(*reparsed));
  MISSY_FUZZ_CHECK(text_again == text,
                   "serialisation is not stable: " + text + " vs " + text_again);

  // Everything derived from an accepted message must be computable.
  (void)m.PlainText();
  (void)m.ImageCount();
  CheckStorageForms(m, text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  boost::system::error_code ec;
  const json::value v =
      json::parse(std::string_view(reinterpret_cast<const char*>(data), size), ec);
  if (ec) return 0;
  CheckOne(v, "message");
  if (v.is_array()) {
    const json::array& a = v.get_array();
    for (size_t i = 0; i < a.size(); ++i) {
      CheckOne(a[i], "messages[" + std::to_string(i) + "]");
    }
  }
  return 0;
}

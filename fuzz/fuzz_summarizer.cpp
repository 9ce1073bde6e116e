// Fuzzes the extractive summarizer (core/extractive_summarizer.h) and what it reads of a
// message (core/message_extract.h, core/artifact_extraction.h, core/summary_text.h).
// Input: byte 0 picks the target size; the rest, split at NUL bytes, becomes a
// conversation whose pieces are in turn a user message, a shell call's command (as JSON
// arguments and as a raw command line), its tool result, and an assistant text, so that
// the same bytes reach every scanner: paths, sed scripts, markup, error and listing lines.
// Properties checked:
//  - every message's extract decodes (ExtractDecodes), and a summary merged from the stored
//    extracts is the same text and trail as one that extracts in the call;
//  - the summary is valid UTF-8, `tokens` is its count, and for a budget of at least 64
//    tokens it counts at most min(target, source - 1) (the header's promise);
//  - condensing two copies of it keeps the same promises at the condensed target;
//  - the line classifiers accept any line;
//  - a middle-out cut that lists its cut part's error reports (core/truncation.h) stays
//    within its cap (unless only the marker is left), starts with the input's own bytes,
//    and is valid UTF-8 when the input is;
//  - a tool call's arguments cut to a cap (core/argument_truncation.h) are a JSON document
//    of the same kind when they were one, never count more than they did, and `tokens` is
//    their count.
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/argument_truncation.h"
#include "core/extractive_summarizer.h"
#include "core/summary_text.h"
#include "core/truncation.h"
#include "core/utf8.h"
#include "fuzz/fuzz_check.h"

namespace {

using missy::ExtractiveSummary;
using missy::Message;
using missy::MessageTokenCounter;
using missy::StoredMessage;

std::vector<Message> Conversation(std::string_view bytes) {
  std::vector<Message> out;
  size_t start = 0, turn = 0;
  while (start <= bytes.size()) {
    size_t end = bytes.find('\0', start);
    if (end == std::string_view::npos) end = bytes.size();
    const std::string piece(bytes.substr(start, end - start));
    const std::string id = "call_" + std::to_string(turn);
    switch (turn++ % 4) {
      case 0:
        out.push_back(Message::User(piece));
        break;
      case 1: {
        // JSON arguments when the piece is text JSON can hold, the raw line otherwise.
        const std::string args =
            missy::InvalidUtf8At(piece) == std::string::npos
                ? boost::json::serialize(boost::json::object{{"command", piece}})
                : piece;
        out.push_back(Message::AssistantCalls({{id, "function", "bash", args}}));
        out.push_back(Message::ToolResult(id, piece));
        break;
      }
      case 2:
        out.push_back(Message::AssistantCalls({{id, "function", "shell", piece}}));
        out.push_back(Message::ToolResult(id, piece));
        break;
      default:
        out.push_back(Message::Assistant(piece));
        break;
    }
    start = end + 1;
  }
  return out;
}

void CheckBounded(const ExtractiveSummary& s, int64_t target, const MessageTokenCounter& counter,
                  const char* what) {
  MISSY_FUZZ_CHECK(missy::InvalidUtf8At(s.text) == std::string::npos,
                   std::string(what) + " is not valid UTF-8");
  MISSY_FUZZ_CHECK(
      s.tokens == counter.CountText(s.text),
      std::string(what) + " tokens " + std::to_string(s.tokens) + " are not its count");
  const int64_t budget = std::min(target, s.source_tokens - 1);
  MISSY_FUZZ_CHECK(budget < 64 || s.tokens <= budget,
                   std::string(what) + " counts " + std::to_string(s.tokens) + " over its budget " +
                       std::to_string(budget) + ":\n" + s.text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 64 * 1024) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const MessageTokenCounter counter(std::make_shared<missy::HeuristicTokenCounter>());
  missy::ExtractiveOptions options;
  options.target_tokens = 64 + static_cast<int64_t>(data[0] % 8) * 100;

  std::vector<StoredMessage> plain, with_extracts;
  for (Message& m : Conversation(input.substr(1))) {
    StoredMessage s;
    s.seq = static_cast<int64_t>(plain.size()) + 1;
    s.tokens = counter.CountMessage(m);
    s.message = std::move(m);
    plain.push_back(s);
    s.extract = missy::ExtractMessage(s.message);
    MISSY_FUZZ_CHECK(missy::ExtractDecodes(s.extract),
                     "the extract of message " + std::to_string(s.seq) + " does not decode");
    with_extracts.push_back(std::move(s));
  }
  const ExtractiveSummary a = missy::SummarizeMessages(plain, "", options, counter);
  const ExtractiveSummary b = missy::SummarizeMessages(with_extracts, "", options, counter);
  MISSY_FUZZ_CHECK(a.text == b.text && a.artifacts == b.artifacts,
                   "stored extracts summarize otherwise:\n" + a.text + "\n---\n" + b.text);
  CheckBounded(a, options.target_tokens, counter, "the leaf");

  const std::vector<missy::ChildSummary> children = {{a.text, a.artifacts, a.tokens},
                                                     {a.text, a.artifacts, a.tokens}};
  missy::ExtractiveOptions condensed = options;
  condensed.target_tokens = options.target_tokens / 2 + 64;
  CheckBounded(missy::CondenseSummaries(children, condensed, counter), condensed.target_tokens,
               counter, "the condensed summary");

  missy::extractive::ForEachLine(input, [](std::string_view line) {
    (void)missy::extractive::ReportsError(line);
    (void)missy::extractive::NumberedListingLine(line);
  });

  const int64_t cap = 16 + static_cast<int64_t>(static_cast<unsigned char>(input[0])) * 4;
  const missy::TruncatedText cut = missy::TruncateMiddleOut(input, cap, counter, true);
  if (cut.truncated && cut.removed_tokens < cut.original_tokens) {
    MISSY_FUZZ_CHECK(cut.tokens <= cap, "a listed cut counts " + std::to_string(cut.tokens) +
                                            " tokens over its cap " + std::to_string(cap));
    const size_t head =  // an empty head: the marker first
        cut.text.starts_with("[...truncated ") ? 0 : cut.text.find("\n[...truncated ");
    MISSY_FUZZ_CHECK(head != std::string::npos && input.substr(0, head) == cut.text.substr(0, head),
                     "a listed cut does not start with the input's head");
  }
  if (missy::InvalidUtf8At(input) == std::string_view::npos) {
    MISSY_FUZZ_CHECK(missy::InvalidUtf8At(cut.text) == std::string_view::npos,
                     "a listed cut of valid UTF-8 is not valid UTF-8");
  }
  std::vector<std::string> arguments{std::string(input.substr(1))};
  if (missy::InvalidUtf8At(input) == std::string_view::npos) {
    arguments.push_back(boost::json::serialize(
        boost::json::object{{"path", "a.py"}, {"content", input}, {"lines", {input, "x"}}}));
  }
  for (const std::string& args : arguments) {
    const missy::TruncatedText t = missy::TruncateToolArguments(args, cap, counter);
    MISSY_FUZZ_CHECK(t.tokens == counter.CountText(t.text), "cut arguments miscount");
    MISSY_FUZZ_CHECK(t.tokens <= counter.CountText(args) || !t.truncated,
                     "cut arguments count more than the whole");
    boost::system::error_code ec;
    const boost::json::value before = boost::json::parse(args, ec);
    if (ec || !(before.is_object() || before.is_array())) continue;
    const boost::json::value after = boost::json::parse(t.text, ec);
    MISSY_FUZZ_CHECK(!ec && after.kind() == before.kind(),
                     "cut arguments are no longer one JSON document:\n" + t.text);
  }
  return 0;
}

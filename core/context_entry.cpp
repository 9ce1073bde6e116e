#include "core/context_entry.h"

#include <utility>
#include <vector>

#include "core/argument_truncation.h"
#include "core/pruning.h"
#include "core/truncation.h"

namespace missy::assembly {

Message WithText(const Message& m, std::string text) {
  Message out = m;
  if (m.content_form == ContentForm::kParts && m.ImageCount() > 0) {
    std::vector<ContentPart> parts;
    parts.push_back({ContentPart::Kind::kText, std::move(text), {}, {}});
    for (const ContentPart& p : m.parts) {
      if (p.kind == ContentPart::Kind::kImage) parts.push_back(p);
    }
    out.parts = std::move(parts);
    out.text.clear();
  } else {
    out.content_form = ContentForm::kString;
    out.text = std::move(text);
    out.parts.clear();
  }
  return out;
}

namespace {

// Rounds of "cut, count, cut further" for an assistant message (its markers and the
// arguments' escapes make the first estimate a little short now and then).
constexpr int kAssistantCutRounds = 4;

// An assistant message of an oversized last turn (a file written whole in a tool call's
// arguments, a long answer): its text and its calls' arguments share `cap`, the longest
// cut first to one common length (CutLevel), the arguments kept one JSON document; null
// when they fit `cap` as they are, or when no cut makes them shorter (values shorter than
// a marker).
std::unique_ptr<Message> CutAssistant(const Message& m, int64_t cap,
                                      const MessageTokenCounter& counter) {
  const std::string text = m.PlainText();
  std::vector<int64_t> sizes{counter.CountText(text)};
  for (const ToolCall& c : m.tool_calls) sizes.push_back(counter.CountText(c.arguments));
  int64_t whole = 0;
  for (int64_t n : sizes) whole += n;
  if (whole <= cap) return nullptr;
  auto out = std::make_unique<Message>(m);
  int64_t budget = cap, sent = whole;
  for (int round = 0; round < kAssistantCutRounds; ++round) {
    const int64_t level = CutLevel(sizes, budget);
    TruncatedText t;
    if (sizes[0] > level) t = TruncateMiddleOut(text, level, counter, /*list_cut_reports=*/true);
    if (t.truncated && t.tokens < sizes[0]) {  // a marker longer than a short text: keep it
      *out = WithText(m, std::move(t.text));
      sent = t.tokens;
    } else {
      *out = m;
      sent = sizes[0];
    }
    for (size_t i = 0; i < m.tool_calls.size(); ++i) {
      if (sizes[i + 1] <= level) {
        sent += sizes[i + 1];
        continue;
      }
      TruncatedText a = TruncateToolArguments(m.tool_calls[i].arguments, level, counter);
      out->tool_calls[i].arguments = std::move(a.text);
      sent += a.tokens;
    }
    if (sent <= cap || level == 0) break;
    budget -= sent - cap;
  }
  if (sent >= whole) return nullptr;
  return out;
}

}  // namespace

void Renderer::Render(Entry& e, int64_t cap) const {
  if (e.cap == cap) return;
  e.cap = cap;
  e.changed = false;
  if (e.pruned) {
    e.rendered = std::make_unique<Message>(PrunedMessage(*e.msg));
    e.changed = true;
    e.tokens = counter_.CountMessage(*e.rendered);
    return;
  }
  if (e.cut && e.msg->role == Role::kAssistant && e.stored_tokens > cap) {
    if (std::unique_ptr<Message> m = CutAssistant(*e.msg, cap, counter_)) {
      e.rendered = std::move(m);
      e.changed = true;
      e.tokens = counter_.CountMessage(*e.rendered);
      return;
    }
  }
  if ((e.msg->role == Role::kTool || (e.cut && e.msg->role != Role::kAssistant)) &&
      e.stored_tokens > cap) {
    // The cut part's error reports are listed in the marker: a build's one failing step
    // in the middle of its log stays in view.
    TruncatedText t = TruncateMiddleOut(e.msg->PlainText(), cap, counter_,
                                        /*list_cut_reports=*/true);
    if (t.truncated) {
      e.rendered = std::make_unique<Message>(WithText(*e.msg, std::move(t.text)));
      e.changed = true;
      e.tokens = counter_.CountMessage(*e.rendered);
      return;
    }
  }
  e.rendered.reset();
  e.tokens = e.stored_tokens;
}

}  // namespace missy::assembly

#include "core/context_entry.h"

#include <utility>
#include <vector>

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
  if ((e.msg->role == Role::kTool || e.cut) && e.stored_tokens > cap) {
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

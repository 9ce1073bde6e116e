// One message of a context being assembled (internal to the assembler's passes): the stored
// message, and how it is sent — whole, as the pruned placeholder, or with its text cut
// middle-out to a cap. Pure.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/message.h"
#include "core/token_counter.h"

namespace missy::assembly {

// One sendable message of the sanitized history (or the new message).
struct Entry {
  const Message* msg = nullptr;
  int64_t seq = 0;  // 0 for the new message
  int64_t stored_tokens = 0;
  bool pruned = false;  // render with the placeholder
  bool is_new = false;
  // The cap applies to its text whatever its role, and to an assistant's tool-call
  // arguments too (an oversized last turn).
  bool cut = false;
  // Rendering cache for one cap (entries stay small: most are never rendered).
  int64_t cap = -1;
  bool changed = false;
  std::unique_ptr<Message> rendered;  // set when changed
  int64_t tokens = 0;
};

// `m` with its text parts replaced by `text` (for truncation); images are kept after it.
Message WithText(const Message& m, std::string text);

class Renderer {
 public:
  explicit Renderer(const MessageTokenCounter& counter) : counter_(counter) {}

  // Renders `e` with tool outputs (and the text of an entry marked `cut`; an assistant's,
  // with its calls' arguments, share the cap) capped at `cap`
  // tokens (middle-out), or as the pruned placeholder; cached per cap.
  void Render(Entry& e, int64_t cap) const;

  const Message& Out(const Entry& e) const { return e.changed ? *e.rendered : *e.msg; }

 private:
  const MessageTokenCounter& counter_;
};

}  // namespace missy::assembly

// HistoryWindow: a session's history as the daemon keeps it in memory. The newest
// messages keep their content (the window); the older ones are folded
// (core/folded_history.h): seq, role, tokens and flags only. A context needs content only
// for what it can still keep, so memory and the cost of a context follow the window, not
// the stored history; when an assembly reaches the folded part (needs_more_history), the
// caller loads content from storage and unfolds. Pure data and logic, no I/O; not
// thread-safe (the owner serialises use, as a session's queue does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/folded_history.h"
#include "core/message.h"
#include "core/status.h"
#include "core/token_counter.h"

namespace missy {

// What a stored message costs in memory, content included (an estimate from the strings'
// sizes plus the fixed size of the structures).
size_t ApproxBytes(const StoredMessage& m);

// How much of the history keeps its content.
struct WindowKeep {
  // At least this context cost: tool outputs at most tool_cap, pruned ones nearly nothing
  // (a lower bound of what they cost in a context, so that the window never keeps too little).
  int64_t tokens = 60000;
  int64_t messages = 64;    // and at least this many messages
  int64_t tool_cap = 2516;  // a tool output's cost in a context, at most
  // Fold only once the window holds `slack` times what it must keep (amortises folds:
  // each one costs a sanitizer pass over the folded messages).
  double slack = 2.0;
};

class HistoryWindow {
 public:
  const FoldedHistory& folded() const { return folded_; }
  // The messages after the folded part, in seq order; begins with a safe cut
  // (IsSafeFoldCut) when something is folded. Callers may borrow it (move it out and
  // back) but must not change which messages it holds.
  std::vector<StoredMessage>& window() { return window_; }
  const std::vector<StoredMessage>& window() const { return window_; }
  int64_t last_seq() const { return last_seq_; }
  size_t message_count() const { return folded_.size() + window_.size(); }
  // The plain text of the newest user message (first 4,096 bytes), wherever it is.
  const std::string& last_user_text() const { return last_user_text_; }
  // The session's task: the newest message flagged kFlagPinned, else the first user
  // message (null when there is neither), wherever it is.
  const StoredMessage* task() const { return task_ ? &*task_ : nullptr; }

  // How much Fold keeps (the context path sets it from the session's budget).
  const WindowKeep& keep() const { return keep_; }
  void set_keep(const WindowKeep& keep);

  // Appends committed messages; false (and nothing changed) unless they continue it.
  bool Append(std::vector<StoredMessage> rows);
  void AddFlags(const std::vector<int64_t>& seqs, uint32_t flags);
  // Folds the oldest window messages once the window holds more than keep().slack times
  // keep(), down to about keep(), at a safe cut. Returns whether it folded anything.
  // `shown_from` (0: none) is the first seq a context may show while the eviction anchor
  // holds: the messages before it are folded too, once they are at least as many as the
  // ones after it (a fold is a sanitizer pass over what it folds: amortised), keeping
  // keep().messages. A context that reaches back past it (the anchor reset) widens the
  // window again (needs_more_history), as for any folded part.
  bool Fold(const MessageTokenCounter& counter, int64_t shown_from = 0);
  // Where to load content from to widen the window: the seq of a safe cut among the
  // folded messages that about doubles the window (the first seq when there is none).
  // 0 when nothing is folded.
  int64_t WidenFrom() const;
  // Gives content back to folded messages: `rows` are the stored messages from a safe
  // cut (or the first message) up to the window's first, in seq order.
  Status Unfold(std::vector<StoredMessage> rows);

  // Memory held, content included (kept up to date by the operations above).
  size_t ApproxBytes() const {
    return window_bytes_ + folded_.ApproxBytes() + sizeof(*this) +
           (task_ ? missy::ApproxBytes(*task_) : 0) + last_user_text_.capacity();
  }

 private:
  void NoteUserText(const StoredMessage& m);
  int64_t Cost(const StoredMessage& m) const;  // in a context, at most (keep_.tool_cap)

  FoldedHistory folded_;
  WindowKeep keep_;
  std::vector<StoredMessage> window_;
  size_t window_bytes_ = 0;
  int64_t window_cost_ = 0;  // sum of Cost over window_ (kept up to date: Fold is O(1)
                             // until there is something to fold)
  int64_t last_seq_ = 0;
  std::string last_user_text_;
  std::optional<StoredMessage> task_;
};

}  // namespace missy

// The assembler's pinned task (ContextInput::task; core/assembly_state.h): what it costs
// sent on its own, and its place right after the fresh tail's room.
#include <algorithm>
#include <string>
#include <utility>

#include "core/assembly_state.h"
#include "core/truncation.h"

namespace missy::assembly {

int64_t PinnedTaskCost(AssemblyState& s) {
  if (!s.pinned_task) {
    std::string text = s.in.task->message.PlainText();
    const int64_t task_cap = std::max<int64_t>(1, s.in.task_max_tokens);
    if (s.counter.CountText(text) > task_cap) {
      text = TruncateMiddleOut(text, task_cap, s.counter).text;
      s.ctx.report.task_truncated = true;
    }
    s.pinned_task = Message::User(TaskHeader(s.in.task->seq) + "\n" + text);
    s.pinned_task_tokens = s.counter.CountMessage(*s.pinned_task);
  }
  return s.pinned_task_tokens;
}

bool TaskInTail(const AssemblyState& s) {
  bool found = false;
  for (size_t i = s.tail_start; i < s.n_hist_entries && !found; ++i) {
    found = s.entries[i].seq == s.ctx.report.task_seq;
  }
  return found;
}

int64_t TaskHeaderCost(const AssemblyState& s) {
  return s.counter.CountMessage(Message::User(TaskHeader(s.ctx.report.task_seq) + "\n"));
}

void PinTask(AssemblyState& s) {
  ContextReport& r = s.ctx.report;
  if (s.pin_task) {
    // AddMemoryAndLearnings measured it (PinnedTaskCost) for its room.
    if (s.pinned_task_tokens > s.remaining) {
      const int64_t header = TaskHeaderCost(s);
      const std::string text = s.in.task->message.PlainText();
      int64_t room = s.remaining - header;
      for (int attempt = 0; attempt < 8 && room > 0 && s.pinned_task_tokens > s.remaining;
           ++attempt) {
        s.pinned_task = Message::User(TaskHeader(r.task_seq) + "\n" +
                                      TruncateMiddleOut(text, room, s.counter).text);
        s.pinned_task_tokens = s.counter.CountMessage(*s.pinned_task);
        room -= std::max<int64_t>(1, s.pinned_task_tokens - s.remaining);
        r.task_truncated = true;
      }
    }
    if (s.pinned_task_tokens <= s.remaining) {
      s.remaining -= s.pinned_task_tokens;
      r.task_tokens = s.pinned_task_tokens;
      s.task_message = std::move(s.pinned_task);
    }
  }
  if (!s.task_message) r.task_truncated = false;
}

}  // namespace missy::assembly

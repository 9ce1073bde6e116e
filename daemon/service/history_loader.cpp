#include "daemon/service/history_loader.h"

#include <algorithm>

#include "core/assembler.h"
#include "storage/message_store.h"

namespace missy {

namespace {

constexpr int64_t kLoadPage = 2048;  // messages per read while loading

}  // namespace

WindowKeep KeepFor(const DaemonConfig& config, int64_t total) {
  WindowKeep keep;
  keep.tokens = 2 * std::max<int64_t>(total, 1);
  keep.messages = std::max<int64_t>(64, 4 * config.budget.fresh_tail_count);
  keep.tool_cap = config.context.tool_output_max_tokens + kTruncationSlack;
  return keep;
}

Result<HistoryWindow> LoadHistoryWindow(MessageStore& messages, const std::string& session_id,
                                        const WindowKeep& keep,
                                        const MessageTokenCounter& counter) {
  HistoryWindow window;
  window.set_keep(keep);
  for (int64_t after = 0;;) {
    Result<std::vector<StoredMessage>> page = messages.Load(session_id, after, kLoadPage);
    if (!page.ok()) return page.status();
    if (page->empty()) break;
    const bool last_page = static_cast<int64_t>(page->size()) < kLoadPage;
    after = page->back().seq;
    if (!window.Append(std::move(*page))) {
      return Status::Corruption("session '" + session_id + "': stored seqs are not consecutive");
    }
    window.Fold(counter);
    if (last_page) break;
  }
  return window;
}

Status WidenHistoryWindow(HistoryWindow& window, MessageStore& messages,
                          const std::string& session_id) {
  const int64_t from = window.WidenFrom();
  if (from == 0) return Status::Internal("nothing folded to widen");
  const int64_t to = window.window().empty() ? window.last_seq() : window.window().front().seq - 1;
  Result<std::vector<StoredMessage>> rows = messages.LoadRange(session_id, from, to);
  if (!rows.ok()) return rows.status();
  return window.Unfold(std::move(*rows));
}

}  // namespace missy

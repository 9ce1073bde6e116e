#include "core/history_window.h"

#include <algorithm>
#include <iterator>

namespace missy {

size_t ApproxBytes(const StoredMessage& m) {
  size_t bytes = sizeof(StoredMessage) + m.message.text.capacity() +
                 m.message.tool_call_id.capacity() + m.message.name.capacity() +
                 m.extract.capacity();  // caches hold none; counted should one be there
  for (const ContentPart& p : m.message.parts) {
    bytes += sizeof(ContentPart) + p.text.capacity() + p.image_url.capacity() + p.detail.capacity();
  }
  for (const ToolCall& c : m.message.tool_calls) {
    bytes += sizeof(ToolCall) + c.id.capacity() + c.type.capacity() + c.name.capacity() +
             c.arguments.capacity();
  }
  return bytes;
}

namespace {

constexpr size_t kUserTextBytes = 4096;

constexpr int64_t kPrunedCostFloor = 8;  // below what the placeholder message costs

}  // namespace

int64_t HistoryWindow::Cost(const StoredMessage& m) const {
  if (m.message.role != Role::kTool) return m.tokens;
  if ((m.flags & kFlagPruned) != 0) return std::min(m.tokens, kPrunedCostFloor);
  return std::min(m.tokens, keep_.tool_cap);
}

void HistoryWindow::set_keep(const WindowKeep& keep) {
  const bool recount = keep.tool_cap != keep_.tool_cap;
  keep_ = keep;
  if (!recount) return;
  window_cost_ = 0;
  for (const StoredMessage& m : window_) window_cost_ += Cost(m);
}

void HistoryWindow::NoteUserText(const StoredMessage& m) {
  if ((m.flags & kFlagPinned) != 0) {
    task_ = m;
  } else if (!task_ && m.message.role == Role::kUser) {
    task_ = m;
  }
  if (m.message.role != Role::kUser) return;
  last_user_text_ = m.message.PlainText();
  if (last_user_text_.size() > kUserTextBytes) {
    // Keep whole UTF-8 sequences: back up over continuation bytes.
    size_t cut = kUserTextBytes;
    while (cut > 0 && (static_cast<unsigned char>(last_user_text_[cut]) & 0xC0) == 0x80) --cut;
    last_user_text_.resize(cut);
  }
}

bool HistoryWindow::Append(std::vector<StoredMessage> rows) {
  if (rows.empty()) return true;
  if (rows.front().seq != last_seq_ + 1) return false;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].seq != rows[i - 1].seq + 1) return false;
  }
  for (const StoredMessage& m : rows) {
    window_bytes_ += missy::ApproxBytes(m);
    window_cost_ += Cost(m);
    NoteUserText(m);
  }
  last_seq_ = rows.back().seq;
  window_.insert(window_.end(), std::make_move_iterator(rows.begin()),
                 std::make_move_iterator(rows.end()));
  return true;
}

void HistoryWindow::AddFlags(const std::vector<int64_t>& seqs, uint32_t flags) {
  const int64_t first_window_seq = window_.empty() ? last_seq_ + 1 : window_.front().seq;
  std::vector<int64_t> older;
  for (int64_t seq : seqs) {
    if (seq < first_window_seq) {
      older.push_back(seq);
      continue;
    }
    auto m = std::lower_bound(window_.begin(), window_.end(), seq,
                              [](const StoredMessage& a, int64_t s) { return a.seq < s; });
    if (m != window_.end() && m->seq == seq) {
      window_cost_ -= Cost(*m);
      m->flags |= flags;
      window_cost_ += Cost(*m);
    }
  }
  if (!older.empty()) folded_.AddFlags(older, flags);
}

bool HistoryWindow::Fold(const MessageTokenCounter& counter, int64_t shown_from) {
  const WindowKeep& keep = keep_;
  const auto n = static_cast<int64_t>(window_.size());
  if (static_cast<double>(n) <= keep.slack * static_cast<double>(keep.messages)) return false;
  size_t cut = 0;
  if (static_cast<double>(window_cost_) > keep.slack * static_cast<double>(keep.tokens)) {
    // The newest messages that cost at least keep.tokens and number at least
    // keep.messages.
    int64_t cost = 0;
    cut = window_.size();
    while (cut > 0 &&
           (cost < keep.tokens || static_cast<int64_t>(window_.size() - cut) < keep.messages)) {
      cost += Cost(window_[--cut]);
    }
  }
  if (shown_from > window_.front().seq) {
    // Seqs are consecutive: the window's index of shown_from is a subtraction.
    const int64_t before = std::min(shown_from - window_.front().seq, n - keep.messages);
    if (before >= n - before) cut = std::max(cut, static_cast<size_t>(before));
  }
  // Extended back to a safe cut.
  while (cut > 0 && !IsSafeFoldCut(window_[cut].message)) --cut;
  if (cut == 0) return false;
  folded_.Fold(std::span<const StoredMessage>(window_.data(), cut), counter);
  for (size_t i = 0; i < cut; ++i) {
    window_bytes_ -= missy::ApproxBytes(window_[i]);
    window_cost_ -= Cost(window_[i]);
  }
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(cut));
  window_.shrink_to_fit();  // give the folded messages' slots back, too
  return true;
}

int64_t HistoryWindow::WidenFrom() const {
  const std::vector<FoldedMessage>& f = folded_.messages();
  if (f.empty()) return 0;
  const size_t more = std::max<size_t>(window_.size(), 64);
  size_t i = f.size() > more ? f.size() - more : 0;
  while (i > 0 && !f[i].safe_cut) --i;
  return f[i].seq;
}

Status HistoryWindow::Unfold(std::vector<StoredMessage> rows) {
  const std::vector<FoldedMessage>& f = folded_.messages();
  if (rows.empty()) return Status::Ok();
  const int64_t first = rows.front().seq;
  auto at = std::lower_bound(f.begin(), f.end(), first,
                             [](const FoldedMessage& m, int64_t s) { return m.seq < s; });
  if (at == f.end() || at->seq != first || !(at == f.begin() || at->safe_cut)) {
    return Status::InvalidArgument("unfold must start at a folded safe cut (seq " +
                                   std::to_string(first) + ")");
  }
  const int64_t expected_last = window_.empty() ? last_seq_ : window_.front().seq - 1;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].seq != rows[i - 1].seq + 1) {
      return Status::InvalidArgument("unfolded messages must be consecutive");
    }
  }
  if (rows.back().seq != expected_last) {
    return Status::InvalidArgument("unfolded messages must end right before the window (seq " +
                                   std::to_string(expected_last) + ")");
  }
  folded_.Unfold(first);
  for (const StoredMessage& m : rows) {
    window_bytes_ += missy::ApproxBytes(m);
    window_cost_ += Cost(m);
  }
  window_.insert(window_.begin(), std::make_move_iterator(rows.begin()),
                 std::make_move_iterator(rows.end()));
  return Status::Ok();
}

}  // namespace missy

#include "core/folded_history.h"

#include <algorithm>

#include "core/sanitizer.h"

namespace missy {

SeqRanges MergeRanges(SeqRanges ranges) {
  std::sort(ranges.begin(), ranges.end());
  SeqRanges merged;
  for (const auto& r : ranges) {
    if (r.first > r.second) continue;
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

bool RangesCover(const SeqRanges& ranges, int64_t seq) {
  auto it =
      std::upper_bound(ranges.begin(), ranges.end(), seq,
                       [](int64_t s, const std::pair<int64_t, int64_t>& r) { return s < r.first; });
  if (it == ranges.begin()) return false;
  --it;
  return seq >= it->first && seq <= it->second;
}

void FoldedHistory::Fold(std::span<const StoredMessage> messages,
                         const MessageTokenCounter& counter) {
  if (messages.empty()) return;
  memo_key_.reset();
  SanitizeResult s = SanitizeForProvider(
      messages.size(), [&](size_t i) -> const Message& { return messages[i].message; },
      end_state());
  int64_t rank = kept_count();
  size_t k = 0;
  messages_.reserve(messages_.size() + messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const StoredMessage& sm = messages[i];
    FoldedMessage f;
    f.seq = sm.seq;
    f.tokens = sm.tokens > 0 ? sm.tokens : counter.CountMessage(sm.message);
    f.flags = sm.flags;
    f.role = sm.message.role;
    f.safe_cut = IsSafeFoldCut(sm.message);
    f.kept = k < s.kept.size() && s.kept[k] == i;
    if (f.kept) ++k;
    f.kept_rank = rank;
    if (f.kept) ++rank;
    if (f.kept && f.role == Role::kUser) ++kept_users_;
    if (f.role == Role::kTool) {
      f.id_name_tokens =
          counter.CountText(sm.message.tool_call_id) + counter.CountText(sm.message.name);
    }
    messages_.push_back(f);
  }
  for (DroppedMessage& d : s.dropped) {
    sanitized_.push_back({messages[d.index].seq, std::move(d.tool_call_id),
                          std::string(DropReasonName(d.reason)), std::move(d.detail)});
  }
}

SanitizeStart FoldedHistory::end_state() const {
  for (auto it = messages_.rbegin(); it != messages_.rend(); ++it) {
    if (it->kept) return SanitizeStart{true, it->role};
  }
  return SanitizeStart{};
}

void FoldedHistory::Unfold(int64_t first_seq) {
  memo_key_.reset();
  auto m = std::lower_bound(messages_.begin(), messages_.end(), first_seq,
                            [](const FoldedMessage& f, int64_t s) { return f.seq < s; });
  for (auto it = m; it != messages_.end(); ++it) {
    if (it->kept && it->role == Role::kUser) --kept_users_;
  }
  messages_.erase(m, messages_.end());
  auto d = std::lower_bound(sanitized_.begin(), sanitized_.end(), first_seq,
                            [](const SanitizedItem& x, int64_t s) { return x.seq < s; });
  sanitized_.erase(d, sanitized_.end());
}

void FoldedHistory::AddFlags(const std::vector<int64_t>& seqs, uint32_t flags) {
  bool changed = false;
  for (int64_t seq : seqs) {
    auto m = std::lower_bound(messages_.begin(), messages_.end(), seq,
                              [](const FoldedMessage& f, int64_t s) { return f.seq < s; });
    if (m != messages_.end() && m->seq == seq && (m->flags & flags) != flags) {
      m->flags |= flags;
      changed = true;
    }
  }
  if (changed) memo_key_.reset();
}

int64_t FoldedHistory::kept_count() const {
  if (messages_.empty()) return 0;
  return messages_.back().kept_rank + (messages_.back().kept ? 1 : 0);
}

size_t FoldedHistory::ApproxBytes() const {
  size_t bytes = messages_.capacity() * sizeof(FoldedMessage) +
                 memo_.costs.capacity() * sizeof(FoldedCost) +
                 (memo_.tool_before.capacity() + memo_.freed_before.capacity()) * sizeof(int64_t) +
                 memo_.users.capacity() * sizeof(uint32_t);
  for (const SanitizedItem& s : sanitized_) {
    bytes += sizeof(SanitizedItem) + s.tool_call_id.capacity() + s.reason.capacity() +
             s.detail.capacity();
  }
  return bytes;
}

// Calls f(message, sent, pruned) for each kept message of a group no summary covers,
// oldest first. A group is a kept non-tool message and the kept tool results after it;
// it is covered when a summary covers any of its members (as in the assembler).
template <typename F>
void FoldedHistory::ForEachUncovered(const FoldedStatsKey& key, F&& f) const {
  const SeqRanges& ranges = key.summaries;
  size_t ri = 0;  // first range that may still cover a seq >= the current one
  auto covered = [&](int64_t seq) {
    while (ri < ranges.size() && ranges[ri].second < seq) ++ri;
    return ri < ranges.size() && ranges[ri].first <= seq;
  };
  auto emit = [&](size_t begin, size_t end) {
    for (size_t j = begin; j < end; ++j) {
      const FoldedMessage& m = messages_[j];
      if (!m.kept) continue;
      const bool tool = m.role == Role::kTool;
      const bool pruned = tool && (m.flags & kFlagPruned) != 0;
      const int64_t pruned_cost = key.pruned_base + m.id_name_tokens;
      const int64_t sent = pruned ? pruned_cost
                           : tool ? std::min(m.tokens, key.tool_cap)
                                  : m.tokens;
      f(m, sent, (tool && !pruned) ? pruned_cost : sent);
    }
  };
  size_t group_begin = 0;
  bool group_covered = false;
  bool in_group = false;
  for (size_t i = 0; i < messages_.size(); ++i) {
    const FoldedMessage& m = messages_[i];
    if (!m.kept) continue;
    if (!in_group || m.role != Role::kTool) {
      if (in_group && !group_covered) emit(group_begin, i);
      group_begin = i;
      group_covered = false;
      in_group = true;
    }
    if (!group_covered && covered(m.seq)) group_covered = true;
  }
  if (in_group && !group_covered) emit(group_begin, messages_.size());
}

const FoldedStats& FoldedHistory::Stats(const FoldedStatsKey& key) const {
  if (memo_key_ && *memo_key_ == key) return memo_;
  FoldedStats st;
  st.kept = kept_count();
  st.tool_before.push_back(0);
  st.freed_before.push_back(0);
  ForEachUncovered(key, [&](const FoldedMessage& m, int64_t sent, int64_t pruned) {
    const bool unpruned_tool = m.role == Role::kTool && (m.flags & kFlagPruned) == 0;
    if (m.role == Role::kUser) st.users.push_back(static_cast<uint32_t>(st.costs.size()));
    st.costs.push_back({m.seq, sent, pruned, m.role, unpruned_tool});
    st.tool_before.push_back(st.tool_before.back() + (unpruned_tool ? sent : 0));
    st.freed_before.push_back(st.freed_before.back() +
                              (unpruned_tool && pruned < sent ? sent - pruned : 0));
    ++st.uncovered;
    st.demand += sent;
  });
  memo_ = std::move(st);
  memo_key_ = key;
  return memo_;
}

FoldedPrune FoldedHistory::ContinuePruneWalk(const FoldedStatsKey& key,
                                             const PruningOptions& options, int64_t users_seen,
                                             int64_t tool_total) const {
  const FoldedStats& st = Stats(key);
  if (!options.enabled) return {};
  // The walk counts tool output from the protect_user_turns-th user message on (newest
  // first): costs[0, counted) here.
  size_t counted = st.costs.size();
  const int64_t need = options.protect_user_turns - users_seen;
  if (need > 0) {
    if (static_cast<int64_t>(st.users.size()) < need) return {};
    counted = st.users[st.users.size() - static_cast<size_t>(need)] + 1;
  }
  // Reaching costs[j] (j < counted) the walk has counted tool_total + tool_before[counted] -
  // tool_before[j]; a result there is a candidate once that exceeds the protection, which
  // holds for every j below the first with tool_before[j] >= limit.
  const int64_t limit = tool_total + st.tool_before[counted] - options.protect_tool_tokens;
  const auto first = st.tool_before.begin();
  const size_t end = static_cast<size_t>(std::lower_bound(first, first + counted, limit) - first);
  return {end, st.freed_before[end]};
}

std::vector<int64_t> FoldedHistory::PruneSeqs(const FoldedStatsKey& key,
                                              const FoldedPrune& prune) const {
  const FoldedStats& st = Stats(key);
  std::vector<int64_t> seqs;
  for (size_t j = 0; j < prune.end; ++j) {
    const FoldedCost& c = st.costs[j];
    if (c.unpruned_tool && c.pruned < c.sent) seqs.push_back(c.seq);
  }
  return seqs;
}

int64_t FoldedHistory::CountKeptIn(const SeqRanges& ranges) const {
  auto rank_at = [&](int64_t seq) {  // kept messages with seq < `seq`
    auto it = std::lower_bound(messages_.begin(), messages_.end(), seq,
                               [](const FoldedMessage& f, int64_t s) { return f.seq < s; });
    return it == messages_.end() ? kept_count() : it->kept_rank;
  };
  int64_t n = 0;
  for (const auto& [first, last] : ranges) n += rank_at(last + 1) - rank_at(first);
  return n;
}

std::optional<FoldedHistory::LastGroup> FoldedHistory::LastKeptGroup(
    const SeqRanges& ranges) const {
  std::optional<LastGroup> out;
  for (size_t i = messages_.size(); i > 0; --i) {
    const FoldedMessage& m = messages_[i - 1];
    if (!m.kept) continue;
    if (!out) out.emplace();
    out->first_seq = m.seq;
    if (RangesCover(ranges, m.seq)) out->covered = true;
    if (m.role != Role::kTool) break;
  }
  return out;
}

}  // namespace missy

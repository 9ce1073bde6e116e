#include "core/assembler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>

#include "core/context_entry.h"
#include "core/context_summaries.h"
#include "core/groups.h"
#include "core/sanitizer.h"
#include "core/truncation.h"

namespace missy {

std::string FormatIsoUtcSeconds(int64_t epoch_ms) {
  using namespace std::chrono;
  const sys_seconds tp{seconds{epoch_ms >= 0 ? epoch_ms / 1000 : (epoch_ms - 999) / 1000}};
  const sys_days day = floor<days>(tp);
  const year_month_day ymd{day};
  const hh_mm_ss hms{tp - day};
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

std::string SummaryHeader(const SummaryView& s) {
  return "[Conversation Summary — depth " + std::to_string(s.depth) + ", " +
         std::to_string(s.message_count) + " messages, covers " + FormatIsoUtcSeconds(s.start_ms) +
         " to " + FormatIsoUtcSeconds(s.end_ms) +
         (s.id.empty() ? "" : "; id " + s.id + ", originals via missy_recall") + "]";
}

std::string TaskHeader(int64_t seq) {
  return "[Session task — message " + std::to_string(seq) + ", pinned]";
}

namespace {

using assembly::Entry;
using assembly::Renderer;

// What a last turn cut to fit leaves the pinned task at least, besides its header: the
// cut marker and a little of its text.
constexpr int64_t kTaskCutFloor = 128;

constexpr char kMemoryHeading[] = "## Relevant Memory";
constexpr char kLearningsHeading[] = "## Past Learnings";

std::string JoinSystem(const std::string& base, const std::string& memory,
                       const std::string& learnings) {
  std::string out = base;
  for (const std::string* section : {&memory, &learnings}) {
    if (section->empty()) continue;
    if (!out.empty()) out += "\n\n";
    out += *section;
  }
  return out;
}

// Longest UTF-8 prefix of `text` for which fits(prefix) holds (fits must be monotone).
template <typename Fits>
size_t LongestFittingPrefix(std::string_view text, const Fits& fits) {
  size_t lo = 0, hi = text.size();
  while (lo < hi) {
    size_t mid = Utf8BoundaryAtOrBefore(text, lo + (hi - lo + 1) / 2);
    if (mid <= lo) {
      mid = Utf8BoundaryAtOrAfter(text, lo + 1);
      if (mid > hi) break;
    }
    if (fits(text.substr(0, mid))) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return Utf8BoundaryAtOrBefore(text, lo);
}

std::string Num(int64_t v) { return std::to_string(v); }

}  // namespace

Result<AssembledContext> AssembleContext(const ContextInput& in,
                                         const MessageTokenCounter& counter) {
  if (Status s = in.budget.Validate(); !s.ok()) return s;
  if (in.tool_output_max_tokens <= 0) {
    return Status::InvalidArgument("must be positive", "tool_output_max_tokens");
  }
  if (!(in.threshold_pct >= 0.0 && in.threshold_pct <= 1.0)) {
    return Status::InvalidArgument("must be between 0 and 1", "threshold_pct");
  }
  AssembledContext ctx;
  ContextReport& r = ctx.report;
  const TokenBudget& b = in.budget;
  const Renderer renderer(counter);
  r.context_window = in.context_window;
  r.max_output_tokens = in.max_output_tokens;
  r.total = b.total;

  // 1. Fixed parts: system prompt and tool definitions, measured or reserved.
  r.system_measured = !in.system_prompt.empty();
  const int64_t base_system_cost =
      r.system_measured ? counter.CountMessage(Message::System(in.system_prompt)) : 0;
  r.system_tokens = r.system_measured ? base_system_cost : b.system_reserve;
  r.tools_measured = in.tool_tokens >= 0;
  r.tool_tokens = r.tools_measured ? in.tool_tokens : b.tool_definitions_reserve;
  r.available = b.total - r.system_tokens - r.tool_tokens;
  if (r.available < 0) {
    return Status::ContextOverflow("system prompt (" + Num(r.system_tokens) +
                                   " tokens) and tool definitions (" + Num(r.tool_tokens) +
                                   " tokens) exceed the budget of " + Num(b.total) + " tokens");
  }

  // 2. Sanitize history + new message together (the new message may answer a call).
  const size_t n_hist = in.history.size();
  const bool has_new = in.new_message.has_value();
  const size_t n_all = n_hist + (has_new ? 1 : 0);
  const MessageAt at = [&](size_t i) -> const Message& {
    return i < n_hist ? in.history[i].message : *in.new_message;
  };
  SanitizeResult sanitized = SanitizeForProvider(n_all, at);
  const FoldedHistory* folded = in.folded != nullptr && !in.folded->empty() ? in.folded : nullptr;
  if (folded != nullptr) r.sanitized = folded->sanitized();
  for (const DroppedMessage& d : sanitized.dropped) {
    r.sanitized.push_back({d.index < n_hist ? in.history[d.index].seq : 0, d.tool_call_id,
                           std::string(DropReasonName(d.reason)), d.detail});
    if (d.index == n_hist) r.new_message_dropped = true;
  }
  std::vector<Entry> entries;
  entries.reserve(sanitized.kept.size());
  for (size_t i : sanitized.kept) {
    Entry e;
    e.msg = &at(i);
    if (i < n_hist) {
      const StoredMessage& sm = in.history[i];
      e.seq = sm.seq;
      e.stored_tokens = sm.tokens > 0 ? sm.tokens : counter.CountMessage(sm.message);
      e.pruned = (sm.flags & kFlagPruned) != 0 && sm.message.role == Role::kTool;
    } else {
      e.is_new = true;
      e.stored_tokens = counter.CountMessage(*e.msg);
    }
    entries.push_back(std::move(e));
  }
  const size_t n_entries = entries.size();
  const size_t n_hist_entries =
      (n_entries > 0 && entries.back().is_new) ? n_entries - 1 : n_entries;
  const MessageAt entry_at = [&](size_t i) -> const Message& { return *entries[i].msg; };
  const std::vector<GroupSpan> groups = ComputeGroups(n_entries, entry_at);

  // 3. Coverage by any given summary (for the demand and the pruning decision).
  SeqRanges any_summary;
  for (const SummaryView& s : in.summaries) any_summary.push_back({s.first_seq, s.last_seq});
  any_summary = MergeRanges(std::move(any_summary));
  std::vector<char> covered_any(n_entries, 0);
  for (const GroupSpan& g : groups) {
    bool covered = false;
    for (size_t i = g.begin; i < g.end && !covered; ++i) {
      covered = !entries[i].is_new && RangesCover(any_summary, entries[i].seq);
    }
    if (covered) std::fill(covered_any.begin() + g.begin, covered_any.begin() + g.end, 1);
  }

  // 4. Demand and thresholds (stored sizes; sticky pruning applied).
  // CountMessage(PrunedMessage(m)) without building it (a string-content tool message:
  // overhead + placeholder + tool_call_id + name); rendering counts the real message.
  const int64_t placeholder_tokens = counter.CountText(kPrunedPlaceholder);
  auto pruned_cost = [&](const Entry& e) {
    return counter.options().per_message_overhead + placeholder_tokens +
           counter.CountText(e.msg->tool_call_id) + counter.CountText(e.msg->name);
  };
  // What a message costs once sent, without rendering it: rule 6 caps a long tool output
  // at tool_output_max_tokens (+ kTruncationSlack for framing), pruned ones cost the
  // placeholder. Used for the demand, the zone and the pruning decision, so that they
  // reflect the context rather than storage.
  auto sent_estimate = [&](const Entry& e) {
    if (e.pruned) return pruned_cost(e);
    if (e.msg->role == Role::kTool) {
      return std::min(e.stored_tokens, in.tool_output_max_tokens + kTruncationSlack);
    }
    return e.stored_tokens;
  };
  const int64_t full_history_budget = b.HistoryBudget(r.available);
  r.threshold_tokens =
      static_cast<int64_t>(static_cast<double>(full_history_budget) * in.threshold_pct);
  int64_t demand = 0;
  for (size_t i = 0; i < n_entries; ++i) {
    if (covered_any[i]) continue;
    const Entry& e = entries[i];
    if (!e.is_new) ++r.uncovered_messages;
    demand += sent_estimate(e);
  }
  const FoldedStatsKey folded_key{in.tool_output_max_tokens + kTruncationSlack,
                                  counter.options().per_message_overhead + placeholder_tokens,
                                  any_summary};
  const FoldedStats* folded_stats = folded != nullptr ? &folded->Stats(folded_key) : nullptr;
  if (folded_stats != nullptr) {
    r.uncovered_messages += folded_stats->uncovered;
    demand += folded_stats->demand;
  }

  // 5. Old tool output pruning (rule 5), decided over the uncovered history.
  if (demand > r.threshold_tokens && in.pruning.enabled) {
    PruneWalk walk(in.pruning);
    std::vector<size_t> walked;  // entries stepped, newest first
    for (size_t i = n_hist_entries; i > 0; --i) {
      if (covered_any[i - 1]) continue;
      const Entry& e = entries[i - 1];
      PruneEntry p;
      p.seq = e.seq;
      p.role = e.msg->role;
      p.tokens = sent_estimate(e);
      p.already_pruned = e.pruned;
      p.pruned_tokens = (p.role == Role::kTool && !e.pruned) ? pruned_cost(e) : p.tokens;
      walk.Step(p);
      walked.push_back(i - 1);
    }
    if (folded_stats != nullptr) {
      // The folded part's candidates in bulk; their seqs only when pruning will happen.
      const FoldedPrune older =
          folded->ContinuePruneWalk(folded_key, in.pruning, walk.user_turns(), walk.tool_total());
      if (older.freed > 0 && walk.freed() + older.freed >= in.pruning.minimum_freed_tokens) {
        walk.AddOlder(folded->PruneSeqs(folded_key, older), older.freed);
      } else {
        walk.AddOlder({}, older.freed);
      }
    }
    PruneDecision decision = walk.Finish();
    if (!decision.seqs.empty()) {
      // Both ascending: mark the window's entries among the decided seqs.
      size_t k = 0;
      for (auto w = walked.rbegin(); w != walked.rend(); ++w) {
        Entry& e = entries[*w];
        while (k < decision.seqs.size() && decision.seqs[k] < e.seq) ++k;
        if (k < decision.seqs.size() && decision.seqs[k] == e.seq) e.pruned = true;
      }
      r.newly_pruned_seqs = std::move(decision.seqs);
      r.pruned_freed_tokens = decision.freed_tokens;
      demand -= decision.freed_tokens;
    }
  }
  r.history_demand_tokens = demand;
  r.zone = demand < r.threshold_tokens     ? "safe"
           : demand <= full_history_budget ? "warning"
                                           : "overflow";
  r.should_summarize = r.uncovered_messages > in.message_threshold || demand > r.threshold_tokens;

  // The pinned task as sent when the kept history does not hold it (header + text, cut
  // middle-out beyond task_max_tokens), built when first needed: a task the fresh tail
  // holds costs nothing. Its room comes right after the last turn's: the tail is squeezed
  // for it, and memory, summaries and older history come after it.
  std::optional<Message> pinned_task;
  int64_t pinned_task_tokens = 0;
  if (in.task) r.task_seq = in.task->seq;
  auto pinned_task_cost = [&]() {
    if (!pinned_task) {
      std::string text = in.task->message.PlainText();
      const int64_t task_cap = std::max<int64_t>(1, in.task_max_tokens);
      if (counter.CountText(text) > task_cap) {
        text = TruncateMiddleOut(text, task_cap, counter).text;
        r.task_truncated = true;
      }
      pinned_task = Message::User(TaskHeader(in.task->seq) + "\n" + text);
      pinned_task_tokens = counter.CountMessage(*pinned_task);
    }
    return pinned_task_tokens;
  };

  // 6. Fresh tail (rule 1): the last fresh_tail_count history messages, moved back to a
  // group start, plus the new message.
  const int64_t cap = in.tool_output_max_tokens;
  size_t tail_start = FreshTailStart(n_hist_entries, entry_at, b.fresh_tail_count);
  if (tail_start > n_hist_entries) tail_start = n_hist_entries;
  auto task_in_tail = [&]() {
    bool found = false;
    for (size_t i = tail_start; i < n_hist_entries && !found; ++i) {
      found = entries[i].seq == r.task_seq;
    }
    return found;
  };
  // What the tail may take: the room, less the pinned task's when the tail does not hold it.
  auto tail_room = [&]() {
    return r.available - (in.task && !task_in_tail() ? pinned_task_cost() : 0);
  };
  const bool folded_kept = folded_stats != nullptr && folded_stats->kept > 0;
  if (folded_kept && tail_start == 0) {
    ctx.needs_more_history = true;  // the tail may reach into the folded part
    return ctx;
  }
  std::vector<int64_t> tail_cap(n_entries, cap);  // per-entry cap inside the tail
  auto tail_tokens = [&]() {
    int64_t sum = 0;
    for (size_t i = tail_start; i < n_entries; ++i) {
      renderer.Render(entries[i], tail_cap[i]);
      sum += entries[i].tokens;
    }
    return sum;
  };
  int64_t tail = tail_tokens();
  if (tail > tail_room()) {
    r.tail_squeezed = true;
    const size_t newest_group_start = groups.empty() ? n_entries : groups.back().begin;
    // (a) Old tool outputs of the tail, middle-out, with a shrinking cap.
    auto squeeze = [&](size_t from, size_t to) {
      for (int64_t c = cap / 2; tail > tail_room(); c /= 2) {
        c = std::max(c, in.min_tool_output_tokens);
        for (size_t i = from; i < to; ++i) {
          if (entries[i].msg->role == Role::kTool) tail_cap[i] = std::min(tail_cap[i], c);
        }
        tail = tail_tokens();
        if (c <= in.min_tool_output_tokens) break;
      }
    };
    squeeze(tail_start, newest_group_start);
    // (b) Shorten to the last safe boundary: drop the oldest tail groups, never past the
    // start of the last turn (the last user message; the last group when there is none).
    size_t last_turn = LastTurnStart(n_entries, entry_at);
    if (last_turn == n_entries) {
      // No user message here: the last turn starts in the folded part (before the tail,
      // so nothing may be dropped), or there is none (the newest group instead).
      last_turn = folded_stats != nullptr && folded->has_kept_user() ? 0 : newest_group_start;
    }
    size_t gi = 0;
    while (gi < groups.size() && groups[gi].begin < tail_start) ++gi;
    while (tail > tail_room() && gi + 1 < groups.size() && groups[gi + 1].begin <= last_turn) {
      r.tail_dropped_messages += static_cast<int64_t>(groups[gi].size());
      tail_start = groups[++gi].begin;
      tail = tail_tokens();
    }
    // (c) Then every tool output left, the newest too. A last turn that still leaves no
    // room for the task gets what it needs: the task is cut to what is left (step 8).
    if (tail > tail_room()) squeeze(tail_start, n_entries);
    // (d) A last turn still larger than the whole room is cut, not refused: its largest
    // messages (a pasted text, a tool output past the floor) middle-out, each cut marked,
    // until it fits with room for the task's header and a little of it (the task is then
    // cut to what is left, as when the last turn merely leaves it less than it needs).
    // Only a turn that cannot fit even so is refused.
    int64_t cut_target = r.available;
    if (tail > r.available && in.task && !task_in_tail()) {
      const int64_t header = counter.CountMessage(Message::User(TaskHeader(r.task_seq) + "\n"));
      cut_target -= std::min(pinned_task_cost(), header + kTaskCutFloor);
    }
    const bool cut_turn = tail > r.available;
    for (int round = 0; cut_turn && tail > cut_target && round < 64; ++round) {
      size_t largest = n_entries;
      for (size_t i = tail_start; i < n_entries; ++i) {
        const Role role = entries[i].msg->role;
        if ((role != Role::kTool && role != Role::kUser) || entries[i].pruned) continue;
        if (largest == n_entries || entries[i].tokens > entries[largest].tokens) largest = i;
      }
      constexpr int64_t kSmallestCut = 64;
      if (largest == n_entries || entries[largest].tokens <= kSmallestCut) break;
      Entry& e = entries[largest];
      // Its text's cap: what it costs now less the excess (and the framing's slack), and
      // always less than the last cap, so that every round makes progress.
      const int64_t next = std::max(
          kSmallestCut,
          std::min(e.tokens - (tail - cut_target) - kTruncationSlack, tail_cap[largest] - 1));
      if (e.cut && next >= tail_cap[largest]) break;  // at the smallest cut already
      e.cut = true;
      e.cap = -1;  // render again with the new cap
      tail_cap[largest] = next;
      tail = tail_tokens();
      r.last_turn_truncated = true;
    }
    if (tail > r.available) {
      return Status::ContextOverflow("the last turn needs " + Num(tail) + " tokens but only " +
                                     Num(r.available) + " are available (total " + Num(b.total) +
                                     " - system " + Num(r.system_tokens) + " - tools " +
                                     Num(r.tool_tokens) + ")");
    }
  }

  // 7. Memory and learnings, capped by their fractions and by what the tail and the task
  // leave.
  const bool pin_task = in.task && !task_in_tail();
  const int64_t room_after_tail =
      std::max<int64_t>(0, r.available - tail - (pin_task ? pinned_task_cost() : 0));
  r.memory_budget = std::min(b.MemoryBudget(r.available), room_after_tail);
  auto system_cost = [&](const std::string& memory, const std::string& learnings) -> int64_t {
    const std::string joined = JoinSystem(in.system_prompt, memory, learnings);
    return joined.empty() ? 0 : counter.CountMessage(Message::System(joined));
  };
  std::string memory_section;
  if (!in.memory.empty() && r.memory_budget > 0) {
    std::string section = kMemoryHeading;
    auto cost_of = [&](const std::string& s) { return system_cost(s, "") - base_system_cost; };
    if (cost_of(section) < r.memory_budget) {
      for (const MemoryHit& hit : in.memory) {
        std::string candidate = section + "\n- " + hit.text;
        if (cost_of(candidate) <= r.memory_budget) {
          section = std::move(candidate);
          ++r.memory_items;
          continue;
        }
        // Truncate this hit to what is left, then stop.
        size_t keep = LongestFittingPrefix(hit.text, [&](std::string_view prefix) {
          return cost_of(section + "\n- " + std::string(prefix) + "…") <= r.memory_budget;
        });
        if (keep > 0) {
          section += "\n- " + hit.text.substr(0, keep) + "…";
          ++r.memory_items;
        }
        break;
      }
    }
    if (r.memory_items > 0) {
      memory_section = std::move(section);
      r.memory_tokens = cost_of(memory_section);
    }
  }
  const int64_t cost_with_memory = system_cost(memory_section, "");
  r.learnings_budget = std::min(b.LearningsBudget(r.available), room_after_tail - r.memory_tokens);
  std::string learnings_section;
  if (!in.learnings.empty() && r.learnings_budget > 0) {
    std::string section = kLearningsHeading;
    auto cost_of = [&](const std::string& s) {
      return system_cost(memory_section, s) - cost_with_memory;
    };
    for (const Learning& l : in.learnings) {
      if (r.learnings_items >= in.max_learnings) break;
      std::string candidate = section + "\n- ";
      if (!l.task_type.empty() || !l.outcome.empty()) {
        candidate += "[" + l.task_type + (l.task_type.empty() || l.outcome.empty() ? "" : ", ") +
                     l.outcome + "] ";
      }
      candidate += l.lesson;
      if (cost_of(candidate) <= r.learnings_budget) {
        section = std::move(candidate);
        ++r.learnings_items;
      }  // else skip this one and try the next: as many as fit
    }
    if (r.learnings_items > 0) {
      learnings_section = std::move(section);
      r.learnings_tokens = cost_of(learnings_section);
    }
  }
  ctx.system = JoinSystem(in.system_prompt, memory_section, learnings_section);
  r.system_message_tokens =
      ctx.system.empty() ? 0 : counter.CountMessage(Message::System(ctx.system));
  // What the system side costs: measured message, or the reserve plus our sections.
  const int64_t system_side =
      r.system_measured ? r.system_message_tokens
                        : r.system_tokens + (ctx.system.empty() ? 0 : r.system_message_tokens);
  r.history_budget = b.total - r.tool_tokens - system_side;
  int64_t remaining = r.history_budget - tail;

  // The task, unless the fresh tail holds it: its room comes first (after the tail). When
  // the last turn leaves less than it needs, it is cut middle-out to what is left.
  std::optional<Message> task_message;
  if (pin_task) {
    if (pinned_task_tokens > remaining) {
      const int64_t header = counter.CountMessage(Message::User(TaskHeader(r.task_seq) + "\n"));
      std::string text = in.task->message.PlainText();
      int64_t room = remaining - header;
      for (int attempt = 0; attempt < 8 && room > 0 && pinned_task_tokens > remaining; ++attempt) {
        pinned_task = Message::User(TaskHeader(r.task_seq) + "\n" +
                                    TruncateMiddleOut(text, room, counter).text);
        pinned_task_tokens = counter.CountMessage(*pinned_task);
        room -= std::max<int64_t>(1, pinned_task_tokens - remaining);
        r.task_truncated = true;
      }
    }
    if (pinned_task_tokens <= remaining) {
      remaining -= pinned_task_tokens;
      r.task_tokens = pinned_task_tokens;
      task_message = std::move(pinned_task);
    }
  }
  if (!task_message) r.task_truncated = false;

  // 8. Summaries, oldest first; skip (do not stop at) one that does not fit (rule 2), and
  // rather than skip, send the oldest short (core/context_summaries.h).
  // While the eviction anchor holds (step 9), only summaries of something before it are
  // shown, in the forms the anchor was set with: a summary of messages the context still
  // shows raw waits for the next eviction, so a new summary changes the prefix only when
  // eviction changes it anyway (one compaction event replaces a large block, and the
  // provider's prompt cache keeps hitting between).
  std::vector<Message> summary_messages;
  SeqRanges included;
  auto choose_summaries = [&](const std::vector<SummaryView>& from, int64_t before_seq,
                              int64_t stub_through, int64_t room) {
    SummaryChoice c = ChooseSummaries(from, before_seq, stub_through, room, counter);
    summary_messages = std::move(c.messages);
    included = std::move(c.included);
    r.summary_tokens = c.tokens;
    r.summaries_included = static_cast<int64_t>(c.included_ids.size());
    r.summaries_skipped = static_cast<int64_t>(c.skipped_ids.size());
    r.summaries_stubbed = c.stubbed;
    r.stub_through_seq = c.stub_through;
    r.included_summary_ids = std::move(c.included_ids);
    r.skipped_summary_ids = std::move(c.skipped_ids);
    return r.summary_tokens;
  };

  // 9. Evictable prefix, newest first by whole groups (rule 3). A group covered by an
  // included summary is not repeated, and the fill stops there: raw messages older than
  // an included summary would break chronological order. The first group that does not
  // fit ends the fill, so the kept part is contiguous.
  // With an eviction anchor (cache-friendly eviction), the kept part starts exactly at
  // the anchor while everything from it fits; once it does not, whole groups are evicted
  // from the front down to (1 - slack_fraction) of the room, so the following requests
  // share the same prefix again.
  size_t keep_from = tail_start;
  {
    size_t first_gi = groups.size();
    while (first_gi > 0 && groups[first_gi - 1].begin >= tail_start) --first_gi;
    auto covered_group = [&](const GroupSpan& g) {
      for (size_t i = g.begin; i < g.end; ++i) {
        if (RangesCover(included, entries[i].seq)) return true;
      }
      return false;
    };
    auto group_tokens = [&](const GroupSpan& g) {
      int64_t t = 0;
      for (size_t i = g.begin; i < g.end; ++i) {
        renderer.Render(entries[i], cap);
        t += entries[i].tokens;
      }
      return t;
    };
    // When a walk back over the groups runs out of `history`, the folded part's newest
    // group comes next: the walk would stop there only if a summary included covers it
    // (or, for the anchor walk, if it starts before the anchor). Otherwise the result
    // depends on folded content.
    std::optional<FoldedHistory::LastGroup> folded_last;
    auto set_summaries = [&](const std::vector<SummaryView>& from, int64_t before_seq,
                             int64_t stub_through, int64_t room) {
      const int64_t t = choose_summaries(from, before_seq, stub_through, room);
      folded_last = folded_kept ? folded->LastKeptGroup(included) : std::nullopt;
      return t;
    };
    auto ran_out = [&](bool before_anchor_stops) {
      if (!folded_last || folded_last->covered) return;
      if (before_anchor_stops && folded_last->first_seq < in.eviction.anchor_seq) return;
      ctx.needs_more_history = true;
    };
    // Newest-first fill within `room`, never of a group starting before `stop_before`
    // (0: no such limit); returns the tokens used.
    auto fill = [&](int64_t room, int64_t stop_before) {
      int64_t used = 0;
      for (size_t gi = first_gi;; --gi) {
        if (gi == 0) {
          ran_out(stop_before > 0);
          break;
        }
        const GroupSpan& g = groups[gi - 1];
        if (covered_group(g) || entries[g.begin].seq < stop_before) break;
        const int64_t t = group_tokens(g);
        if (used + t > room) break;
        used += t;
        keep_from = g.begin;
      }
      return used;
    };
    const int64_t anchor = in.eviction.anchor_seq;
    const double slack = std::clamp(in.eviction.slack_fraction, 0.0, 1.0);
    const int64_t slack_tokens =
        static_cast<int64_t>(slack * static_cast<double>(r.history_budget));
    bool done = false;
    if (anchor > 0) {
      const int64_t before_anchor =
          in.anchored_summaries
              ? set_summaries(*in.anchored_summaries, INT64_MAX, in.anchored_stub_through,
                              remaining)
              : set_summaries(in.summaries, anchor, in.anchored_stub_through, remaining);
      // The anchor's summaries, in their forms, must all fit for it to hold: leaving one
      // out would change the prefix anyway (unless all were short already when it was
      // set, and one was left out then too: nothing shorter is left to send).
      const bool summaries_hold =
          r.summaries_skipped == 0 || r.summaries_stubbed == r.summaries_included;
      remaining -= before_anchor;
      int64_t from_anchor = 0;
      size_t anchor_from = tail_start;
      for (size_t gi = first_gi;; --gi) {
        if (gi == 0) {
          ran_out(true);
          break;
        }
        const GroupSpan& g = groups[gi - 1];
        if (entries[g.begin].seq < anchor || covered_group(g)) break;
        from_anchor += group_tokens(g);
        anchor_from = g.begin;
        if (from_anchor > remaining) break;
      }
      if (!in.eviction.move && summaries_hold && from_anchor <= remaining) {
        keep_from = anchor_from;
        remaining -= from_anchor;
        r.eviction = "anchored";
      } else {
        // The anchor moves: now every summary may come in, the oldest short if that is
        // what it takes to leave slack_fraction of the history budget free (as below).
        remaining += before_anchor;
        remaining -= set_summaries(in.summaries, INT64_MAX,
                                   StubThroughFor(in.summaries, remaining - slack_tokens, counter),
                                   remaining);
        // Free slack_fraction of the history budget (not of what is left of it: with
        // summaries and the tail taking most of the budget, a share of the rest would
        // free so little that the anchor moved again a request or two later).
        const int64_t keep =
            std::min(static_cast<int64_t>(static_cast<double>(remaining) * (1.0 - slack)),
                     remaining - slack_tokens);
        // A moved anchor only moves forward: what was evicted stays evicted (a summary
        // freeing room does not bring raw messages back and change the prefix again).
        remaining -= fill(std::max<int64_t>(0, keep), anchor);
        r.eviction = "anchor_moved";
      }
      done = true;
    }
    if (!done) {
      remaining -= set_summaries(in.summaries, INT64_MAX,
                                 StubThroughFor(in.summaries, remaining, counter), remaining);
      remaining -= fill(remaining, 0);
    }
  }
  if (ctx.needs_more_history) return ctx;

  // 10. Output, and the rest of the report.
  if (!ctx.system.empty()) ctx.messages.push_back(Message::System(ctx.system));
  if (task_message) {
    bool kept_anyway = false;  // the fill reached it: no second copy
    for (size_t i = keep_from; i < tail_start && !kept_anyway; ++i) {
      kept_anyway = entries[i].seq == r.task_seq;
    }
    if (kept_anyway) {
      r.task_tokens = 0;
      r.task_truncated = false;
    } else {
      ctx.messages.push_back(std::move(*task_message));
      r.task_pinned = true;
    }
  }
  for (Message& m : summary_messages) ctx.messages.push_back(std::move(m));
  for (size_t i = keep_from; i < n_entries; ++i) {
    Entry& e = entries[i];
    if (i < tail_start) renderer.Render(e, cap);  // tail entries are rendered already
    ctx.messages.push_back(renderer.Out(e));
    if (e.pruned) ++r.pruned_messages;
    if (e.changed && !e.pruned) r.truncated.push_back({e.seq, e.stored_tokens, e.tokens});
    if (e.is_new) {
      r.new_message_tokens = e.tokens;
      continue;
    }
    r.history_tokens += e.tokens;
    ++r.kept_messages;
    ctx.kept_seqs.push_back(e.seq);
    if (i >= tail_start) ++r.fresh_tail_messages;
  }
  r.first_kept_seq = ctx.kept_seqs.empty() ? 0 : ctx.kept_seqs.front();
  r.first_fresh_seq = tail_start < n_hist_entries ? entries[tail_start].seq : 0;
  for (size_t i = 0; i < keep_from; ++i) {
    if (RangesCover(included, entries[i].seq)) {
      ++r.covered_messages;
    } else {
      ++r.dropped_messages;
    }
  }
  if (folded_kept) {
    const int64_t covered = folded->CountKeptIn(included);
    r.covered_messages += covered;
    r.dropped_messages += folded_stats->kept - covered;
  }
  r.used_tokens = system_side + r.tool_tokens + r.task_tokens + r.summary_tokens +
                  r.history_tokens + r.new_message_tokens;
  return ctx;
}

}  // namespace missy

#include "core/context_rebuild.h"

#include <algorithm>
#include <boost/json/serialize.hpp>

#include "core/context_entry.h"
#include "core/context_summaries.h"
#include "core/digest.h"
#include "core/message_json.h"
#include "core/pruning.h"

namespace missy {

namespace {

constexpr std::string_view kEllipsis = "…";

std::string Hash16(std::string_view text) { return Sha256Hex(text).substr(0, 16); }
std::string Hash8(std::string_view text) { return Sha256Hex(text).substr(0, 8); }

std::string MessageHash(const Message& m) {
  return Hash16(boost::json::serialize(MessageToJson(m)));
}

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

bool StartsWithAt(std::string_view text, size_t pos, std::string_view what) {
  return pos <= text.size() && text.substr(pos).starts_with(what);
}

// Whether the system text continues at `pos` as the end or the learnings section.
bool EndsMemoryAt(std::string_view system, size_t pos) {
  return pos == system.size() ||
         (StartsWithAt(system, pos, "\n\n") && StartsWithAt(system, pos + 2, kLearningsHeading));
}

// The memory section of `system` (as sent), recording each hit shown: the first
// `items` hits, the last possibly cut to a prefix and "…". Empty when none was shown.
std::string ComposeMemory(const ContextInput& in, int64_t items, const std::string& system,
                          SystemComposition& sc) {
  if (items <= 0) return {};
  std::string memory(kMemoryHeading);
  const size_t n = std::min<size_t>(static_cast<size_t>(items), in.memory.size());
  for (size_t i = 0; i < n; ++i) {
    const MemoryHit& hit = in.memory[i];
    SystemItem item{hit.source, hit.id, -1, hit.source == "memory" ? "" : hit.text,
                    hit.source == "memory" ? Hash8(hit.text) : ""};
    if (i + 1 == n) {
      const std::string whole =
          JoinSystemSections(in.system_prompt, memory + "\n- " + hit.text, "");
      if (!(system.starts_with(whole) && EndsMemoryAt(system, whole.size()))) {
        // Cut: the longest prefix of its text followed by "…" and the section's end.
        const std::string before = JoinSystemSections(in.system_prompt, memory + "\n- ", "");
        const std::string_view rest =
            std::string_view(system).substr(std::min(before.size(), system.size()));
        size_t common = 0;
        while (common < rest.size() && common < hit.text.size() &&
               rest[common] == hit.text[common]) {
          ++common;
        }
        for (size_t k = common + 1; k-- > 0;) {
          if (StartsWithAt(rest, k, kEllipsis) &&
              EndsMemoryAt(system, before.size() + k + kEllipsis.size())) {
            item.keep = static_cast<int64_t>(k);
            break;
          }
        }
        if (item.keep >= 0) {
          memory +=
              "\n- " + hit.text.substr(0, static_cast<size_t>(item.keep)) + std::string(kEllipsis);
          sc.memory.push_back(std::move(item));
          continue;
        }
      }
    }
    memory += "\n- " + hit.text;
    sc.memory.push_back(std::move(item));
  }
  return memory;
}

// The learnings section of `system`: those of in.learnings (newest first) whose line is
// there, in order (a learning that did not fit was skipped, not the list cut).
std::string ComposeLearnings(const ContextInput& in, int64_t items, const std::string& system,
                             const std::string& memory, SystemComposition& sc) {
  if (items <= 0) return {};
  const std::string before = JoinSystemSections(in.system_prompt, memory, "");
  size_t pos = before.size() + (before.empty() ? 0 : 2) + kLearningsHeading.size();
  std::string learnings(kLearningsHeading);
  int64_t n = 0;
  for (const Learning& l : in.learnings) {
    if (n >= items) break;
    const std::string line = std::string(kSectionItem) + LearningLine(l);
    const size_t end = pos + line.size();
    if (StartsWithAt(system, pos, line) &&
        (end == system.size() || StartsWithAt(system, end, kSectionItem))) {
      learnings += line;
      pos = end;
      ++n;
      sc.learnings.push_back(SystemItem{"learning", l.id, -1, "", Hash8(LearningLine(l))});
    }
  }
  return learnings;
}

const StoredMessage* FindSeq(const std::vector<StoredMessage>& window, int64_t seq) {
  auto it = std::lower_bound(window.begin(), window.end(), seq,
                             [](const StoredMessage& m, int64_t s) { return m.seq < s; });
  return it != window.end() && it->seq == seq ? &*it : nullptr;
}

// `stored` with its text cut (WithText) and the arguments of its calls cut; nullopt when a
// cut does not apply.
std::optional<Message> ApplyCuts(const Message& stored, const TextCut& cut,
                                 const std::vector<std::pair<size_t, TextCut>>& call_cuts) {
  std::optional<Message> out = stored;
  if (!cut.whole()) {
    std::optional<std::string> text = ApplyCut(stored.PlainText(), cut);
    if (!text) return std::nullopt;
    out = assembly::WithText(stored, std::move(*text));
  }
  for (const auto& [index, call_cut] : call_cuts) {
    if (index >= out->tool_calls.size()) return std::nullopt;
    std::optional<std::string> arguments = ApplyCut(out->tool_calls[index].arguments, call_cut);
    if (!arguments) return std::nullopt;
    out->tool_calls[index].arguments = std::move(*arguments);
  }
  return out;
}

// How `sent` derives from `stored` as a cut of its text (WithText) and of its calls'
// arguments, into `part`; false when it does not.
bool CutOf(const Message& stored, const Message& sent, ContextPart& part) {
  if (stored.tool_calls.size() != sent.tool_calls.size()) return false;
  part.cut = DiffCut(stored.PlainText(), sent.PlainText());
  part.call_cuts.clear();
  for (size_t i = 0; i < stored.tool_calls.size(); ++i) {
    if (stored.tool_calls[i].arguments != sent.tool_calls[i].arguments) {
      part.call_cuts.emplace_back(
          i, DiffCut(stored.tool_calls[i].arguments, sent.tool_calls[i].arguments));
    }
  }
  std::optional<Message> rebuilt = ApplyCuts(stored, part.cut, part.call_cuts);
  return rebuilt && *rebuilt == sent;
}

void AddHistoryPart(const StoredMessage& stored, const Message& sent, ContextComposition& c) {
  ContextPart part;
  part.seq = stored.seq;
  if (sent == stored.message) {
    if (!c.parts.empty() && c.parts.back().kind == PartKind::kKept &&
        c.parts.back().last + 1 == stored.seq) {
      c.parts.back().last = stored.seq;
      return;
    }
    part.kind = PartKind::kKept;
    part.last = stored.seq;
  } else if (stored.message.role == Role::kTool && sent == PrunedMessage(stored.message)) {
    part.kind = PartKind::kPruned;
  } else {
    part.kind = PartKind::kTruncated;
    part.original_tokens = stored.tokens;
    if (!CutOf(stored.message, sent, part)) {
      part.cut = {};
      part.call_cuts.clear();
      c.complete = false;
    }
  }
  c.parts.push_back(std::move(part));
}

}  // namespace

TextCut DiffCut(std::string_view original, std::string_view sent) {
  if (original == sent) return {};
  const size_t max = std::min(original.size(), sent.size());
  size_t head = 0;
  while (head < max && original[head] == sent[head]) ++head;
  while (head > 0 && head < sent.size() && IsContinuation(sent[head])) --head;
  size_t tail = 0;
  while (tail < max - head &&
         original[original.size() - 1 - tail] == sent[sent.size() - 1 - tail]) {
    ++tail;
  }
  while (tail > 0 && IsContinuation(sent[sent.size() - tail])) --tail;
  return TextCut{static_cast<int64_t>(head),
                 std::string(sent.substr(head, sent.size() - head - tail)),
                 static_cast<int64_t>(tail)};
}

std::optional<std::string> ApplyCut(std::string_view original, const TextCut& cut) {
  if (cut.whole()) return std::string(original);
  const auto head = static_cast<size_t>(cut.head);
  const auto tail = static_cast<size_t>(std::max<int64_t>(0, cut.tail));
  if (head + tail > original.size()) return std::nullopt;
  std::string out(original.substr(0, head));
  out += cut.middle;
  out += original.substr(original.size() - tail);
  return out;
}

ContextComposition Compose(const ContextInput& in, const std::vector<StoredMessage>& window,
                           const AssembledContext& ctx, int64_t next_seq) {
  ContextComposition c;
  const ContextReport& r = ctx.report;
  const std::vector<Message>& out = ctx.messages;
  size_t i = 0;
  if (!ctx.system.empty()) {
    SystemComposition sc;
    sc.base_hash = in.system_prompt.empty() ? "" : Hash16(in.system_prompt);
    const std::string memory = ComposeMemory(in, r.memory_items, ctx.system, sc);
    const std::string learnings = ComposeLearnings(in, r.learnings_items, ctx.system, memory, sc);
    if (JoinSystemSections(in.system_prompt, memory, learnings) != ctx.system) c.complete = false;
    c.system = std::move(sc);
    ++i;
  }
  if (r.task_pinned && in.task && i < out.size()) {
    ContextPart part;
    part.kind = PartKind::kTask;
    part.seq = in.task->seq;
    const std::string header = TaskHeader(in.task->seq) + "\n";
    const std::string sent = out[i].PlainText();
    if (sent.starts_with(header)) {
      part.cut =
          DiffCut(in.task->message.PlainText(), std::string_view(sent).substr(header.size()));
    } else {
      c.complete = false;
    }
    c.parts.push_back(std::move(part));
    ++i;
  }
  for (const std::string& id : r.included_summary_ids) {
    if (i >= out.size()) break;
    ContextPart part;
    part.kind = PartKind::kSummary;
    part.summary_id = id;
    const std::string text = out[i].PlainText();
    const size_t eol = text.find('\n');
    part.short_form = eol != std::string::npos &&
                      std::string_view(text).substr(eol + 1).starts_with(kSummaryStubNote);
    c.parts.push_back(std::move(part));
    ++i;
  }
  for (int64_t seq : ctx.kept_seqs) {
    if (i >= out.size()) break;
    const StoredMessage* stored = FindSeq(window, seq);
    if (stored == nullptr) {
      c.complete = false;
      ContextPart part;
      part.kind = PartKind::kKept;
      part.seq = part.last = seq;
      c.parts.push_back(std::move(part));
    } else {
      AddHistoryPart(*stored, out[i], c);
    }
    ++i;
  }
  if (i < out.size() && in.new_message) {
    ContextPart part;
    part.kind = PartKind::kNew;
    part.seq = next_seq;
    part.hash = MessageHash(*in.new_message);
    if (!(out[i] == *in.new_message) && !CutOf(*in.new_message, out[i], part)) {
      part.cut = {};
      part.call_cuts.clear();
      c.complete = false;
    }
    c.parts.push_back(std::move(part));
    ++i;
  }
  if (i != out.size()) c.complete = false;
  return c;
}

namespace {

RebuiltMessage RebuildSystem(const SystemComposition& sc, const RebuildSources& src) {
  RebuiltMessage r;
  r.entry = "system";
  std::string base;
  if (!sc.base_hash.empty()) {
    if (src.base_prompt && Hash16(*src.base_prompt) == sc.base_hash) {
      base = *src.base_prompt;
    } else {
      r.base_missing = true;
    }
  }
  std::string memory;
  for (const SystemItem& item : sc.memory) {
    std::optional<std::string> text =
        item.source == "memory" ? (src.memory_text ? src.memory_text(item.id) : std::nullopt)
                                : std::optional<std::string>(item.snippet);
    r.memory.push_back(item);
    if (!text) {
      r.missing_ids.push_back(item.id);
      continue;
    }
    if (!item.hash.empty() && Hash8(*text) != item.hash) r.changed_ids.push_back(item.id);
    if (memory.empty()) memory = kMemoryHeading;
    memory += kSectionItem;
    if (item.keep >= 0 && static_cast<size_t>(item.keep) <= text->size()) {
      memory += text->substr(0, static_cast<size_t>(item.keep));
      memory += kEllipsis;
    } else {
      memory += *text;
    }
  }
  std::string learnings;
  for (const SystemItem& item : sc.learnings) {
    std::optional<Learning> l = src.learning ? src.learning(item.id) : std::nullopt;
    r.learnings.push_back(item);
    if (!l) {
      r.missing_ids.push_back(item.id);
      continue;
    }
    const std::string line = LearningLine(*l);
    if (!item.hash.empty() && Hash8(line) != item.hash) r.changed_ids.push_back(item.id);
    if (learnings.empty()) learnings = kLearningsHeading;
    learnings += kSectionItem;
    learnings += line;
  }
  r.message = Message::System(JoinSystemSections(base, memory, learnings));
  return r;
}

std::optional<Message> Stored(const RebuildSources& src, int64_t seq) {
  return src.message ? src.message(seq) : std::nullopt;
}

void RebuildPart(const ContextPart& p, const RebuildSources& src,
                 std::vector<RebuiltMessage>& out) {
  RebuiltMessage r;
  r.seq = p.seq;
  switch (p.kind) {
    case PartKind::kTask: {
      r.entry = "task";
      if (std::optional<Message> m = Stored(src, p.seq)) {
        if (std::optional<std::string> text = ApplyCut(m->PlainText(), p.cut)) {
          r.message = Message::User(TaskHeader(p.seq) + "\n" + *text);
        }
      }
      break;
    }
    case PartKind::kSummary: {
      r.entry = "summary";
      r.seq = 0;
      r.summary_id = p.summary_id;
      r.form = p.short_form ? "short" : "full";
      if (std::optional<SummaryView> s = src.summary ? src.summary(p.summary_id) : std::nullopt) {
        r.depth = s->depth;
        r.first_seq = s->first_seq;
        r.last_seq = s->last_seq;
        r.message = SummaryMessage(*s, p.short_form);
      }
      break;
    }
    case PartKind::kKept:
      for (int64_t seq = p.seq; seq <= std::max(p.seq, p.last); ++seq) {
        RebuiltMessage k;
        k.entry = "kept";
        k.seq = seq;
        k.message = Stored(src, seq);
        out.push_back(std::move(k));
      }
      return;
    case PartKind::kPruned:
      r.entry = "pruned";
      if (std::optional<Message> m = Stored(src, p.seq)) r.message = PrunedMessage(*m);
      break;
    case PartKind::kTruncated:
      r.entry = "truncated";
      r.original_tokens = p.original_tokens;
      if (std::optional<Message> m = Stored(src, p.seq)) {
        r.message = ApplyCuts(*m, p.cut, p.call_cuts);
      }
      break;
    case PartKind::kNew:
      r.entry = "new";
      if (std::optional<Message> m = Stored(src, p.seq); m && MessageHash(*m) == p.hash) {
        r.message = ApplyCuts(*m, p.cut, p.call_cuts);
      }
      break;
  }
  out.push_back(std::move(r));
}

}  // namespace

std::vector<RebuiltMessage> Rebuild(const ContextComposition& c, const RebuildSources& src) {
  std::vector<RebuiltMessage> out;
  if (c.system) out.push_back(RebuildSystem(*c.system, src));
  for (const ContextPart& p : c.parts) RebuildPart(p, src, out);
  return out;
}

}  // namespace missy

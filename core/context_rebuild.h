// A past context, exactly (issue 30): what an assembled context is made of, recorded in
// a few ids and cuts (a composition), and the message list rebuilt from it and what is
// stored, byte for byte the list the context request answered. Pure.
//
// A composition names each message's source: the base system prompt (by hash), the
// memory items (by id; search snippets of other sessions as shown) and learnings (by id)
// of the enriched system message, the pinned task (seq), each summary (id and form:
// whole or short), each history message (seq; sent whole, as the pruned placeholder, or
// cut), and the new message (the seq it would be stored at, and a hash of it). A cut is
// kept as the bytes kept at each end of the stored text and the marker between them, so
// a rebuild does not depend on the counter. A source that is gone (a deleted memory
// item, a session deleted, a new message never appended) rebuilds as missing.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/assembler.h"
#include "core/context_types.h"
#include "core/message.h"
#include "core/status.h"
#include "core/system_sections.h"  // JoinSystemSections, LearningLine

namespace missy {

// How a sent text derives from the stored one: original[0:head] + middle +
// original[size - tail:]. head < 0: the text as stored.
struct TextCut {
  int64_t head = -1;
  std::string middle;
  int64_t tail = 0;
  bool whole() const { return head < 0; }
};

// The cut that turns `original` into `sent` (whole when they are equal), splitting at
// UTF-8 boundaries of `sent`.
TextCut DiffCut(std::string_view original, std::string_view sent);
// `original` cut as `cut` says; nullopt when the original is too short for it.
std::optional<std::string> ApplyCut(std::string_view original, const TextCut& cut);

// One memory hit or learning of the enriched system message.
struct SystemItem {
  std::string source;  // "memory" (an item), "summary", "message" (search snippets), "learning"
  std::string id;
  int64_t keep = -1;    // bytes of its text kept (then "…"); -1: whole
  std::string snippet;  // the text shown, for "summary" and "message" hits only
  std::string hash;     // 8 hex digits of the SHA-256 of its text as it was (memory, learning)
};

struct SystemComposition {
  std::string base_hash;  // first 16 hex digits of the base prompt's SHA-256; "" no base
  std::vector<SystemItem> memory;
  std::vector<SystemItem> learnings;
};

enum class PartKind { kTask, kSummary, kKept, kPruned, kTruncated, kNew };

// One message after the system message.
struct ContextPart {
  PartKind kind = PartKind::kKept;
  int64_t seq = 0;   // task, kept (first of a run), pruned, truncated, new (its seq if stored)
  int64_t last = 0;  // kept: the run seq..last
  std::string summary_id;
  bool short_form = false;      // summary
  TextCut cut;                  // task, truncated, new
  int64_t original_tokens = 0;  // truncated: the message as stored
  std::string hash;             // new: first 16 hex digits of the SHA-256 of its JSON
  // truncated, new: the cuts of tool-call arguments (an assistant message of an oversized
  // last turn), as (the call's index, the cut of its arguments); empty when none was cut.
  std::vector<std::pair<size_t, TextCut>> call_cuts;
};

struct ContextComposition {
  std::optional<SystemComposition> system;  // unset: no system message was sent
  std::vector<ContextPart> parts;           // in order
  // False when the assembly produced something this file does not know how to record
  // (a rebuild then marks the unrecorded messages missing).
  bool complete = true;
};

// The composition of `ctx`, assembled from `in` over `window` (the history the assembly
// saw, in seq order: ContextInput::history, which the service moves back into its cache).
// `next_seq` is the seq the new message would be stored at.
ContextComposition Compose(const ContextInput& in, const std::vector<StoredMessage>& window,
                           const AssembledContext& ctx, int64_t next_seq);

// The composition as compact JSON text (an audit detail's "composition"), and back.
std::string CompositionToJson(const ContextComposition& c);
Result<ContextComposition> CompositionFromJson(std::string_view json);
// The "composition" of a context.built event's detail (kNotFound when it has none: an
// event recorded before compositions were).
Result<ContextComposition> CompositionFromDetail(std::string_view detail_json);

// What a rebuild looks up; each returns nullopt when the source is gone.
struct RebuildSources {
  std::function<std::optional<Message>(int64_t seq)> message;
  std::function<std::optional<SummaryView>(const std::string& id)> summary;
  std::function<std::optional<std::string>(const std::string& id)> memory_text;
  std::function<std::optional<Learning>(const std::string& id)> learning;
  std::optional<std::string> base_prompt;  // the session's system prompt (unset: gone)
};

// One rebuilt message and how it was made.
struct RebuiltMessage {
  std::optional<Message> message;  // unset: missing (its source is gone)
  std::string entry;  // "system", "task", "summary", "kept", "pruned", "truncated", "new"
  int64_t seq = 0;
  std::string summary_id;
  int depth = 0;
  int64_t first_seq = 0, last_seq = 0;        // summary: the seqs it covers
  std::string form;                           // summary: "full" | "short"
  int64_t original_tokens = 0;                // truncated
  std::vector<SystemItem> memory, learnings;  // system
  std::vector<std::string> missing_ids;       // system: items gone (left out of the text)
  std::vector<std::string> changed_ids;       // system: items whose text changed since
  bool base_missing = false;                  // system: the base prompt is not the stored one
};

// The message list `c` describes, from `sources`. Rebuilding the composition of a
// context whose sources are unchanged gives its message list exactly.
std::vector<RebuiltMessage> Rebuild(const ContextComposition& c, const RebuildSources& sources);

}  // namespace missy

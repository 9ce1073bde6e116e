// The extractive summarizer (DESIGN.md §5, the default backend: offline, deterministic).
// Guarantees: pure (no I/O, clock or threads); the same input gives the same bytes; never
// throws on malformed tool-call arguments; every string it returns is valid UTF-8; for a
// budget of at least 64 tokens the summary text counts at most
// min(target_tokens, source_tokens - 1) with the given counter, so whenever that budget
// can be met the summary is smaller than what it replaces (see ExtractiveSummary::Shrinks:
// the caller rejects a summary that does not shrink).
//
// What is kept, highest priority first: the chunk's first user message (the task; cut
// middle-out when longer than user_message_chars); the artifact trail's first few files,
// errors, commands and decisions (the most recently seen first; error lines that report an
// error before those that only mention one); more files (paths before URLs) and errors,
// up to shares of the room (a condensed summary gives its files and errors more, and all
// its error reports come before its facts); the other user messages; the newest facts
// (Missy's MemoryConsolidator rules: "[tool]" + the first tool_result_chars of each tool
// result, lines marked result:/decided:/found:/error:/success:/created:/updated:/deleted:/
// confirmed:/output:); the prior summary's excerpt only when all of that fits.
// Errors: one bullet per distinct line, however often it was printed; the few newest open
// ones first, then the others in the order they were first seen (an early error, since
// fixed, is what only an old summary can still show); one that a later run of the same call
// (same tool, same arguments) no longer printed ends with " (fixed in seq N)"; a condensed
// summary shows each line's first 100 code points and keeps its children's fix notes.
// What is read: tool results in head and tail windows (scan_window_bytes each), and between
// them the lines that report an error (ReportsError, up to 48 distinct ones); user and
// assistant texts whole for key lines, and for paths and http(s) URLs whole up to
// 2 * text_window_bytes, beyond that in head and tail windows (agents such as SWE-agent put
// tool output in user messages); shell commands ("command"/"cmd" of shell-like tools only,
// not an editor's sub-command such as str_replace_editor's "view"); URL arguments ("url").
// The trail (ArtifactTrail, ArtifactsToJson/FromJson, MergeArtifacts) is declared in
// core/artifact_extraction.h; what is read from each message is its extract
// (core/message_extract.h: made on append and stored, or made here when missing), so a
// call merges extracts and rescans no text. Both are included here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/artifact_extraction.h"
#include "core/message.h"
#include "core/message_extract.h"
#include "core/status.h"
#include "core/token_counter.h"

namespace missy {

// ExtractiveOptions: core/message_extract.h (the extracts are made with them).
inline constexpr int64_t kCondensedTargetTokens = 2000;

// Lines of a summary's text that others read (core/context_summaries.h): the files, on one
// line after this; the errors, as "- " bullets (continued by lines indented "  ") after it.
inline constexpr std::string_view kSummaryFilesHeader = "Files: ";
inline constexpr std::string_view kSummaryErrorsHeader = "Errors:\n";
// An error bullet ends with this, the seq and ")" when a later run of the same call no
// longer printed it ("- KeyError: 'sku' (fixed in seq 812)").
inline constexpr std::string_view kFixedNoteHead = " (fixed in seq ";

struct ExtractiveSummary {
  std::string text;           // what the model sees
  ArtifactTrail artifacts;    // everything extracted (stored beside the text, never cut)
  int64_t tokens = 0;         // CountText(text)
  int64_t source_tokens = 0;  // what it replaces: messages' tokens, or children's
  bool cut = false;           // facts, requests or trail items were dropped to fit
  // False when the summary is not smaller than its source: the caller must reject it.
  bool Shrinks() const { return tokens < source_tokens; }
};

// A leaf summary of `chunk`. `prior` is the newest earlier summary's text (continuity; may
// be empty; it is the first thing dropped). A message's tokens are its cached `tokens`,
// or CountMessage when that is 0; its extract is its `extract` when current, or made here.
ExtractiveSummary SummarizeMessages(std::span<const StoredMessage> chunk, std::string_view prior,
                                    const ExtractiveOptions& options,
                                    const MessageTokenCounter& counter);

// A summary one depth up: children (oldest first) are merged, not re-summarized: their
// requests and facts are read back from their texts (a text not in this module's layout
// counts as facts, line by line) and their trails merged (deduplicated). Use
// options.target_tokens = kCondensedTargetTokens.
struct ChildSummary {
  std::string text;
  ArtifactTrail artifacts;
  int64_t tokens = 0;
};
ExtractiveSummary CondenseSummaries(std::span<const ChildSummary> children,
                                    const ExtractiveOptions& options,
                                    const MessageTokenCounter& counter);

}  // namespace missy

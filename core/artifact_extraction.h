// The artifact trail of a stretch of history (DESIGN.md §5): the files, shell commands,
// error lines and decisions it touched, read from tool-call arguments, texts and tool
// results. Pure (no I/O); never throws on malformed tool-call arguments; every string it
// returns is valid UTF-8; the same messages give the same trail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/message.h"
#include "core/status.h"

namespace missy {

// What a stretch of history touched. Each list is deduplicated, in first-seen order.
struct ArtifactTrail {
  std::vector<std::string> files;      // paths read/written/edited or named by user or agent
  std::vector<std::string> commands;   // shell commands run (first line, capped)
  std::vector<std::string> errors;     // error lines printed by tools (capped)
  std::vector<std::string> decisions;  // "decided:"-style lines of the user or the agent
  bool empty() const {
    return files.empty() && commands.empty() && errors.empty() && decisions.empty();
  }
  bool operator==(const ArtifactTrail&) const = default;
};

// {"files":[...],"commands":[...],"errors":[...],"decisions":[...]}
std::string ArtifactsToJson(const ArtifactTrail& trail);
// Inverse; missing keys and non-string items are skipped; InvalidArgument unless the text
// is a JSON object.
Result<ArtifactTrail> ArtifactsFromJson(std::string_view json);

// The trail of a stretch of messages: ExtractArtifacts in core/message_extract.h.

// Appends `from`'s items missing from `into`, keeping both orders.
void MergeArtifacts(ArtifactTrail& into, const ArtifactTrail& from);

// Exposed for tests: whether `token` (already split out of text) looks like a file path.
// `loose` admits unanchored extensionless relative paths ("django/db/models"), as in
// commands and tool arguments; prose needs an anchor ("/", "./", "../", "~/") or a known
// extension.
bool LooksLikePath(std::string_view token, bool loose);

// ---------------------------------------------------------------------------------------
// For the extractive summarizer: the trail as it is built, with recency, and the one pass
// over the messages that also reports the summarizer's fact candidates.

struct ArtifactOptions {
  size_t max_line_chars = 300;       // cap of an error or decision line
  size_t command_chars = 200;        // cap of a command
  size_t scan_window_bytes = 1024;   // tool results are scanned in head+tail windows
  size_t middle_error_lines = 48;    // and between them for lines that report an error
  size_t key_lines_from = 200;       // a tool result's key lines are reported from this byte
  size_t text_window_bytes = 16384;  // longer user/assistant texts: paths in head+tail windows
};

// Indices of `last_seen` (a clock value per item), the most recent first.
std::vector<size_t> OrderByRecency(const std::vector<uint64_t>& last_seen);

// Whether the trail keeps `path` as a file: not empty, at most 256 bytes, valid UTF-8
// (a path we can quote).
bool TrailPath(std::string_view path);

// A deduplicated list in first-seen order that remembers when each item was last seen.
class RecentSet {
 public:
  bool Add(std::string_view item);      // false when already present (its recency is refreshed)
  bool Refresh(std::string_view item);  // Add when present; false (and nothing) when not
  const std::vector<std::string>& items() const { return items_; }
  // Item indices, most recently seen first.
  std::vector<size_t> ByRecency() const { return OrderByRecency(last_seen_); }
  void Clear();  // empty again, keeping its memory for reuse

 private:
  std::vector<std::string> items_;
  std::vector<uint64_t> last_seen_;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> index_;
  uint64_t clock_ = 0;
};

struct TrailBuilder {
  RecentSet files, commands, errors, decisions;
  void AddFile(std::string_view path);  // skipped when empty, too long or not UTF-8
  ArtifactTrail Build() const;
  void Clear();
};

// Receives, during ExtractInto, what the summarizer may keep as facts and requests.
class FactSink {
 public:
  virtual ~FactSink() = default;
  virtual void UserMessage(std::string_view text) = 0;  // a non-blank user message
  virtual void ToolResult(std::string_view text) = 0;   // a non-blank tool result
  // An assistant line that is a decision or holds a key marker, or a tool result's line
  // with a key marker from options.key_lines_from on (trimmed, not capped).
  virtual void KeyLine(std::string_view line) = 0;
};

// Adds the trail of `m` (nothing for a system message) to `trail`; `facts` may be null.
void ExtractInto(const Message& m, const ArtifactOptions& options, TrailBuilder& trail,
                 FactSink* facts);

}  // namespace missy

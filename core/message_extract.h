// A message's extract (DESIGN.md §5): what the artifact trail and the extractive
// summarizer take from one message — the files, commands, error lines and decisions it
// names, and its request or facts already formatted — computed once, on append (as its
// token count is), and stored beside it. Summarizing a stretch of history then merges
// small extracts instead of rescanning every text, so a forced compaction over a long
// session costs little; the summary is the same bytes either way (a message without a
// current extract is extracted on the spot).
//
// The encoding is opaque and versioned: byte 0 is kExtractVersion; then, for each list in
// ExtractList order, a varint count and the items (varint length, bytes, 8-byte ItemHash);
// for a trail list with more than one item, the order in which the message last named
// them (varint indices), which is what recency needs. Pure; no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/artifact_extraction.h"
#include "core/message.h"

namespace missy {

struct ExtractiveOptions {
  int64_t target_tokens = 1200;      // upper bound of the text (1200 leaves, 2000 condensed)
  size_t user_message_chars = 500;   // user messages up to this many code points verbatim
  size_t tool_result_chars = 200;    // head of each tool result kept as a "[tool]" fact
  size_t max_line_chars = 300;       // cap of a fact, error or decision line
  size_t command_chars = 200;        // cap of a command in the trail
  size_t scan_window_bytes = 1024;   // tool results are scanned for errors in head+tail
  size_t text_window_bytes = 16384;  // user/assistant texts over twice this: paths in head+tail
  // Whether extracts made with these options equal the stored ones (made with the
  // defaults; target_tokens plays no part in an extract).
  bool ExtractsMatchDefaults() const;
};

// 2: markup tags ("</pr_description>") and sed scripts in commands are not paths; 3: a
// numbered listing's lines are not errors; 4: error lines keep their blanks, reports in the
// middle of long tool results, more error shapes (Elixir, npm, tsc, go test, Rust panics,
// "command not found"), URLs among the files. Older extracts are not used: their messages
// are extracted again when summarized.
inline constexpr uint8_t kExtractVersion = 4;

enum ExtractList : uint8_t {
  kExFiles,
  kExCommands,
  kExErrors,
  kExDecisions,
  kExRequests,
  kExFacts
};
inline constexpr size_t kExtractLists = 6;
inline constexpr size_t kExtractTrailLists = 4;  // files, commands, errors, decisions

// A 64-bit hash of an item, the same on every build (it is stored).
uint64_t ItemHash(std::string_view s);

// The extract of `m` (a system message has an empty one: "\x01" and six zero counts).
std::string ExtractMessage(const Message& m, const ExtractiveOptions& options = {});

// Makes extracts one after another, reusing its buffers (what ExtractMessage does once).
class MessageExtractor {
 public:
  explicit MessageExtractor(const ExtractiveOptions& options);
  ~MessageExtractor();
  std::string Extract(const Message& m);

 private:
  struct Scratch;
  ExtractiveOptions options_;
  std::unique_ptr<Scratch> scratch_;
};

// A user message as a request: trimmed, valid UTF-8, cut middle-out (two thirds head,
// one third tail) past `max_chars` code points.
std::string UserRequest(std::string_view text, size_t max_chars);

// A deduplicated list in first-seen order that remembers when each item was last seen,
// keyed by ItemHash. Holds views: what they point into must outlive it.
class ItemSet {
 public:
  // Adds `item` (or refreshes its recency when present); returns its index.
  size_t Add(std::string_view item, uint64_t hash);
  size_t Add(std::string_view item) { return Add(item, ItemHash(item)); }
  // Adds only when absent (first seen wins, recency untouched); true when added.
  bool AddIfNew(std::string_view item, uint64_t hash);
  void Touch(size_t index) { last_seen_[index] = ++clock_; }
  const std::vector<std::string_view>& items() const { return items_; }
  // The index of `item`, or SIZE_MAX when absent.
  size_t IndexOf(std::string_view item) const;
  // Item indices, most recently seen first.
  std::vector<size_t> ByRecency() const { return OrderByRecency(last_seen_); }
  std::vector<std::string> Copy() const { return {items_.begin(), items_.end()}; }

 private:
  size_t Find(std::string_view item, uint64_t hash, bool* found) const;
  // The item's index, appended (with `*added`) when absent; recency untouched if present.
  size_t Insert(std::string_view item, uint64_t hash, bool* added);
  void Grow();

  std::vector<std::string_view> items_;
  std::vector<uint64_t> hashes_;
  std::vector<uint64_t> last_seen_;
  std::vector<uint32_t> slots_;  // index + 1; 0 = empty
  uint64_t clock_ = 0;
};

// The lists of a stretch of messages, merged from their extracts in order: the trail
// lists with recency, requests and facts first-seen. Messages without a current extract
// (or any, when the options differ from the stored ones) are extracted here.
class ExtractMerge {
 public:
  explicit ExtractMerge(const ExtractiveOptions& options)
      : options_(options), stored_extracts_usable_(options.ExtractsMatchDefaults()) {}
  void Add(const StoredMessage& m);
  void AddAll(std::span<const StoredMessage> messages);
  const ItemSet& list(ExtractList l) const { return lists_[l]; }
  ItemSet& list(ExtractList l) { return lists_[l]; }
  ArtifactTrail Trail() const;
  // Keeps `s` alive as long as the merge (for views of strings made by the caller).
  std::string_view Keep(std::string s);
  // Adds a path to the files list as the extraction would (skipped, false, unless
  // TrailPath).
  bool AddFile(std::string_view path);

  // The seq of the tool result that showed the error at `index` of list(kExErrors) gone:
  // a later run of the same call (the same tool with the same arguments) no longer
  // printed it, and nothing printed it since. 0 while it is not known to be fixed.
  int64_t FixedAt(size_t index) const;
  // Sets (seq > 0) or clears (0) what FixedAt says, as a summary's text told it.
  void SetFixedAt(size_t index, int64_t seq);

  struct DecodedItem {
    std::string_view text;
    uint64_t hash = 0;
  };

 private:
  bool Apply(std::string_view extract);  // false: not a current extract (nothing added)
  // Follows runs of the same call: which errors a rerun no longer printed (FixedAt).
  void TrackRuns(const StoredMessage& m);

  ExtractiveOptions options_;
  bool stored_extracts_usable_;  // the options are those stored extracts were made with
  ItemSet lists_[kExtractLists];
  std::deque<std::string> owned_;                // extracts made here, strings kept for callers
  std::unique_ptr<MessageExtractor> extractor_;  // made for the first message without one
  // Scratch of Apply, reused.
  std::vector<DecodedItem> decoded_[kExtractLists];
  std::vector<uint32_t> orders_[kExtractTrailLists];
  std::vector<size_t> indices_;
  std::vector<size_t> added_errors_;  // the error indices the last applied extract named
  // call id -> the hash of its tool and the first 4 KB of its arguments (the call's run)
  std::unordered_map<std::string, uint64_t> call_keys_;
  std::unordered_map<uint64_t, std::vector<size_t>> last_run_errors_;  // by run
  std::unordered_map<size_t, int64_t> fixed_at_;
};

// Whether ExtractMerge takes `extract` as it is (current version, intact, valid UTF-8):
// a message whose stored extract does not decode needs its content to be summarized.
bool ExtractDecodes(std::string_view extract);

// The trail of a stretch of messages (system messages are ignored), from their extracts.
ArtifactTrail ExtractArtifacts(std::span<const StoredMessage> messages);

}  // namespace missy

// Model table (DESIGN.md §3): maps a model name to its context window, its maximum
// output tokens and the encoding used to count its tokens. Pure data, no I/O; a
// ModelTable is a value (copyable) and safe to read from several threads once built.
// context_window is the model's whole window (input + output); max_output_tokens is what
// the model may generate. The input budget is context_window - max_output_tokens: the two
// are never interchangeable (PicoClaw #1439).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace missy {

struct ModelSpec {
  std::string pattern;            // exact name, prefix, or glob with '*' (case-insensitive)
  int64_t context_window = 0;     // whole window in tokens (input + output)
  int64_t max_output_tokens = 0;  // output reserve; must be < context_window
  std::string encoding;           // "o200k_base" | "cl100k_base" | "heuristic"
  double factor = 1.0;            // multiplier on counts (models without an offline tokenizer)

  // Ok, or InvalidArgument whose field() is the offending member ("max_output_tokens")
  // and whose message() is the reason.
  Status Validate() const;
  // context_window - max_output_tokens.
  int64_t InputBudget() const { return context_window - max_output_tokens; }

  bool operator==(const ModelSpec&) const = default;
};

// True for "o200k_base", "cl100k_base" and "heuristic".
bool IsKnownEncoding(std::string_view encoding);

class ModelTable {
 public:
  ModelTable() = default;

  // Current OpenAI, Anthropic, Google and common Ollama models.
  static ModelTable Builtin();

  // Adds `spec`, or replaces the row whose pattern equals it case-insensitively.
  void Upsert(ModelSpec spec);

  // The row for `model`: a row whose pattern equals the name (case-insensitive) wins;
  // otherwise, among glob rows ('*' matches any run of characters) that match the whole
  // name and plain rows that are a prefix of it, the most specific (most literal
  // characters) wins, a later row on a tie. A name with a "provider/" prefix that matches
  // nothing is retried without it. nullopt when nothing matches.
  std::optional<ModelSpec> Lookup(std::string_view model) const;

  const std::vector<ModelSpec>& rows() const { return rows_; }

  // Ok, or the first invalid row: field() is "rows[i].member", message() names the
  // pattern and the reason.
  Status Validate() const;

 private:
  std::vector<ModelSpec> rows_;
};

}  // namespace missy

// Summary backends (DESIGN.md §5): what writes the text of a leaf summary (a chunk of
// messages) or of a condensed one (child summaries). `extractive` is offline and
// deterministic (core/extractive_summarizer.h); `llm` asks a provider with a checkpoint
// prompt and escalates: normal target → aggressive (half the target, stricter prompt) →
// extractive fallback. It also falls back on any provider failure but one: a request that
// does not fit the summarizer model's window (measured before sending when the model's
// window is known, or the provider's kContextLength) is split in two on group boundaries
// (children: between summaries) and each half summarized. The llm text always carries the
// deterministic artifact trail, appended; a text not smaller than its source is rejected.
//
// Guarantees: Leaf and Condense never fail (a fallback says why in BackendSummary::fallback)
// and return a text that counts fewer tokens than the source whenever the extractive
// summarizer can make one. They block (an llm backend waits for the provider): call them
// from a worker, never an event-loop thread. A backend serves one summarization run at a
// time (not thread-safe). The API key never appears in a text, a fallback reason or a log.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "core/extractive_summarizer.h"
#include "core/message.h"
#include "core/status.h"
#include "core/token_counter.h"
#include "daemon/provider/provider_client.h"

namespace missy {

namespace metrics {
class DaemonMetrics;
}

inline constexpr char kExtractiveBackend[] = "extractive";
inline constexpr char kLlmBackend[] = "llm";

struct BackendSummary {
  std::string text;           // what the model sees
  ArtifactTrail artifacts;    // the deterministic trail (stored beside the text, never cut)
  int64_t tokens = 0;         // CountText(text)
  int64_t source_tokens = 0;  // what it replaces: the messages' tokens, or the children's
  std::string backend;        // the backend that wrote `text`: "llm" | "extractive"
  std::string fallback;       // why the llm's text was not used ("" when it was, or not asked)
  int llm_requests = 0;       // completion requests made (each may retry inside the client)
  std::string worker;         // the broker worker that wrote it ("" = this daemon)
  bool Shrinks() const { return tokens < source_tokens; }
};

class SummaryBackend {
 public:
  virtual ~SummaryBackend() = default;
  virtual std::string_view name() const = 0;  // "extractive" | "llm"
  // Whether Leaf reads the messages' content; when not, a message with a stored extract
  // that decodes (ExtractDecodes) may come without it (MessageStore::LoadExtracts).
  virtual bool ReadsContent() const { return true; }
  // A leaf summary of `chunk` (whole groups). `prior` is the newest earlier summary (an
  // llm gets it for continuity; may be empty). `target_tokens`: the size to aim for.
  virtual BackendSummary Leaf(std::span<const StoredMessage> chunk, std::string_view prior,
                              int64_t target_tokens, const MessageTokenCounter& counter) = 0;
  // One summary of `children` (oldest first), one depth up.
  virtual BackendSummary Condense(std::span<const ChildSummary> children, int64_t target_tokens,
                                  const MessageTokenCounter& counter) = 0;
};

// core/extractive_summarizer.h. It gets no prior summary: it would only copy it, and the
// prior stays in the context on its own.
class ExtractiveBackend final : public SummaryBackend {
 public:
  std::string_view name() const override { return kExtractiveBackend; }
  bool ReadsContent() const override { return false; }  // the extracts hold what it takes
  BackendSummary Leaf(std::span<const StoredMessage> chunk, std::string_view prior,
                      int64_t target_tokens, const MessageTokenCounter& counter) override;
  BackendSummary Condense(std::span<const ChildSummary> children, int64_t target_tokens,
                          const MessageTokenCounter& counter) override;
};

struct LlmBackendOptions {
  size_t tool_result_chars = 2000;  // a tool result's head and tail (each) in the transcript
  size_t tool_args_chars = 1000;    // a tool call's arguments in the transcript
  // The largest request (system + user text, counted with the run's counter) the summarizer
  // model takes; a larger one is split before it is sent. 0: unknown (only the provider's
  // kContextLength splits).
  int64_t max_input_tokens = 0;
  int max_split_depth = 4;  // halvings of one request at most (16 pieces)
  // No request is started after this; what is left is summarized extractively.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::string secret;  // redacted from anything the backend reports (the provider's API key)
  // Each completion request counts (calls, errors by kind, duration) under `provider`.
  metrics::DaemonMetrics* metrics = nullptr;  // null: not counted
  std::string provider;                       // the providers.<name> key
};

class LlmBackend final : public SummaryBackend {
 public:
  LlmBackend(std::shared_ptr<provider::ProviderClient> client, LlmBackendOptions options = {});
  std::string_view name() const override { return kLlmBackend; }
  BackendSummary Leaf(std::span<const StoredMessage> chunk, std::string_view prior,
                      int64_t target_tokens, const MessageTokenCounter& counter) override;
  BackendSummary Condense(std::span<const ChildSummary> children, int64_t target_tokens,
                          const MessageTokenCounter& counter) override;

 private:
  struct Answer;
  enum class Mode { kNormal, kAggressive };
  Answer Ask(bool condense, std::span<const std::string> units, std::string_view prior,
             int64_t max_tokens, Mode mode, const MessageTokenCounter& counter, int depth,
             int* requests);
  // Normal, then aggressive; `fallback` when neither gives a text smaller than the source.
  template <typename Fallback>
  BackendSummary Escalate(bool condense, std::span<const std::string> units, std::string_view prior,
                          int64_t target_tokens, ArtifactTrail trail, int64_t source_tokens,
                          const MessageTokenCounter& counter, Fallback fallback);
  std::string Redact(std::string text) const;

  std::shared_ptr<provider::ProviderClient> client_;
  LlmBackendOptions options_;
};

// What a summary replaces: the chunk's stored token counts, or the children's.
int64_t SourceTokens(std::span<const StoredMessage> chunk, const MessageTokenCounter& counter);
int64_t SourceTokens(std::span<const ChildSummary> children, const MessageTokenCounter& counter);

// The system prompts (exposed for tests and docs).
std::string CheckpointPrompt(bool condense, bool aggressive, int64_t target_tokens);
// A chunk as the llm reads it, one string per group: "user: ...", "assistant: ...",
// "assistant called name(args)", "tool name: ..." (results cut to their head and tail).
std::vector<std::string> RenderTranscript(std::span<const StoredMessage> chunk,
                                          const LlmBackendOptions& options);
// The trail as appended to an llm summary ("" when empty): a few capped lines.
std::string RenderTrail(const ArtifactTrail& trail);

// The backend a run uses: context.summarizer.backend (`backend_override` when not empty),
// with the provider providers.<context.summarizer.provider or default_provider>.
struct SelectedBackend {
  std::unique_ptr<SummaryBackend> backend;
  std::string requested;  // the configured backend
  std::string fallback;   // why the llm backend could not be built (extractive is used)
};
// The backend a run asks for: `backend_override` when not empty, else
// context.summarizer.backend; anything but "llm" is "extractive".
std::string RequestedBackend(const DaemonConfig& config, std::string_view backend_override);

// Never fails: a provider that cannot be built gives the extractive backend with the
// reason. The overrides (a session's choice) replace context.summarizer.backend and
// .provider when not empty. `deadline` bounds the llm path (forced compaction).
SelectedBackend SelectSummaryBackend(
    const DaemonConfig& config, std::string_view backend_override,
    std::string_view provider_override, const provider::ProviderOptions& provider_options,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
    metrics::DaemonMetrics* metrics = nullptr);

}  // namespace missy

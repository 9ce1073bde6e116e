#include "daemon/service/summary_backend.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <variant>

#include "core/groups.h"
#include "core/summary_text.h"
#include "core/utf8.h"
#include "daemon/metrics/daemon_metrics.h"

namespace missy {

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int64_t kMinAnswerTokens = 64;  // a split half is asked for at least this much
constexpr int64_t kPromptMargin = 256;    // chat framing the counter does not see

// At most `chars` bytes of `text`, cut back to a UTF-8 boundary.
std::string_view Head(std::string_view text, size_t chars) {
  if (text.size() <= chars) return text;
  size_t n = chars;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n);
}

std::string_view Tail(std::string_view text, size_t chars) {
  if (text.size() <= chars) return text;
  size_t from = text.size() - chars;
  while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) ++from;
  return text.substr(from);
}

// The head and tail of a long text with what was left out between them.
std::string HeadAndTail(std::string_view text, size_t chars) {
  if (text.size() <= 2 * chars) return std::string(text);
  const std::string_view head = Head(text, chars), tail = Tail(text, chars);
  return std::string(head) + "\n[... " + std::to_string(text.size() - head.size() - tail.size()) +
         " bytes omitted ...]\n" + std::string(tail);
}

std::string RenderMessage(const Message& m, const LlmBackendOptions& options) {
  std::string out;
  std::string text = m.PlainText();
  if (const size_t images = m.ImageCount(); images > 0) {
    text += (text.empty() ? "" : " ") + std::string("[") + std::to_string(images) + " image" +
            (images == 1 ? "" : "s") + "]";
  }
  switch (m.role) {
    case Role::kSystem:
      return "";  // the agent's instructions are not part of what happened
    case Role::kUser:
      if (extractive::ToolOutputInUserMessage(text)) {  // an agent's command output
        return "tool: " + HeadAndTail(text, options.tool_result_chars) + "\n";
      }
      return "user: " + text + "\n";
    case Role::kAssistant:
      if (!text.empty()) out = "assistant: " + text + "\n";
      for (const ToolCall& call : m.tool_calls) {
        std::string args(Head(call.arguments, options.tool_args_chars));
        if (args.size() < call.arguments.size()) args += "...";
        out += "assistant called " + call.name + "(" + args + ")\n";
      }
      return out;
    case Role::kTool:
      return "tool" + (m.name.empty() ? std::string() : " " + m.name) + ": " +
             HeadAndTail(text, options.tool_result_chars) + "\n";
  }
  return out;
}

// items[shown] (ascending indices), after a note of how many were left out.
std::string JoinShown(const std::vector<std::string>& items, const std::vector<size_t>& shown,
                      std::string_view sep) {
  std::string out;
  if (shown.size() < items.size()) {
    out = "(" + std::to_string(items.size() - shown.size()) + " omitted)" + std::string(sep);
  }
  for (size_t k = 0; k < shown.size(); ++k) {
    if (k > 0) out += sep;
    out += items[shown[k]];
  }
  return out;
}

// The newest `keep` items (the trail is in first-seen order).
std::string JoinItems(const std::vector<std::string>& items, size_t keep, std::string_view sep) {
  std::vector<size_t> shown;
  for (size_t i = items.size() > keep ? items.size() - keep : 0; i < items.size(); ++i) {
    shown.push_back(i);
  }
  return JoinShown(items, shown, sep);
}

// Up to `keep` errors: those that report an error before those that only mention one, the
// newest of each first; shown in first-seen order.
std::string JoinErrors(const std::vector<std::string>& items, size_t keep, std::string_view sep) {
  std::vector<size_t> order;  // newest first
  for (size_t i = items.size(); i > 0; --i) order.push_back(i - 1);
  std::stable_partition(order.begin(), order.end(),
                        [&](size_t i) { return extractive::ReportsError(items[i]); });
  order.resize(std::min(order.size(), keep));
  std::sort(order.begin(), order.end());
  return JoinShown(items, order, sep);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Rendering and prompts

std::string CheckpointPrompt(bool condense, bool aggressive, int64_t target_tokens) {
  const int64_t words = std::max<int64_t>(40, target_tokens * 2 / 3);
  std::string p =
      condense ? "You merge consecutive checkpoint summaries of one AI agent's work session "
                 "(oldest first) into one checkpoint summary. Later information supersedes "
                 "earlier information.\n"
               : "You write a checkpoint summary of part of an AI agent's work session, so that "
                 "the agent can continue the work once this history is removed from its "
                 "context.\n";
  p += "Write plain text under these headings:\n"
       "Goal and constraints: what the user wants, and the requirements and limits they set.\n"
       "Progress and decisions: what was done and what was decided, with the reasons.\n"
       "Files touched: each file read, created or changed, and how.\n"
       "Errors and fixes: the errors met and how each was fixed, or that it is still open.\n"
       "Current state: where the work stands.\n"
       "Next steps: what remains to be done.\n"
       "Be concise and specific: keep exact names, paths, commands, values and error texts; "
       "leave out pleasantries and whatever is obsolete; never invent anything. "
       "Write at most " +
       std::to_string(words) + " words.";
  if (aggressive) {
    p += "\nThis must be much shorter than before: only the facts needed to continue, one or "
         "two short lines per heading, no repetition. Never exceed the word limit.";
  }
  return p;
}

std::vector<std::string> RenderTranscript(std::span<const StoredMessage> chunk,
                                          const LlmBackendOptions& options) {
  std::vector<std::string> units;
  for (const GroupSpan& g : ComputeGroups(chunk)) {
    std::string unit;
    for (size_t i = g.begin; i < g.end; ++i) unit += RenderMessage(chunk[i].message, options);
    if (!unit.empty()) units.push_back(ToValidUtf8(unit));
  }
  return units;
}

std::string RenderTrail(const ArtifactTrail& trail) {
  if (trail.empty()) return "";
  std::string out = "Artifacts:";
  const auto line = [&](const char* label, const std::vector<std::string>& items,
                        const std::string& joined) {
    if (!items.empty()) out += "\n" + std::string(label) + ": " + joined;
  };
  line("files", trail.files, JoinItems(trail.files, 40, ", "));
  line("commands", trail.commands, JoinItems(trail.commands, 12, " | "));
  line("errors", trail.errors, JoinErrors(trail.errors, 8, " | "));
  line("decisions", trail.decisions, JoinItems(trail.decisions, 8, " | "));
  return out;
}

// ---------------------------------------------------------------------------------------
// ExtractiveBackend

namespace {

BackendSummary FromExtractive(ExtractiveSummary sum) {
  BackendSummary out;
  out.text = std::move(sum.text);
  out.artifacts = std::move(sum.artifacts);
  out.tokens = sum.tokens;
  out.source_tokens = sum.source_tokens;
  out.backend = kExtractiveBackend;
  return out;
}

BackendSummary ExtractiveLeaf(std::span<const StoredMessage> chunk, int64_t target_tokens,
                              const MessageTokenCounter& counter) {
  ExtractiveOptions options;
  options.target_tokens = target_tokens;
  return FromExtractive(SummarizeMessages(chunk, "", options, counter));
}

BackendSummary ExtractiveCondense(std::span<const ChildSummary> children, int64_t target_tokens,
                                  const MessageTokenCounter& counter) {
  ExtractiveOptions options;
  options.target_tokens = target_tokens;
  return FromExtractive(CondenseSummaries(children, options, counter));
}

}  // namespace

int64_t SourceTokens(std::span<const StoredMessage> chunk, const MessageTokenCounter& counter) {
  int64_t total = 0;
  for (const StoredMessage& m : chunk) {
    total += m.tokens > 0 ? m.tokens : counter.CountMessage(m.message);
  }
  return total;
}

int64_t SourceTokens(std::span<const ChildSummary> children, const MessageTokenCounter& counter) {
  int64_t total = 0;
  for (const ChildSummary& c : children) {
    total += c.tokens > 0 ? c.tokens : counter.CountText(c.text);
  }
  return total;
}

BackendSummary ExtractiveBackend::Leaf(std::span<const StoredMessage> chunk, std::string_view,
                                       int64_t target_tokens, const MessageTokenCounter& counter) {
  return ExtractiveLeaf(chunk, target_tokens, counter);
}

BackendSummary ExtractiveBackend::Condense(std::span<const ChildSummary> children,
                                           int64_t target_tokens,
                                           const MessageTokenCounter& counter) {
  return ExtractiveCondense(children, target_tokens, counter);
}

// ---------------------------------------------------------------------------------------
// LlmBackend

struct LlmBackend::Answer {
  bool ok = false;
  std::string text;     // the model's summary (ok)
  std::string failure;  // why there is none (not ok)
};

LlmBackend::LlmBackend(std::shared_ptr<provider::ProviderClient> client, LlmBackendOptions options)
    : client_(std::move(client)), options_(std::move(options)) {}

std::string LlmBackend::Redact(std::string text) const {
  if (options_.secret.empty()) return text;
  for (size_t at = text.find(options_.secret); at != std::string::npos;
       at = text.find(options_.secret, at)) {
    text.replace(at, options_.secret.size(), "***");
  }
  return text;
}

LlmBackend::Answer LlmBackend::Ask(bool condense, std::span<const std::string> units,
                                   std::string_view prior, int64_t max_tokens, Mode mode,
                                   const MessageTokenCounter& counter, int depth, int* requests) {
  provider::CompletionRequest request;
  request.system = CheckpointPrompt(condense, mode == Mode::kAggressive, max_tokens);
  std::string user;
  if (!prior.empty()) {
    user += "The summary of the session before this part (for context; do not repeat it):\n";
    user += prior;
    user += "\n\n";
  }
  user += condense ? "The summaries to merge, oldest first:\n" : "The conversation:\n";
  for (size_t i = 0; i < units.size(); ++i) {
    if (condense) user += "\n--- summary " + std::to_string(i + 1) + " ---\n";
    user += units[i];
  }
  user += condense ? "\nWrite the merged checkpoint summary." : "\nWrite the checkpoint summary.";

  // Split on kContextLength (or before sending, when it cannot fit): each half on its own,
  // the later half without the prior (the earlier half's answer precedes it).
  const auto split = [&](std::string why) -> Answer {
    if (units.size() < 2 || depth >= options_.max_split_depth) {
      return {false, "", std::move(why) + "; it cannot be split further"};
    }
    const size_t mid = units.size() / 2;
    const int64_t half = std::max(kMinAnswerTokens, max_tokens / 2);
    Answer left = Ask(condense, units.first(mid), prior, half, mode, counter, depth + 1, requests);
    if (!left.ok) return left;
    Answer right = Ask(condense, units.subspan(mid), "", half, mode, counter, depth + 1, requests);
    if (!right.ok) return right;
    return {true, left.text + "\n\n" + right.text, ""};
  };
  // Counted only when its size alone does not show that it fits (a 20,000-token chunk
  // is some 80 KB: most summarizer models' windows take it without a count).
  const auto over_window = [&](auto count) {
    return count(request.system) + count(user) + kPromptMargin > options_.max_input_tokens;
  };
  if (options_.max_input_tokens > 0 &&
      over_window([&](std::string_view t) { return counter.AtMost(t); }) &&
      over_window([&](std::string_view t) { return counter.CountText(t); })) {
    return split("the request does not fit the summarizer model's window");
  }
  if (SteadyClock::now() >= options_.deadline) {
    return {false, "", "the llm summarization deadline passed"};
  }
  request.messages.emplace_back("user", std::move(user));
  request.max_tokens = max_tokens;
  ++*requests;
  const SteadyClock::time_point started = SteadyClock::now();
  provider::CompletionOutcome outcome = client_->Complete(request);
  if (metrics::DaemonMetrics* m = options_.metrics) {
    const std::chrono::duration<double> took = SteadyClock::now() - started;
    m->provider_requests.With({options_.provider}).Inc();
    m->provider_duration.With({options_.provider}).Observe(took.count());
    if (auto* failure = std::get_if<provider::ProviderFailure>(&outcome)) {
      m->provider_errors
          .With({options_.provider, std::string(provider::ProviderErrorKindName(failure->kind))})
          .Inc();
    }
  }
  if (auto* failure = std::get_if<provider::ProviderFailure>(&outcome)) {
    std::string why = "provider " + std::string(provider::ProviderErrorKindName(failure->kind)) +
                      ": " + Redact(failure->message);  // the message names the HTTP status
    if (failure->kind == provider::ProviderErrorKind::kContextLength) return split(std::move(why));
    return {false, "", std::move(why)};
  }
  std::string text = std::get<provider::CompletionResult>(outcome).text;
  const size_t last = text.find_last_not_of(" \t\r\n");
  if (last == std::string::npos) return {false, "", "the provider answered an empty summary"};
  text.erase(last + 1);
  text.erase(0, text.find_first_not_of(" \t\r\n"));
  return {true, ToValidUtf8(Redact(std::move(text))), ""};
}

template <typename Fallback>
BackendSummary LlmBackend::Escalate(bool condense, std::span<const std::string> units,
                                    std::string_view prior, int64_t target_tokens,
                                    ArtifactTrail trail, int64_t source_tokens,
                                    const MessageTokenCounter& counter, Fallback fallback) {
  int requests = 0;
  const std::string trail_text = RenderTrail(trail);
  std::string why;
  for (Mode mode : {Mode::kNormal, Mode::kAggressive}) {
    const int64_t target =
        mode == Mode::kNormal ? target_tokens : std::max(kMinAnswerTokens, target_tokens / 2);
    Answer answer = Ask(condense, units, prior, target, mode, counter, 0, &requests);
    if (!answer.ok) {
      why = std::move(answer.failure);
      break;  // a failure is not cured by a shorter target
    }
    BackendSummary out;
    out.text = trail_text.empty() ? std::move(answer.text) : answer.text + "\n" + trail_text;
    out.tokens = counter.CountText(out.text);
    out.source_tokens = source_tokens;
    if (out.Shrinks()) {
      out.artifacts = std::move(trail);
      out.backend = kLlmBackend;
      out.llm_requests = requests;
      return out;
    }
    why = "the llm summary (" + std::to_string(out.tokens) + " tokens) is not smaller than its " +
          std::to_string(source_tokens) + "-token source";
  }
  BackendSummary out = fallback();
  out.fallback = std::move(why);
  out.llm_requests = requests;
  spdlog::warn("llm summary replaced by the extractive one: {}", out.fallback);
  return out;
}

BackendSummary LlmBackend::Leaf(std::span<const StoredMessage> chunk, std::string_view prior,
                                int64_t target_tokens, const MessageTokenCounter& counter) {
  const std::vector<std::string> units = RenderTranscript(chunk, options_);
  return Escalate(/*condense=*/false, units, prior, target_tokens, ExtractArtifacts(chunk),
                  SourceTokens(chunk, counter), counter,
                  [&] { return ExtractiveLeaf(chunk, target_tokens, counter); });
}

BackendSummary LlmBackend::Condense(std::span<const ChildSummary> children, int64_t target_tokens,
                                    const MessageTokenCounter& counter) {
  std::vector<std::string> units;
  ArtifactTrail trail;
  for (const ChildSummary& c : children) {
    units.push_back(c.text + "\n");
    MergeArtifacts(trail, c.artifacts);
  }
  return Escalate(/*condense=*/true, units, "", target_tokens, std::move(trail),
                  SourceTokens(children, counter), counter,
                  [&] { return ExtractiveCondense(children, target_tokens, counter); });
}

// ---------------------------------------------------------------------------------------
// Selection

std::string RequestedBackend(const DaemonConfig& config, std::string_view backend_override) {
  const std::string_view b = backend_override.empty()
                                 ? std::string_view(config.summarizer_backend.backend)
                                 : backend_override;
  return b == kLlmBackend ? kLlmBackend : kExtractiveBackend;
}

SelectedBackend SelectSummaryBackend(const DaemonConfig& config, std::string_view backend_override,
                                     std::string_view provider_override,
                                     const provider::ProviderOptions& provider_options,
                                     SteadyClock::time_point deadline,
                                     metrics::DaemonMetrics* metrics) {
  SelectedBackend out;
  out.requested = RequestedBackend(config, backend_override);
  if (out.requested != kLlmBackend) {
    out.backend = std::make_unique<ExtractiveBackend>();
    return out;
  }
  auto selected = provider::SelectProvider(
      config, provider_override.empty() ? std::string_view(config.summarizer_backend.provider)
                                        : provider_override);
  Result<std::unique_ptr<provider::ProviderClient>> client =
      selected.ok()
          ? provider::MakeProviderClient(selected->first, selected->second, provider_options)
          : Result<std::unique_ptr<provider::ProviderClient>>(selected.status());
  if (!client.ok()) {
    out.fallback = "no llm provider: " + client.status().message();
    if (selected.ok() && !selected->second.api_key.empty()) {
      const std::string& key = selected->second.api_key;
      for (size_t at = out.fallback.find(key); at != std::string::npos;
           at = out.fallback.find(key, at)) {
        out.fallback.replace(at, key.size(), "***");
      }
    }
    out.backend = std::make_unique<ExtractiveBackend>();
    return out;
  }
  LlmBackendOptions options;
  options.deadline = deadline;
  options.secret = selected->second.api_key;
  options.metrics = metrics;
  options.provider = selected->first;
  if (std::optional<ModelSpec> spec = config.models.Lookup(selected->second.model)) {
    const int64_t answer =
        std::max(config.summarizer.leaf_target_tokens, config.summarizer.condensed_target_tokens);
    options.max_input_tokens = std::max<int64_t>(1, spec->context_window - answer);
  }
  out.backend = std::make_unique<LlmBackend>(std::move(client).value(), std::move(options));
  return out;
}

}  // namespace missy

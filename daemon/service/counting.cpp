#include "daemon/service/counting.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <optional>

#include "config/tokenizers.h"
#include "core/model_table.h"

namespace missy {

MessageTokenCounter CounterFor(const DaemonConfig& config, const TokenizerRegistry* tokenizers,
                               const Session& session) {
  static const std::shared_ptr<const TokenCounter> heuristic =
      std::make_shared<HeuristicTokenCounter>();
  MessageCountingOptions options;
  options.image_tokens = config.image_tokens;
  std::string encoding = "o200k_base";  // models without an offline tokenizer: o200k x factor
  if (std::optional<ModelSpec> spec = config.models.Lookup(session.model)) {
    options.factor = spec->factor;
    encoding = spec->encoding;
  }
  if (config.tokenizer == TokenizerMode::kHeuristic) encoding = "heuristic";
  if (tokenizers != nullptr) {
    Result<std::shared_ptr<const TokenCounter>> counter = tokenizers->Get(encoding);
    if (counter.ok()) return MessageTokenCounter(*counter, options);
    spdlog::warn("tokenizer {} unavailable, counting heuristically: {}", encoding,
                 counter.status().message());
  }
  return MessageTokenCounter(heuristic, options);
}

int64_t SessionHistoryBudget(const DaemonConfig& config, const Session& session) {
  TokenBudget b = config.budget;
  std::optional<ModelSpec> spec = config.models.Lookup(session.model);
  const int64_t window =
      session.context_window > 0 ? session.context_window : (spec ? spec->context_window : 0);
  const int64_t max_output = spec ? spec->max_output_tokens : 0;
  if (window > max_output && window > 0) b.total = window - max_output;
  const int64_t available = b.total - b.system_reserve - b.tool_definitions_reserve;
  return std::max<int64_t>(0, b.HistoryBudget(std::max<int64_t>(0, available)));
}

std::string CalibrationKey(const Session& session) {
  return session.model.empty() ? std::string("default") : session.model;
}

}  // namespace missy

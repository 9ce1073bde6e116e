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

std::string CalibrationKey(const Session& session) {
  return session.model.empty() ? std::string("default") : session.model;
}

}  // namespace missy

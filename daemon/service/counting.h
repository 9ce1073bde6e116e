// Which token counter a session's messages are counted with: the encoding of its model
// (o200k_base for models without an offline tokenizer, times the model's factor), or the
// heuristic when the config asks for it or a rank file is unavailable.
#pragma once

#include "config/config.h"
#include "core/session.h"
#include "core/token_counter.h"

namespace missy {

class TokenizerRegistry;

// `tokenizers` may be null: every count is then heuristic.
MessageTokenCounter CounterFor(const DaemonConfig& config, const TokenizerRegistry* tokenizers,
                               const Session& session);

// The history budget of a session's contexts when the request overrides nothing: the
// model's window minus its output (or budget.total), minus the system and tool reserves,
// minus the memory and learnings shares.
int64_t SessionHistoryBudget(const DaemonConfig& config, const Session& session);

// The key calibration is kept under for a session: its model, or "default".
std::string CalibrationKey(const Session& session);

}  // namespace missy

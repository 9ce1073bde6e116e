// Loading a session's history into a HistoryWindow (core/history_window.h), and giving
// folded messages their content back when an assembly needs it. Loads page by page and
// folds as it goes, so even a very long session never has its whole content in memory.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "core/history_window.h"
#include "core/status.h"
#include "core/token_counter.h"

namespace missy {

class MessageStore;

// What a window keeps for contexts of `total` tokens: twice the budget, and four fresh
// tails' worth of messages (at least 64).
WindowKeep KeepFor(const DaemonConfig& config, int64_t total);

// The session's history, folded down to `keep` (kNotFound for an unknown session).
Result<HistoryWindow> LoadHistoryWindow(MessageStore& messages, const std::string& session_id,
                                        const WindowKeep& keep, const MessageTokenCounter& counter);

// Loads content for about as many folded messages as the window holds (HistoryWindow::
// WidenFrom) and unfolds them. kInternal if nothing is folded.
Status WidenHistoryWindow(HistoryWindow& window, MessageStore& messages,
                          const std::string& session_id);

}  // namespace missy

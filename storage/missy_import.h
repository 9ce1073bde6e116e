// Import from Missy's memory.db (DESIGN.md §11): sessions, turns as messages, summaries
// with depth and parents, learnings. The source is opened read-only and never modified.
// Everything is written in one write; what an earlier import brought in (tracked per
// source row id) is skipped, so importing twice adds nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/token_counter.h"
#include "storage/database.h"
#include "storage/records.h"

namespace missy {

// `counter` counts imported messages (null: HeuristicTokenCounter). kInvalidArgument
// when the file is not a Missy memory database.
Result<MissyImportReport> ImportMissy(Database& db, const std::string& missy_db_path,
                                      const MessageTokenCounter* counter = nullptr,
                                      int64_t now_ms = 0);

// "2025-03-01T12:34:56.789Z", "2025-03-01 12:34:56+02:00", "2025-03-01", or epoch
// seconds ("1740832496.5") → unix epoch milliseconds.
std::optional<int64_t> ParseIsoTimestampMs(std::string_view text);

}  // namespace missy

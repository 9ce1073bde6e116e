// Import from Missy's memory.db (DESIGN.md §11). The source is opened read-only and
// never modified. Everything is written in one transaction; what an earlier import
// brought in (tracked per source row id) is skipped, so importing twice adds nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/token_counter.h"
#include "storage/database.h"

namespace missy {

// The work behind Database::ImportMissy. `counter` null: HeuristicTokenCounter.
Result<MissyImportReport> ImportMissyDatabase(Database& db, const std::string& missy_db_path,
                                              const MessageTokenCounter* counter, int64_t now_ms);

// "2025-03-01T12:34:56.789Z", "2025-03-01 12:34:56+02:00", "2025-03-01", or epoch
// seconds ("1740832496.5") → unix epoch milliseconds.
std::optional<int64_t> ParseIsoTimestampMs(std::string_view text);

}  // namespace missy

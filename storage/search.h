// Full-text search (FTS5, bm25) over memory items, summaries and message text.
// Thread-safe. A search sees every message and summary committed before it was called:
// their text is indexed after their commit (storage/text_indexer.h), so a search first
// catches the index up through the writer, or, when it cannot write (read-only file,
// disk full), indexes the pending rows on its own read connection.
#pragma once

#include <vector>

#include "core/context_types.h"
#include "core/status.h"
#include "storage/database.h"
#include "storage/records.h"

namespace missy {

// Most relevant first (score = -bm25), at most options.max_results. An empty or
// all-punctuation query returns an empty list.
Result<std::vector<MemoryHit>> Search(Database& db, const SearchOptions& options);

}  // namespace missy

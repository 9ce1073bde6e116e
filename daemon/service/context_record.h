// What a context.built event records for the past-context endpoints (issue 30):
// the context's composition (core/context_rebuild.h: rebuilt by GET /v1/contexts/{id})
// and its figures per section (listed by GET /v1/sessions/{id}/contexts). JSON-free;
// nothing recorded is a secret (ids, seqs, token counts, and the markers of cuts).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/assembler.h"
#include "daemon/audit/audit_detail.h"

namespace missy {

// The composition of `ctx` as JSON text; `window` is the history the assembly saw and
// `next_seq` the seq the request's new message would be stored at.
std::string ComposeRecord(const ContextInput& input, const std::vector<StoredMessage>& window,
                          const AssembledContext& ctx, int64_t next_seq);

// Adds "window", "sections" {system, tools, task, memory, learnings, summaries, history,
// new_message}, "summaries_short", "pruned", "truncated", "eviction", "forced" (the
// context of a forced compaction) and "composition" to a context.built detail.
void AddContextRecord(AuditDetail& detail, const AssembledContext& ctx, bool forced,
                      std::string composition);

}  // namespace missy

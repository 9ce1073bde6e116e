// The assembler's budget report (core/assembler.h) as JSON, for the API and the audit
// events. Kept apart from assembler.h so that headers needing the report's types do not
// pull in Boost.JSON.
#pragma once

#include <boost/json/object.hpp>

#include "core/assembler.h"

namespace missy {

// The budget report as JSON (every number in tokens unless named otherwise):
// {"context_window","max_output_tokens","total","used_tokens","available",
//  "zone": "safe"|"warning"|"overflow", "should_summarize": bool,
//  "system": {"tokens" (measured or reserve),"measured","message_tokens" (as sent)},
//  "tools": {"tokens","measured"},
//  "memory": {"budget","tokens","items"}, "learnings": {"budget","tokens","items"},
//  "summaries": {"tokens","included","skipped","short" (included in their short form),
//     "short_through_seq" (those ending at or before it go short),"included_ids":[...],
//     "skipped_ids":[...]},
//  "history": {"budget" (room for summaries + messages + new message),"tokens" (history
//     messages sent),"demand_tokens","threshold_tokens","uncovered_messages",
//     "kept_messages","fresh_tail_messages","dropped_messages" (evicted),
//     "covered_messages" (in an included summary),"first_kept_seq","first_fresh_seq",
//     "eviction": "fill"|"anchored"|"anchor_moved"},
//  "new_message": {"tokens","dropped"},
//  "sanitized": [{"seq" (0 = new message),"tool_call_id","reason","detail"}],
//  "truncated": [{"seq","original_tokens","tokens"}],
//  "pruned": {"messages" (sent as placeholder),"newly_pruned_seqs":[...],"freed_tokens"},
//  "fresh_tail": {"squeezed" (rule 1 applied),"dropped_messages"}}
boost::json::object ContextReportToJson(const ContextReport& report);

}  // namespace missy

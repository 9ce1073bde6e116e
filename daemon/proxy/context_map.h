// MapContext: the context the engine assembled, as the items of what the proxy sends.
// Each kept history message is traced back to the agent's message it came from (by seq);
// a message whose engine messages are all kept and unchanged goes out as the agent sent
// it (JSON-equal: signatures, cache markers, unknown fields), one the engine pruned,
// truncated or kept only in part is rewritten, and memory, summaries and the pinned task
// are injected (memory first: what the engine adds to the system prompt never changes the
// agent's). Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/assembler.h"
#include "daemon/proxy/wire.h"
#include "storage/proxy_store.h"

namespace missy::proxy {

// `natives[i]` is stored as the engine messages rows[i].first_seq .. + rows[i].seq_count;
// `agent_system` is the system prompt the context was built with. `new_index`: the
// context was built with natives[*new_index] (one engine message, not stored yet) as its
// new message; unset: everything the agent sent was stored first.
Outgoing MapContext(const AssembledContext& ctx, const std::vector<NativeMessage>& natives,
                    const std::vector<ProxyNativeRow>& rows, const std::string& agent_system,
                    std::optional<size_t> new_index = std::nullopt);

}  // namespace missy::proxy

// Past contexts (issue 30): the contexts a session was sent, found by their context.built
// audit events, and each one's message list rebuilt from its recorded composition and
// what is stored (core/context_rebuild.h), not from a stored copy. A context stays
// rebuildable for as long as the audit log keeps its event (retention). Thread-safe;
// each answers once, on a worker, after the audit events emitted before the call have
// committed (so a context answered just before is found).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/audit_event.h"
#include "core/context_rebuild.h"
#include "daemon/service/service_deps.h"

namespace missy {

struct PastContext {
  AuditEvent event;  // its context.built event (detail: figures, sections, composition)
  std::vector<RebuiltMessage> messages;
  // False when something it was made of is gone (a message of a deleted session, a
  // deleted memory item, a new message never appended) or was not recorded.
  bool complete = true;
};

// kNotFound when no retained event names `context_id`, or it has no composition.
void FindPastContext(const ServiceDeps& deps, std::string context_id, Done<PastContext> done);

// A session's context.built events with seq < before_seq (<= 0: the newest), newest
// first, at most `limit`. kNotFound for an unknown session.
void ListPastContexts(const ServiceDeps& deps, std::string session_id, int64_t before_seq,
                      int limit, Done<std::vector<AuditEvent>> done);

// The synchronous form of FindPastContext (tests, tools): reads now.
Result<PastContext> LoadPastContext(const ServiceDeps& deps, const std::string& context_id);

}  // namespace missy

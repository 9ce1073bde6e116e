// SessionService: sessions and their messages (create, read, append).
//
// Append is the hot path: messages are counted in the caller's thread (the expensive
// part, done in parallel across requests), then validated against the session's open
// tool calls and stored in one write transaction together with their audit event.
// Appends to one session are serialised (SessionQueue) without holding a lock across
// the commit; the answer comes after the commit, on the writer thread. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/message.h"
#include "core/sanitizer.h"
#include "core/session.h"
#include "daemon/service/service_deps.h"
#include "daemon/service/session_settings.h"
#include "storage/records.h"
#include "storage/session_store.h"

namespace missy {

class SummaryTrigger;

class HistoryCache;
class SessionQueue;

struct AppendRequest {
  std::string session_id;
  std::vector<Message> messages;  // moved into storage, never copied
  std::optional<bool> strict;     // overrides the session's setting for this batch
  std::vector<bool> pinned;       // per message: "pin": true (empty: none pinned)
  // Runs inside the append's write transaction once the messages are stored (their seqs
  // known): what must be committed with them, or not at all (the proxy's native rows).
  std::function<Status(Txn& txn, const std::vector<StoredMessage>& stored)> also_write;
};

struct AppendedMessage {
  int64_t seq = 0;
  int64_t tokens = 0;
  uint32_t flags = kFlagNone;
};

struct AppendOutcome {
  // Not ok: nothing was stored (unknown session, strict refusal, storage error).
  Status status;
  std::vector<AppendWarning> warnings;  // also set on a strict refusal
  std::vector<AppendedMessage> messages;
  std::string encoding;  // the counter used
  // The session's settings and counters after the append (read inside its write); its
  // system prompt, tools and metadata are left empty.
  Session session;
};

class SessionService {
 public:
  static constexpr size_t kMaxBatch = 10000;

  // `trigger` (may be null) is told of every append: it queues summarization jobs.
  SessionService(const ServiceDeps& deps, HistoryCache& history, SessionQueue& queue,
                 SummaryTrigger* trigger = nullptr);

  // Creates a session: an empty id gets "ses_" + a new id; `strict` unset takes the
  // config's default; timestamps from the clock. kAlreadyExists on a duplicate id.
  void Create(Session session, std::optional<bool> strict, Done<Session> done);
  Result<Session> Get(const std::string& id);  // kNotFound: "session 'x' not found"
  Result<std::vector<Session>> List(const ListOptions& options);
  // Messages with seq > after, at most `limit`.
  Result<std::vector<StoredMessage>> Messages(const std::string& id, int64_t after, int64_t limit);

  void Append(AppendRequest request, std::function<void(AppendOutcome)> done);

  // Deletes a session and what belongs to it (SessionStore::Delete) with its audit event
  // session.deleted, in the session's queue (after the appends and contexts queued
  // before it); then forgets it in the history cache, ages every cached memory search
  // (other sessions may have found its messages) and calls the deletion observers.
  // kNotFound (field "session_id") for an unknown session.
  void Delete(const std::string& id, Done<SessionDeletion> done);
  // Called with the id of each deleted session, after the commit, before the answer
  // (on a worker): per-session state kept elsewhere (context anchors, trigger check
  // points) forgets it there. Register before serving; not thread-safe.
  void AddDeletionObserver(std::function<void(const std::string&)> observer);

 private:
  // Get, from memory when the session's settings are known there.
  Result<Session> Settings(const std::string& id);

  ServiceDeps deps_;
  SessionSettings settings_;
  HistoryCache& history_;
  SessionQueue& queue_;
  SummaryTrigger* trigger_;
  std::vector<std::function<void(const std::string&)>> deletion_observers_;
};

// A session id is 1-128 characters of [A-Za-z0-9._:-].
bool ValidSessionId(std::string_view id);

}  // namespace missy

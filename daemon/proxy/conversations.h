// Conversations: which stored session an agent's request continues, and how much of its
// list is already stored. Identity comes from (first that is present) the path prefix
// /s/{name}, the X-Missy-Session header, the agent's own conversation header
// (X-Claude-Code-Session-Id, Codex's session-id) plus its first message, or a hash of the
// system prompt and first message. Matching compares the request's canonical message
// hashes with the stored ones (longest common prefix): all stored ones matched → the rest
// is new; otherwise the agent rewrote its history and the conversation branches into a
// new session (the old one stays as it was). Thread-safe: a conversation is held by one
// request at a time (Hold), others of the same conversation wait.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "daemon/proxy/wire.h"
#include "storage/proxy_store.h"

namespace missy::proxy {

struct Identity {
  std::string key;         // what proxy_keys is keyed by
  std::string session_id;  // the session it starts as (before any branch)
  std::string source;      // "path" | "header" | "agent_header" | "hash"
};

// `path_name`: from /s/{name} ("" = none); `headers` lower-cased.
Identity IdentifyConversation(const std::string& path_name,
                              const std::map<std::string, std::string>& headers,
                              const ParsedRequest& request);

// A name made into a session id ([A-Za-z0-9._:-], at most `max` characters).
std::string SafeSessionId(std::string_view name, size_t max = 100);

// The stored part of a conversation, as matching needs it.
struct Conversation {
  std::string key;
  std::string session_id;  // the session it continues now
  int64_t branches = 0;
  bool loaded = false;
  bool exists = false;  // the session exists in the database
  std::vector<ProxyNativeRow> rows;  // hashes and seqs, no native JSON
  int64_t last_seq = 0;  // the last engine seq the rows cover
};

// How many leading messages of `incoming` equal the stored ones.
size_t CommonPrefix(const std::vector<ProxyNativeRow>& stored,
                    const std::vector<NativeMessage>& incoming);

class Conversations {
 public:
  // Holds a conversation for one request; released on destruction.
  class Held {
   public:
    Held(std::shared_ptr<std::mutex> mu, Conversation* c) : lock_(*mu), mu_(std::move(mu)), c_(c) {}
    Conversation& operator*() { return *c_; }
    Conversation* operator->() { return c_; }

   private:
    std::unique_lock<std::mutex> lock_;
    std::shared_ptr<std::mutex> mu_;
    Conversation* c_;
  };

  // Waits for the conversation to be free. Its state may be unloaded (loaded == false).
  // Past kMaxLoaded conversations, the least recently held ones that nobody holds are
  // forgotten (reloaded from the database when they come back).
  Held Hold(const Identity& id);
  static constexpr size_t kMaxLoaded = 256;
  // Forgets what is held in memory for a key (a request failed half-way: reload).
  void Forget(Conversation& c) {
    c.loaded = false;
    c.rows.clear();
  }

 private:
  struct Slot {
    std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
    Conversation conversation;
    uint64_t last_held = 0;
  };
  void EvictLocked();
  uint64_t clock_ = 0;  // guarded by mu_
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Slot>> slots_;
};

}  // namespace missy::proxy

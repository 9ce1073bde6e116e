// ProxyStore: what proxy mode keeps beside a session's messages (schema v13): each
// message the agent sent in its own API's shape, the engine messages it was stored as,
// and the hash its next request is matched on; and which session a conversation's key
// continues. Thread-safe; reads use Database::Read, writes take the caller's Txn.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "storage/database.h"

namespace missy {

struct ProxyNativeRow {
  int64_t idx = 0;  // position in the agent's list (0-based, without chat's leading system)
  std::string hash;
  int64_t first_seq = 0;  // the engine messages first_seq .. first_seq + seq_count - 1
  int64_t seq_count = 0;
  std::string native;  // JSON text, as the agent sent it
};

struct ProxyKey {
  std::string session_id;
  int64_t branches = 0;  // how many times the conversation branched
};

class ProxyStore {
 public:
  explicit ProxyStore(Database& db) : db_(db) {}

  // The session's rows in idx order; `with_native`: their JSON too (else left empty).
  Result<std::vector<ProxyNativeRow>> Load(std::string_view session_id, bool with_native);
  // Appends rows; kAlreadyExists (a constraint error) when an idx is taken.
  Status Append(Txn& txn, std::string_view session_id, const std::vector<ProxyNativeRow>& rows);

  Result<std::optional<ProxyKey>> Key(std::string_view key);
  Status SetKey(Txn& txn, std::string_view key, const ProxyKey& value);

 private:
  Database& db_;
};

}  // namespace missy

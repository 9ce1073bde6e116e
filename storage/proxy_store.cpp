#include "storage/proxy_store.h"

#include "storage/sqlite.h"
#include "storage/store_util.h"

namespace missy {

using sqlite::Connection;
using sqlite::Statement;

Result<std::vector<ProxyNativeRow>> ProxyStore::Load(std::string_view session_id,
                                                     bool with_native) {
  std::vector<ProxyNativeRow> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_ASSIGN_STMT(q, c,
                      with_native ? "SELECT idx, hash, first_seq, seq_count, native FROM "
                                    "proxy_messages WHERE session_id = ?1 ORDER BY idx"
                                  : "SELECT idx, hash, first_seq, seq_count, '' FROM "
                                    "proxy_messages WHERE session_id = ?1 ORDER BY idx");
    q.Bind(1, session_id);
    return store_util::CollectRows(
        q,
        [](const Statement& s) {
          return ProxyNativeRow{s.Int(0), s.Text(1), s.Int(2), s.Int(3), s.Text(4)};
        },
        "load proxy messages", out);
  }));
  return out;
}

Status ProxyStore::Append(Txn& txn, std::string_view session_id,
                          const std::vector<ProxyNativeRow>& rows) {
  MISSY_ASSIGN_STMT(put, txn.conn(),
                    "INSERT INTO proxy_messages (session_id, idx, hash, first_seq, seq_count, "
                    "native) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  for (const ProxyNativeRow& r : rows) {
    put.Bind(1, session_id)
        .Bind(2, r.idx)
        .Bind(3, r.hash)
        .Bind(4, r.first_seq)
        .Bind(5, r.seq_count)
        .Bind(6, r.native);
    MISSY_RETURN_IF_ERROR(put.Run("store proxy message"));
    put.Reset();
  }
  return Status::Ok();
}

Result<std::optional<ProxyKey>> ProxyStore::Key(std::string_view key) {
  return store_util::ReadValue<std::optional<ProxyKey>>(
      db_, [&](Connection& c) -> Result<std::optional<ProxyKey>> {
        MISSY_ASSIGN_STMT(q, c, "SELECT session_id, branches FROM proxy_keys WHERE key = ?1");
        q.Bind(1, key);
        MISSY_ASSIGN_NEXT(row, q, "read proxy key");
        if (!row) return std::optional<ProxyKey>();
        return std::optional<ProxyKey>(ProxyKey{q.Text(0), q.Int(1)});
      });
}

Status ProxyStore::SetKey(Txn& txn, std::string_view key, const ProxyKey& value) {
  MISSY_ASSIGN_STMT(put, txn.conn(),
                    "INSERT INTO proxy_keys (key, session_id, branches) VALUES (?1, ?2, ?3) "
                    "ON CONFLICT (key) DO UPDATE SET session_id = excluded.session_id, "
                    "branches = excluded.branches");
  put.Bind(1, key).Bind(2, value.session_id).Bind(3, value.branches);
  return put.Run("store proxy key");
}

}  // namespace missy

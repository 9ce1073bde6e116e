// Internal to storage/: small helpers the stores share (generated ids, paging, rows).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "storage/database.h"
#include "storage/records.h"
#include "storage/sqlite.h"

namespace missy::store_util {

// `prefix` + 16 random hex digits ("sum_", "mem_", "lrn_").
std::string GenerateId(std::string_view prefix);

// Binds ListOptions to ?1 (LIMIT; -1 = no limit) and ?2 (OFFSET).
void BindPage(sqlite::Statement& q, const ListOptions& options);

// Steps `q` to the end, appending row(q) for each row.
template <typename T, typename RowFn>
Status CollectRows(sqlite::Statement& q, RowFn row, std::string_view what, std::vector<T>& out) {
  for (;;) {
    MISSY_ASSIGN_NEXT(has_row, q, what);
    if (!has_row) return Status::Ok();
    out.push_back(row(q));
  }
}

// Database::Read returning a value: `fn(conn)` yields Result<T>.
template <typename T, typename Fn>
Result<T> ReadValue(Database& db, Fn fn) {
  std::optional<Result<T>> out;
  Status st = db.Read([&](sqlite::Connection& c) -> Status {
    out.emplace(fn(c));
    return out->status();
  });
  if (!st.ok()) return st;
  return std::move(*out);
}

// Database::Write returning a value: `fn(txn)` yields Result<T> (one write).
template <typename T, typename Fn>
Result<T> WriteValue(Database& db, Fn fn) {
  std::optional<Result<T>> out;
  Status st = db.Write([&](Txn& txn) -> Status {
    out.emplace(fn(txn));
    return out->status();
  });
  if (!st.ok()) return st;
  return std::move(*out);
}

}  // namespace missy::store_util

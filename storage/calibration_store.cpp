#include "storage/calibration_store.h"

#include <string>

#include "storage/sqlite.h"
#include "storage/store_util.h"

namespace missy {
namespace {

using sqlite::Connection;
using sqlite::Statement;

Calibration FromRow(const Statement& s) {
  return Calibration{s.Text(0), s.Double(1), s.Int(2), s.Int(3)};
}

Status Validate(const Calibration& cal) {
  if (cal.model.empty()) return Status::InvalidArgument("model must not be empty", "model");
  return Status::Ok();
}

}  // namespace

Result<Calibration> CalibrationStore::Get(std::string_view model) {
  return store_util::ReadValue<Calibration>(db_, [&](Connection& c) -> Result<Calibration> {
    MISSY_ASSIGN_STMT(
        q, c, "SELECT model, ratio, samples, updated_at_ms FROM calibration WHERE model = ?1");
    q.Bind(1, model);
    MISSY_ASSIGN_NEXT(row, q, "read calibration");
    if (!row) {
      return Status::NotFound("no calibration for model '" + std::string(model) + "'", "model");
    }
    return FromRow(q);
  });
}

Status CalibrationStore::Put(Txn& txn, const Calibration& cal) {
  MISSY_RETURN_IF_ERROR(Validate(cal));
  MISSY_ASSIGN_STMT(
      put, txn.conn(),
      "INSERT INTO calibration (model, ratio, samples, updated_at_ms) VALUES (?1, ?2, "
      "?3, ?4) ON CONFLICT (model) DO UPDATE SET ratio = excluded.ratio, samples = "
      "excluded.samples, updated_at_ms = excluded.updated_at_ms");
  put.Bind(1, cal.model).Bind(2, cal.ratio).Bind(3, cal.samples).Bind(4, cal.updated_at_ms);
  return put.Run("store calibration");
}

Status CalibrationStore::Put(const Calibration& cal) {
  MISSY_RETURN_IF_ERROR(Validate(cal));
  return db_.Write([&](Txn& txn) { return Put(txn, cal); });
}

Result<std::vector<Calibration>> CalibrationStore::List() {
  std::vector<Calibration> out;
  MISSY_RETURN_IF_ERROR(db_.Read([&](Connection& c) -> Status {
    MISSY_ASSIGN_STMT(
        q, c, "SELECT model, ratio, samples, updated_at_ms FROM calibration ORDER BY model");
    return store_util::CollectRows(q, FromRow, "list calibration", out);
  }));
  return out;
}

}  // namespace missy

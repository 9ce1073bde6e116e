// CalibrationStore: the measured provider/estimate token ratio per model (DESIGN.md §3).
// Thread-safe; reads use Database::Read, writes take the caller's Txn (or wrap one
// Database::Write).
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "storage/database.h"
#include "storage/records.h"

namespace missy {

class CalibrationStore {
 public:
  explicit CalibrationStore(Database& db) : db_(db) {}

  Result<Calibration> Get(std::string_view model);  // kNotFound
  // Inserts or replaces the model's row. kInvalidArgument for an empty model.
  Status Put(Txn& txn, const Calibration& calibration);
  Status Put(const Calibration& calibration);
  // Ordered by model.
  Result<std::vector<Calibration>> List();

 private:
  Database& db_;
};

}  // namespace missy

// Calibration of token estimates from the provider's reported usage: a bounded moving
// ratio actual/estimated, kept per model. Pure functions on plain values; the caller
// persists the state.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace missy {

struct CalibrationOptions {
  double alpha = 0.2;                   // weight of a new sample in the moving average, in (0, 1]
  double min_ratio = 0.7;               // the ratio never goes below this
  double max_ratio = 1.6;               // nor above this
  bool first_sample_sets_ratio = true;  // the first sample is taken as the ratio directly
};

// InvalidArgument (naming the field) unless 0 < alpha <= 1 and 0 < min <= 1 <= max.
Status ValidateCalibrationOptions(const CalibrationOptions& options);

struct CalibrationState {
  double ratio = 1.0;   // multiply estimates by this
  int64_t samples = 0;  // samples taken into account
};

// The state after one report. Each sample ratio actual/estimated is clamped to
// [min_ratio, max_ratio] and folded in as an exponential moving average; the result is
// clamped too. A non-positive `estimated` or `actual` is ignored (state returned as is).
[[nodiscard]] CalibrationState Update(CalibrationState state, int64_t estimated, int64_t actual,
                                      const CalibrationOptions& options = {});

// `estimated` scaled by the state's ratio, rounded up (budgets stay conservative).
int64_t Calibrated(const CalibrationState& state, int64_t estimated);

}  // namespace missy

#include "core/calibration.h"

#include <algorithm>
#include <cmath>

namespace missy {

Status ValidateCalibrationOptions(const CalibrationOptions& o) {
  if (!(o.alpha > 0.0 && o.alpha <= 1.0)) {
    return Status::InvalidArgument("must be in (0, 1]", "calibration.alpha");
  }
  if (!(o.min_ratio > 0.0 && o.min_ratio <= 1.0)) {
    return Status::InvalidArgument("must be in (0, 1]", "calibration.min_ratio");
  }
  if (!(o.max_ratio >= 1.0 && std::isfinite(o.max_ratio))) {
    return Status::InvalidArgument("must be a finite number >= 1", "calibration.max_ratio");
  }
  return Status::Ok();
}

CalibrationState Update(CalibrationState state, int64_t estimated, int64_t actual,
                        const CalibrationOptions& options) {
  if (estimated <= 0 || actual <= 0) return state;
  const double lo = options.min_ratio;
  const double hi = std::max(options.max_ratio, lo);
  const double alpha = std::clamp(options.alpha, 0.0, 1.0);
  const double sample =
      std::clamp(static_cast<double>(actual) / static_cast<double>(estimated), lo, hi);
  double previous = std::isfinite(state.ratio) ? std::clamp(state.ratio, lo, hi) : 1.0;
  double ratio = (state.samples <= 0 && options.first_sample_sets_ratio)
                     ? sample
                     : previous + alpha * (sample - previous);
  state.ratio = std::clamp(ratio, lo, hi);
  state.samples = std::max<int64_t>(state.samples, 0) + 1;
  return state;
}

int64_t Calibrated(const CalibrationState& state, int64_t estimated) {
  if (estimated <= 0) return estimated;
  const double ratio = std::isfinite(state.ratio) && state.ratio > 0 ? state.ratio : 1.0;
  // The small epsilon keeps exact products (100 * 1.1) from rounding up past the integer.
  return static_cast<int64_t>(std::ceil(static_cast<double>(estimated) * ratio - 1e-9));
}

}  // namespace missy

#pragma once
// How far the cost model's iteration times are from measured runs (issue 23, point 6): the
// 90th percentile of |predicted / published - 1| of each framework profile's rows in the
// validation set (docs/validation.md; tests/validation/validate.py --check fails when these
// constants drift from what the rows give). A reported time carries it as
// "20.1 s (±8 %, megatron-core, uncalibrated)"; a calibration replaces it by the band of its
// own residuals (core/studies/Calibration.h, modelErrorBand).
#include "FrameworkProfile.h"

#include <string>

namespace nest {

struct ErrorBand {
    double fraction = 0;   // the 90th-percentile |relative error|, e.g. 0.08
    std::string basis;     // "megatron-core, uncalibrated", "calibrated (3 runs)"
    // "±8 %, megatron-core, uncalibrated"
    std::string text() const;
    // "20.1 s (±8 %, megatron-core, uncalibrated)"
    std::string describe(double seconds) const;
    bool operator==(const ErrorBand &) const = default;
};

// The validation-set band of a framework profile; a profile without validation rows
// (torchtitan, serial) takes the band of all rows.
ErrorBand validationErrorBand(Framework framework);
// How many validation rows each band stands on (0: the all-rows band stands in).
int validationRows(Framework framework);

// True when two iteration times differ by no more than the larger band, relative to the
// faster: the model cannot tell which plan is faster.
bool withinModelError(double secondsA, const ErrorBand &a, double secondsB, const ErrorBand &b);

} // namespace nest

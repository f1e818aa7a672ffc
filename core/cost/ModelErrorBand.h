#pragma once
// How far the cost model's iteration times are from measured runs (issue 50, point 3): the
// bounds a reported time t carries, [low t, high t], low and high the split-conformal bounds
// of a nominal 90 % band (5 % out on each side, so that it holds 80 % of sources it was not
// built from) of the residuals r = published / predicted of the validation rows of one cell (framework, stack profile, scale bucket; tests/validation/band.py, which generates
// ModelErrorBandTable.inc and whose --check fails when the table drifts from the rows;
// docs/validation.md, "The error band on every reported time"). A reported time reads
// "20.1 s (18.9-23.4 s, megatron-core tuned, 65-512 GPUs, uncalibrated)"; a calibration
// narrows it to what its own residuals support (core/studies/Calibration.h, modelErrorBand).
#include "FrameworkProfile.h"

#include <optional>
#include <string>
#include <vector>

namespace nest {

struct ErrorBand {
    // Bounds on published / predicted: the time t lies in [low t, high t] (low <= high).
    double low = 1, high = 1;
    std::string basis;     // "megatron-core tuned, 65-512 GPUs, uncalibrated", "calibrated (3 runs)"
    double lowSeconds(double seconds) const { return low * seconds; }
    double highSeconds(double seconds) const { return high * seconds; }
    // "18.9-23.4 s": the bounds of `seconds`, both with the decimals that give the upper
    // one 3 significant digits ("14.0-30.2 s", "0.0117-0.0143 s").
    std::string bounds(double seconds) const;
    // "-6 % to +16 %, megatron-core tuned, 65-512 GPUs, uncalibrated": the band without a time.
    std::string text() const;
    // "18.9-23.4 s, megatron-core tuned, 65-512 GPUs, uncalibrated"
    std::string text(double seconds) const;
    // "20.1 s (18.9-23.4 s, megatron-core tuned, 65-512 GPUs, uncalibrated)"
    std::string describe(double seconds) const;
    bool operator==(const ErrorBand &) const = default;
};

// The central 80 % split-conformal band of residuals r (published or measured / predicted),
// the rule of tests/validation/band.py: with n residuals sorted r_(1) <= ... <= r_(n) and
// k = ceil(0.9 (n + 1)), [r_(n + 1 - k), r_(k)]; none below 9 residuals (k > n). Out of
// sample it holds at least 80 % of runs exchangeable with the residuals' own.
std::optional<ErrorBand> conformalBand(std::vector<double> residuals, std::string basis);

// The scale buckets of the band by GPU count: "<=64", "65-512", ">512".
const char *scaleBucket(int gpus);

// The validation-set band of a cell. A cell with fewer rows than the rule needs (9) takes
// the band of its framework and stack at every scale, then of its stack, then of all rows,
// and the basis says so ("deepspeed tuned, >512 GPUs, uncalibrated, band of all tuned rows").
ErrorBand validationErrorBand(Framework framework, Stack stack, int gpus);
// How many validation rows the band of that cell stands on (after the fallback).
int validationRows(Framework framework, Stack stack, int gpus);
// The run-to-run scatter of the validation rows within one source and device type: the
// narrowest band a calibration fitted with few runs may claim (Calibration.h).
ErrorBand withinSourceBand();

// True when the two times' bands intersect, [a.low tA, a.high tA] and [b.low tB, b.high tB]:
// the model cannot tell which plan is faster. A time that is not positive is never "the same".
bool withinModelError(double secondsA, const ErrorBand &a, double secondsB, const ErrorBand &b);

} // namespace nest

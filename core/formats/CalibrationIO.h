#pragma once
// A calibration of the cost model (issue 23): the fitted physical parameters per device type
// and framework, and the fit's own rows, as `nest-cli calibrate` writes them and
// `--calibration` and a workspace's "calibration" key read them (docs/formats.md). Fitting
// and applying it to the cost options are core/studies/Calibration.h's.
#include "JsonUtil.h"
#include "Result.h"

#include <optional>
#include <string>
#include <vector>

namespace nest {

struct CalibrationEntry {
    std::string device;      // DeviceSpec name
    std::string framework;   // toString(Framework)
    std::optional<double> gemmEfficiency;
    std::optional<double> stepOverhead;
    bool operator==(const CalibrationEntry &) const = default;
};

struct CalibratedRun {
    std::string name;
    double measuredSeconds = 0, beforeSeconds = 0, afterSeconds = 0;
    bool operator==(const CalibratedRun &) const = default;
};

struct Calibration {
    std::vector<CalibrationEntry> parameters;
    std::vector<CalibratedRun> runs;  // the fit's own rows: measured, before, after
    bool operator==(const Calibration &) const = default;

    // {"format": "nest-calibration", "parameters": {"DEVICE/FRAMEWORK": {"gemm_efficiency",
    //  "step_overhead"}}, "runs": [{"name", "measured_s", "before_s", "after_s"}]}
    Json toJson() const;
    // measured / after of each run: the residuals the calibrated band stands on
    // (modelErrorBand, core/studies/Calibration.h).
    std::vector<double> residuals() const;
};
Result<Calibration> calibrationFromJson(const Json &j, const std::string &origin);
Result<Calibration> loadCalibration(const std::string &file);

} // namespace nest

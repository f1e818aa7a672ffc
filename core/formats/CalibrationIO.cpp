#include "CalibrationIO.h"

#include "FrameworkProfile.h"
#include "Limits.h"

#include <algorithm>
#include <cmath>

namespace nest {

Json Calibration::toJson() const
{
    Json params = Json::object();
    for (const CalibrationEntry &e : parameters) {
        Json p = Json::object();
        if (e.gemmEfficiency)
            p["gemm_efficiency"] = *e.gemmEfficiency;
        if (e.stepOverhead)
            p["step_overhead"] = *e.stepOverhead;
        params[e.device + "/" + e.framework] = p;
    }
    Json rows = Json::array();
    for (const CalibratedRun &r : runs)
        rows.push_back({{"name", r.name}, {"measured_s", r.measuredSeconds}, {"before_s", r.beforeSeconds},
                        {"after_s", r.afterSeconds}});
    return {{"format", "nest-calibration"}, {"version", 1}, {"parameters", params}, {"runs", rows}};
}

std::vector<double> Calibration::residuals() const
{
    std::vector<double> r;
    for (const CalibratedRun &run : runs)
        r.push_back(run.measuredSeconds / run.afterSeconds);
    return r;
}

Result<Calibration> calibrationFromJson(const Json &j, const std::string &origin)
{
    using R = Result<Calibration>;
    try {
        requireObject(j, "");
        if (getString(j, "format", "") != "nest-calibration")
            throw JsonError("format", "expected \"nest-calibration\", found \"" + getString(j, "format", "") + "\"");
        requireKnownKeys(j, "", {"format", "version", "parameters", "runs"});
        Calibration c;
        const Json &params = requireKey(j, "parameters", "");
        requireObject(params, "parameters");
        for (const auto &[key, value] : params.items()) {
            const std::string path = childPath("parameters", key);
            const size_t slash = key.find('/');
            if (slash == std::string::npos || slash == 0 || slash + 1 == key.size())
                throw JsonError(path, "keys are DEVICE/FRAMEWORK, found \"" + key + "\"");
            requireObject(value, path);
            requireKnownKeys(value, path, {"gemm_efficiency", "step_overhead"});
            CalibrationEntry e;
            e.device = key.substr(0, slash);
            e.framework = key.substr(slash + 1);
            if (!frameworkFromString(e.framework))
                throw JsonError(path, "unknown framework \"" + e.framework + "\" (" + frameworkNameList() + ")");
            if (has(value, "gemm_efficiency"))
                e.gemmEfficiency = getInRange(value, "gemm_efficiency", path, limits::efficiency);
            if (has(value, "step_overhead")) {
                e.stepOverhead = getNumber(value, "step_overhead", path);
                if (*e.stepOverhead < -0.5 || *e.stepOverhead > 3)
                    throw JsonError(childPath(path, "step_overhead"), "must be between -0.5 and 3, found " +
                                                                          std::to_string(*e.stepOverhead));
            }
            c.parameters.push_back(e);
        }
        if (has(j, "runs")) {
            const Json &rows = j.at("runs");
            requireArray(rows, "runs");
            for (size_t i = 0; i < rows.size(); ++i) {
                const std::string path = childPath("runs", i);
                requireObject(rows[i], path);
                // Step times in the runs' range, and a calibrated time within the factor
                // calibrate itself allows (issue 48: an error band of infinity was applied and
                // printed as "±inf %").
                const double measured = getInRange(rows[i], "measured_s", path, limits::stepSeconds);
                const double before = getInRange(rows[i], "before_s", path, limits::stepSeconds);
                const double after = getInRange(rows[i], "after_s", path, limits::stepSeconds);
                const double factor = std::max(after / measured, measured / after);
                if (factor > limits::maxCalibrationFactor)
                    throw JsonError(childPath(path, "after_s"),
                                    "is " + std::to_string(factor) + " times off measured_s, more than the " +
                                        std::to_string(static_cast<int>(limits::maxCalibrationFactor)) +
                                        " a calibration may be (nest-cli calibrate refuses such a fit)");
                c.runs.push_back({getString(rows[i], "name", path), measured, before, after});
            }
        }
        return c;
    } catch (const JsonError &e) {
        return R::failure(formatError(origin, e.path(), e.reason()));
    }
}

Result<Calibration> loadCalibration(const std::string &file)
{
    auto j = readJsonFile(file);
    if (!j)
        return Result<Calibration>::failure(j.error());
    return calibrationFromJson(*j, file);
}

} // namespace nest

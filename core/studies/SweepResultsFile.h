#pragma once
// The results file of nest_planner.sweep() (issue 51; docs/python.md, "Sweeps"): one JSON
// object per line, {"id", "point": {keyword: value}, "ok", "result": <nest-cli plan --json> |
// "error", "elapsed_s"}, appended as points finish. Read here for the window's Sweep tab,
// which plots throughput against one swept keyword.
#include "Result.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace nest {

struct SweepRecord {
    nlohmann::json point;          // the point's keywords (an object)
    bool ok = false;
    double samplesPerSecond = 0;   // result.report.throughput_samples_per_s (ok only)
    double iterationTime = 0;      // result.report.iteration_time_s
    double mfu = 0;                // result.report.mfu
    std::string error;             // why the point failed (not ok)
};

struct SweepResultsFile {
    std::vector<SweepRecord> records;       // in file order; a point written twice: the last
    std::vector<std::string> keys;          // every keyword of the points, first seen first
    std::vector<std::string> varying;       // the keywords whose value differs between points
    int skippedLines = 0;                   // lines cut short (a sweep stopped mid-write)
};

// Reads a results file. A line that is not JSON is skipped (counted: the sweep's writer may have
// been killed mid-line); a line that is JSON but not a record is an error "FILE: line N: at PATH:
// REASON". An empty file or one without a single record is an error.
Result<SweepResultsFile> loadSweepResults(const std::string &file);

// Throughput against `xKey` (a varying keyword whose values are all numbers), one series per
// value of `seriesKey` (a varying keyword, or empty for one series). Points that differ in the
// other varying keywords are reduced to the best throughput among them (`reducedOver` names
// those keywords). A failed point has no y (NaN); x ascending within each series.
struct SweepSeriesData {
    std::string name;  // "model=llama2-7b" (or "samples/s" for a single series)
    std::vector<double> x, y;
};
struct SweepChart {
    std::string xKey, seriesKey;
    std::vector<std::string> reducedOver;
    std::vector<SweepSeriesData> series;
};
// The keywords that can be an x axis: varying, and a number at every point.
std::vector<std::string> numericVaryingKeys(const SweepResultsFile &f);
// A failure names the key and why ("'framework' is not a number at every point").
Result<SweepChart> sweepChart(const SweepResultsFile &f, const std::string &xKey, const std::string &seriesKey);
// The default axes: x the first numeric varying keyword, the series the first other varying one.
Result<SweepChart> sweepChart(const SweepResultsFile &f);

} // namespace nest

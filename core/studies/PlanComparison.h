#pragma once
// Several plans side by side (the window's Compare tab, its report and exports): the
// iteration split of one plan, and a table of metrics with each plan's value, its
// difference and ratio to a reference plan and the best value of each row. Every number
// is read from the evaluator's Report (or computed from it here, once); the GUI only
// formats what this returns.
//
// Metric rows, in this order (key: what `values` holds, `valueUnit`; `unit` is the unit of
// the display texts):
//   throughput      Report::samplesPerSecond         samples/s   higher is better
//   tokens_per_s    Report::tokensPerSecond          tokens/s    higher
//   mfu             Report::mfu (fraction): of the devices the plan uses   text in %   higher;
//                   no best when the plans use different numbers of devices (a plan that
//                   leaves devices idle can have the higher MFU and the lower throughput)
//   cluster_mfu     mfu x devicesUsed / clusterDevices: over the whole cluster   higher
//                   (NaN when clusterDevices is unknown); text "28.3 (48 of 56 devices)"
//   iteration_time  Report::iterationTime (s)        text in s   lower
//   peak_memory     Report::peakMemoryBytes (bytes)  text in GB  lower
//   comm_share      split.communication() / iterationTime (fraction)   lower
//   bubble_share    split.bubble / iterationTime (fraction)            lower
//   shape           text only (PlanShape.h): "tp 8, pp 4, dp 2, ep 1, cp 1; 1f1b; mb 1"
//   search_time     ComparedPlan::searchSeconds (s; NaN when 0 = unknown)  lower
//   model_error     text only: ComparedPlan::band ("±4 %, megatron-core, uncalibrated")
// The rows that follow from the iteration time (throughput, tokens_per_s, iteration_time)
// also say, per plan, whether it is within model error of the reference (withinModelError):
// the difference is inside the larger of the two plans' error bands (ModelErrorBand.h).
// A plan without a feasible Report has NaN in every Report row (its text says
// "infeasible") and is never the best of a row.
#include "Evaluator.h"
#include "JsonUtil.h"
#include "ModelErrorBand.h"
#include "Plan.h"

#include <string>
#include <vector>

namespace nest {

// Seconds per iteration by category, the definitions of BreakdownChartView.h's header
// comment: per category the sum over stages divided by the pipeline depth, the bubble
// counted once per physical pipeline position. The ten fields add up to
// report.iterationTime (1F1B, GPipe and interleaved), within rounding.
struct IterationSplit {
    double compute = 0, recompute = 0, tp = 0, ep = 0, cp = 0, p2p = 0, gradientSync = 0,
           zero = 0, optimizer = 0, bubble = 0;
    double communication() const;  // tp + ep + cp + p2p + gradientSync + zero
    double total() const;          // all ten
};
IterationSplit iterationSplit(const Plan &plan, const Report &report);

struct ComparedPlan {           // what one column of the comparison shows
    std::string label, planner;
    const Plan *plan = nullptr;
    const Report *report = nullptr;
    double searchSeconds = 0;   // 0 = unknown / not searched
    ErrorBand band;             // the error band of its times (none: an empty basis)
    int clusterDevices = 0;     // devices of the cluster it was planned on (0 = unknown)
};

enum class Better { Higher, Lower, None };
const char *toString(Better b);  // "higher", "lower", "none"

struct MetricRow {
    std::string key;            // stable: JSON/CSV keys (see the table above)
    std::string name, unit;     // "Throughput", "samples/s" (unit of the texts)
    std::string valueUnit;      // unit of `values`: "samples/s", "fraction", "bytes", "s", ""
    Better better = Better::None;
    std::vector<double> values;       // per plan; NaN = not applicable (infeasible plan, text row)
    std::vector<std::string> texts;   // per plan, formatted for display ("412.3", "tp 8, pp 4, ...")
    std::vector<double> difference;   // values[i] - values[ref] (NaN where n/a)
    std::vector<double> ratio;        // values[i] / values[ref] (NaN where n/a or ref == 0)
    int best = -1;                    // index of the better value (-1: tie/none/text row)
    std::vector<bool> withinModelError;   // per plan: the model cannot tell it from the reference
};

// One row per key above, in that order. `reference` outside 0..plans.size()-1 is clamped.
std::vector<MetricRow> compareMetrics(const std::vector<ComparedPlan> &plans, int reference);

// Header "key,name,unit,value_unit,better,best,<label>...,<label> diff...,<label> ratio..."
// then one line per row: raw values (shortest round-trip form; the text rows shape and
// model_error their texts;
// empty for NaN), differences and ratios of every plan to the reference.
std::string comparisonCsv(const std::vector<ComparedPlan> &plans, const std::vector<MetricRow> &rows,
                          int reference);
// {"reference": i, "plans": [{"label", "planner", "feasible", "reasons"}...],
//  "metrics": [{"key", "name", "unit", "value_unit", "better", "best", "values", "texts",
//               "difference", "ratio", "within_model_error"}...]} with null for NaN.
Json comparisonJson(const std::vector<ComparedPlan> &plans, const std::vector<MetricRow> &rows, int reference);

} // namespace nest

#pragma once
// The cluster sweep (issue 12, point 4): vary one link parameter of one cluster tier over a
// range, re-plan every point with every chosen planner, and read throughput against it.
//
// A sweep sets the whole tier: the level's own LinkParams AND every group override at that
// level take the swept value (a per-rack override would otherwise hide the change). Values
// are in the Topology's units (bandwidth bytes/s, latency s, oversubscription ratio); the
// display units (GB/s, us, ratio) that the dialog, the chart and the CSV show are converted
// here, in one place (displayValue / fromDisplayValue).
#include "PlannerRuns.h"
#include "Result.h"
#include "Topology.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace nest {

enum class LinkField { Bandwidth, Latency, Oversubscription };

struct SweepParameter {
    int level = 1;              // Topology level index (0 = inside a node)
    LinkField field = LinkField::Oversubscription;
    // "spine oversubscription", "rack bandwidth (GB/s)", "node latency (us)".
    std::string label(const Topology &topo) const;
    bool operator==(const SweepParameter &) const = default;
};

// "bandwidth", "latency", "oversubscription".
const char *toString(LinkField f);
// The display unit: "GB/s", "us" or "" (a ratio).
const char *displayUnit(LinkField f);
// Topology units -> display units (bytes/s -> GB/s, s -> us, ratio unchanged) and back.
double displayValue(LinkField f, double value);
double fromDisplayValue(LinkField f, double display);

// The field of a link.
double linkValue(const LinkParams &link, LinkField f);

// Every (level, field) that makes sense on this cluster, with the level's current value
// (its own LinkParams, Topology units): bandwidth and latency of every level some traffic
// crosses (a level with a group of two or more children, or a node of two or more
// devices), oversubscription of those above level 0. Innermost level first.
std::vector<std::pair<SweepParameter, double>> sweepParameters(const Topology &topo);

// The cluster with the parameter set to `value` at that level and in every group override
// at that level. Fails with a message for a level that does not exist, oversubscription
// of level 0, or a value outside core/support/Limits.h's ranges ("rack bandwidth (GB/s): must be
// at least 1e-06 GB/s, found 0 (range ...)").
Result<Topology> withParameter(const Topology &topo, const SweepParameter &p, double value);

// `steps` values from `from` to `to` (both included, exactly): evenly spaced, or with a
// constant ratio when `geometric` (then both ends must be > 0; otherwise empty). steps < 2
// gives {from} for 1 and nothing for less.
std::vector<double> sweepValues(double from, double to, int steps, bool geometric = false);

// What a sweep request names: the dialog builds it, the runner executes it.
struct SweepRequest {
    SweepParameter parameter;
    std::vector<double> values;           // Topology units
    std::vector<std::string> planners;    // names in plannerNames()
};

struct SweepPoint {
    double value = 0;                     // Topology units
    std::vector<PlannerRun> runs;         // one per planner, in SweepResult::planners order
};

struct SweepResult {
    SweepParameter parameter;
    std::vector<std::string> planners;
    std::vector<double> values;           // the values asked for (points may stop early)
    std::vector<SweepPoint> points;       // finished points, in the order of `values`
    bool cancelled = false;
};

// (point index, planner index, fraction of the whole sweep done in [0, 1], never
// decreasing). Called from the planners' worker threads, one call at a time.
using SweepProgressFn = std::function<void(int point, int planner, double fraction)>;

// Re-plans every point with every planner (runPlanners, the same SearchOptions each time;
// `threads` as there). A value that withParameter refuses gives a point whose runs say
// why (found = false). On cancel: stops within the planners' polling interval and returns
// the points finished before it with cancelled = true; the point in progress when the
// token was set is dropped whole (no half point).
SweepResult runSweep(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                     const SweepParameter &p, const std::vector<double> &values,
                     const std::vector<std::string> &planners, int threads,
                     const SweepProgressFn &progress, const CancelToken &cancel);

// The throughput a run reached (the evaluator's samples/s of its plan), NaN when the
// planner found no feasible plan: what the chart plots and the table lists.
double sweepSamplesPerSecond(const PlannerRun &run);

// One line per point and planner after a header:
//   value,planner,feasible,samples_per_s,iteration_s,tokens_per_s,mfu,peak_memory_GB,parameter,message
// value in display units (the parameter column names them); the numbers are empty where
// the planner found no plan.
std::string sweepCsv(const SweepResult &result, const Topology &topo);

} // namespace nest

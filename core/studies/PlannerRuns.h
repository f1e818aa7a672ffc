#pragma once
// Runs several planners on the same inputs, each on its own thread (up to `threads` at
// once), for `nest-cli compare`, `reproduce` and the window's "Run baselines". Every
// planner gets the same topology, model and options; every result's report is the
// evaluator's on the real cluster (Planner::plan's contract), so the rows compare.
#include "Planner.h"

#include <functional>
#include <string>
#include <vector>

namespace nest {

struct PlannerRun {
    std::string planner;
    PlanResult result;
};

// (index into `planners`, fraction done, best iteration time so far or 0). Called from
// the worker threads: keep it cheap and thread-safe.
using ComparisonProgressFn = std::function<void(int index, double fraction, double best)>;

// One result per name, in the order given. An unknown name gives a result whose message
// says so (found = false). threads <= 0 = the hardware's concurrency, at least 1.
std::vector<PlannerRun> runPlanners(const Topology &topo, const ModelProfile &model,
                                    const SearchOptions &options,
                                    const std::vector<std::string> &planners, int threads,
                                    const ComparisonProgressFn &progress, const CancelToken &cancel);
// Without progress, never cancelled.
std::vector<PlannerRun> runPlanners(const Topology &topo, const ModelProfile &model,
                                    const SearchOptions &options,
                                    const std::vector<std::string> &planners, int threads = 0);

} // namespace nest

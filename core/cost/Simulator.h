#pragma once
// A discrete-event run of one training iteration, written independently of the
// evaluator's closed form (it never calls iterationTime()): every micro-batch's forward,
// recompute and backward on every stage, in the order the schedule prescribes, with
// point-to-point transfers occupying the boundary links, then each stage's gradient sync
// and optimizer step. Operation durations come from stageCost() component times.
// Replicas are symmetric in the cost model (stageCost() takes the worst replica), so one
// representative pipeline (replica 0) is simulated.
#include "Evaluator.h"
#include "JsonUtil.h"

#include <string>
#include <vector>

namespace nest {

struct TimelineEvent {
    int stage = 0;       // stage index in the plan (virtual stage when interleaved)
    int replica = 0;
    int microBatch = -1; // -1 for per-iteration events (dp-sync, optimizer)
    std::string kind;    // "forward","backward","recompute","send","recv","dp-sync","optimizer"
    double start = 0, end = 0;  // seconds from the start of the iteration
};

struct SimulationResult {
    double makespan = 0;  // seconds
    std::vector<TimelineEvent> events;
    std::string error;    // non-empty when the plan could not be simulated
};

SimulationResult simulate(const Plan &plan, const Topology &topo, const ModelProfile &model,
                          const CostOptions &options = {});

// {"format":"nest-timeline","version":1,"makespan_s":..,"events":[{"stage","replica",
//  "micro_batch","kind","start_s","end_s"}...]}
Json timelineToJson(const SimulationResult &result);

} // namespace nest

#pragma once
// The single source of truth for what a plan costs. Every planner, chart and comparison
// goes through evaluate(); planners that search stage by stage call stageCost() and
// iterationTime() so that the value they optimise equals evaluate()'s iteration time.
//
// Decomposition contract (planners rely on it, keep it):
//  * stageCost() depends only on the stage itself (layers, widths, zero, recompute, its own
//    device ids), the plan-wide scalars (microBatch, seqLength, number of micro-batches,
//    number of stages, the stage's position, schedule, dp) and the effective links of its
//    two pipeline boundaries (BoundaryLink), never on other stages' device ids.
//  * A boundary's link is that of the worst (highest-level, then slowest) pair of devices
//    across it: see boundaryLink().
//  * iterationTime() combines per-stage costs with the schedule's closed form; for 1F1B
//    and GPipe: T = (m + S - 1) * max_s perMicroBatch_s + max_s iterationExtra_s.
#include "ModelProfile.h"
#include "Plan.h"
#include "Topology.h"

#include <optional>
#include <string>
#include <vector>

namespace nest {

struct CostOptions {
    // Defaults are documented with their sources in docs/cost-model.md.
    double matmulEfficiency = 0.0;    // 0 = per-device default (DeviceSpec or cost model)
    double dpOverlap = 0.0;           // fraction of gradient sync hidden behind backward
    double runtimeOverheadBytes = 0;  // fixed per-device memory (CUDA context, allocator)
    double memoryHeadroom = 0.0;      // fraction of capacity kept free
    bool operator==(const CostOptions &) const = default;
};

// The effective link of a pipeline boundary (absent for the first/last stage).
struct BoundaryLink {
    int level = -1;
    LinkParams link;
};

struct StageCost {
    // Seconds per micro-batch on this stage.
    double forward = 0, backward = 0, recompute = 0;
    double tpComm = 0, epComm = 0, cpComm = 0, p2p = 0, zeroComm = 0;
    double perMicroBatch = 0;     // the pipeline's t_stage
    // Seconds per iteration after the last micro-batch.
    double dpSync = 0;            // exposed gradient sync
    double optimizer = 0;
    double iterationExtra = 0;    // dpSync + optimizer (+ ZeRO gathers that cannot overlap)
    // Bytes per device (the worst device of the stage).
    double weights = 0, gradients = 0, optimizerState = 0, activations = 0, stash = 0,
           overhead = 0;
    double memoryTotal = 0;
    double memoryCapacity = 0;
    bool fitsMemory = true;
};

struct StageContext {
    const Topology *topology = nullptr;
    const ModelProfile *model = nullptr;
    CostOptions options;
    const StagePlan *stage = nullptr;
    int stageIndex = 0;        // position in the pipeline (0 = first)
    int numStages = 1;         // pipeline depth
    int microBatch = 1;
    int numMicroBatches = 1;
    int seqLength = 2048;
    int dp = 1;
    Schedule schedule = Schedule::OneFOneB;
    int virtualStages = 1;
    std::optional<BoundaryLink> prev;  // link to the previous stage
    std::optional<BoundaryLink> next;  // link to the next stage
};

StageCost stageCost(const StageContext &ctx);
BoundaryLink boundaryLink(const Topology &topo, const StagePlan &a, const StagePlan &b);
double iterationTime(const std::vector<StageCost> &stages, const Plan &plan);

struct StageReport {
    int index = 0;
    int firstLayer = 0, endLayer = 0;
    StageCost cost;
    double bubble = 0;  // seconds per iteration idle on this stage
};

struct DeviceReport {
    int device = 0;
    int stage = -1;      // -1 when unused
    int replica = -1;
    int shard = -1;
    double weights = 0, gradients = 0, optimizerState = 0, activations = 0, stash = 0,
           overhead = 0, total = 0, capacity = 0;
};

struct Report {
    bool feasible = false;
    std::vector<std::string> reasons;   // why not feasible (memory, invalid plan, ...)
    double iterationTime = 0;           // seconds
    double samplesPerSecond = 0;
    double tokensPerSecond = 0;
    double mfu = 0;                     // model FLOPs utilisation
    double peakMemoryBytes = 0;
    std::vector<StageReport> stages;
    std::vector<DeviceReport> devices;
};

Report evaluate(const Plan &plan, const Topology &topo, const ModelProfile &model,
                const CostOptions &options = {});

} // namespace nest

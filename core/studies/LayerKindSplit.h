#pragma once
// A plan's time and memory split by layer kind (issue 45): what the dense, MoE, Mamba, MTP,
// embedding and head layers of each stage spend and hold, for the window's Memory and
// Breakdown views. A kind is a layer's layerLabel() ("dense", "moe", "sliding", "mamba",
// "mtp", "embedding", "head", ...).
//
// The evaluator prices a stage as a whole, and only some of its terms are sums over the
// stage's layers (compute, the stash, the parameters). Others are not: a collective pays its
// latency once per group of calls, overlaps hide communication behind the whole stage's
// compute, ZeRO-3 buffers the largest layer. So the split takes each term of the stage as
// the Report gives it and shares it among the stage's kinds in proportion to what the kind's
// layers alone cost on that stage: stageCostBase() and finishStageCost() over those layers
// only, with the stage's widths, devices, position and options. The kinds' parts of a term
// add up to the stage's term; a stage of one kind gives that kind all of it.
//
// What belongs to no layer kind stays apart: the pipeline's p2p exchange and bubble (time),
// the working activations (the transient peak of the stage's largest layer) and the runtime
// overhead (memory).
#include "Evaluator.h"
#include "ModelProfile.h"
#include "Plan.h"
#include "PlanComparison.h"
#include "Topology.h"

#include <string>
#include <vector>

namespace nest {

// One kind's part of a stage (or of the whole iteration).
struct KindShare {
    std::string kind;
    // Seconds per iteration by category as iterationSplit() counts them: compute, recompute,
    // tp, ep, cp, gradientSync, zero, optimizer (p2p and bubble are no kind's: always 0).
    IterationSplit time;
    // Bytes per device (the stage's worst device, as StageCost).
    double weights = 0, gradients = 0, optimizerState = 0, stash = 0;
    double seconds() const { return time.total(); }
    double bytes() const { return weights + gradients + optimizerState + stash; }
};

struct StageKindSplit {
    int stage = 0;                  // StageReport::index
    std::vector<KindShare> kinds;   // the kinds the stage holds, in layer order
    // Seconds per iteration that are no kind's: p2p and bubble, and any term the stage has
    // where none of its kinds alone would have one.
    IterationSplit rest;
    // Bytes per device that are no kind's: StageCost::activations and ::overhead, and any
    // memory term none of its kinds alone would have.
    double restBytes = 0;
    double activations = 0, overhead = 0;  // the parts of restBytes
};

struct PlanKindSplit {
    std::vector<std::string> kinds;       // every kind of the plan's stages, in layer order
    std::vector<StageKindSplit> stages;   // one per Report stage, in its order
    // The whole iteration (iterationSplit(plan, report)) shared among the kinds: per kind in
    // `kinds` order (memory fields 0), and what is no kind's.
    std::vector<KindShare> iteration;
    IterationSplit iterationRest;
};

// The split of `report` (evaluate(plan, topo, model, options)). Empty (no stages) when the
// report has no stages or they do not match the plan's.
PlanKindSplit layerKindSplit(const Plan &plan, const Topology &topo, const ModelProfile &model,
                             const CostOptions &options, const Report &report);

} // namespace nest

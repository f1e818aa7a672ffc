#pragma once
// Lays a uniform Megatron-style plan (tp, pp, dp, ep, cp with one rank order) onto a
// cluster: the "manual" baseline, the CLI's --tp/--pp/--dp form and a starting point for
// hand-edited plans.
#include "ModelProfile.h"
#include "Plan.h"
#include "Result.h"
#include "Topology.h"

#include <string>
#include <vector>

namespace nest {

// One StageConfig for every stage, pp stages, dp replicas.
struct UniformLayout : StageConfig {
    int pp = 1, dp = 1;
    int microBatch = 1, globalBatch = 4096, seqLength = 2048;
    Schedule schedule = Schedule::OneFOneB;
    int virtualStages = 1;  // model chunks per device (interleaved)
    // Rank order, fastest-varying first (Megatron-LM's "tp-cp-ep-dp-pp"): global rank =
    // device id. "ep" may be omitted (it then sits just inside "dp"); replica
    // r = dpRank * ep + epRank, so consecutive replicas form an expert-parallel group.
    std::string order = "tp-cp-ep-dp-pp";
    // Where the ranks run: global rank r (numbered in `order`) on device rankDevices[r].
    // Empty: on device r (devices 0..N-1). A framework export's rank map, read back.
    std::vector<int> rankDevices;
    // Transformer blocks per stage, pp * virtualStages entries summing to the model's
    // blocks (the first and the last may be 0: a stage of the embedding or the head alone).
    // Empty: the balanced split below.
    std::vector<int> stageBlocks;
    // What the balanced split counts (Plan.h); recorded in the plan.
    PipelineUnits pipelineUnits = PipelineUnits::Layers;
};

// The layers before the first and after the last transformer / MoE block (embedding,
// head) and the blocks between, in buildUniformPlan's convention (no block: all leading).
struct PipelineSpan {
    int lead = 0, blocks = 0, tail = 0;
};
PipelineSpan pipelineSpan(const ModelProfile &model);
// The units a split under `units` divides: the blocks, plus one for the leading layers
// (the embedding) and one for the trailing layers (the head / loss) when counted and present.
int pipelineUnitCount(const PipelineSpan &span, PipelineUnits units);
// The balanced split of those units over `stages` stages (as evenly as possible, the first
// `units mod stages` one longer; the embedding is the first unit of stage 0, the head the
// last unit of the last stage), as transformer blocks per stage. Stage 0 (the last) has no
// block when its one unit is the embedding (the head). Needs pipelineUnitCount >= stages.
// The one definition of the uniform cut: buildUniformPlan and the interleaved chunks of
// the plan space (PlanSpace) both take it.
std::vector<int> balancedStageBlocks(const PipelineSpan &span, int stages, PipelineUnits units);

// Balanced contiguous split of the layers over pp * virtualStages stages: the units
// (balancedStageBlocks: the blocks, and the embedding / head when layout.pipelineUnits
// counts them) are divided as evenly as possible (the first `remainder` stages take one
// more), leading non-block layers (embedding) join the first stage, trailing ones (head)
// the last. Ranks are laid onto device ids 0..N-1 in `order`.
// Errors: tp*cp*dp*pp exceeding the devices, ep not dividing dp, a batch that does not
// split, fewer units than stages, a bad order string, a bad width, rank devices that are
// not tp*cp*dp*pp distinct ids of the cluster, a block split of the wrong length or sum.
Result<Plan> buildUniformPlan(const UniformLayout &layout, const Topology &topo, const ModelProfile &model);

// Parses "tp-cp-ep-dp-pp"-style orders into the 5 dimension names, fastest first.
Result<std::vector<std::string>> parseRankOrder(const std::string &order);

} // namespace nest

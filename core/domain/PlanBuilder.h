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
};

// Balanced contiguous split of the layers over pp * virtualStages stages: the blocks
// (transformer / MoE layers) are divided as evenly as possible (the first `remainder`
// stages take one more), leading non-block layers (embedding) join the first stage,
// trailing ones (head) the last. Ranks are laid onto device ids 0..N-1 in `order`.
// Errors: tp*cp*dp*pp exceeding the devices, ep not dividing dp, a batch that does not
// split, fewer blocks than stages, a bad order string, a bad width, rank devices that are
// not tp*cp*dp*pp distinct ids of the cluster, a block split of the wrong length or sum.
Result<Plan> buildUniformPlan(const UniformLayout &layout, const Topology &topo, const ModelProfile &model);

// Parses "tp-cp-ep-dp-pp"-style orders into the 5 dimension names, fastest first.
Result<std::vector<std::string>> parseRankOrder(const std::string &order);

} // namespace nest

#pragma once
// The manual baseline (the paper's "Manual"): the layouts practitioners write by hand for
// Megatron-LM, one uniform (tp, cp, ep, pp, dp) grid point at a time, best one kept.
//
// Rules (docs/baselines.md):
//   tp  = the largest candidate that divides the attention heads and fits one node
//         (devices per node on the usual 8-GPU node), sequence parallelism on with tp > 1;
//   pp  = the fewest uniform stages (dividing the transformer blocks) that fit in memory;
//   dp  = the devices left: the largest dp <= N / (tp cp pp) that splits the batch;
//   grid over micro-batch, ZeRO 0 / 1 (distributed optimizer), recompute mode, the
//   interleaving depths (interleaved 1F1B, "when it helps") and, for MoE models, ep and,
//   for long sequences, cp; ranks in Megatron's order tp-cp-ep-dp-pp (buildUniformPlan).
// Every candidate is scored by the evaluator; the reported time is the evaluator's.
#include "Planner.h"

namespace nest {

class MegatronPlanner : public Planner {
public:
    using Planner::plan;
    PlanResult plan(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                    const ProgressFn &progress, const CancelToken &cancel) const override;
    std::string name() const override { return "megatron"; }
};

} // namespace nest

#pragma once
// The search-based baseline (TopoOpt-style): simulated annealing over the NEST plan space
// (PlanSpace.h), every step scored by the evaluator. A state is an outer point
// (micro-batch, schedule, dp, replica layout) with either a pipeline of stages (layer cuts,
// widths = placement, per-stage tp / cp / ep / ZeRO / recompute) or, for the interleaved
// schedule, one of the space's uniform interleaved choices. Moves: another outer point,
// a cut shifted, a stage split or merged, a stage's width or option redrawn.
//
// Energy: log(iteration time) for a feasible plan; a plan over memory gets 100 plus the log
// of its worst memory ratio, so any feasible plan is better than any infeasible one. The
// temperature falls geometrically from 0.5 to 0.002 over the evaluation budget
// (SearchOptions::evaluationBudget, default 2000). A std::mt19937_64 seeded with
// SearchOptions::seed drives every choice: the same seed gives the same plan.
#include "Planner.h"

namespace nest {

class McmcPlanner : public Planner {
public:
    static constexpr int defaultBudget = 2000;

    using Planner::plan;
    PlanResult plan(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                    const ProgressFn &progress, const CancelToken &cancel) const override;
    std::string name() const override { return "mcmc"; }
};

} // namespace nest

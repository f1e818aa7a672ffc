#pragma once
// The NEST planner: a network- and memory-aware dynamic program over (first layer of the
// remaining suffix, device position, stages left, link class of the boundary before it,
// width of its first stage), with the stage options (tp, cp, ep, ZeRO, recompute) chosen
// inside the recurrence and an outer search over micro-batch size, schedule,
// data-parallel degree and replica layout. Exact over the plan space of PlanSpace.h; the
// recurrence and its proof are in docs/planner.md.
#include "Planner.h"

namespace nest {

class NestPlanner : public Planner {
public:
    using Planner::plan;
    PlanResult plan(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                    const ProgressFn &progress, const CancelToken &cancel) const override;
    std::string name() const override { return "nest"; }
};

} // namespace nest

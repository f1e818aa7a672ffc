#pragma once
// Brute force over the plan space of PlanSpace.h, for small instances and for checking the
// NEST planner: every outer point, every stage count, every set of stage cuts, every
// sequence of stage widths and every per-stage option. Each stage is costed on its
// concrete devices with its true position and neighbours (no dynamic-programming state);
// per stage only options dominated in both per-micro-batch time and per-iteration extra
// are dropped, which cannot change the minimum (docs/planner.md).
#include "Planner.h"

namespace nest {

class ExhaustivePlanner : public Planner {
public:
    using Planner::plan;
    PlanResult plan(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                    const ProgressFn &progress, const CancelToken &cancel) const override;
    std::string name() const override { return "exhaustive"; }
};

} // namespace nest

#pragma once
// The NEST planner: a network- and memory-aware dynamic program over (first layer of the
// remaining suffix, device position, stages left, link class of the boundary before it,
// width of its first stage), with the stage options (tp, cp, ep, ZeRO, recompute) chosen
// inside the recurrence and an outer search over micro-batch size, schedule,
// data-parallel degree and replica layout. Exact over the plan space of PlanSpace.h; the
// recurrence and its proof are in docs/planner.md.
#include "Planner.h"

#include <memory>

namespace nest {

class LayerSumsStore;

class NestPlanner : public Planner {
public:
    using Planner::plan;
    PlanResult plan(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                    const ProgressFn &progress, const CancelToken &cancel) const override;
    std::string name() const override { return "nest"; }

    // The same search, started with the incumbent bound `bound`: a value some plan of the
    // space is known to reach (PlanningSession: the previous optimum re-valued; +infinity:
    // none). With bound >= the optimum the result (plan, objective) is the one plan()
    // returns; with a bound below it nothing is found (found = false) and the caller must
    // search without it. topK > 1 ignores the bound.
    // `kept` (optional): layer sums a caller keeps across searches (PlanningSession). The
    // search uses *kept when it serves these inputs and has room, else replaces it with a
    // new store, which it fills; the result is the same either way, bit for bit.
    PlanResult planWithBound(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                             double bound, const ProgressFn &progress, const CancelToken &cancel,
                             std::unique_ptr<LayerSumsStore> *kept = nullptr) const;
};

} // namespace nest

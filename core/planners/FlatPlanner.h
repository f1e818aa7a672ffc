#pragma once
// The network-agnostic baseline (as Phaze and other flat-network planners): the NEST dynamic
// program run on a view of the cluster in which every link is the cluster's mean link, so
// the search sees the tree (for placement) and the memory but not which links are fast.
// Its plan is then scored by the real evaluator on the real cluster; the iteration time it
// reports is always that score.
//
// The mean link is the average over all ordered pairs of distinct devices of the pair's
// effective link (Topology::achievableLink): bandwidth / oversubscription and latency
// (flatLinkOf()). On a cluster whose levels all share one link the flat view is the cluster
// itself, and the flat plan is NEST's.
#include "Planner.h"
#include "Topology.h"

namespace nest {

// The mean effective link over all device pairs (oversubscription 1); a one-device cluster
// has the innermost level's link.
LinkParams flatLinkOf(const Topology &topo);
// `topo` with every level's link set to flatLinkOf(topo) and the group overrides removed.
Topology flatView(const Topology &topo);

class FlatPlanner : public Planner {
public:
    using Planner::plan;
    PlanResult plan(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                    const ProgressFn &progress, const CancelToken &cancel) const override;
    std::string name() const override { return "flat"; }
};

} // namespace nest

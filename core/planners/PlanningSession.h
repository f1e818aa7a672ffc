#pragma once
// Incremental re-planning (issue 24, point 3): what the window's live mode calls after each
// edit (a link class, a rack, a search setting). A session remembers the last inputs and
// result; replan() returns exactly what NestPlanner::plan() returns for the new inputs
// (plan, objective, report), reusing what is still valid:
//  - the same inputs as last time: the last result, without a search;
//  - otherwise the previous optimum, rebuilt in the new plan space (its outer point, cuts,
//    widths and options placed by the new PlanSpace) and re-valued by evaluate(), bounds the
//    search (NestPlanner::planWithBound): every cell, option and outer point that cannot
//    beat it is cut from the start. A plan of the space reaches that value, so the optimum
//    is at most it and the search returns the same plan as one from scratch
//    (docs/planner.md, "Incremental re-planning"); when the previous plan is not in the new
//    space (a setting excludes it) the search runs from scratch;
//  - the layer sums of the last search (LayerSumsStore: they depend on the model, the
//    sequence length and the cost options, not on links, racks or most settings), while
//    those stay the same and the store holds at most kKeptSumsBytes.
// One session per window (not thread-safe: one replan() at a time).
#include "Planner.h"

#include <cstddef>
#include <memory>
#include <optional>

namespace nest {

class LayerSumsStore;

class PlanningSession {
public:
    // How the last replan() was answered.
    struct Reuse {
        bool sameInputs = false;     // the previous result, no search
        bool boundedByPrevious = false;  // the previous optimum bounded the search
        double bound = 0;            // its value on the new inputs (seconds), when bounded
        bool keptLayerSums = false;  // a search ran and started with the last one's layer sums
        double seconds = 0;          // wall time of replan()
    };

    PlanningSession();
    ~PlanningSession();
    PlanningSession(const PlanningSession &) = delete;
    PlanningSession &operator=(const PlanningSession &) = delete;

    PlanResult replan(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                      const ProgressFn &progress = {}, const CancelToken &cancel = CancelToken{});
    const Reuse &lastReuse() const { return m_reuse; }
    // Forgets the previous inputs, result and layer sums (the next replan() searches from
    // scratch).
    void reset();
    // The most heap a kept LayerSumsStore may hold between re-plans (a larger one is
    // dropped after its search: the window keeps no more than this while idle).
    static constexpr size_t kKeptSumsBytes = size_t{64} << 20;

private:
    struct Inputs {
        Topology topo;
        ModelProfile model;
        SearchOptions options;
    };
    std::optional<Inputs> m_inputs;
    PlanResult m_result;
    Reuse m_reuse;
    std::unique_ptr<LayerSumsStore> m_sums;
};

// The value of `previous` rebuilt in the plan space of (topo, model, options): the same
// micro-batch, schedule, dp, cuts, widths and stage options placed by PlanSpace (either
// layout the options allow), evaluated; nullopt when it is not a feasible plan of that
// space.
std::optional<double> valueInSpace(const Plan &previous, const Topology &topo, const ModelProfile &model,
                                   const SearchOptions &options);

} // namespace nest

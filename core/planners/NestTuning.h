#pragma once
// Knobs of NestPlanner that change how much work it does, never what it returns, and the
// entry point that sets them (for tests that must see a cut at work on small instances).
#include "Planner.h"

namespace nest {

struct NestTuning {
    // The positions relaxation (docs/planner.md, "Positions needed") is consulted once an
    // outer point's recurrence has created more than this many cells: on small points it
    // costs more than it saves. 0: from the first cell.
    long long relaxAfterCells = 2048;
};

// NestPlanner::plan() with `tuning`; relaxationCuts (if given) receives how many cells and
// transitions the relaxation ruled out.
PlanResult planNestTuned(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                         const NestTuning &tuning, long long *relaxationCuts = nullptr);

} // namespace nest

#pragma once
// Knobs of NestPlanner that change how much work it does, never what it returns, and the
// entry point that sets them (for tests that must see a cut at work on small instances).
#include "Planner.h"

namespace nest {

struct NestTuning {
    // The positions relaxation (docs/planner.md, "Positions needed") is consulted once an
    // outer point's recurrence has created more than this many cells: on small points it
    // costs more than it saves. 0: from the first cell.
    long long relaxAfterCells = 512;
    // The roots' bound of the relaxation (docs/planner.md, "The roots' Lagrangian bound") is
    // made for a table once a root asks for a row this many rows past those built, or once
    // the table holds four times as many rows; after a try that does not decide, it is tried
    // again max(this / 4, the root's stages / 8) stages deeper at the earliest. 0: at every
    // root.
    int rootBoundAfterRows = 16;
    // Counts the roots that bound ruled out, when set (one search at a time: not with
    // SearchOptions::threads > 1).
    long long *rootBoundCuts = nullptr;
    // Counts the outer points zeroTrafficBound() skipped, when set (one search at a time).
    long long *zeroBoundCuts = nullptr;
    // The relaxation's walks over the ends of a first stage pass over the ends of the model's
    // periodic stretch whose summary a walk of the same phase already found failing
    // (docs/planner.md, "Known failures of the periodic stretch"); false: one end at a time
    // (the same rows).
    bool skipKnownFailures = true;
    // Counts the ends those walks passed over without asking, when set (one search at a time).
    long long *skippedEnds = nullptr;
    // SearchOptions::threads > 1 (docs/planner.md, "Outer points in parallel"): -1 = each
    // point to whichever search is free. 0 or 1: the second search runs the points whose
    // index in the order has this parity (in order), and only then the first search the
    // others, so every value of one parity is known before a point of the other runs,
    // whatever the timing. The plan must not change; a test makes the order adversarial
    // with it (a tie between neighbours is then met late first under one of the parities).
    int parallelFirstParity = -1;
};

// NestPlanner::plan() with `tuning`; relaxationCuts (if given) receives how many cells and
// transitions the relaxation ruled out.
PlanResult planNestTuned(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                         const NestTuning &tuning, long long *relaxationCuts = nullptr);

} // namespace nest

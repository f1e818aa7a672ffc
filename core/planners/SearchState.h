#pragma once
// What the pieces of one NEST search share (docs/planner.md §3-§5): the plan space and its
// stage-cost cache, the layer ranges' classes and the positions relaxation, the current
// outer point, the incumbent, progress and cancellation. One per search; the pieces
// (SuffixBounds, NestRecurrence, IncumbentSeed, InterleavedSearch) each hold a reference.
#include "Incumbent.h"
#include "NestTuning.h"
#include "PositionBound.h"
#include "StageCostCache.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace nest {

struct SearchState {
    // `sums` serves the space's inputs (LayerSumsStore::serves()) and outlives the search.
    SearchState(const PlanSpace &space, const CancelToken &cancel, SearchStats &stats, const NestTuning &tuning,
                LayerSumsStore &sums)
        : tuning(tuning), space(space), topo(space.topology()), model(space.model()), cancel(cancel), stats(stats),
          cache(space, cancel, stats, obstacle, sums, std::max(1, space.options().topK)), L(space.layerCount()),
          keep(std::max(1, space.options().topK)), widths(cache.widths()), ranges(cache, space.model()),
          positionBound(cache, ranges, L, space.maxStages(), stats, tuning), incumbent(space, keep)
    {
    }

    const NestTuning tuning;
    const PlanSpace &space;
    const Topology &topo;
    const ModelProfile &model;
    const CancelToken &cancel;
    SearchStats &stats;
    MemoryObstacle obstacle;    // the closest memory miss (before `cache`, which records it)
    StageCostCache cache;       // stage costs in parts, placement facts, the current point
    const int L;                // layers
    const int keep;             // SearchOptions::topK (>= 1)
    const std::vector<int> &widths;  // cache.widths()
    // Range classes of the periodic part of the model, without a layer sequence per pair.
    PeriodicRanges ranges;
    // The positions a suffix needs at least (docs/planner.md, "Positions needed").
    PositionBound positionBound;
    Incumbent incumbent;

    // Per outer point (NestPlanner's setupConfig()).
    OuterConfig cfg;
    int nW = 0;                                      // widths of the point
    const LayerComputeBound *bound = nullptr;        // its compute bound
    const LayerComputeBound *seedBound = nullptr;    // the same with one device type, else null

    // Throws SearchCancelled once the caller cancelled.
    void poll() const
    {
        if (cancel.cancelled())
            throw SearchCancelled{};
    }

    // Progress within the outer loop: point `index` of `count`, `within` its own fraction.
    void setProgress(const ProgressFn *progress, size_t index, size_t count)
    {
        m_progress = progress;
        m_pointIndex = index;
        m_pointCount = count;
    }
    void report(double within) const
    {
        const double bestValue = incumbent.bestValue();
        if (m_progress && *m_progress && m_pointCount > 0)
            (*m_progress)((double(m_pointIndex) + std::clamp(within, 0.0, 1.0)) / double(m_pointCount),
                          bestValue < std::numeric_limits<double>::infinity() ? bestValue : 0.0);
    }

private:
    const ProgressFn *m_progress = nullptr;
    size_t m_pointIndex = 0, m_pointCount = 0;
};

} // namespace nest

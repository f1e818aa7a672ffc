#pragma once
// The NEST planner's stage costs in parts (docs/planner.md, "Stage costs in parts"): the
// evaluator's stageGeometry / stageLayerSums / stageCostBase / finishStageCost, each cached
// under a key that determines its inputs, so every value is the very double evaluate()
// computes. Placement facts (placement class of each (position, width), link id of each
// boundary) are kept per (dp, layout) and shared by every micro-batch and schedule.
//
// One cache serves one search; setConfig() makes an outer point current, and positions,
// width indices and option indices below are those of the current point. The layer sums and
// range classes live in a LayerSumsStore, which may outlive the search (PlanningSession).
#include "FlatHashMap.h"
#include "LayerSumsStore.h"
#include "PlanSpace.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <utility>
#include <vector>

namespace nest {

// One feasible option of a stage: per-micro-batch time, per-iteration extra, option index.
struct OptCost {
    double t, e;
    int opt;
};

// The feasible options of a stage in its context that are not dominated in (t, e): the
// costs optCost(begin) .. optCost(begin + count - 1), t ascending, e descending.
struct OptEntry {
    int begin = 0, count = 0;
    bool fits = false;          // at least one option fits in memory
    // A floor on every fitting option's per-micro-batch time that never falls as the stage
    // takes more layers at the same position, depth and links (NestRecurrence's end scan stops
    // where weight x it reaches the incumbent): computeTimeFloor() x the least forward +
    // backward + recompute pass compute (StageCost::recomputeCompute, without the
    // collectives it repeats, whose exposed share can fall as the stage grows) of the options
    // that fit in memory (+infinity when none does; memory and each option's compute only
    // grow with the layers, so the options that fit only drop out). With MoE layers in the
    // model the options change where a stage first holds one, and it is the least forward +
    // backward of every finite option instead.
    double minCompute = std::numeric_limits<double>::infinity();
};

class StageCostCache {
public:
    // Options that do not fit in memory are counted in stats.pruned and offered to
    // `obstacle`; stats.stageCostCalls counts finishStageCost() calls made by entry().
    // keep > 1 (SearchOptions::topK): entry() keeps every feasible option that fewer than
    // `keep` others dominate in (t, e), instead of the Pareto front (options differ in their
    // StageConfig, so those others make `keep` distinct plans at least as good). `sums`
    // must serve the space's model, sequence length and cost options
    // (LayerSumsStore::serves()) and outlive the cache.
    StageCostCache(const PlanSpace &space, const CancelToken &cancel, SearchStats &stats,
                   MemoryObstacle &obstacle, LayerSumsStore &sums, int keep = 1);

    // Makes `cfg` the current outer point.
    void setConfig(const OuterConfig &cfg);
    const OuterConfig &config() const { return m_cfg; }
    const Topology &topology() const { return m_topo; }
    // makeContext() of the current point: plan scalars, no stage, no links.
    const StageContext &context() const { return m_ctx; }
    // The widths of the space that fit the current point's positions, ascending.
    const std::vector<int> &widths() const { return m_widths; }
    int widthCount() const { return m_nW; }

    // The options (PlanSpace::stageOptions) of a stage [j, jEnd) of width index wIdx.
    const std::vector<StageConfig> &options(int wIdx, int j, int jEnd) const
    {
        return m_options[optionList(wIdx, j, jEnd)];
    }
    // A stage at position q of width index wIdx (devices only).
    StagePlan stageAt(int q, int wIdx) const;
    int rangeClass(int j, int jEnd) { return m_store.rangeClass(j, jEnd); }
    // Placement class of the stage at (q, wIdx).
    int placementClass(int q, int wIdx)
    {
        const int s = m_pl->sig[static_cast<size_t>(q) * m_nW + wIdx];
        return s >= 0 ? s : newPlacementClass(q, wIdx);
    }
    // Link ids are below 2^kLinkIdBits (newLinkId refuses more): SearchCells.h's cell keys
    // hold one in that many bits.
    static constexpr int kLinkIdBits = 20;
    // Link id of the boundary at position q between a stage of width index wp and one of w
    // (id 0 = no boundary).
    int linkId(int q, int wp, int w)
    {
        const int id = m_pl->link[(static_cast<size_t>(q) * m_nW + wp) * m_nW + w];
        return id >= 0 ? id : newLinkId(q, wp, w);
    }
    const BoundaryLink &link(int id) const { return m_links.link(id); }

    // The block of base costs (stageCostBase, one per option in options() order) of the
    // stage [j, jEnd) at (q, wIdx), whose range class is `range` and placement class `sig`.
    int block(int range, int sig, int j, int jEnd, int q, int wIdx)
    {
        int id = -1;
        return m_blockIdx.find(blockKey(range, sig, wIdx), id) ? id : newBlock(range, sig, j, jEnd, q, wIdx);
    }
    const StageCost &base(int blk, int opt) const
    {
        return m_bases[static_cast<size_t>(blk)][static_cast<size_t>(opt)];
    }
    // The floor of `classes` (placement classes of width index wIdx, each with a position
    // where it occurs; not empty) for option o: its geometry at the first class, with every
    // collective at the least per-byte and the least fixed cost it has at any of them. It
    // depends on the option's shape and the classes, not on the layers. With one device type
    // an option's bases on it (basesOn()) have the memory they have at each class, and a
    // per-micro-batch time, and that time plus the extra, at most theirs (finished with the
    // same links; docs/planner.md, "Summaries on the floor of the placement classes").
    StageGeometry floorGeometry(int wIdx, const StageConfig &o, const std::vector<std::pair<int, int>> &classes);
    // The least per-byte cost of the dense ZeRO group's reduce-scatter (and all-gather,
    // addDataParallel()) over every ZeRO-3 option of every width at every position a stage
    // of the current point can take; +infinity when no option is ZeRO-3.
    double leastZero3PerByte();
    // The bases (options() order) of the stage [j, jEnd) of width index wIdx, whose range
    // class is `range`, option i on geometries[i]. Not kept.
    std::vector<StageCost> basesOn(int range, int j, int jEnd, int wIdx, const std::vector<StageGeometry> &geometries);

    // Feasible, mutually non-dominated options (keep > 1: see the constructor; t ascending
    // either way) of the stage [j, jEnd) of width wIdx whose
    // base costs are block `blk`, with k stages after it, prev link v and next link u
    // (0 = none), costed as stage (v ? 1 : 0) of (v ? 1 : 0) + k + 1. Depends on k only
    // through the stashed micro-batches. Ties keep the lowest option index.
    OptEntry entry(int blk, int j, int jEnd, int wIdx, int k, int v, int u)
    {
        OptEntry e;
        const FlatKey key = entryKey(blk, k, v, u);
        return m_optMemo.find(key, e) ? e : newEntry(key, blk, j, jEnd, wIdx, k, v, u);
    }
    const OptCost &optCost(int i) const { return m_optPool[static_cast<size_t>(i)]; }

    // The perMicroBatch and iterationExtra of every option (options() order) of block blk
    // between the links v and u (0: none), as finishStageCost() gives them in ctx (a
    // context of the current point for a stage [ctx.stage->firstLayer, endLayer)). Of a
    // finished cost only the stash and memory depend on the position beyond that (whether
    // the stage is pipelined, numStages > 1, and whether an interleaved schedule overlaps
    // its p2p, both in the key), so they are finished once per (blk, v, u, those two) and
    // kept for the search; stageMemoryTotal() gives the memory of each position.
    struct TimeRow {
        int begin = 0;
    };
    TimeRow stageTimes(int blk, int v, int u, const StageContext &ctx, const std::vector<StageConfig> &opts);
    double timeOf(TimeRow r, int opt) const { return m_timePool[static_cast<size_t>(r.begin + 2 * opt)]; }
    double extraOf(TimeRow r, int opt) const { return m_timePool[static_cast<size_t>(r.begin + 2 * opt + 1)]; }

    // The iteration time of an interleaved candidate of the current (interleaved) point with
    // the evaluator's arithmetic (cached bases, finishStageCost, iterationTime); -1 when
    // a chunk's option is not one of options() (then use evaluate()). +infinity when some
    // pipeline position's memory (positionMemory() of the chunks' costs, as evaluate() sums
    // it) exceeds the least capacity of its devices, so that evaluate() would find the plan
    // infeasible (known from the chunks' bases, before their times), or once the time is
    // certain to be >= cutoff: (m + (pp-1)/v) times one device's partial sum of
    // per-micro-batch times reaches it. *fits, when given: every position was found to fit
    // (false when one does not, or when the cutoff was reached before all were loaded).
    double interleavedTime(const InterleavedChoice &c, const std::vector<StageChoice> &chunks,
                           double cutoff = std::numeric_limits<double>::infinity(), bool *fits = nullptr);

private:
    // interleavedTime()'s state for one candidate (StageCostCache.cpp), and its two steps:
    // load a position's chunks and check its memory; finish their times against the cutoff.
    struct InterleavedPass;
    int loadPosition(InterleavedPass &pass, int d);
    bool positionTimeBelow(InterleavedPass &pass, int d, double cutoff);
    // Placement facts of one (dp, layout).
    struct Placement {
        int dp = 1;
        Layout layout = Layout::ReplicasOutside;
        std::vector<int> sig;   // q * nW + w -> placement class, -1 = not yet computed
        std::vector<int> link;  // (q * nW + wp) * nW + w -> boundary link id, -1 = not yet
    };

    const PlanSpace &m_space;
    const Topology &m_topo;
    const CancelToken &m_cancel;
    SearchStats &m_stats;
    MemoryObstacle &m_obstacle;
    const int m_keep;
    SearchClasses m_classes;
    LayerSumsStore &m_store;

    // The current outer point.
    OuterConfig m_cfg;
    StageContext m_ctx;
    std::vector<int> m_widths;
    int m_nW = 0;
    std::vector<std::vector<StageConfig>> m_options;  // [wIdx * 2 + holds a MoE layer]
    // Per list of m_options, per option: the first option of the list with the same
    // LayerSumsStore::sumsChoice(), whose sums newBlock() reuses.
    std::vector<std::vector<int>> m_sumsTwin;
    size_t optionList(int wIdx, int j, int jEnd) const
    {
        return static_cast<size_t>(wIdx) * 2 + (m_space.hasMoe(j, jEnd) ? 1 : 0);
    }
    Placement *m_pl = nullptr;                        // of (m_cfg.dp, m_cfg.layout)
    int m_mbIdx = 0;                                  // index of m_cfg.microBatch in m_mbs

    // Shared by all outer points (every key below determines its value, Evaluator.h):
    // geometry per (placement class, tp, cp, ep); the base of every option per (range class,
    // placement class, width, micro-batch) -- a "block"; the Pareto-filtered options per
    // (block, stashed micro-batches, prev link, next link). (The layer sums, per range class,
    // choice, device speed and micro-batch: m_store.)
    std::vector<Placement> m_placements;
    LinkTable m_links;
    FlatHashMap<int> m_boundaryIds;                   // SearchClasses::boundaryKey -> link id
    std::vector<int> m_mbs;                           // micro-batch sizes seen
    std::vector<int> m_blockSizes;                    // regularBlockSizes(): empty unless regular
    const double m_timeFloor;                         // computeTimeFloor() of the space's cost options
    const bool m_fitComputeFloor;                     // OptEntry::minCompute over the fitting options (no MoE)
    FlatHashMap<int> m_geomIdx;                       // (placement class, widthKey) -> m_geoms
    std::vector<StageGeometry> m_geoms;
    FlatHashMap<int> m_blockIdx;
    // Per block, one base per option. One small vector per block: a single growing vector
    // of all bases (tens of MB with the default space) spent most of a quick search copying
    // itself and faulting in fresh pages on every doubling.
    std::vector<std::vector<StageCost>> m_bases;
    FlatHashMap<OptEntry> m_optMemo;
    std::vector<OptCost> m_optPool;
    FlatHashMap<TimeRow> m_timeIdx;   // stageTimes()
    std::vector<double> m_timePool;   // per row: (perMicroBatch, iterationExtra) per option

    // Scratch.
    std::vector<OptCost> m_tmp;
    StagePlan m_stage;
    StagePlan m_geomStage;                            // geometryId(): the stage's devices
    StagePlan m_timeStage;                            // stageTimes(): the stage costed
    std::vector<StageCost> m_costs;
    std::vector<int> m_blockSums;                     // basesOn(): per option, its sums
    std::vector<ComputeRates> m_blockRates;           // ... and the rates they are for
    Plan m_ilPlan;                                    // interleaved: scalars and chunk count
    std::map<std::pair<int, int>, BoundaryLink> m_wrapLinks;  // (pp, wIdx) -> last -> first

    FlatKey blockKey(int range, int sig, int wIdx) const
    {
        return {(static_cast<uint64_t>(range) << 32) | static_cast<uint64_t>(m_mbIdx),
                (static_cast<uint64_t>(sig) << 32) | static_cast<uint64_t>(m_widths[wIdx])};
    }
    FlatKey entryKey(int blk, int k, int v, int u) const
    {
        const int stash = m_cfg.schedule == Schedule::GPipe ? m_cfg.numMicroBatches
                                                              : std::min(k + 1, m_cfg.numMicroBatches);
        return {(static_cast<uint64_t>(stash) << 32) | static_cast<uint64_t>(blk),
                (static_cast<uint64_t>(v) << 32) | static_cast<uint64_t>(u)};
    }
    int newPlacementClass(int q, int wIdx);
    int newLinkId(int q, int wp, int w);
    int newBlock(int range, int sig, int j, int jEnd, int q, int wIdx);
    template <typename GeometryOf>
    std::vector<StageCost> basesOn(int range, int j, int jEnd, int wIdx, GeometryOf geometryOf);
    OptEntry newEntry(const FlatKey &key, int blk, int j, int jEnd, int wIdx, int k, int v, int u);
    int geometryId(int sig, int q, int wIdx, const StageConfig &o);
};

} // namespace nest

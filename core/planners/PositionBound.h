#pragma once
// The positions a suffix of the NEST recurrence needs at least (docs/planner.md, "Positions
// needed"): a relaxation of the recurrence without positions, links or placements.
//
// need(k, j) is the fewest positions that k + 1 stages covering the layers [j, L) can
// occupy when every stage, with k' stages after it, has an option that
//   * fits in memory with the stash of a stage with k' stages after it, and
//   * has (m + k') * t + e below the incumbent, where t is the stage's per-micro-batch time
//     without its pipeline point-to-point and e its per-iteration extra,
// both at the cheapest placement class its width has anywhere in the current outer point.
// Every stage of a plan that beats the incumbent meets this test (its pipeline weight is at
// least m + k', its p2p is not negative), so a DP cell at position q with
// q + need(k, j) > positions holds no suffix that can beat it.
//
// One per search; setConfig() follows StageCostCache::setConfig().
#include "FlatHashMap.h"
#include "StageCostCache.h"

#include <limits>
#include <map>
#include <utility>
#include <vector>

namespace nest {

class PositionBound {
public:
    static constexpr int kNone = std::numeric_limits<int>::max() / 2;
    // Boundaries (positions x widths^2) enumerated for the p2p bound at most; above, the
    // relaxation takes p2p as 0.
    static constexpr double kMaxBoundaries = 1 << 18;

    PositionBound(StageCostCache &cache, int layers, int maxStages, SearchStats &stats);

    // The cache's current outer point becomes current; `compute` (may be null) gives the
    // per-layer compute bounds that end a scan of longer stages early.
    void setConfig(const LayerComputeBound *compute);

    // A lower bound on the positions of a suffix [j, L) in k + 1 stages that can beat
    // `best` in a pipeline whose weight is at least `weight`: the fewest positions of the
    // relaxation (any value above the point's positions, or kNone when no suffix passes,
    // means "more than there are"), for these values or, when that is already above
    // `limit`, for an earlier, larger incumbent and smaller weight (a new table costs).
    int need(int k, int j, double best, double weight, int limit);

private:
    int reach() const;
    // One option of a stage at one placement class, as the relaxation sees it.
    struct OptionBound {
        double last;    // per-micro-batch time as the last stage (no boundary after it)
        double inner;   // ... before another stage (at least as large)
        double e;       // per-iteration extra, the lesser of a single stage's and a pipeline's
        int maxStash;   // the most stages (numStages - stageIndex) it fits in memory with
    };
    // The options of a stage (range class, width index) over every placement class of the
    // width, and the most stages after it that still pass the test for `stamp`.
    struct Summary {
        std::vector<OptionBound> options;
        int memoryStages = -1;  // the most stages after it that some option fits with
        double stamp = -1, stampWeight = -1;  // the incumbent and weight of kStages
        int kStages = -1;
    };

    StageCostCache &m_cache;
    const int m_L;
    const int m_maxStages;
    SearchStats &m_stats;
    const LayerComputeBound *m_compute = nullptr;

    // Per (dp, layout), per width index: the distinct placement classes, each with a
    // position where it occurs; the link ids of the boundaries before and after a stage of
    // that width (empty lists with linksKnown false: not enumerated, p2p taken as 0).
    struct Placements {
        std::vector<std::vector<std::pair<int, int>>> classes;
        std::vector<std::vector<int>> linksBefore, linksAfter;
        bool classesKnown = false, linksKnown = false;
    };
    std::map<std::pair<int, int>, Placements> m_placements;
    Placements *m_facts = nullptr;

    // Per outer point.
    FlatHashMap<int> m_summaryIdx;  // (range class, width index) -> m_summaries
    std::vector<Summary> m_summaries;
    // Per first layer j: per (stage length - 1) * widths + width index, the summary (-1:
    // not yet), its memoryStages and its kStages for `stamp` (-2: not yet).
    struct StageRow {
        std::vector<int> summary, memoryStages, kStages;
        double stamp = -1, stampWeight = -1;
    };
    std::vector<StageRow> m_rows;
    std::vector<int> m_need;  // k * (L + 1) + j -> need, -1 unknown
    bool m_ready = false;     // the per-point tables are allocated
    double m_needStamp = -1;  // the incumbent and weight m_need holds values for
    double m_needWeight = -1;
    double m_weight = 0;      // the weight of the current need()
    int m_m = 1;              // micro-batches of the point
    int m_nW = 0;

    const std::vector<std::pair<int, int>> &classesOf(int wIdx);
    void enumerateLinks();
    int summaryIndex(int j, int jEnd, int wIdx);
    Summary makeSummary(int j, int jEnd, int wIdx);
    int stagesAfterAllowed(Summary &s, double best) const;
    double weightOf(int k) const;
    int narrowest(int j, int jEnd, int k, double best, bool &anyFits);
    int solve(int k, int j, double best);
    bool tooHeavy(int k, int j, double best) const;
    int restAtLeast(int k, int j, double best) const;
    std::vector<std::vector<std::pair<int, int>>> m_candidates;  // solve(): per k, (end, width)
};

} // namespace nest

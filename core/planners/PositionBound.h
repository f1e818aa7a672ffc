#pragma once
// The positions a suffix of the NEST recurrence needs at least (docs/planner.md, "Positions
// needed"): a relaxation of the recurrence without positions, links or placements.
//
// need(k, j) is the fewest positions that k + 1 stages covering the layers [j, L) can
// occupy when every stage, with k' stages after it, has an option that
//   * fits in memory with the stash of a stage with k' stages after it, and
//   * has (m + k') * t + e below the incumbent, where t is the stage's per-micro-batch time
//     without its pipeline point-to-point and e its per-iteration extra,
// both at the cheapest placement class its width has anywhere in the current outer point
// (with one device type: on the floor of those classes, StageCostCache::floorGeometry(),
// whose times and values are at most each class's).
// Every stage of a plan that beats the incumbent meets this test (its pipeline weight is at
// least m + k', its p2p is not negative), so a DP cell at position q with
// q + need(k, j) > positions holds no suffix that can beat it.
//
// The table holds a lower bound on that number (docs/planner.md, "The table's rows"): per
// width, only the longest first stage that passes, paired with the fewest positions of any
// rest that starts at or before its end (exact where the rest needs no more positions the
// later it starts), so a row costs widths per first layer instead of a scan of its ends.
//
// One per search; setConfig() follows StageCostCache::setConfig().
#include "FlatHashMap.h"
#include "NestTuning.h"
#include "StageCostCache.h"

#include <algorithm>
#include <bit>
#include <deque>
#include <limits>
#include <map>
#include <utility>
#include <vector>

namespace nest {

// StageCostCache::rangeClass() without building a layer sequence for every (first, end) pair
// (docs/planner.md, "Range classes of the periodic stretch"). The class of [j, e) is that of
// the layer types of [j - 1, e) (SearchClasses: layers equal up to the name; -1 before the
// first layer). Where the types repeat with a period p over a stretch [a, b) of the model (the
// blocks of a deep model, or their op-level entries), a range [j, e) with a <= j - 1 and e <= b
// has the types of every other such range with the same length and the same (j - 1 - a) mod p,
// hence the same class: asked once per (phase, length).
class PeriodicRanges {
public:
    PeriodicRanges(StageCostCache &cache, const ModelProfile &model);
    int rangeClass(int j, int e);
    int period() const { return m_period; }  // 0: no periodic stretch
    int stretchBegin() const { return m_begin; }  // [a, b)
    int stretchEnd() const { return m_end; }
    // (j, e) as phase * (L + 1) + length when the range lies in the periodic stretch (all
    // such ranges with the same value have the same class), else -1; below slots().
    int slot(int j, int e) const
    {
        if (m_period == 0 || j < 1 || j - 1 < m_begin || e > m_end)
            return -1;
        return (j - 1 - m_begin) % m_period * (m_L + 1) + (e - j);
    }
    int slots() const { return m_period * (m_L + 1); }

private:
    StageCostCache &m_cache;
    int m_L = 0;
    int m_period = 0;             // 0: no periodic stretch
    int m_begin = 0, m_end = 0;   // [a, b)
    std::vector<int> m_classes;   // phase * (L + 1) + length -> class, -1 unknown
};

// Least values over ranges [lo, hi] of an array whose entries become final from the right
// (e = n - 1 first, then down): a sparse table (level l at e: the least over [e, e + 2^l),
// or up to n - 1) whose entry at e reads only entries after it, so it can be filled as the
// entries settle. A query over settled entries is two reads (PositionBound::buildTwoOrMore()).
class SettledRangeMin {
public:
    void reset(size_t n, int none);
    void settle(size_t e, int v);  // e below every entry settled so far
    int min(int lo, int hi) const  // over [lo, hi], all settled
    {
        const int l = static_cast<int>(std::bit_width(static_cast<unsigned>(hi - lo + 1))) - 1;
        const int *level = &m_table[static_cast<size_t>(l) * m_n];
        return std::min(level[lo], level[hi - (1 << l) + 1]);
    }

private:
    size_t m_n = 0;
    int m_levels = 0;
    int m_none = 0;
    std::vector<int> m_table;
};

class PositionBound {
public:
    static constexpr int kNone = std::numeric_limits<int>::max() / 2;
    // Boundaries (positions x widths^2) enumerated for the p2p bound at most; above, the
    // relaxation takes p2p as 0.
    static constexpr double kMaxBoundaries = 1 << 18;
    // The relative amount by which a floor summary's times and extras are lowered, for
    // rounding (makeSummary()).
    static constexpr double kFloorShade = 1e-12;
    // Width indices below which walkEnds() passes over known failures in the periodic
    // stretch (the walks of higher indices go one end at a time).
    static constexpr int kMaxWalkWidths = 32;

    PositionBound(StageCostCache &cache, PeriodicRanges &ranges, int layers, int maxStages, SearchStats &stats,
                  const NestTuning &tuning);

    // The cache's current outer point becomes current; `compute` (may be null) gives the
    // per-layer compute bounds that end a scan of longer stages early.
    void setConfig(const LayerComputeBound *compute);

    // A lower bound on the positions of a suffix [j, L) in k + 1 stages that can beat
    // `best` in a pipeline whose weight is at least `weight`: the fewest positions of the
    // relaxation (any value above the point's positions, or kNone when no suffix passes,
    // means "more than there are"), for these values or, when that is already above
    // `limit`, for an earlier, larger incumbent and smaller weight (a new table costs), or
    // for any suffix of two or more stages (rows not yet built cost), or, for j = 0, by
    // the roots' Lagrangian bound (docs/planner.md, "The roots' Lagrangian bound").
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
    PeriodicRanges &m_ranges;
    const int m_L;
    const int m_maxStages;
    SearchStats &m_stats;
    const int m_rootBoundAfterRows;
    long long *const m_rootBoundCuts;
    const bool m_skipKnownFailures;
    long long *const m_skippedEnds;
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
    std::vector<int> m_summaryAt;   // PeriodicRanges::slot() * widths + width index -> m_summaries, -1 unknown
    FlatHashMap<int> m_fitsWithTwo; // (range class, width index) -> fitsWithTwo() (0 / 1)
    std::vector<Summary> m_summaries;
    bool m_floor = false;           // summaries from the floor of the placement classes (makeSummary())
    struct FloorGeometries {
        const std::vector<StageConfig> *list;  // StageCostCache::options() of the point
        int width;                             // width index
        std::vector<StageGeometry> geometries; // per option of the list
    };
    std::deque<FloorGeometries> m_floorGeometries;  // per point (floorGeometries()); stable references

    // The table of one (incumbent, weight) (docs/planner.md, "The table's rows"), built
    // row by row (k ascending) as need() asks. Per first layer j, once a row needs it: the
    // ends e of a first stage [j, e) with a stage after it that could pass at all (e in
    // [j + 1, j + count], count found by bisection), and per end and width index w the most
    // stages after it for which a width at most w passes (-1: none; -3: not computed yet),
    // at m_stages[m_start[j] + (e - j - 1) * widths + w]; a width whose compute alone rules
    // it out for the row being built adds nothing there (stagesUpTo()), so a value is exact
    // only as far as the rows from that one on ask ("at least k?"). m_last: per (j, w) an
    // index at or above the largest end that still passes for the rows built so far (it
    // starts at the last end where compute allows a stage after one of width w, and only
    // moves down; a walk that can no longer lower the row's value stops early, buildRow()).
    std::vector<int> m_stages, m_start, m_last;
    // Per table, for the stages in the model's periodic stretch (whose summary is that of
    // their phase and length, PeriodicRanges::slot()): per (slot, width index), -1, or, when
    // that summary is known to fail for the walks from now on, a shorter length of the same
    // phase to look at next (a chain of known failures, followed and shortened by
    // openLength()). Shared by every first layer of the phase (walkEnds()). Empty until a
    // walk needs it.
    std::vector<int> m_failDown;
    std::vector<int> m_countGuess;  // prepareFirstLayer(): the last count per phase (a guess)
    // need' per (k, j) for rows 0 .. m_rowsBuilt - 1 (any value above the positions means
    // "more than there are"); m_prefix: the last row's prefix minima (min over e' <= e).
    std::vector<int> m_need;
    std::vector<int> m_prefix;
    int m_rowsBuilt = 0;
    bool m_ready = false;     // the per-point tables are allocated
    double m_needStamp = -1;  // the incumbent and weight m_need holds values for
    double m_needWeight = -1;
    double m_weight = 0;      // the weight of the current table
    int m_m = 1;              // micro-batches of the point
    int m_nW = 0;

    // Per first layer j, a lower bound on the positions of any suffix [j, L) in two or more
    // stages (docs/planner.md, "The bound of two or more stages"), built in one pass once
    // row 0 is: a query for a row not built yet that it already decides needs no rows.
    // Empty: not built for this table.
    std::vector<int> m_twoOrMore;
    SettledRangeMin m_rangeMin;  // buildTwoOrMore(): range minima over the ends

    // The roots' Lagrangian bound (docs/planner.md, same name), per table: the menus
    // (buildLongest()): per (k' >= 1, width index w) the most compute of a stage that passes
    // for k' stages after it at a width at most w, for first layers >= 1 (m_longest) and 0
    // (m_firstLongest), and per width index that of a last stage (m_lastLongest); -1: none.
    // m_lambda: the multiplier last found, m_lambdaSums[k]: its terms for k' = 0 .. k summed.
    std::vector<int> m_count;  // prepareFirstLayer(): per first layer, its ends' count (-1: not yet)
    std::vector<double> m_longest, m_firstLongest, m_lastLongest;
    bool m_longestBuilt = false;
    double m_lagrangeTotal = 0;
    double m_lambda = -1;
    int m_lambdaSolvedAt = -1;
    std::vector<double> m_lambdaSums;

    const std::vector<std::pair<int, int>> &classesOf(int wIdx);
    void enumerateLinks();
    int summaryIndex(int j, int jEnd, int wIdx);
    int summaryByClass(int j, int jEnd, int wIdx);
    Summary makeSummary(int j, int jEnd, int wIdx);
    std::vector<StageCost> basesOnFloor(int range, int j, int jEnd, int wIdx, const std::vector<StageConfig> &opts,
                                      const std::vector<std::pair<int, int>> &classes);
    int mostStagesThatFit(const StageCost &base, const StageCost &alone, StageContext &ctx) const;
    static void keepUndominated(std::vector<OptionBound> &options);
    const std::vector<StageGeometry> &floorGeometries(int wIdx, const std::vector<StageConfig> &opts,
                                                      const std::vector<std::pair<int, int>> &classes);
    int stagesAfterAllowed(Summary &s, double best) const;
    double weightOf(int k) const;
    // The per-layer compute bounds' device-seconds of the layers [j, e) (0 without them).
    double rangeDeviceSeconds(int j, int e) const
    {
        return m_compute ? m_compute->suffixDeviceSeconds[static_cast<size_t>(j)] -
                               m_compute->suffixDeviceSeconds[static_cast<size_t>(e)]
                         : 0;
    }
    int computeStages(double deviceSeconds, double width, double best) const;
    int computeCap(int j, int top, double width, double weight, double best) const;
    int stagesAllowed(int j, int jEnd, int wIdx, double best, bool &open, int known, double compute);
    int stagesAllowed(int j, int jEnd, int wIdx, double best, bool &open, int known)
    {
        return stagesAllowed(j, jEnd, wIdx, best, open, known, rangeDeviceSeconds(j, jEnd));
    }
    void resetTable();
    bool openAt(int j, int e, double best, double compute);
    bool openAt(int j, int e, double best) { return openAt(j, e, best, rangeDeviceSeconds(j, e)); }
    bool fitsWithTwo(int j, int jEnd, int wIdx);
    void prepareFirstLayer(int j, double best);
    int stagesUpTo(int j, int idx, int w, double best, int k);
    template <typename RestAt>
    int walkEnds(int j, int k, int result, double best, RestAt restAt);
    int openLength(int slotBase, int x, int length);
    bool passesInStretch(int j, int idx, int w, int k, double best, const int *cap);
    void buildRow(int k, double best);
    int solve(int k, int j, double best);
    int bound(int k, int j, double best, int limit);
    void buildTwoOrMore(double best);
    bool tooHeavy(int k, int j, double best) const;
    void buildLongest(double best);
    // The menu of the stage with kp >= 1 stages after it in a root of k + 1 stages: the first
    // stage's own (kp == k) or the general one.
    const double *menuOf(int kp, int k) const
    {
        return &(kp == k ? m_firstLongest : m_longest)[static_cast<size_t>(kp) * m_nW];
    }
    double menuTerm(const double *menu, double lambda, double &compute) const;
    double rootBound(int k, double lambda, double &compute) const;
    int lagrangian(int k, double best, int limit);
    int restAtLeast(int k, int j, double best) const;
};

} // namespace nest

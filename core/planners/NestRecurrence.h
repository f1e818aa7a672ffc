#pragma once
// The NEST recurrence over one 1F1B/GPipe outer point (docs/planner.md, "The NEST
// recurrence"): F(k, j, q, v, w), the Pareto front of (max t, max e) over the suffixes of
// layers [j, L) in k + 1 stages, the first of width w at position q behind link v; memoised
// per point, pruned by the bounds (SuffixBounds, PositionBound) against the incumbent, and
// solved root by root, shallow pipelines first. Each root's front yields plans offered to
// the incumbent.
#include "FlatHashMap.h"
#include "Pipeline.h"
#include "SearchCells.h"
#include "SearchState.h"
#include "SuffixBounds.h"
#include "SuffixSignatures.h"

#include <algorithm>
#include <vector>

namespace nest {

class NestRecurrence {
public:
    NestRecurrence(SearchState &s, SuffixBounds &bounds) : m_s(s), m_bounds(bounds) {}

    // A new outer point (NestPlanner's setupConfig()): the memo and the pool start empty.
    void beginPoint();
    // Every root of the point `cfg` (after setupConfig(cfg)), each plan below the incumbent
    // offered to it.
    void runDp(const OuterConfig &cfg);

    long long relaxationCuts = 0;  // cells and transitions the positions relaxation ruled out

private:
    SearchState &m_s;
    SuffixBounds &m_bounds;
    SuffixSignatures m_signatures;                // topK > 1
    FlatHashMap<Span, true> m_memo;               // DP cells
    std::vector<Point> m_points;                  // the pool of the fronts
    std::vector<std::vector<Point>> m_scratch;    // candidates, one list per depth
    // topK > 1: the signature ids of the pool's points (parallel to m_points) and of the
    // candidates (parallel to m_scratch).
    std::vector<int> m_sig;
    std::vector<std::vector<int>> m_scratchSig;
    std::vector<SignedPoint> m_signedTmp;
    long long m_cells = 0;    // DP cells of the current outer point
    double m_rootWeight = 0;  // the pipeline weight of the root being solved

    // The first stage of a pairing: width index and layers (its options, for signatures).
    struct StageOf {
        int width, first, end;
    };
    // The cell's first stage [firstLayer, end) and, found on first use, its block of options.
    struct FirstStage {
        int end;
        int placement;  // placement class of the cell's position and width
        int block = -1;
    };
    // What one end layer of the first stage says about the longer ones.
    struct EndLayerFacts {
        bool anyFit = false;     // some option of the stage fits in memory
        bool computeCut = true;  // its compute alone reaches the incumbent in every context
        bool costed = false;     // some context was costed at all
    };
    // What combine() pairs a first-stage option with: a suffix's (t, e) and the successor
    // the new point records.
    struct SuffixPoint {
        double t, e;
        int succ;
    };

    Span solve(const Cell &cell);
    std::vector<StageChoice> reconstruct(int w, int point);
    int blockOf(const Cell &cell, FirstStage &first);
    void collectCandidates(const Cell &cell, double weight, std::vector<Point> &out, std::vector<int> *sigs);
    EndLayerFacts addLastStage(const Cell &cell, FirstStage &first, double weight, std::vector<Point> &out,
                               std::vector<int> *sigs);
    EndLayerFacts addStageBeforeSuffixes(const Cell &cell, FirstStage &first, double weight, std::vector<Point> &out,
                                         std::vector<int> *sigs);
    void combineWithLastStage(const Cell &last, const OptEntry &e, double weight, std::vector<Point> &out,
                              const StageOf &stageOf, std::vector<int> *sigs);
    void combineWithSuffixes(const Cell &suffix, const OptEntry &e, double weight, std::vector<Point> &out,
                             const StageOf &stageOf, std::vector<int> *sigs);
    template <typename SuffixAt, typename SuffixSigAt>
    void combine(const OptEntry &e, int count, const Cell &suffix, double weight, std::vector<Point> &out,
                 const StageOf &stageOf, std::vector<int> *sigs, SuffixAt suffixAt, SuffixSigAt suffixSigAt);
    template <typename Key>
    static int firstAbove(int count, double t, Key key);
    template <typename Key>
    static int firstAtMost(int count, double e, Key key);
    static bool tieOrder(const Point &x, const Point &y);
    Span appendFront(std::vector<Point> &candidates);
    Span appendKeptPoints(const std::vector<Point> &candidates, const std::vector<int> &sigs);

    // The estimate before the search is rough: the memo of one outer point is also held to
    // the budget while it grows (SearchEstimate.h), refused instead of allocated.
    void checkMemory() const;
    bool tooFewPositions(int k, int j, int q);
    // The pipeline weight the bounds use in a cell with k stages after its first: every plan
    // through it has at least k + 1 stages, and at least as many as the root being solved
    // (runDp() solves the roots by depth, ascending, so a cell is only ever reused by roots
    // at least as deep as the one that created it; docs/planner.md, "Root weight").
    double cellWeight(int k) const
    {
        return std::max(pipelineWeight(m_s.cfg.numMicroBatches, k + 1), m_rootWeight);
    }
    int tierOf(int link) const { return link == 0 ? -1 : m_s.cache.link(link).level; }
    int suffixSig(const StageConfig &c, int tier, int next) { return m_signatures.id(c, tier, next); }
};

} // namespace nest

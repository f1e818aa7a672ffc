#include "NestRecurrence.h"

#include "KeptFront.h"
#include "Pipeline.h"
#include "SearchEstimate.h"
#include "SearchRun.h"

#include <algorithm>
#include <cstdio>

namespace nest {

void NestRecurrence::beginPoint()
{
    m_memo.clear();
    m_points.clear();
    m_sig.clear();
    m_cells = 0;
    m_scratch.resize(m_s.space.maxStages() + 1);
    if (m_s.keep > 1)
        m_scratchSig.resize(m_s.space.maxStages() + 1);
    m_rootWeight = 0;
}

// After setupConfig(cfg).
void NestRecurrence::runDp(const OuterConfig &cfg)
{
    if (m_s.nW == 0)
        return;
    const int m = cfg.numMicroBatches;
    for (int k = 0; k < m_s.space.maxStages(); ++k) {
        m_rootWeight = pipelineWeight(m, k + 1);
        for (int w = 0; w < m_s.nW; ++w) {
            if (m_s.widths[w] + k * m_s.widths.front() > cfg.positions)
                break;
            const Span s = solve(Cell{k, 0, 0, 0, w});
            for (int p = 0; p < s.count; ++p) {
                const Point &pt = m_points[s.begin + p];
                const double t = iterationSeconds(pipelineWeight(m, k + 1), pt.t, pt.e);
                if (t < m_s.incumbent.best)
                    m_s.incumbent.offerStages(t, m_s.cfg, reconstruct(w, s.begin + p));
            }
            // Deeper pipelines reuse the shallower cells: progress by pipeline depth.
            m_s.report((double(k) + double(w + 1) / m_s.nW) / m_s.space.maxStages());
        }
    }
}

std::vector<StageChoice> NestRecurrence::reconstruct(int w, int point)
{
    std::vector<StageChoice> stages;
    int j = 0;
    while (point >= 0) {
        const Point &p = m_points[point];
        StageChoice c;
        c.firstLayer = j;
        c.endLayer = p.jEnd;
        c.option = m_s.cache.options(w, j, p.jEnd)[p.opt];
        stages.push_back(c);
        j = p.jEnd;
        w = p.w2;
        point = p.succ;
        if (point <= kLastStage) {
            c.firstLayer = j;
            c.endLayer = m_s.L;
            c.option = m_s.cache.options(w, j, m_s.L)[kLastStage - point];
            stages.push_back(c);
        }
    }
    return stages;
}

// The Pareto front of the best suffixes of `cell` (docs/planner.md): memoised; empty when
// the suffix bound shows that none can beat the incumbent.
Span NestRecurrence::solve(const Cell &cell)
{
    const FlatKey key = cellKey(cell);
    Span found;
    if (m_memo.find(key, found))
        return found;
    m_s.poll();
    ++m_s.stats.states;
    if ((++m_cells & 4095) == 0)
        checkMemory();
    const double weight = cellWeight(cell.stagesAfter);
    if (weight * m_bounds.suffixBound(cell.firstLayer, cell.position, cell.stagesAfter + 1) >= m_s.incumbent.best ||
        !m_bounds.suffixFits(cell, weight) || tooFewPositions(cell.stagesAfter, cell.firstLayer, cell.position)) {
        // No suffix from here can beat the incumbent (docs/planner.md, "bounds").
        ++m_s.stats.pruned;
        const Span none{static_cast<int>(m_points.size()), 0};
        m_memo.insert(key, none);
        return none;
    }
    // One scratch list per depth: solve() of the next cell (one stage fewer) uses another.
    std::vector<Point> &candidates = m_scratch[cell.stagesAfter];
    candidates.clear();
    std::vector<int> *sigs = nullptr;
    if (m_s.keep > 1) {
        sigs = &m_scratchSig[cell.stagesAfter];
        sigs->clear();
    }
    collectCandidates(cell, weight, candidates, sigs);
    const Span span = m_s.keep > 1 ? appendKeptPoints(candidates, *sigs) : appendFront(candidates);
    m_memo.insert(key, span);
    return span;
}

int NestRecurrence::blockOf(const Cell &cell, FirstStage &first)
{
    if (first.block < 0)
        first.block = m_s.cache.block(m_s.ranges.rangeClass(cell.firstLayer, first.end), first.placement,
                                    cell.firstLayer, first.end, cell.position, cell.width);
    return first.block;
}

// Every end layer of the cell's first stage, in order, each adding its candidates; two
// monotone cuts end the scan (more layers never need less memory nor less compute,
// docs/planner.md).
void NestRecurrence::collectCandidates(const Cell &cell, double weight, std::vector<Point> &out, std::vector<int> *sigs)
{
    const int k = cell.stagesAfter;
    const int width = m_s.widths[cell.width];
    const int placement = m_s.cache.placementClass(cell.position, cell.width);
    const int lastEnd = k == 0 ? m_s.L : m_s.L - k;
    int firstEnd = k == 0 ? m_s.L : cell.firstLayer + 1;
    if (k > 0) {
        // The ends whose rest alone cannot beat the incumbent (the first test of
        // addStageBeforeSuffixes) form a prefix: the rest's bound never rises as the end
        // moves right (suffix sums and maxima of LayerComputeBound). Skipped by bisection
        // instead of one by one (docs/planner.md, "Monotonicity in j'"); the first stage's
        // compute test below is monotone the other way, so if it would have ended the scan
        // inside the prefix, it ends it at the prefix's end too.
        const int next = cell.position + m_s.widths[cell.width];
        auto restTooSlow = [&](int end) { return weight * m_bounds.suffixBound(end, next, k) >= m_s.incumbent.best; };
        if (firstEnd <= lastEnd && restTooSlow(firstEnd)) {
            int lo = firstEnd, hi = lastEnd + 1;  // restTooSlow(lo); hi: none or the first that is not
            while (hi - lo > 1) {
                const int mid = lo + (hi - lo) / 2;
                (restTooSlow(mid) ? lo : hi) = mid;
            }
            m_s.stats.pruned += hi - firstEnd;
            firstEnd = hi;
        }
    }
    for (int end = firstEnd; end <= lastEnd; ++end) {
        // Compute alone already too slow: so is every longer stage.
        if (m_s.bound &&
            weight * (m_s.bound->suffixDeviceSeconds[cell.firstLayer] - m_s.bound->suffixDeviceSeconds[end]) / width >=
                m_s.incumbent.best) {
            ++m_s.stats.pruned;
            break;
        }
        FirstStage first{end, placement};
        const EndLayerFacts facts = k == 0 ? addLastStage(cell, first, weight, out, sigs)
                                           : addStageBeforeSuffixes(cell, first, weight, out, sigs);
        if ((k == 0 || facts.costed) && (!facts.anyFit || facts.computeCut))
            break;
    }
}

// stagesAfter = 0: the cell is the last stage; each feasible option below the incumbent.
NestRecurrence::EndLayerFacts NestRecurrence::addLastStage(const Cell &cell, FirstStage &first, double weight,
                                                           std::vector<Point> &out, std::vector<int> *sigs)
{
    EndLayerFacts facts;
    const OptEntry e = m_s.cache.entry(blockOf(cell, first), cell.firstLayer, first.end, cell.width, 0,
                                     cell.prevLink, 0);
    facts.anyFit = e.fits;
    facts.computeCut = weight * e.minCompute >= m_s.incumbent.best;
    for (int i = 0; i < e.count; ++i) {
        const OptCost o = m_s.cache.optCost(e.begin + i);
        ++m_s.stats.transitions;
        if (iterationSeconds(weight, o.t, o.e) >= m_s.incumbent.best) {
            ++m_s.stats.pruned;
            continue;
        }
        out.push_back({o.t, o.e, first.end, o.opt, -1, -1});
        if (sigs)
            sigs->push_back(suffixSig(m_s.cache.options(cell.width, cell.firstLayer, first.end)[o.opt], -1, 0));
    }
    return facts;
}

// stagesAfter >= 1: the first stage before every next cell (width index w2 at the next
// position, behind the link u between them) that can still beat the incumbent.
NestRecurrence::EndLayerFacts NestRecurrence::addStageBeforeSuffixes(const Cell &cell, FirstStage &first, double weight,
                                                                     std::vector<Point> &out, std::vector<int> *sigs)
{
    EndLayerFacts facts;
    const int k = cell.stagesAfter;
    const int next = cell.position + m_s.widths[cell.width];
    // Too slow or too wide from here on whatever the next width: nothing to cost.
    if (weight * m_bounds.suffixBound(first.end, next, k) >= m_s.incumbent.best || next + k * m_s.widths.front() > m_s.cfg.positions ||
        tooFewPositions(k - 1, first.end, next)) {
        ++m_s.stats.pruned;
        return facts;
    }
    int lastU = -1;
    OptEntry lastEntry;
    for (int w2 = 0; w2 < m_s.nW; ++w2) {
        if (next + m_s.widths[w2] + (k - 1) * m_s.widths.front() > m_s.cfg.positions)
            break;
        const int u = m_s.cache.linkId(next, cell.width, w2);
        if (u != lastU) {
            lastEntry = m_s.cache.entry(blockOf(cell, first), cell.firstLayer, first.end, cell.width, k,
                                      cell.prevLink, u);
            lastU = u;
        }
        const OptEntry e = lastEntry;
        facts.costed = true;
        facts.anyFit = facts.anyFit || e.fits;
        if (weight * e.minCompute < m_s.incumbent.best)
            facts.computeCut = false;
        if (e.count == 0)
            continue;
        if (weight * std::max(m_s.cache.optCost(e.begin).t, m_bounds.suffixBound(first.end, next, k)) >= m_s.incumbent.best) {
            ++m_s.stats.pruned;
            continue;
        }
        const Cell suffix{k - 1, first.end, next, u, w2};
        const StageOf stageOf{cell.width, cell.firstLayer, first.end};
        if (k == 1)
            combineWithLastStage(suffix, e, weight, out, stageOf, sigs);
        else
            combineWithSuffixes(suffix, e, weight, out, stageOf, sigs);
    }
    return facts;
}

// stagesAfter = 1: the last stage `last` inline. Its feasible non-dominated options are
// the front solve(last) would return (the bound there is implied by the one below),
// without a DP cell.
void NestRecurrence::combineWithLastStage(const Cell &last, const OptEntry &e, double weight, std::vector<Point> &out,
                                          const StageOf &stageOf, std::vector<int> *sigs)
{
    if (m_s.bound && weight * (m_s.bound->suffixDeviceSeconds[last.firstLayer] / m_s.widths[last.width]) >= m_s.incumbent.best) {
        ++m_s.stats.pruned;
        return;
    }
    const int blk = m_s.cache.block(m_s.ranges.rangeClass(last.firstLayer, m_s.L),
                                  m_s.cache.placementClass(last.position, last.width), last.firstLayer, m_s.L,
                                  last.position, last.width);
    const OptEntry lastOptions = m_s.cache.entry(blk, last.firstLayer, m_s.L, last.width, 0, last.prevLink, 0);
    combine(e, lastOptions.count, last, weight, out, stageOf, sigs, [&](int p) {
        const OptCost o2 = m_s.cache.optCost(lastOptions.begin + p);
        return SuffixPoint{o2.t, o2.e, kLastStage - o2.opt};
    }, [&](int p) {
        const OptCost o2 = m_s.cache.optCost(lastOptions.begin + p);
        return suffixSig(m_s.cache.options(last.width, last.firstLayer, m_s.L)[o2.opt], -1, 0);
    });
}

// stagesAfter >= 2: the first stage's options against the front of the next cell.
void NestRecurrence::combineWithSuffixes(const Cell &suffix, const OptEntry &e, double weight, std::vector<Point> &out,
                                         const StageOf &stageOf, std::vector<int> *sigs)
{
    const Span sub = solve(suffix);
    combine(e, sub.count, suffix, weight, out, stageOf, sigs, [&](int p) {
        const Point &sp = m_points[sub.begin + p];
        return SuffixPoint{sp.t, sp.e, sub.begin + p};
    }, [&](int p) { return m_sig[static_cast<size_t>(sub.begin + p)]; });
}

// Every option of the first stage (entry e) with each of `count` suffix points
// (suffixAt(p)), kept when the pair can still beat the incumbent.
// With topK > 1 (sigs given) every suffix point is paired (the fronts are not strict
// then) and each new point's signature id goes to sigs (suffixSigAt(p): the suffix's).
template <typename SuffixAt, typename SuffixSigAt>
void NestRecurrence::combine(const OptEntry &e, int count, const Cell &suffix, double weight, std::vector<Point> &out,
                             const StageOf &stageOf, std::vector<int> *sigs, SuffixAt suffixAt, SuffixSigAt suffixSigAt)
{
    for (int i = 0; i < e.count; ++i) {
        const OptCost o = m_s.cache.optCost(e.begin + i);
        if (iterationSeconds(weight, o.t, o.e) >= m_s.incumbent.best) {
            ++m_s.stats.pruned;
            continue;
        }
        // The suffix front has t strictly ascending and e strictly descending. Paired
        // with (o.t, o.e), the points with t <= o.t all take o.t (only the last of them,
        // and those whose e is <= o.e, which tie with it, can be on the front) and the
        // points with e <= o.e all take o.e (only the first can be): every pair outside
        // [first, last] is strictly dominated by one inside (docs/planner.md, "Pairing").
        int first = 0, last = count - 1;
        if (!sigs) {
            const int lo = firstAbove(count, o.t, [&](int p) { return suffixAt(p).t; });
            const int r = firstAtMost(count, o.e, [&](int p) { return suffixAt(p).e; });
            first = std::max(0, std::min(r, lo - 1));
            last = std::min(count - 1, std::max(r, lo));
        }
        for (int p = first; p <= last; ++p) {
            const SuffixPoint next = suffixAt(p);
            ++m_s.stats.transitions;
            const double t = std::max(o.t, next.t), extra = std::max(o.e, next.e);
            if (iterationSeconds(weight, t, extra) >= m_s.incumbent.best) {
                ++m_s.stats.pruned;
                continue;
            }
            out.push_back({t, extra, suffix.firstLayer, o.opt, suffix.width, next.succ});
            if (sigs)
                sigs->push_back(suffixSig(m_s.cache.options(stageOf.width, stageOf.first, stageOf.end)[o.opt],
                                          tierOf(suffix.prevLink), suffixSigAt(p)));
        }
    }
}

// On a front of `count` points (t strictly ascending, e strictly descending): the first
// index whose t is above `t` / whose e is at most `e` (count when none).
template <typename Key>
int NestRecurrence::firstAbove(int count, double t, Key key)
{
    int lo = 0, hi = count;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (key(mid) <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

template <typename Key>
int NestRecurrence::firstAtMost(int count, double e, Key key)
{
    int lo = 0, hi = count;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (key(mid) > e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// Among points equal in (t, e): by end layer, next width, option, successor.
bool NestRecurrence::tieOrder(const Point &x, const Point &y)
{
    if (x.jEnd != y.jEnd)
        return x.jEnd < y.jEnd;
    if (x.w2 != y.w2)
        return x.w2 < y.w2;
    if (x.opt != y.opt)
        return x.opt < y.opt;
    return x.succ < y.succ;
}

// The Pareto front of `candidates` appended to the pool; ties in (t, e) keep the first by
// (end layer, next width, option, successor).
Span NestRecurrence::appendFront(std::vector<Point> &candidates)
{
    Span span;
    span.begin = static_cast<int>(m_points.size());
    appendKeptFront(candidates, m_points, 1, tieOrder);
    span.count = static_cast<int>(m_points.size()) - span.begin;
    return span;
}

// topK > 1: of `candidates` (signature ids in `sigs`), those that fewer than m_keep
// candidates of pairwise distinct signatures dominate and none of their own signature
// does, appended to the pool with their ids (docs/planner.md, "The best K plans": any
// completion of a dropped one is matched by m_keep distinct ones at least as good).
Span NestRecurrence::appendKeptPoints(const std::vector<Point> &candidates, const std::vector<int> &sigs)
{
    m_signedTmp.clear();
    for (size_t i = 0; i < candidates.size(); ++i)
        m_signedTmp.push_back({candidates[i], sigs[i]});
    sortByTimeThenExtra(m_signedTmp, tieOrder, [](const SignedPoint &s) -> const Point & { return s.point; });
    Span span;
    span.begin = static_cast<int>(m_points.size());
    KeptFilter filter(m_s.keep);  // the signatures are the classes
    for (const SignedPoint &c : m_signedTmp) {
        if (filter.offer(c.point.e, c.sig)) {
            m_points.push_back(c.point);
            m_sig.push_back(c.sig);
        }
    }
    span.count = static_cast<int>(m_points.size()) - span.begin;
    return span;
}

void NestRecurrence::checkMemory() const
{
    const double bytes = double(m_cells) * kBytesPerSearchCell + double(m_points.capacity()) * sizeof(Point);
    const double budget = memoryBudgetOf(m_s.space.options());
    if (bytes > budget) {
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "search would need more than %.1f GB (%lld states at one outer point so far), "
                      "above the budget of %.1f GB",
                      bytes / 1e9, m_cells, budget / 1e9);
        throw SearchLimitExceeded{buf};
    }
}

// Whether a suffix [j, L) in k + 1 stages from position q needs more positions than the
// point has (docs/planner.md, "Positions needed").
// Only once the point's recurrence has grown past NestTuning::relaxAfterCells cells: on
// the many small points the relaxation would cost more than the cells it saves.
bool NestRecurrence::tooFewPositions(int k, int j, int q)
{
    if (m_cells <= m_s.tuning.relaxAfterCells ||
        q + m_s.positionBound.need(k, j, m_s.incumbent.best, m_rootWeight, m_s.cfg.positions - q) <= m_s.cfg.positions)
        return false;
    ++relaxationCuts;
    return true;
}


} // namespace nest

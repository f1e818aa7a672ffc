#include "IncumbentSeed.h"

#include "Pipeline.h"

#include <algorithm>
#include <cmath>

namespace nest {

// The widths' compute-cut pipelines, then the best width again, balanced (seed()'s
// comments in NestPlanner.cpp say why a seed never changes the plan returned).
void IncumbentSeed::seedPoint(const OuterConfig &cfg)
{
    int bestWidth = -1;
    double bestSeed = kSearchInf, bestSeedT = 0;
    for (int wIdx = 0; wIdx < m_s.nW; ++wIdx) {
        const int stages = std::min(m_s.space.maxStages(), cfg.positions / m_s.widths[wIdx]);
        if (stages < 1 || m_bounds.lowerBound(cfg, double(stages) * m_s.widths[wIdx]) >= m_s.incumbent.best)
            continue;
        cutByCompute(stages);
        const double t = seedValue(wIdx);
        if (t < bestSeed) {
            bestSeed = t;
            bestSeedT = m_seedT;
            bestWidth = wIdx;
        }
    }
    // The best width again, cut by the stages' real times (deep models: the first
    // stages stash more micro-batches and may need recomputation, so equal compute is
    // not equal time). With topK = 1 its value only bounds the search, just above it
    // (as planWithBound()): the plan returned is the one the search meets first at the
    // optimum, as without this seed, and this one only if nothing else reaches it.
    if (bestWidth < 0 ||
        !balancedCuts(bestWidth, std::min(m_s.space.maxStages(), cfg.positions / m_s.widths[bestWidth]), bestSeedT))
        return;
    if (m_s.keep > 1) {
        seedValue(bestWidth);
        return;
    }
    const double weight = pipelineWeight(m_s.cfg.numMicroBatches, static_cast<int>(m_seedChunks.size()));
    double maxT = 0, maxE = 0;
    if (!costSeedStages(bestWidth, weight) || !pickSeedOptions(bestWidth, maxT, maxE))
        return;
    const double t = iterationSeconds(weight, maxT, maxE);
    if (t < m_s.incumbent.best && std::nextafter(t, kSearchInf) < m_s.incumbent.best)
        m_s.incumbent.boundByBalancedSeed(t, m_s.cfg, m_seedChunks);
}


// seed(): the value of the pipeline m_seedChunks of width index wIdx (+inf when a stage
// has no feasible option), offered when it beats the incumbent.
double IncumbentSeed::seedValue(int wIdx)
{
    const int stages = static_cast<int>(m_seedChunks.size());
    const double weight = pipelineWeight(m_s.cfg.numMicroBatches, stages);
    double maxT = 0, maxE = 0;
    if (!costSeedStages(wIdx, weight) || !pickSeedOptions(wIdx, maxT, maxE))
        return kSearchInf;
    const double t = iterationSeconds(weight, maxT, maxE);
    if (t < m_s.incumbent.best)
        m_s.incumbent.offerStages(t, m_s.cfg, m_seedChunks);
    return t;
}

// seed(): the least per-micro-batch time of a feasible option of the stage [j, jEnd) as
// stage s of `stages` of width index wIdx at positions 0, w, 2w, ... (+inf: none fits).
double IncumbentSeed::fastestOption(int wIdx, int s, int stages, int j, int jEnd)
{
    const int w = m_s.widths[wIdx];
    const int q = s * w;
    const int blk = m_s.cache.block(m_s.ranges.rangeClass(j, jEnd), m_s.cache.placementClass(q, wIdx), j, jEnd, q, wIdx);
    const int v = s > 0 ? m_s.cache.linkId(q, wIdx, wIdx) : 0;
    const int u = s + 1 < stages ? m_s.cache.linkId(q + w, wIdx, wIdx) : 0;
    const OptEntry e = m_s.cache.entry(blk, j, jEnd, wIdx, stages - 1 - s, v, u);
    return e.count > 0 ? m_s.cache.optCost(e.begin).t : kSearchInf;  // t ascending
}

// seed(): cuts into m_seedChunks for `stages` stages of width index wIdx whose largest
// fastest-option time is (nearly) the least: bisection on that time `limit` below
// `high` (a time the compute cut reached), each stage filled greedily while its fastest
// feasible option stays within the limit. False when no limit up to `high` works.
bool IncumbentSeed::balancedCuts(int wIdx, int stages, double high)
{
    if (stages < 2 || !(high < kSearchInf))
        return false;
    std::vector<int> cuts, found;
    // The bisection reads the same values fill after fill: per (stage s, first layer j)
    // the running maxima of fastestOption(.., j, e) for e = j + 1, j + 2, ... as far as
    // a fill has read them, and per j the last stage's value. A fill then reads what
    // the loop "extend the stage while the next end stays within the limit" would, in
    // the same order, and takes the end from the maxima (the same ends, the same
    // cache entries made in the same order).
    m_cutColumn.assign(static_cast<size_t>(stages) * static_cast<size_t>(m_s.L), -1);
    m_cutLast.assign(static_cast<size_t>(m_s.L), -1.0);
    size_t columns = 0;
    auto column = [&](int s, int j) -> std::vector<double> & {
        int &c = m_cutColumn[static_cast<size_t>(s) * static_cast<size_t>(m_s.L) + static_cast<size_t>(j)];
        if (c < 0) {
            c = static_cast<int>(columns++);
            if (m_cutMaxima.size() < columns)
                m_cutMaxima.emplace_back();
            m_cutMaxima[static_cast<size_t>(c)].clear();
        }
        return m_cutMaxima[static_cast<size_t>(c)];
    };
    auto fill = [&](double limit) {
        cuts.clear();
        int j = 0;
        for (int s = 0; s + 1 < stages; ++s) {
            const int cap = m_s.L - (stages - 1 - s);  // the last end stage s may take
            std::vector<double> &maxima = column(s, j);  // maxima[i]: over ends j + 1 .. j + 1 + i
            if (maxima.empty())
                maxima.push_back(fastestOption(wIdx, s, stages, j, j + 1));
            if (maxima.front() > limit)
                return false;
            while (maxima.back() <= limit && j + static_cast<int>(maxima.size()) < cap) {
                const int e = j + 1 + static_cast<int>(maxima.size());
                maxima.push_back(std::max(maxima.back(), fastestOption(wIdx, s, stages, j, e)));
            }
            const int end = j + static_cast<int>(std::upper_bound(maxima.begin(), maxima.end(), limit) - maxima.begin());
            cuts.push_back(end);
            j = end;
        }
        double &last = m_cutLast[static_cast<size_t>(j)];
        if (last < 0)
            last = fastestOption(wIdx, stages - 1, stages, j, m_s.L);
        return last <= limit;
    };
    double low = 0;
    if (!fill(high))
        return false;
    found = cuts;
    for (int i = 0; i < 24 && high - low > 1e-6 * high; ++i) {
        m_s.poll();
        const double mid = 0.5 * (low + high);
        if (fill(mid)) {
            high = mid;
            found = cuts;
        } else {
            low = mid;
        }
    }
    m_seedChunks.clear();
    int first = 0;
    for (int s = 0; s < stages; ++s) {
        const int end = s + 1 < stages ? found[static_cast<size_t>(s)] : m_s.L;
        m_seedChunks.push_back({first, end, StageConfig()});
        first = end;
    }
    return true;
}

// seed(): `stages` non-empty stages cut where the compute (the bound's per-layer
// device-seconds, else the layer count) crosses k / stages of the total.
void IncumbentSeed::cutByCompute(int stages)
{
    m_seedChunks.clear();
    int first = 0;
    for (int k = 0; k < stages; ++k) {
        int end = m_s.L - (stages - 1 - k);
        if (k + 1 < stages && m_s.seedBound) {
            const double total = m_s.seedBound->suffixDeviceSeconds[0];
            const double target = total * (k + 1) / stages;
            int e = first + 1;
            while (e < end && total - m_s.seedBound->suffixDeviceSeconds[e] < target)
                ++e;
            end = e;
        } else if (k + 1 < stages) {
            end = std::min(end, first + std::max(1, (m_s.L - first) / (stages - k)));
        }
        m_seedChunks.push_back({first, end, StageConfig()});
        first = end;
    }
}

// seed(): every stage's feasible options into m_seedCosts, and m_seedT = the largest over
// stages of the t of each stage's option with the least weight * t + e. False when a
// stage has no feasible option.
bool IncumbentSeed::costSeedStages(int wIdx, double weight)
{
    const int w = m_s.widths[wIdx];
    const int stages = static_cast<int>(m_seedChunks.size());
    // Cleared, not reassigned: the lists keep their storage from one seed to the next.
    m_seedCosts.resize(static_cast<size_t>(stages));
    for (std::vector<OptCost> &list : m_seedCosts)
        list.clear();
    m_seedT = 0;
    for (int k = 0; k < stages; ++k) {
        m_s.poll();
        const StageChoice &ch = m_seedChunks[static_cast<size_t>(k)];
        const int q = k * w;
        const std::vector<StageConfig> &opts = m_s.cache.options(wIdx, ch.firstLayer, ch.endLayer);
        const int blk = m_s.cache.block(m_s.ranges.rangeClass(ch.firstLayer, ch.endLayer),
                                      m_s.cache.placementClass(q, wIdx), ch.firstLayer, ch.endLayer, q, wIdx);
        StageContext ctx = m_s.cache.context();
        ctx.stageIndex = k;
        ctx.numStages = stages;
        const int v = k > 0 ? m_s.cache.linkId(q, wIdx, wIdx) : 0;
        const int u = k + 1 < stages ? m_s.cache.linkId(q + w, wIdx, wIdx) : 0;
        if (v != 0)
            ctx.prev = m_s.cache.link(v);
        if (u != 0)
            ctx.next = m_s.cache.link(u);
        StagePlan &stage = m_seedStage;
        stage.firstLayer = ch.firstLayer;
        stage.endLayer = ch.endLayer;
        ctx.stage = &stage;
        // Each option's time and extra as finishStageCost() gives them here (kept per
        // block and links: StageCostCache::stageTimes()), its memory at this position.
        const StageCostCache::TimeRow times = m_s.cache.stageTimes(blk, v, u, ctx, opts);
        std::vector<OptCost> &list = m_seedCosts[static_cast<size_t>(k)];
        double bestValue = kSearchInf, bestT = 0;
        for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
            const StageCost &b = m_s.cache.base(blk, i);
            const double t = m_s.cache.timeOf(times, i), e = m_s.cache.extraOf(times, i);
            ++m_s.stats.stageCostCalls;
            if (!(stageMemoryTotal(b, ctx) <= b.memoryCapacity) || !std::isfinite(t) || !std::isfinite(e))
                continue;  // infeasible, as evaluate() says of a non-finite cost
            list.push_back({t, e, i});
            const double value = iterationSeconds(weight, t, e);
            if (value < bestValue) {
                bestValue = value;
                bestT = t;
            }
        }
        if (list.empty())
            return false;
        m_seedT = std::max(m_seedT, bestT);
    }
    return true;
}

// seed(): keeping max t at m_seedT, the least e per stage; the options go into
// m_seedChunks and their largest t and e into maxT, maxE.
bool IncumbentSeed::pickSeedOptions(int wIdx, double &maxT, double &maxE)
{
    for (size_t k = 0; k < m_seedChunks.size(); ++k) {
        StageChoice &ch = m_seedChunks[k];
        const OptCost *pick = nullptr;
        for (const OptCost &o : m_seedCosts[k])
            if (o.t <= m_seedT && (!pick || o.e < pick->e || (o.e == pick->e && o.t < pick->t)))
                pick = &o;
        if (!pick)  // cannot happen with finite costs; never dereference null
            return false;
        ch.option = m_s.cache.options(wIdx, ch.firstLayer, ch.endLayer)[static_cast<size_t>(pick->opt)];
        maxT = std::max(maxT, pick->t);
        maxE = std::max(maxE, pick->e);
    }
    return true;
}

} // namespace nest

#include "PositionBound.h"

#include "Pipeline.h"
#include "SearchRun.h"

#include <algorithm>
#include <cmath>

namespace nest {

PositionBound::PositionBound(StageCostCache &cache, int layers, int maxStages, SearchStats &stats)
    : m_cache(cache), m_L(layers), m_maxStages(maxStages), m_stats(stats)
{
}

void PositionBound::setConfig(const LayerComputeBound *compute)
{
    const OuterConfig &cfg = m_cache.config();
    m_compute = compute;
    m_m = cfg.numMicroBatches;
    m_nW = m_cache.widthCount();
    m_facts = &m_placements[{cfg.dp, static_cast<int>(cfg.layout)}];
    m_ready = false;
}

// The positions a plan of the current point can occupy at all: [0, S * widest) with at most
// maxStages stages (issue 24, "Width": on a wide cluster a replica has far more positions
// than any pipeline reaches, and the placement facts below are only needed where stages
// can be).
int PositionBound::reach() const
{
    const int widest = m_nW > 0 ? m_cache.widths()[static_cast<size_t>(m_nW) - 1] : 0;
    return static_cast<int>(std::min<long long>(m_cache.config().positions, static_cast<long long>(m_maxStages) * widest));
}

// The distinct placement classes of width index wIdx at every position of the current
// point where a stage of that width fits (below reach()), each with one position where it
// occurs. Kept per (dp, layout): the placements do not depend on the micro-batch or the
// schedule.
const std::vector<std::pair<int, int>> &PositionBound::classesOf(int wIdx)
{
    Placements &f = *m_facts;
    if (!f.classesKnown) {
        f.classes.assign(static_cast<size_t>(m_nW), {});
        const int positions = reach();
        for (int w = 0; w < m_nW; ++w) {
            std::vector<std::pair<int, int>> &list = f.classes[static_cast<size_t>(w)];
            for (int q = 0; q + m_cache.widths()[static_cast<size_t>(w)] <= positions; ++q) {
                const int cls = m_cache.placementClass(q, w);
                if (std::none_of(list.begin(), list.end(), [&](const auto &c) { return c.first == cls; }))
                    list.push_back({cls, q});
            }
        }
        f.classesKnown = true;
    }
    return f.classes[static_cast<size_t>(wIdx)];
}

// The link ids of every boundary of the current point, by the width of the stage after it
// (linksBefore) and before it (linksAfter). A boundary at q between widths wp and w needs
// q >= wp and q + w <= positions. Skipped on very wide points (linksKnown stays false).
void PositionBound::enumerateLinks()
{
    Placements &f = *m_facts;
    f.linksBefore.assign(static_cast<size_t>(m_nW), {});
    f.linksAfter.assign(static_cast<size_t>(m_nW), {});
    f.linksKnown = false;
    const int positions = reach();
    if (double(positions) * m_nW * m_nW > kMaxBoundaries)
        return;
    auto add = [](std::vector<int> &list, int id) {
        if (std::find(list.begin(), list.end(), id) == list.end())
            list.push_back(id);
    };
    const std::vector<int> &widths = m_cache.widths();
    for (int wp = 0; wp < m_nW; ++wp)
        for (int w = 0; w < m_nW; ++w)
            for (int q = widths[static_cast<size_t>(wp)]; q + widths[static_cast<size_t>(w)] <= positions; ++q) {
                const int id = m_cache.linkId(q, wp, w);
                add(f.linksBefore[static_cast<size_t>(w)], id);
                add(f.linksAfter[static_cast<size_t>(wp)], id);
            }
    f.linksKnown = true;
}

PositionBound::Summary PositionBound::makeSummary(int j, int jEnd, int wIdx)
{
    Summary s;
    const int range = m_cache.rangeClass(j, jEnd);
    const std::vector<StageConfig> &opts = m_cache.options(wIdx, j, jEnd);
    const std::vector<std::pair<int, int>> &classes = classesOf(wIdx);
    if (!m_facts->classesKnown || classes.empty())
        return s;
    if (m_facts->linksBefore.empty())
        enumerateLinks();
    StagePlan stage;
    stage.firstLayer = j;
    stage.endLayer = jEnd;
    StageContext ctx = m_cache.context();
    ctx.stage = &stage;
    ctx.stageIndex = 0;
    // The cost of option i of block blk as the first of `stages` stages between the links
    // prev and next (0: none).
    auto cost = [&](int blk, int i, int stages, int prev, int next) {
        StageCost c = m_cache.base(blk, i);
        stage.config() = opts[static_cast<size_t>(i)];
        ctx.numStages = stages;
        ctx.prev.reset();
        ctx.next.reset();
        if (prev != 0)
            ctx.prev = m_cache.link(prev);
        if (next != 0)
            ctx.next = m_cache.link(next);
        finishStageCost(c, ctx);
        ++m_stats.stageCostCalls;
        return c;
    };
    auto finite = [](const StageCost &c) {
        return std::isfinite(c.perMicroBatch) && std::isfinite(c.iterationExtra) && std::isfinite(c.memoryTotal);
    };
    // The p2p of a stage depends on its links, its width and its layers only: the links
    // that give the least before (a stage after the first) and after (one before the last).
    const Placements &f = *m_facts;
    const int probe = m_cache.block(range, classes.front().first, j, jEnd, classes.front().second, wIdx);
    auto cheapest = [&](const std::vector<int> &links, bool before) {
        int pick = 0;
        double least = std::numeric_limits<double>::infinity();
        for (int id : links) {
            const StageCost c = cost(probe, 0, 2, before ? id : 0, before ? 0 : id);
            const double p2p = before ? c.p2pBackward : c.p2pForward;
            if (p2p < least) {
                least = p2p;
                pick = id;
            }
        }
        return pick;
    };
    const bool known = f.linksKnown;
    const std::vector<int> &before = known ? f.linksBefore[static_cast<size_t>(wIdx)] : std::vector<int>();
    const std::vector<int> &after = known ? f.linksAfter[static_cast<size_t>(wIdx)] : std::vector<int>();
    // A stage after the first needs a boundary before it; one before the last, after it.
    if (j > 0 && known && before.empty())
        return s;
    const int prev = j > 0 && known ? cheapest(before, true) : 0;
    const bool canHaveNext = !known || !after.empty();
    const int next = known && canHaveNext ? cheapest(after, false) : 0;
    for (const auto &[cls, q] : classes) {
        const int blk = m_cache.block(range, cls, j, jEnd, q, wIdx);
        for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
            const StageCost alone = cost(blk, i, 1, prev, 0);
            if (!finite(alone) || !alone.fitsMemory)
                continue;  // the stash of one micro-batch is the least any stage holds
            const StageCost piped = m_maxStages > 1 ? cost(blk, i, 2, prev, next) : alone;
            if (!finite(piped))
                continue;
            // The most stages (stash) it fits with: memory never falls as the stash grows.
            int lo = 1, hi = m_maxStages;
            while (lo < hi) {
                const int mid = lo + (hi - lo + 1) / 2;
                const StageCost c = cost(blk, i, mid, 0, 0);
                if (finite(c) && c.fitsMemory)
                    lo = mid;
                else
                    hi = mid - 1;
            }
            // The extra may differ between a single stage and a pipeline (gradient sync
            // after the flush): the lesser.
            const double inner = canHaveNext && m_maxStages > 1 ? piped.perMicroBatch
                                                                : std::numeric_limits<double>::infinity();
            s.options.push_back({alone.perMicroBatch, inner, std::min(alone.iterationExtra, piped.iterationExtra), lo});
            s.memoryStages = std::max(s.memoryStages, lo - 1);
        }
    }
    // Only options no other beats in every respect matter.
    std::vector<OptionBound> kept;
    for (const OptionBound &o : s.options) {
        const bool dominated = std::any_of(s.options.begin(), s.options.end(), [&](const OptionBound &x) {
            const bool noWorse = x.last <= o.last && x.inner <= o.inner && x.e <= o.e && x.maxStash >= o.maxStash;
            const bool better = x.last < o.last || x.inner < o.inner || x.e < o.e || x.maxStash > o.maxStash;
            return &x != &o && noWorse && (better || &x < &o);
        });
        if (!dominated)
            kept.push_back(o);
    }
    s.options = std::move(kept);
    return s;
}

int PositionBound::summaryIndex(int j, int jEnd, int wIdx)
{
    const FlatKey key{static_cast<uint64_t>(m_cache.rangeClass(j, jEnd)), static_cast<uint64_t>(wIdx)};
    int idx = -1;
    if (!m_summaryIdx.find(key, idx)) {
        idx = static_cast<int>(m_summaries.size());
        m_summaries.push_back(makeSummary(j, jEnd, wIdx));
        m_summaryIdx.insert(key, idx);
    }
    return idx;
}

// The most stages after this one (k) for which some option fits with a stash of k + 1 and
// has iterationSeconds(pipelineWeight(m, k + 1), t, e) < best; -1 when none.
double PositionBound::weightOf(int k) const
{
    return std::max(pipelineWeight(m_m, k + 1), m_weight);
}

int PositionBound::stagesAfterAllowed(Summary &s, double best) const
{
    if (s.stamp == best && s.stampWeight == m_weight)
        return s.kStages;
    int most = -1;
    for (const OptionBound &o : s.options) {
        // As the last stage (k = 0) ...
        if (iterationSeconds(weightOf(0), o.last, o.e) < best)
            most = std::max(most, 0);
        // ... and before others: the weight grows with k, so the largest k in
        // [1, maxStash - 1] below best.
        int lo = 0, hi = o.maxStash - 1;
        while (lo < hi) {
            const int mid = lo + (hi - lo + 1) / 2;
            if (iterationSeconds(weightOf(mid), o.inner, o.e) < best)
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo >= 1)
            most = std::max(most, lo);
    }
    s.stamp = best;
    s.stampWeight = m_weight;
    s.kStages = most;
    return most;
}

// The narrowest width of a stage [j, jEnd) with k stages after it that passes the test
// (kNone: none); anyFits: some option may fit in memory with that stash (false only when
// no option of any width does).
int PositionBound::narrowest(int j, int jEnd, int k, double best, bool &anyFits)
{
    anyFits = false;
    StageRow &row = m_rows[static_cast<size_t>(j)];
    const size_t base = static_cast<size_t>(jEnd - j - 1) * m_nW;
    if (row.summary.size() < base + m_nW) {
        row.summary.resize(base + m_nW, -1);
        row.memoryStages.resize(base + m_nW, -1);
        row.kStages.resize(base + m_nW, -2);
    }
    if (row.stamp != best || row.stampWeight != m_weight) {
        std::fill(row.kStages.begin(), row.kStages.end(), -2);
        row.stamp = best;
        row.stampWeight = m_weight;
    }
    const double weight = weightOf(k);
    for (int w = 0; w < m_nW; ++w) {
        const double width = m_cache.widths()[static_cast<size_t>(w)];
        if (m_compute && weight * (m_compute->suffixDeviceSeconds[j] - m_compute->suffixDeviceSeconds[jEnd]) / width >= best) {
            anyFits = true;  // not known: compute alone rules this width out
            continue;
        }
        const size_t at = base + static_cast<size_t>(w);
        if (row.kStages[at] == -2) {
            if (row.summary[at] < 0)
                row.summary[at] = summaryIndex(j, jEnd, w);
            Summary &s = m_summaries[static_cast<size_t>(row.summary[at])];
            row.memoryStages[at] = s.memoryStages;
            row.kStages[at] = stagesAfterAllowed(s, best);
        }
        anyFits = anyFits || row.memoryStages[at] >= k;
        if (row.kStages[at] >= k)
            return static_cast<int>(width);
    }
    return kNone;
}

int PositionBound::need(int k, int j, double best, double weight, int limit)
{
    if (!(best < std::numeric_limits<double>::infinity()))
        return 0;  // no incumbent: the relaxation would cost every stage of every length
    if (!m_ready) {
        // Allocated on first use: most outer points are skipped before their recurrence.
        m_summaryIdx.clear();
        m_summaries.clear();
        m_rows.assign(static_cast<size_t>(m_L), {});
        m_candidates.resize(static_cast<size_t>(m_maxStages));
        m_needStamp = -1;
        m_ready = true;
    }
    // A table for an incumbent at least `best` and a weight at most `weight` asks less of
    // every stage, so its bound holds here too: recomputed only when it does not decide.
    const bool valid = m_needStamp >= best && m_needWeight <= weight;
    if (valid) {
        const int bound = solve(k, j, m_needStamp);
        if (bound > limit || (m_needStamp == best && m_needWeight == weight))
            return bound;
    }
    m_need.assign(static_cast<size_t>(m_maxStages) * (m_L + 1), -1);
    m_needStamp = best;
    m_needWeight = weight;
    m_weight = weight;
    return solve(k, j, best);
}

// Compute alone: k + 1 stages hold at most (k + 1) * widest devices, and no stage is
// faster than its slowest layer.
bool PositionBound::tooHeavy(int k, int j, double best) const
{
    const double widest = m_cache.widths().back();
    return m_compute && weightOf(k) * std::max(m_compute->suffixDeviceSeconds[j] / ((k + 1) * widest),
                                               m_compute->suffixSlowest[j]) >= best;
}

// Positions of any suffix [j, L) in k + 1 stages that passes the tests: at least one per
// stage, and each stage's width exceeds weight * its layers' device-seconds / best (its
// t >= device-seconds / width and weight * t < best), with weight >= weightOf(0).
int PositionBound::restAtLeast(int k, int j, double best) const
{
    const int perStage = (k + 1) * m_cache.widths().front();
    if (!m_compute)
        return perStage;
    const double devices = weightOf(0) * m_compute->suffixDeviceSeconds[j] / best * (1 - 1e-9);
    return std::max(perStage, devices < double(kNone) ? static_cast<int>(std::floor(devices)) : kNone);
}

int PositionBound::solve(int k, int j, double best)
{
    if (k < 0)
        return j == m_L ? 0 : kNone;
    if (m_L - j < k + 1)
        return kNone;
    int &memo = m_need[static_cast<size_t>(k) * (m_L + 1) + j];
    if (memo >= 0)
        return memo;
    if (tooHeavy(k, j, best)) {
        memo = kNone;
        return memo;
    }
    // Values above the point's positions decide the same as any larger one: the search
    // stops at positions + 1 ("more than there are").
    const int beyond = m_cache.config().positions + 1;
    if (restAtLeast(k, j, best) >= beyond) {
        memo = beyond;
        return memo;
    }
    const double widest = m_cache.widths().back();
    int result = beyond;
    bool anyFits = false;
    if (k == 0) {
        result = narrowest(j, m_L, 0, best, anyFits);
    } else {
        // The first stage's candidates (end, narrowest width), scanned by end ascending so
        // that the two monotone cuts end the scan ...
        const double weight = weightOf(k);
        std::vector<std::pair<int, int>> &candidates = m_candidates[static_cast<size_t>(k)];
        candidates.clear();
        for (int end = j + 1; end <= m_L - k; ++end) {
            // Compute alone (t >= device-seconds / width) too slow on the widest width: so
            // is every longer stage.
            if (m_compute &&
                weight * (m_compute->suffixDeviceSeconds[j] - m_compute->suffixDeviceSeconds[end]) / widest >= best)
                break;
            if (tooHeavy(k - 1, end, best))
                continue;  // the rest cannot be fast enough in k stages
            const int width = narrowest(j, end, k, best, anyFits);
            if (!anyFits)
                break;  // more layers never need less memory (docs/planner.md)
            if (width != kNone)
                candidates.push_back({end, width});
        }
        // ... then by end descending: the rest needs at least restAtLeast(end) positions,
        // which only grows as the first stage shrinks, so once that and the narrowest width
        // cannot improve on the best found, no shorter first stage can (branch and bound:
        // the value of this entry stays exact).
        const int narrowestWidth = m_cache.widths().front();
        for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
            if (narrowestWidth + restAtLeast(k - 1, it->first, best) >= result)
                break;
            const int rest = solve(k - 1, it->first, best);
            if (rest != kNone)
                result = std::min(result, it->second + rest);
        }
    }
    result = std::min(result, beyond);
    memo = result;
    return result;
}

} // namespace nest

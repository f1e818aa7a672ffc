#include "PositionBound.h"

#include "FrameworkProfile.h"
#include "Pipeline.h"
#include "SearchRun.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace nest {

namespace {

// Whether an option whose base cost is `b` fits in memory as the first of `stages` stages of
// the point `ctx` describes: finite and within the capacity, as finishStageCost() decides
// fitsMemory. stageMemoryTotal() reads no stage, so ctx.stage may be anything.
bool fitsAsFirstOf(const StageCost &b, StageContext &ctx, int stages)
{
    ctx.numStages = stages;
    const double total = stageMemoryTotal(b, ctx);
    return std::isfinite(total) && total <= b.memoryCapacity;
}

// The recurrence's compute test for a stage with `deviceSeconds` of compute at `width`
// devices in a pipeline of weight `weight`: weight * deviceSeconds / width below `best`.
// computeStages() and the walk's shortcuts all ask it, in this one expression.
bool computePasses(double weight, double deviceSeconds, double width, double best)
{
    return !(weight * deviceSeconds / width >= best);
}

} // namespace

PeriodicRanges::PeriodicRanges(StageCostCache &cache, const ModelProfile &model)
    : m_cache(cache), m_L(model.layerCount())
{
    // The layer types RangeClasses' classes are made of.
    const std::vector<int> t = layerTypes(model);
    // The longest stretch [a, b) with t[i] == t[i + p] for a <= i < b - p, over small periods
    // (ties: the smallest period).
    constexpr int kMaxPeriod = 16;
    for (int p = 1; p <= kMaxPeriod && 2 * p <= m_L; ++p) {
        int run = 0;
        for (int i = m_L - p - 1; i >= 0; --i) {
            run = t[static_cast<size_t>(i)] == t[static_cast<size_t>(i + p)] ? run + 1 : 0;
            const int length = run + p;  // [i, i + run + p)
            if (run > 0 && length > m_end - m_begin && length >= 2 * p) {
                m_period = p;
                m_begin = i;
                m_end = i + length;
            }
        }
    }
    if (m_period > 0)
        m_classes.assign(static_cast<size_t>(m_period) * (m_L + 1), -1);
}

int PeriodicRanges::rangeClass(int j, int e)
{
    const int at = slot(j, e);
    if (at < 0)
        return m_cache.rangeClass(j, e);
    int &c = m_classes[static_cast<size_t>(at)];
    if (c < 0)
        c = m_cache.rangeClass(j, e);
    return c;
}

void SettledRangeMin::reset(size_t n, int none)
{
    m_n = n;
    m_levels = static_cast<int>(std::bit_width(n));
    m_none = none;
    m_table.assign(static_cast<size_t>(m_levels) * n, none);
}

void SettledRangeMin::settle(size_t e, int v)
{
    m_table[e] = v;
    for (int l = 1; l < m_levels; ++l) {
        const size_t half = size_t(1) << (l - 1);
        const int *below = &m_table[static_cast<size_t>(l - 1) * m_n];
        m_table[static_cast<size_t>(l) * m_n + e] = std::min(below[e], e + half < m_n ? below[e + half] : m_none);
    }
}

PositionBound::PositionBound(StageCostCache &cache, PeriodicRanges &ranges, int layers, int maxStages,
                             SearchStats &stats, const NestTuning &tuning)
    : m_cache(cache), m_ranges(ranges), m_L(layers), m_maxStages(maxStages), m_stats(stats),
      m_rootBoundAfterRows(tuning.rootBoundAfterRows), m_rootBoundCuts(tuning.rootBoundCuts),
      m_skipKnownFailures(tuning.skipKnownFailures), m_skippedEnds(tuning.skippedEnds)
{
}

void PositionBound::setConfig(const LayerComputeBound *compute)
{
    const OuterConfig &cfg = m_cache.config();
    m_compute = compute;
    m_m = cfg.numMicroBatches;
    m_nW = m_cache.widthCount();
    m_facts = &m_placements[{cfg.dp, static_cast<int>(cfg.layout)}];
    // The floor's argument (makeSummary()) needs one device type, a step overhead and a
    // contention that never make a time fall as a collective's cost rises.
    const double contention = m_cache.context().options.profile().contention;
    m_floor = m_cache.topology().deviceTypes.size() == 1 && m_cache.context().options.stepOverhead >= 0 &&
              contention >= 0 && contention <= 1;
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
    const int range = m_ranges.rangeClass(j, jEnd);
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
    // The cost of option i whose base is `base` as the first of `stages` stages between the
    // links prev and next (0: none).
    auto cost = [&](const StageCost &base, int i, int stages, int prev, int next) {
        StageCost c = base;
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
    const std::vector<StageCost> floorBases = basesOnFloor(range, j, jEnd, wIdx, opts, classes);
    const StageCost &probe =
        m_floor ? floorBases.front()
                : m_cache.base(m_cache.block(range, classes.front().first, j, jEnd, classes.front().second, wIdx), 0);
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
    const size_t passes = m_floor ? 1 : classes.size();
    for (size_t pass = 0; pass < passes; ++pass) {
        const StageCost *bases =
            m_floor ? floorBases.data()
                    : &m_cache.base(m_cache.block(range, classes[pass].first, j, jEnd, classes[pass].second, wIdx), 0);
        for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
            const StageCost alone = cost(bases[i], i, 1, prev, 0);
            if (!finite(alone) || !alone.fitsMemory)
                continue;  // the stash of one micro-batch is the least any stage holds
            const StageCost piped = m_maxStages > 1 ? cost(bases[i], i, 2, prev, next) : alone;
            if (!finite(piped))
                continue;
            // The most stages (stash) it fits with.
            const int lo = mostStagesThatFit(bases[i], alone, ctx);
            // The extra may differ between a single stage and a pipeline (gradient sync
            // after the flush): the lesser.
            const double inner = canHaveNext && m_maxStages > 1 ? piped.perMicroBatch
                                                                : std::numeric_limits<double>::infinity();
            // The floor's times are at most each class's in exact arithmetic; rounding in the
            // TP overlap's split could put one a few ulps above, so they enter a little smaller.
            const double shade = m_floor ? 1 - kFloorShade : 1;
            s.options.push_back({alone.perMicroBatch * shade, inner * shade,
                                 std::min(alone.iterationExtra, piped.iterationExtra) * shade, lo});
            s.memoryStages = std::max(s.memoryStages, lo - 1);
        }
    }
    // Only options no other beats in every respect matter (of equal ones, one). Sorted so
    // that an option comes after every option that beats or equals it (lexicographic on
    // last, inner, e, -maxStash: one no worse in every respect is no greater there), an
    // option is kept unless a kept one is no worse in every respect: what beats it is
    // either kept or beaten by a kept one, which then beats it too. The kept set is the
    // same as comparing every pair, and stagesAfterAllowed() reads it in any order.
    keepUndominated(s.options);
    return s;
}

void PositionBound::keepUndominated(std::vector<OptionBound> &options)
{
    std::sort(options.begin(), options.end(), [](const OptionBound &a, const OptionBound &b) {
        return std::tie(a.last, a.inner, a.e, b.maxStash) < std::tie(b.last, b.inner, b.e, a.maxStash);
    });
    std::vector<OptionBound> kept;
    for (const OptionBound &o : options) {
        const bool dominated = std::any_of(kept.begin(), kept.end(), [&](const OptionBound &x) {
            return x.last <= o.last && x.inner <= o.inner && x.e <= o.e && x.maxStash >= o.maxStash;
        });
        if (!dominated)
            kept.push_back(o);
    }
    options = std::move(kept);
}

// With m_floor, one pass over the bases of the floor of the width's placement classes
// (StageCostCache::floorGeometry()) instead of one pass per class (docs/planner.md,
// "Summaries on the floor of the placement classes"). With one device type an option's
// memory, hence its most stages, is the same at every class (the capacity is the
// type's, the sums the layers'). Its time on the floor is
// at most its time at any class, and so is its time plus extra: every collective's cost
// only adds time (sums of non-negative terms, overlapped() with a contention in [0, 1],
// the TP overlap's split, a non-negative step overhead), except that the gradient sync and
// ZeRO-2/3's traffic hide behind the backward and the recompute pass, whose collectives
// are cheaper on the floor; what that uncovers is at most the recompute time the floor
// saves (ZeRO 0/1: in the extra; ZeRO 2/3: in the time, at most hide times it). So for
// every weight >= 1 (every pipeline's), weight * time + extra on the floor is at most its
// value at any class, the p2p being the same: stagesAfterAllowed() is at least the
// per-class summary's, and the relaxation still bounds every suffix that passes its test.
std::vector<StageCost> PositionBound::basesOnFloor(int range, int j, int jEnd, int wIdx,
                                                const std::vector<StageConfig> &opts,
                                                const std::vector<std::pair<int, int>> &classes)
{
    return m_floor ? m_cache.basesOn(range, j, jEnd, wIdx, floorGeometries(wIdx, opts, classes))
                   : std::vector<StageCost>();
}

// The most stages (stash) option `base` (costed `alone` as a stage by itself) fits with as
// the first stage: memory never falls as the stash grows, so the largest that fits is found
// by bisection. Memory is affine in the stashed micro-batches, so one stage's cost predicts
// it: the guess and the one after it are costed first, and where the prediction holds (the
// usual case) they settle it in two calls instead of log2(maxStages). The bisection's
// invariants make the answer the same whatever the guess.
// fits(stages) is what the full cost of the option as the first of `stages` stages without
// links says: finite and fitsMemory. Its time and extra are finite here (makeSummary() has
// checked alone and piped): without links its time is alone's without the p2p (non-negative
// terms of a finite sum), and its extra is alone's (one stage) or piped's (more), both
// finite. So only its memory total decides, the one finishStageCost() stores.
int PositionBound::mostStagesThatFit(const StageCost &base, const StageCost &alone, StageContext &ctx) const
{
    int lo = 1, hi = m_maxStages;
    auto fits = [&](int stages) { return fitsAsFirstOf(base, ctx, stages); };
    if (hi > 1) {
        double guess = hi;
        if (alone.stashPerMicroBatch > 0) {
            const double room = alone.memoryCapacity - (alone.memoryTotal - alone.stash);
            guess = room / alone.stashPerMicroBatch + (m_cache.context().options.artifactMemory ? 1 : 0);
        }
        const int g = guess >= hi ? hi : guess >= 1 ? static_cast<int>(guess) : 1;
        if (fits(g)) {
            lo = g;
            if (g < hi) {
                if (fits(g + 1))
                    lo = g + 1;
                else
                    hi = g;
            }
        } else {
            hi = g - 1;
        }
    }
    while (lo < hi) {
        const int mid = lo + (hi - lo + 1) / 2;
        if (fits(mid))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

// The floor geometry of every option of `opts` (a list of the current point's) at width index
// wIdx over `classes` (classesOf(wIdx)), made once per point and list.
const std::vector<StageGeometry> &PositionBound::floorGeometries(int wIdx, const std::vector<StageConfig> &opts,
                                                                const std::vector<std::pair<int, int>> &classes)
{
    for (const FloorGeometries &f : m_floorGeometries)
        if (f.list == &opts && f.width == wIdx)
            return f.geometries;
    FloorGeometries f{&opts, wIdx, {}};
    f.geometries.reserve(opts.size());
    for (const StageConfig &o : opts)
        f.geometries.push_back(m_cache.floorGeometry(wIdx, o, classes));
    m_floorGeometries.push_back(std::move(f));
    return m_floorGeometries.back().geometries;
}

int PositionBound::summaryIndex(int j, int jEnd, int wIdx)
{
    // A range of the periodic stretch by its slot, which fixes its class (so the same
    // summary as the keyed lookup below), without the class or the hash.
    const int at = m_ranges.slot(j, jEnd);
    if (at >= 0) {
        int &known = m_summaryAt[static_cast<size_t>(at) * m_nW + static_cast<size_t>(wIdx)];
        if (known < 0)
            known = summaryByClass(j, jEnd, wIdx);
        return known;
    }
    return summaryByClass(j, jEnd, wIdx);
}

int PositionBound::summaryByClass(int j, int jEnd, int wIdx)
{
    const FlatKey key{static_cast<uint64_t>(m_ranges.rangeClass(j, jEnd)), static_cast<uint64_t>(wIdx)};
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

// The most stages after a stage whose layers have `deviceSeconds` of compute at width
// `width` for which weightOf(k) * deviceSeconds / width stays below `best` (the compute
// test of the recurrence, the same expression): -1 when none, m_maxStages without bounds.
// weightOf() never falls as k grows, so the passing k form a prefix: bisection.
int PositionBound::computeStages(double deviceSeconds, double width, double best) const
{
    if (!m_compute)
        return m_maxStages;
    auto passes = [&](int k) { return computePasses(weightOf(k), deviceSeconds, width, best); };
    if (!passes(0))
        return -1;
    if (passes(m_maxStages - 1))
        return m_maxStages - 1;
    // weightOf(k) = max(m + k, weight): start at the k where m + k reaches best * width /
    // deviceSeconds, then step to the exact boundary of `passes` (a few steps at most).
    const double reach = best * width / deviceSeconds - m_m;
    int k = reach < 0 ? 0 : reach >= m_maxStages - 1 ? m_maxStages - 2 : static_cast<int>(reach);
    while (k > 0 && !passes(k))
        --k;
    while (k + 1 < m_maxStages - 1 && passes(k + 1))
        ++k;
    return k;
}

// The most stages k after a stage [j, jEnd) of width index wIdx for which it passes the test
// (compute, memory with the stash of k stages after it, weightOf(k) * t + e < best); -1:
// none. A stage before others (jEnd < L) needs k >= 1; `open` says whether that stage or a
// longer one could pass for some k >= 1: false when compute alone rules out k = 1 (so every
// k >= 1, and every longer stage: compute only grows with the layers) or no option fits
// with a stash of two stages (so no longer stage fits either: memory never falls with more
// layers, docs/planner.md, "Monotonicity in j'").
int PositionBound::stagesAllowed(int j, int jEnd, int wIdx, double best, bool &open, int known, double compute)
{
    open = false;
    const double width = m_cache.widths()[static_cast<size_t>(wIdx)];
    const int byCompute = computeStages(compute, width, best);
    if (byCompute < (jEnd < m_L ? 1 : 0) || byCompute <= known)
        return -1;  // nothing passes, or no more than `known` (then `open` is not asked)
    Summary &s = m_summaries[static_cast<size_t>(summaryIndex(j, jEnd, wIdx))];
    open = s.memoryStages >= 1;
    return std::min(byCompute, stagesAfterAllowed(s, best));
}

// Whether some stage [j, e') with e' >= e and a stage after it could pass for some k >= 1
// (see stagesAllowed(); widest first, any one decides).
//
// With one device type the test is compute and fitsWithTwo() instead of the summary: that is
// true wherever the summary's memoryStages >= 1 is (it drops only the summary's further
// conditions, finite times and a link before the stage), and it is monotone in e like open
// (compute and memory only grow with the layers). So the first end it finds not open is at
// or after open's: the walk then starts no lower, and an end between the two passes for no
// k >= 1 (it would need memoryStages >= 1), so every row is the same. Most of the ends the
// bisection probes are never walked, and their summaries cost every placement class.
bool PositionBound::openAt(int j, int e, double best, double compute)
{
    const bool oneType = m_cache.topology().deviceTypes.size() == 1;
    for (int w = m_nW - 1; w >= 0; --w) {
        if (oneType) {
            const double width = m_cache.widths()[static_cast<size_t>(w)];
            if (computeStages(compute, width, best) >= 1 && fitsWithTwo(j, e, w))
                return true;
            continue;
        }
        bool open = false;
        stagesAllowed(j, e, w, best, open, -2, compute);
        if (open)
            return true;
    }
    return false;
}

// Whether some option of the stage [j, jEnd) at width index wIdx fits in memory as the first
// of two stages (the stash makeSummary()'s bisection tests for two). With one device type the
// memory does not depend on the placement class (the capacity is the type's, the sums are
// the layers'), so one class's block tells. Kept per (range class, width index).
bool PositionBound::fitsWithTwo(int j, int jEnd, int wIdx)
{
    if (m_maxStages < 2)
        return false;
    const int range = m_ranges.rangeClass(j, jEnd);
    const FlatKey key{static_cast<uint64_t>(range), static_cast<uint64_t>(wIdx)};
    int known = -1;
    if (m_fitsWithTwo.find(key, known))
        return known != 0;
    bool fits = false;
    const std::vector<std::pair<int, int>> &classes = classesOf(wIdx);
    if (m_facts->classesKnown && !classes.empty()) {
        const int blk = m_cache.block(range, classes.front().first, j, jEnd, classes.front().second, wIdx);
        StageContext ctx = m_cache.context();
        ctx.stageIndex = 0;
        const int options = static_cast<int>(m_cache.options(wIdx, j, jEnd).size());
        for (int i = 0; i < options && !fits; ++i)
            fits = fitsAsFirstOf(m_cache.base(blk, i), ctx, 2);
    }
    m_fitsWithTwo.insert(key, fits ? 1 : 0);
    return fits;
}

// A new table starts empty: the ends of each first layer j are found when a row first needs
// them (docs/planner.md, "The table's rows").
void PositionBound::resetTable()
{
    m_stages.clear();
    m_failDown.clear();
    m_start.assign(static_cast<size_t>(m_L), -1);
    m_last.assign(static_cast<size_t>(m_L) * m_nW, -1);
    m_rowsBuilt = 0;
    m_twoOrMore.clear();
    m_count.assign(static_cast<size_t>(m_L), -1);
    m_longestBuilt = false;
    m_lambda = -1;
    m_lambdaSums.clear();
}

// The largest idx in [-1, top] whose stage [j, j + 1 + idx) passes the compute test at
// `width` for `weight` (computePasses(); -1: none), by bisection: the test only fails more as
// the stage grows. Without compute bounds, top.
int PositionBound::computeCap(int j, int top, double width, double weight, double best) const
{
    if (!m_compute || top < 0)
        return top;
    auto passes = [&](int idx) { return computePasses(weight, rangeDeviceSeconds(j, j + 1 + idx), width, best); };
    if (passes(top))
        return top;
    int lo = -1, hi = top;  // !passes(hi); passes(lo) or lo == -1
    while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        if (passes(mid))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// The ends of first layer j: [j + 1, j + count] where count + j + 1 is the first end that is
// not open. Open is monotone in the end (true, then false: compute and memory only grow with
// the layers), so the first end that is not open is found by bisection; every end before it
// gets a slot for its stages per width (-3: not yet known), and each (j, w) starts at the
// last of them.
void PositionBound::prepareFirstLayer(int j, double best)
{
    // First the count of the last first layer of the same phase (of the model's periodic
    // stretch; any other j's is as good a guess): open at its last end and not at the one
    // after it (or that one is L) settles it, open being monotone, in two tests.
    const size_t phase = m_ranges.period() > 0 ? static_cast<size_t>(j % m_ranges.period()) : 0;
    if (m_countGuess.size() <= phase)
        m_countGuess.resize(phase + 1, -1);
    int count = -1;
    if (const int g = m_countGuess[phase]; g >= 0 && j + 1 + g <= m_L) {
        const int f = j + 1 + g;  // the first end that is not open, if the guess holds
        if ((g == 0 || openAt(j, f - 1, best)) && (f == m_L || !openAt(j, f, best)))
            count = g;
    }
    if (count < 0) {
        // Galloping over the stage length, then bisection: the lengths probed depend on
        // where the answer lies, not on j, so first layers in a periodic stretch share
        // their summaries.
        int lo = j + 1, hi = m_L;  // the first end that is not open is in [lo, hi] (m_L: none)
        for (int length = 1; j + length < m_L; length *= 2) {
            if (!openAt(j, j + length, best)) {
                hi = j + length;
                break;
            }
            lo = j + length + 1;
        }
        while (lo < hi) {
            const int mid = lo + (hi - lo) / 2;
            if (openAt(j, mid, best))
                lo = mid + 1;
            else
                hi = mid;
        }
        count = lo - (j + 1);
    }
    m_countGuess[phase] = count;
    m_count[static_cast<size_t>(j)] = count;
    m_start[static_cast<size_t>(j)] = static_cast<int>(m_stages.size());
    m_stages.resize(m_stages.size() + static_cast<size_t>(count) * m_nW, -3);
    // Each width's walk starts at the last end where compute alone allows a stage after the
    // stage at that width (computeStages()'s test for k = 1, term for term; it only fails
    // more as the end grows): above it no width up to w passes any row k >= 1.
    const double weightOne = weightOf(1);
    int top = count - 1;
    for (int w = m_nW - 1; w >= 0; --w) {
        top = computeCap(j, top, m_cache.widths()[static_cast<size_t>(w)], weightOne, best);
        m_last[static_cast<size_t>(j) * m_nW + w] = top;
    }
}

// The most stages after the stage [j, j + 1 + idx) at a width at most index w (-1: none),
// computed on first use.
int PositionBound::stagesUpTo(int j, int idx, int w, double best, int k)
{
    // slot[x]: the most stages at a width at most index x, once known (-3: not yet); each
    // width's own value is computed on first use.
    int *slot = &m_stages[static_cast<size_t>(m_start[static_cast<size_t>(j)]) + static_cast<size_t>(idx) * m_nW];
    if (slot[w] != -3)
        return slot[w];
    int most = -1;
    const int jEnd = j + 1 + idx;
    const double weightK = weightOf(k);
    for (int x = 0; x <= w; ++x) {
        if (slot[x] == -3) {
            // Where compute alone allows fewer than k stages after the stage at width x
            // (computeStages()'s test for k, term for term), x adds nothing this row or any
            // later one (k only grows within a table), so its value is not computed.
            bool open = false;
            slot[x] = m_compute && !computePasses(weightK, rangeDeviceSeconds(j, jEnd),
                                                  m_cache.widths()[static_cast<size_t>(x)], best)
                          ? most
                          : std::max(most, stagesAllowed(j, jEnd, x, best, open, -2));
        }
        most = slot[x];
    }
    return most;
}

// The least over widths w of `result` and w + restAt(idx) at the largest end j + 1 + idx
// whose stage [j, j + 1 + idx) passes for k stages after it at a width at most w, where
// restAt(idx) is a lower bound on the rest from that end that never falls as idx falls (a
// prefix minimum). Each width walks down from its last end; an end's stages are computed
// only when the walk reaches it. Once w + restAt at the walk's end does not beat the value so
// far, no end below it does either: the walk stops there (idx stays at or above the largest
// end that passes, which is all a later walk needs, k only growing), and the value is
// unchanged. Ends that leave fewer than k layers pass for no row from this one on.
//
// In the model's periodic stretch, after the first end, the walk asks the summaries of the
// phase directly (passesInStretch()) and steps over the ends whose summary, at every width
// up to w whose compute allows the stage, is known to fail for k (openLength(); a summary is
// that of the stage's phase and length, so what one first layer learns serves every other of
// its phase; docs/planner.md, "Known failures of the periodic stretch"): only ends that
// fail at every width are passed over, so the walk stops at the same end that passes as one
// step at a time, or
// (where it stops because w + restAt cannot beat `result`) at one no higher, where it cannot
// beat it either, so the value is the same. The compute allows the stage at width x up to an
// end cap[x] (computePasses() for k, monotone in the end), found by bisection once per walk.
template <typename RestAt>
int PositionBound::walkEnds(int j, int k, int result, double best, RestAt restAt)
{
    if (m_start[static_cast<size_t>(j)] < 0)
        prepareFirstLayer(j, best);
    int *last = &m_last[static_cast<size_t>(j) * m_nW];
    const int *slots = &m_stages[static_cast<size_t>(m_start[static_cast<size_t>(j)])];
    const int *widths = m_cache.widths().data();
    // The ends [j, j + 1 + idx) in the periodic stretch: idx <= stretchTop (-2: not known yet).
    int stretchTop = -2;
    // restAt() never falls as idx falls, so no walk gives less than its width plus restAt at
    // the last end that leaves k layers; the widths ascend, so once that is not below
    // `result`, no wider width's walk can lower it, and those walks would stop at once (their
    // last[] clamped to that end, as the next walk clamps it anyway).
    const int lastIdx = m_L - k - j - 1;
    if (lastIdx < 0)
        return result;
    const int leastRest = restAt(lastIdx);
    for (int w = 0; w < m_nW; ++w) {
        const int width = widths[w];
        if (width + leastRest >= result)
            break;
        int idx = std::min(last[w], lastIdx);
        bool stepped = false, capsKnown = false;
        int cap[kMaxWalkWidths];
        while (idx >= 0) {
            const int rest = restAt(idx);
            if (width + rest >= result)
                break;  // neither this end nor one below it can lower the value
            if (stepped && stretchTop == -2) {
                stretchTop = m_skipKnownFailures && w < kMaxWalkWidths && m_ranges.slot(j, j) >= 0
                                 ? m_ranges.stretchEnd() - j - 1
                                 : -1;
                if (stretchTop >= 0 && m_failDown.empty())
                    m_failDown.assign(static_cast<size_t>(m_ranges.slots()) * m_nW, -1);
            }
            if (!stepped || idx > stretchTop || w >= kMaxWalkWidths) {
                const int known = slots[static_cast<size_t>(idx) * m_nW + w];
                if ((known != -3 ? known : stagesUpTo(j, idx, w, best, k)) >= k) {
                    result = width + rest;
                    break;
                }
                --idx;
                stepped = true;
                continue;
            }
            if (!capsKnown) {
                // cap[x]: the last end at or below idx whose compute passes for k at width x
                // (-1: none); wider widths pass at least as far, so each bisection starts
                // below the next wider one's cap.
                const double weightK = weightOf(k);
                int hiCap = idx;
                for (int x = w; x >= 0; --x)
                    hiCap = cap[x] = computeCap(j, hiCap, widths[x], weightK, best);
                capsKnown = true;
            }
            // The highest end at or below idx that some width up to w may pass at.
            int next = -1;
            for (int x = 0; x <= w; ++x) {
                const int top = std::min(idx, cap[x]);
                if (top > next)
                    next = std::max(next, openLength(m_ranges.slot(j, j), x, top + 1) - 1);
            }
            if (next < idx) {
                if (m_skippedEnds)
                    *m_skippedEnds += idx - next;
                idx = next;  // every end above it fails at every width up to w
                continue;
            }
            if (passesInStretch(j, idx, w, k, best, cap)) {
                result = width + rest;
                break;
            }
            --idx;
        }
        last[w] = idx;
    }
    return result;
}

// The longest length at most `length` of the phase of slotBase (PeriodicRanges::slot() of
// [j, j)) whose summary at width index x is not known to fail (0: none), shortening the
// chains it follows.
int PositionBound::openLength(int slotBase, int x, int length)
{
    const auto at = [&](int l) { return (static_cast<size_t>(slotBase) + static_cast<size_t>(l)) * m_nW + x; };
    while (length > 0) {
        int &down = m_failDown[at(length)];
        if (down < 0)
            return length;
        const int next = down;
        if (next > 0 && m_failDown[at(next)] >= 0)
            down = m_failDown[at(next)];  // path halving
        length = next;
    }
    return 0;
}

// Whether the stage [j, j + 1 + idx) of the periodic stretch passes for k stages after it at
// a width at most index w (stagesUpTo() >= k, by the same test: compute for k at width x,
// up to cap[x], and the summary's stagesAfterAllowed() >= k). A summary that fails for k is
// marked for openLength(): the walks of a table ask for k in ascending order (buildTwoOrMore()
// for k = 1 after row 0, then rows 1, 2, ...), and one that fails for k fails for more.
bool PositionBound::passesInStretch(int j, int idx, int w, int k, double best, const int *cap)
{
    const int jEnd = j + 1 + idx;
    const size_t slot = static_cast<size_t>(m_ranges.slot(j, jEnd));
    for (int x = 0; x <= w; ++x) {
        if (idx > cap[x])
            continue;
        int &down = m_failDown[slot * m_nW + x];
        if (down >= 0)
            continue;
        if (stagesAfterAllowed(m_summaries[static_cast<size_t>(summaryIndex(j, jEnd, x))], best) >= k)
            return true;
        down = idx;  // the length idx + 1 fails for k, hence for every later walk: look at idx next
    }
    return false;
}

// Row k of the table. k = 0: the narrowest width that passes as the last stage [j, L).
// k >= 1: for each width w, the largest end e whose stage [j, e) passes at a width at most
// w with k stages after it (and leaves k layers), then w + min over e' <= e of row k - 1.
// That is a lower bound on min over every passing e of (narrowest + row k - 1 at e): each
// passing e is at most the largest for its narrowest width, and the prefix minimum at the
// largest is at most the row's value at e (equal when the row never rises with e). Rows are
// built with k ascending: the largest passing end per (j, w) only moves down.
void PositionBound::buildRow(int k, double best)
{
    const int beyond = m_cache.config().positions + 1;
    int *row = &m_need[static_cast<size_t>(k) * (m_L + 1)];
    // Suffixes [j, L) in k + 1 stages have j <= L - k - 1. Of those, the ones that compute
    // alone rules out (tooHeavy) or that need more devices than there are (restAtLeast)
    // form a prefix: both tests only weaken as j grows (the suffix sums of
    // LayerComputeBound never rise with j), so the first j that passes is found by
    // bisection, and every j before it needs more positions than there are.
    const int lastJ = m_L - k - 1;
    auto cut = [&](int j) { return tooHeavy(k, j, best) || restAtLeast(k, j, best) >= beyond; };
    int first = 0, hi = std::max(lastJ + 1, 0);
    while (first < hi) {
        const int mid = first + (hi - first) / 2;
        if (cut(mid))
            first = mid + 1;
        else
            hi = mid;
    }
    std::fill(row, row + first, beyond);
    std::fill(row + std::max(first, lastJ + 1), row + m_L + 1, kNone);
    // No first stage gives less than the narrowest width + the previous row's prefix
    // minimum at the last end that leaves k layers: when that is not below `beyond`, every
    // j of the row is `beyond`, and no first layer's ends are needed (yet).
    const int *prefix = m_prefix.data();
    const bool anyBelowBeyond =
        k == 0 || m_cache.widths().front() + m_prefix[static_cast<size_t>(m_L - k)] < beyond;
    for (int j = first; j <= lastJ; ++j) {
        int result = kNone;
        if (k == 0) {
            for (int w = 0; w < m_nW; ++w) {
                bool open = false;
                if (stagesAllowed(j, m_L, w, best, open, -2) >= 0) {
                    result = m_cache.widths()[static_cast<size_t>(w)];
                    break;
                }
            }
        } else {
            // The row's value is at most `beyond` whatever the widths give (and `beyond` when
            // none can give less: row[j] is written, not left from an earlier table).
            result = beyond;
            if (anyBelowBeyond) {
                const int *prefixAt = prefix + j + 1;
                result = walkEnds(j, k, result, best, [prefixAt](int idx) { return prefixAt[idx]; });
            }
        }
        row[j] = std::min(result, beyond);
    }
    // The prefix minima of this row, for the next.
    for (int e = 0; e <= m_L; ++e)
        m_prefix[static_cast<size_t>(e)] = e > 0 ? std::min(m_prefix[static_cast<size_t>(e) - 1], row[e]) : row[e];
}

int PositionBound::need(int k, int j, double best, double weight, int limit)
{
    if (!(best < std::numeric_limits<double>::infinity()))
        return 0;  // no incumbent: the relaxation would cost every stage of every length
    if (!m_ready) {
        // Allocated on first use: most outer points are skipped before their recurrence.
        m_summaryIdx.clear();
        m_summaries.clear();
        m_summaryAt.assign(static_cast<size_t>(m_ranges.slots()) * m_nW, -1);
        m_fitsWithTwo.clear();
        m_floorGeometries.clear();
        m_need.assign(static_cast<size_t>(m_maxStages) * (m_L + 1), kNone);
        m_prefix.assign(static_cast<size_t>(m_L) + 1, kNone);
        m_needStamp = -1;
        m_ready = true;
    }
    // A table for an incumbent at least `best` and a weight at most `weight` asks less of
    // every stage, so its bound holds here too: recomputed only when it does not decide.
    const bool valid = m_needStamp >= best && m_needWeight <= weight;
    if (valid) {
        const int known = bound(k, j, m_needStamp, limit);
        if (known > limit || (m_needStamp == best && m_needWeight == weight))
            return known;
    }
    m_needStamp = best;
    m_needWeight = weight;
    m_weight = weight;
    resetTable();
    return bound(k, j, best, limit);
}

// need() on the current table: a row not built yet is built only when neither the bound of
// two or more stages nor, for a root (j = 0), the roots' Lagrangian bound already exceeds
// `limit`.
int PositionBound::bound(int k, int j, double best, int limit)
{
    if (k >= 1 && k >= m_rowsBuilt && k < m_maxStages) {
        if (m_twoOrMore.empty() && m_rowsBuilt <= 1) {
            if (m_rowsBuilt == 0)
                buildRow(m_rowsBuilt++, best);
            buildTwoOrMore(best);
        }
        if (!m_twoOrMore.empty() && m_twoOrMore[static_cast<size_t>(j)] > limit)
            return m_twoOrMore[static_cast<size_t>(j)];
        if (j == 0) {
            const int v = lagrangian(k, best, limit);
            if (v > limit) {
                if (m_rootBoundCuts)
                    ++*m_rootBoundCuts;
                return v;
            }
        }
    }
    return solve(k, j, best);
}

// The bound of two or more stages, j descending (row 0 built, no other row yet). The first
// stage [j, e) of such a suffix has at least one stage after it, so it passes the rows' test
// for k = 1, the weakest of theirs (the weight and the stash only grow with the stages after
// it); the rest [e, L) is one stage (row 0 at e) or two or more (this bound at e). So the
// bound at j is the least over widths w of w + the least of both over the ends e in (j, e_w],
// e_w the largest end that passes for k = 1 at a width at most w (row 1's walk, which this
// pass does for it: the walk ends at or above that end, where row 1 starts). Unlike a row, it
// ranges over the ends after j only, not over every end up to e_w, so it may exceed row k's
// value; both bound the positions of every suffix that passes the tests.
void PositionBound::buildTwoOrMore(double best)
{
    const int beyond = m_cache.config().positions + 1;
    m_twoOrMore.assign(static_cast<size_t>(m_L) + 1, kNone);
    // Range minima over the ends e of min(row 0 at e, the bound at e), settled as j descends:
    // every end a walk from j asks of is after j, so its value is final.
    m_rangeMin.reset(static_cast<size_t>(m_L) + 1, kNone);
    auto rangeMin = [&](int lo, int hi) { return m_rangeMin.min(lo, hi); };
    // First layers whose compute alone needs more devices than there are: restAtLeast(1, j)
    // bounds every suffix of two or more stages, and only weakens as j grows.
    const int lastJ = m_L - 2;
    int first = 0, hi = std::max(lastJ + 1, 0);
    while (first < hi) {
        const int mid = first + (hi - first) / 2;
        if (restAtLeast(1, mid, best) >= beyond)
            first = mid + 1;
        else
            hi = mid;
    }
    std::fill(m_twoOrMore.begin(), m_twoOrMore.begin() + std::min(first, lastJ + 1), beyond);
    for (int e = m_L; e > lastJ && e >= 0; --e)
        m_rangeMin.settle(static_cast<size_t>(e), m_need[static_cast<size_t>(e)]);
    for (int j = lastJ; j >= first; --j) {
        // Row 1's walk, with the least over the ends (j, e] in place of the prefix minima (it
        // too only rises as the end falls).
        const int result = walkEnds(j, 1, beyond, best, [&](int idx) { return rangeMin(j + 1, j + 1 + idx); });
        m_twoOrMore[static_cast<size_t>(j)] = result;
        m_rangeMin.settle(static_cast<size_t>(j), std::min(m_need[static_cast<size_t>(j)], result));
    }
}

// The menus of the roots' Lagrangian bound (docs/planner.md, same name), for the
// current table: per (k' >= 1, width index w) the most compute (device-seconds of the
// per-layer bounds) of a stage [a, e), e < L, that passes for k' stages after it at a width
// at most w, over the first layers a >= 1 (m_longest) and for a = 0 (m_firstLongest: only a
// root's first stage starts there, and it has no boundary before it); per width index the
// most compute of a last stage [a, L) whose narrowest width (row 0) is that width
// (m_lastLongest). -1: none.
void PositionBound::buildLongest(double best)
{
    const size_t n = static_cast<size_t>(m_maxStages) * m_nW;
    m_longest.assign(n, -1);
    m_firstLongest.assign(n, -1);
    // One stage into its menu: `most` over the widths up to x, at most `compute`.
    auto add = [&](std::vector<double> &menu, int most, int x, double compute) {
        if (most >= 1) {
            double &c = menu[static_cast<size_t>(most) * m_nW + x];
            c = std::max(c, compute);
        }
    };
    // The stages [a, e) for e in [from, a + count], e < L, one by one.
    auto addEnds = [&](int a, int from) {
        if (m_start[static_cast<size_t>(a)] < 0)
            prepareFirstLayer(a, best);
        std::vector<double> &menu = a == 0 ? m_firstLongest : m_longest;
        for (int e = from; e <= a + m_count[static_cast<size_t>(a)] && e < m_L; ++e) {
            int most = -1;
            const double compute = rangeDeviceSeconds(a, e);
            for (int x = 0; x < m_nW; ++x) {
                bool open = false;
                most = std::max(most, stagesAllowed(a, e, x, best, open, most, compute));
                add(menu, most, x, compute);
            }
        }
    };
    // First layers in the model's periodic stretch [b, s) (PeriodicRanges): the stages of one
    // phase and length inside it share their summary, and their compute differs by rounding
    // only, so each (phase, length) is tested once at the least compute of its stages (a
    // weaker test, so a larger menu) and enters with the most. Ends past the stretch, and the
    // other first layers, one by one.
    const int p = m_ranges.period();
    const int b = m_ranges.stretchBegin(), s = m_ranges.stretchEnd();
    std::vector<char> periodic(static_cast<size_t>(m_L), 0);
    if (p > 0 && m_compute) {
        for (int phase = 0; phase < p; ++phase) {
            const int first = b + 1 + phase;  // (a - 1 - b) mod p == phase, a - 1 >= b
            if (first + 1 > s)
                continue;
            int stopLen = m_L;  // the first length at which the phase is not open
            for (int len = 1; first + len <= s && first + len < m_L; ++len) {
                double least = std::numeric_limits<double>::infinity(), most = 0;
                for (int a = first; a + len <= s; a += p) {
                    const double c = rangeDeviceSeconds(a, a + len);
                    least = std::min(least, c);
                    most = std::max(most, c);
                }
                if (!openAt(first, first + len, best, least)) {
                    stopLen = len;
                    break;
                }
                int stages = -1;
                for (int x = 0; x < m_nW; ++x) {
                    bool open = false;
                    stages = std::max(stages, stagesAllowed(first, first + len, x, best, open, stages, least));
                    add(m_longest, stages, x, most);
                }
            }
            for (int a = first; a < s; a += p) {
                periodic[static_cast<size_t>(a)] = 1;
                // Ends past the stretch, unless [a, s) is not open already (then no longer
                // stage from a is: open is monotone in the end).
                if (s + 1 < m_L && s - a < stopLen)
                    addEnds(a, s + 1);
            }
        }
    }
    for (int a = 0; a + 1 < m_L; ++a)
        if (!periodic[static_cast<size_t>(a)])
            addEnds(a, a + 1);
    // Passing for k' stages after means passing for every k'' in [1, k'].
    for (int kp = m_maxStages - 2; kp >= 1; --kp)
        for (int x = 0; x < m_nW; ++x) {
            const size_t at = static_cast<size_t>(kp) * m_nW + x;
            m_longest[at] = std::max(m_longest[at], m_longest[at + m_nW]);
            m_firstLongest[at] = std::max(m_firstLongest[at], m_firstLongest[at + m_nW]);
        }
    m_lastLongest.assign(static_cast<size_t>(m_nW), -1);
    const int positions = m_cache.config().positions;
    for (int a = 0; a < m_L; ++a) {
        const int w = m_need[static_cast<size_t>(a)];  // row 0
        if (w > positions)
            continue;
        const auto x = std::find(m_cache.widths().begin(), m_cache.widths().end(), w) - m_cache.widths().begin();
        if (x < m_nW)
            m_lastLongest[static_cast<size_t>(x)] = std::max(m_lastLongest[static_cast<size_t>(x)], rangeDeviceSeconds(a, m_L));
    }
    m_longestBuilt = true;
}

// min over the widths x with a stage in `menu` of widths[x] - lambda * its compute (+inf
// when none), and that compute in `compute`.
double PositionBound::menuTerm(const double *menu, double lambda, double &compute) const
{
    double least = std::numeric_limits<double>::infinity();
    compute = 0;
    for (int x = 0; x < m_nW; ++x) {
        if (menu[x] < 0)
            continue;
        const double v = m_cache.widths()[static_cast<size_t>(x)] - lambda * menu[x];
        if (v < least) {
            least = v;
            compute = menu[x];
        }
    }
    return least;
}

// The Lagrangian of [0, L) in k + 1 stages at lambda, and the compute of the stages its
// terms pick.
double PositionBound::rootBound(int k, double lambda, double &compute) const
{
    double c = 0;
    double sum = lambda * m_lagrangeTotal + menuTerm(m_lastLongest.data(), lambda, c);
    compute = c;
    for (int kp = 1; kp <= k; ++kp) {
        sum += menuTerm(menuOf(kp, k), lambda, c);
        compute += c;
    }
    return sum;
}

// A lower bound on the positions of [0, L) in k + 1 stages when it exceeds `limit` (else
// any value at most `limit`). Each stage of such a suffix, with k' stages after it, is a
// stage of its menu (buildLongest()), and the stages' compute sums to the model's, C. So
// for every lambda >= 0 the widths sum to at least lambda * C + the sum over the stages of
// the least of (width - lambda * compute) over their menus: a Lagrangian relaxation of the
// compute's sum, concave in lambda, maximised by bisection on its slope.
int PositionBound::lagrangian(int k, double best, int limit)
{
    if (!m_compute)
        return 0;
    if (!m_longestBuilt) {
        if (k < m_rowsBuilt + m_rootBoundAfterRows && m_rowsBuilt < 4 * m_rootBoundAfterRows)
            return 0;  // a few rows cost less than the menus
        buildLongest(best);
        // The stages' compute, each a difference of suffix sums, sums to C up to rounding:
        // a slightly smaller C keeps the bound below the truth.
        m_lagrangeTotal = rangeDeviceSeconds(0, m_L) * (1 - 1e-12);
        m_lambda = -1;
        m_lambdaSolvedAt = -1;
    }
    auto toInt = [](double v) { return v >= double(kNone) ? kNone : static_cast<int>(std::ceil(v - 1e-6)); };
    double c = 0;
    if (m_lambda >= 0) {
        // The last multiplier first, with the sums of its general terms kept.
        while (static_cast<int>(m_lambdaSums.size()) < k) {
            const int kp = static_cast<int>(m_lambdaSums.size());
            m_lambdaSums.push_back(kp == 0 ? m_lambda * m_lagrangeTotal + menuTerm(m_lastLongest.data(), m_lambda, c)
                                           : m_lambdaSums.back() + menuTerm(menuOf(kp, k), m_lambda, c));
        }
        const int v = toInt(m_lambdaSums[static_cast<size_t>(k) - 1] + menuTerm(menuOf(k, k), m_lambda, c));
        if (v > limit)
            return v;
    }
    if (k < m_lambdaSolvedAt + std::max(m_rootBoundAfterRows / 4, m_lambdaSolvedAt / 8))
        return 0;  // solved not long ago without deciding
    m_lambdaSolvedAt = k;
    const double total = m_lagrangeTotal;
    // The most compute each stage can hold (a menu is largest at the widest width, being by
    // "at a width at most"; the last stage's is by its narrowest width): when these cannot
    // cover the model, or a stage has no menu at all, no suffix passes.
    double most = *std::max_element(m_lastLongest.begin(), m_lastLongest.end());
    bool none = most < 0;
    for (int kp = 1; kp <= k && !none; ++kp) {
        const double cap = menuOf(kp, k)[m_nW - 1];
        none = cap < 0;
        most += cap;
    }
    if (none || most < total)
        return m_cache.config().positions + 1;
    // Beyond hi every term picks a stage within (widest + 1) / hi of its most compute.
    double least = total;
    for (int a = 0; a < m_L; ++a)
        if (const double ds = rangeDeviceSeconds(a, a + 1); ds > 0)
            least = std::min(least, ds);
    double lo = 0, hi = (m_cache.widths().back() + 1.0) / least;
    double bestValue = rootBound(k, 0, c), bestLambda = 0;
    for (int it = 0; it < 50; ++it) {
        const double mid = 0.5 * (lo + hi);
        const double v = rootBound(k, mid, c);
        if (v > bestValue) {
            bestValue = v;
            bestLambda = mid;
        }
        if (c < total)
            lo = mid;  // the slope C - compute is positive
        else
            hi = mid;
    }
    m_lambda = bestLambda;
    m_lambdaSums.clear();
    return toInt(bestValue);
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
    if (k >= m_maxStages)
        return kNone;  // more stages than a pipeline may have
    while (m_rowsBuilt <= k) {
        buildRow(m_rowsBuilt++, best);
    }
    return m_need[static_cast<size_t>(k) * (m_L + 1) + j];
}

} // namespace nest

#include "StageCostCache.h"

#include "KeptFront.h"
#include "Pipeline.h"
#include "SearchRun.h"

#include <algorithm>
#include <cmath>

namespace nest {

StageCostCache::StageCostCache(const PlanSpace &space, const CancelToken &cancel,
                               SearchStats &stats, MemoryObstacle &obstacle, LayerSumsStore &sums, int keep)
    : m_space(space), m_topo(space.topology()), m_cancel(cancel), m_stats(stats),
      m_obstacle(obstacle), m_keep(std::max(1, keep)), m_classes(space), m_store(sums),
      m_blockSizes(regularBlockSizes(m_topo)), m_timeFloor(computeTimeFloor(space.costOptions())),
      m_fitComputeFloor(!space.hasMoe(0, space.layerCount()))
{
}

void StageCostCache::setConfig(const OuterConfig &cfg)
{
    m_cfg = cfg;
    m_ctx = makeContext(m_space, cfg);
    m_widths.clear();
    for (int w : m_space.widths())
        if (w <= cfg.positions)
            m_widths.push_back(w);
    m_nW = static_cast<int>(m_widths.size());
    m_options.assign(m_nW * 2, {});
    const int layers = m_space.layerCount();
    for (int i = 0; i < m_nW; ++i) {
        // Options depend on the range only through "holds a MoE layer".
        m_options[i * 2] = m_space.stageOptions(cfg, m_widths[i], 0, 0);
        if (m_space.hasMoe(0, layers)) {
            int moeLayer = 0;
            while (!hasExperts(m_space.model().layers[moeLayer]))
                ++moeLayer;
            m_options[i * 2 + 1] = m_space.stageOptions(cfg, m_widths[i], moeLayer, moeLayer + 1);
        }
    }
    m_sumsTwin.clear();
    for (const std::vector<StageConfig> &opts : m_options)
        m_sumsTwin.push_back(LayerSumsStore::sumsTwins(opts));
    m_pl = nullptr;
    for (Placement &p : m_placements)
        if (p.dp == cfg.dp && p.layout == cfg.layout)
            m_pl = &p;
    if (!m_pl) {
        Placement p;
        p.dp = cfg.dp;
        p.layout = cfg.layout;
        // Positions a pipeline can reach: at most maxStages stages of the widest width
        // (issue 24, "Width": a replica of a wide cluster has far more).
        const long long reach = std::min<long long>(cfg.positions, static_cast<long long>(m_space.maxStages()) *
                                                                       (m_nW > 0 ? m_widths.back() : 1));
        const size_t positions = static_cast<size_t>(reach) + 1;
        p.sig.assign(positions * m_nW, -1);
        p.link.assign(positions * m_nW * m_nW, -1);
        m_placements.push_back(std::move(p));
        m_pl = &m_placements.back();
    }
    m_mbIdx = 0;
    while (m_mbIdx < static_cast<int>(m_mbs.size()) && m_mbs[m_mbIdx] != cfg.microBatch)
        ++m_mbIdx;
    if (m_mbIdx == static_cast<int>(m_mbs.size()))
        m_mbs.push_back(cfg.microBatch);
    if (cfg.schedule == Schedule::Interleaved) {
        m_wrapLinks.clear();
        m_ilPlan = m_space.planSkeleton(cfg);
    }
}

StagePlan StageCostCache::stageAt(int q, int wIdx) const
{
    StagePlan s;
    s.devices = m_space.stageDevices(m_cfg, q, m_widths[wIdx]);
    return s;
}

int StageCostCache::newPlacementClass(int q, int wIdx)
{
    int &s = m_pl->sig[static_cast<size_t>(q) * m_nW + wIdx];
    // From the device hashes, without building the matrix (SearchClasses).
    s = m_classes.placementClassAt(m_cfg, q, m_widths[wIdx]);
    return s;
}

int StageCostCache::newLinkId(int q, int wp, int w)
{
    int &id = m_pl->link[(static_cast<size_t>(q) * m_nW + wp) * m_nW + w];
    // Boundaries whose two matrices have the same signature together have the same link:
    // built and measured once per signature (SearchClasses::boundaryKey).
    const auto bk = m_classes.boundaryKey(m_cfg, q, m_widths[wp], m_widths[w]);
    const FlatKey key{bk.first, bk.second};
    if (!m_boundaryIds.find(key, id)) {
        StagePlan before, after;
        if (m_cfg.layout == Layout::ReplicasInside) {
            // The replicas whose pairs repeat an earlier replica's add nothing to the worst
            // pair, nor change which one is met first (SearchClasses::distinctReplicas):
            // only the others are built.
            const int first = q - m_widths[wp];
            for (int r : m_classes.distinctReplicas(m_cfg, first, m_widths[wp] + m_widths[w])) {
                std::vector<int> a(static_cast<size_t>(m_widths[wp])), b(static_cast<size_t>(m_widths[w]));
                for (size_t j = 0; j < a.size(); ++j)
                    a[j] = r * m_cfg.positions + first + static_cast<int>(j);
                for (size_t j = 0; j < b.size(); ++j)
                    b[j] = r * m_cfg.positions + q + static_cast<int>(j);
                before.devices.push_back(std::move(a));
                after.devices.push_back(std::move(b));
            }
        } else {
            // The same for the outside layout: the replicas whose pairs repeat an earlier
            // one's in the same order (SearchClasses::distinctOutsideReplicas) are not built.
            const int a0 = m_cfg.dp * (q - m_widths[wp]), b0 = m_cfg.dp * q;
            for (int r : m_classes.distinctOutsideReplicas(m_cfg, q, m_widths[wp], m_widths[w])) {
                std::vector<int> a(static_cast<size_t>(m_widths[wp])), b(static_cast<size_t>(m_widths[w]));
                for (size_t j = 0; j < a.size(); ++j)
                    a[j] = a0 + r * m_widths[wp] + static_cast<int>(j);
                for (size_t j = 0; j < b.size(); ++j)
                    b[j] = b0 + r * m_widths[w] + static_cast<int>(j);
                before.devices.push_back(std::move(a));
                after.devices.push_back(std::move(b));
            }
        }
        id = m_links.intern(boundaryLink(m_topo, before, after));
        m_boundaryIds.insert(key, id);
    }
    if (id >= (1 << kLinkIdBits))
        throw SearchLimitExceeded{"the cluster has more than " + std::to_string(1 << kLinkIdBits) +
                                  " distinct pipeline boundary links; the planner's caches hold at most that many"};
    return id;
}

int StageCostCache::geometryId(int sig, int q, int wIdx, const StageConfig &o)
{
    // The geometry depends on the placement and the choice's widths only.
    const FlatKey key{static_cast<uint64_t>(sig), o.widthKey()};
    int known = -1;
    if (m_geomIdx.find(key, known))
        return known;
    if (!m_blockSizes.empty()) {
        // A regular tree: from the rows' spacing, without the device matrix (the same
        // geometry, evenStageCollectives()).
        m_geoms.push_back(stageGeometry(m_topo, m_blockSizes, m_space.stageRows(m_cfg, q, m_widths[wIdx]), o,
                                        m_space.costOptions()));
    } else {
        // The device matrix in a scratch stage kept between calls: a wide stage is thousands
        // of rows, and rebuilding it allocated each one (the same ids either way).
        StagePlan &stage = m_geomStage;
        m_space.stageDevicesInto(m_cfg, q, m_widths[wIdx], stage.devices);
        stage.config() = o;
        m_geoms.push_back(stageGeometry(m_topo, stage, m_cfg.dp, m_space.costOptions()));
    }
    const int id = static_cast<int>(m_geoms.size()) - 1;
    m_geomIdx.insert(key, id);
    return id;
}

// The base of every option (options() order) of the stage [j, jEnd) of width index wIdx,
// whose range class is `range`, on the geometry geometryOf(option) gives (a reference into
// m_geoms, read before the next geometryId(), or a value).
template <typename GeometryOf>
std::vector<StageCost> StageCostCache::basesOn(int range, int j, int jEnd, int wIdx, GeometryOf geometryOf)
{
    StagePlan &stage = m_stage;
    stage.firstLayer = j;
    stage.endLayer = jEnd;
    StageContext ctx = m_ctx;
    ctx.stage = &stage;
    const size_t list = optionList(wIdx, j, jEnd);
    const std::vector<StageConfig> &opts = m_options[list];
    const std::vector<int> &twin = m_sumsTwin[list];
    std::vector<StageCost> bases;
    bases.reserve(opts.size());
    m_blockSums.resize(opts.size());
    m_blockRates.resize(opts.size());
    for (size_t i = 0; i < opts.size(); ++i) {
        stage.config() = opts[i];
        decltype(auto) g = geometryOf(opts[i]);
        // An option whose sums' choice (LayerSumsStore::sumsChoice) is an earlier option's,
        // on devices of the same speed, has its sums.
        const size_t t = static_cast<size_t>(twin[i]);
        const bool reuse = t < i && m_blockRates[t] == g.rates;
        m_blockRates[i] = g.rates;
        m_blockSums[i] = reuse ? m_blockSums[t] : m_store.layerSums(range, ctx, g.rates);
        bases.push_back(stageCostBase(ctx, g, m_store.sums(m_blockSums[i])));
    }
    return bases;
}

int StageCostCache::newBlock(int range, int sig, int j, int jEnd, int q, int wIdx)
{
    const int id = static_cast<int>(m_bases.size());
    m_bases.push_back(basesOn(range, j, jEnd, wIdx, [&](const StageConfig &o) -> const StageGeometry & {
        return m_geoms[static_cast<size_t>(geometryId(sig, q, wIdx, o))];
    }));
    m_blockIdx.insert(blockKey(range, sig, wIdx), id);
    return id;
}

StageGeometry StageCostCache::floorGeometry(int wIdx, const StageConfig &o,
                                            const std::vector<std::pair<int, int>> &classes)
{
    // The lesser, and a number over a NaN.
    auto lesser = [](double &to, double of) {
        if (std::isnan(to) || of < to)
            to = of;
    };
    auto least = [&](LinearCost &to, const LinearCost &of) {
        lesser(to.perByte, of.perByte);
        lesser(to.fixed, of.fixed);
    };
    // Copied: geometryId() may grow m_geoms.
    StageGeometry g = m_geoms[static_cast<size_t>(geometryId(classes.front().first, classes.front().second, wIdx, o))];
    for (size_t c = 1; c < classes.size(); ++c) {
        const StageCollectives h =
            m_geoms[static_cast<size_t>(geometryId(classes[c].first, classes[c].second, wIdx, o))].comm;
        least(g.comm.tp, h.tp);
        least(g.comm.cp, h.cp);
        least(g.comm.ep, h.ep);
        least(g.comm.etp, h.etp);
        least(g.comm.denseAllReduce, h.denseAllReduce);
        least(g.comm.denseReduceScatter, h.denseReduceScatter);
        least(g.comm.expertAllReduce, h.expertAllReduce);
        least(g.comm.expertReduceScatter, h.expertReduceScatter);
    }
    if (m_space.costOptions().moeHierarchicalDispatch) {
        // The hierarchical dispatch is priced from one group's shape (dispatchCost()), not
        // a least over the classes: its floor keeps the latency only.
        g.comm.epShape = {};
        g.comm.ep.perByte = 0;
    }
    return g;
}

double StageCostCache::leastZero3PerByte()
{
    double least = std::numeric_limits<double>::infinity();
    const int reach = static_cast<int>(m_pl->sig.size() / static_cast<size_t>(std::max(m_nW, 1))) - 1;
    for (int wIdx = 0; wIdx < m_nW; ++wIdx) {
        for (int q = 0; q + m_widths[wIdx] <= reach; ++q) {
            const int sig = placementClass(q, wIdx);
            for (int moe = 0; moe < 2; ++moe)
                for (const StageConfig &o : m_options[static_cast<size_t>(wIdx) * 2 + moe])
                    if (o.zero >= 3)
                        least = std::min(least, m_geoms[static_cast<size_t>(geometryId(sig, q, wIdx, o))]
                                                    .comm.denseReduceScatter.perByte);
        }
    }
    return least;
}

std::vector<StageCost> StageCostCache::basesOn(int range, int j, int jEnd, int wIdx,
                                               const std::vector<StageGeometry> &geometries)
{
    size_t i = 0;
    return basesOn(range, j, jEnd, wIdx, [&](const StageConfig &) -> const StageGeometry & { return geometries[i++]; });
}

StageCostCache::TimeRow StageCostCache::stageTimes(int blk, int v, int u, const StageContext &ctx,
                                                  const std::vector<StageConfig> &opts)
{
    // Whether the stage is pipelined (numStages > 1) follows from the links where the
    // search asks (a stage after it has a next link), but it is in the key all the same, as
    // is whether an interleaved schedule overlaps its p2p (finishStageCost()).
    const uint64_t pipelined = ctx.numStages > 1 ? 1 : 0;
    const uint64_t overlap = ctx.schedule == Schedule::Interleaved && ctx.virtualStages > 1 ? 2 : 0;
    const FlatKey key{static_cast<uint64_t>(blk),
                      (static_cast<uint64_t>(v) << 32) | (static_cast<uint64_t>(u) << 2) | overlap | pipelined};
    TimeRow row;
    if (m_timeIdx.find(key, row))
        return row;
    row.begin = static_cast<int>(m_timePool.size());
    StageContext c = ctx;
    m_timeStage.firstLayer = ctx.stage->firstLayer;
    m_timeStage.endLayer = ctx.stage->endLayer;
    c.stage = &m_timeStage;
    for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
        m_timeStage.config() = opts[i];
        StageCost cost = base(blk, i);
        finishStageCost(cost, c);
        m_timePool.push_back(cost.perMicroBatch);
        m_timePool.push_back(cost.iterationExtra);
    }
    m_timeIdx.insert(key, row);
    return row;
}

OptEntry StageCostCache::newEntry(const FlatKey &key, int blk, int j, int jEnd, int wIdx, int k, int v, int u)
{
    if (m_cancel.cancelled())
        throw SearchCancelled{};
    OptEntry entry;
    StageContext ctx = m_ctx;
    ctx.stageIndex = v == 0 ? 0 : 1;
    ctx.numStages = ctx.stageIndex + k + 1;
    StagePlan &stage = m_stage;
    stage.firstLayer = j;
    stage.endLayer = jEnd;
    ctx.stage = &stage;
    if (v != 0)
        ctx.prev = m_links.link(v);
    if (u != 0)
        ctx.next = m_links.link(u);
    m_tmp.clear();
    const std::vector<StageConfig> &opts = options(wIdx, j, jEnd);
    // Of a stage's cost, only the stash depends on k beyond whether the stage is pipelined
    // (entryKey()): the time and extra come from stageTimes() (finished once per its key),
    // each stash costs only the memory total, finishStageCost()'s own (stageMemoryTotal()).
    // The values are those finishStageCost() gives for this k. The stage's option is set
    // for the obstacle only.
    const TimeRow times = stageTimes(blk, v, u, ctx, opts);
    for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
        stage.config() = opts[i];
        const StageCost &b = base(blk, i);
        const double memory = stageMemoryTotal(b, ctx);
        const double t = timeOf(times, i);
        const double e = extraOf(times, i);
        ++m_stats.stageCostCalls;
        if (!std::isfinite(t) || !std::isfinite(e) || !std::isfinite(memory)) {
            ++m_stats.pruned;  // the evaluator calls a non-finite cost infeasible; so does the search
            continue;
        }
        const bool fits = memory <= b.memoryCapacity;
        // The compute floor of the options that fit (with their recompute pass), or with MoE
        // layers of every option (forward and backward): see OptEntry::minCompute.
        if (fits || !m_fitComputeFloor) {
            const double compute = b.forward + b.backward + (m_fitComputeFloor ? b.recomputeCompute : 0);
            entry.minCompute = std::min(entry.minCompute, compute * m_timeFloor);
        }
        if (!fits) {
            ++m_stats.pruned;
            m_obstacle.consider(memory, b.memoryCapacity, stage);
            continue;
        }
        entry.fits = true;
        m_tmp.push_back({t, e, i});
    }
    // The Pareto front on (t, e), or with m_keep > 1 the options fewer than m_keep others
    // dominate (KeptFront.h); of equal options the lowest index.
    entry.begin = static_cast<int>(m_optPool.size());
    appendKeptFront(m_tmp, m_optPool, m_keep, [](const OptCost &x, const OptCost &y) { return x.opt < y.opt; });
    entry.count = static_cast<int>(m_optPool.size()) - entry.begin;
    m_optMemo.insert(key, entry);
    return entry;
}

// One candidate's chunks on their positions: chunk s runs on position s % pp; chunk s -> s + 1
// crosses an adjacent boundary except from position pp - 1 back to 0.
struct StageCostCache::InterleavedPass {
    const std::vector<StageChoice> &chunks;
    int n, pp, w, wIdx;
    // One context for every chunk (its copy of the options made once), the per-chunk fields
    // set by the steps.
    StageContext ctx;
    BoundaryLink wrap;  // the link from position pp - 1 back to 0
    double weight;      // interleavedWeight() of the plan
    // The chunks share one option (two lists: with and without a MoE layer): its index is
    // looked up once per list, not once per chunk.
    const std::vector<StageConfig> *lastOpts = nullptr;
    int lastIdx = 0;
};

// A position's memory (positionMemory(), as evaluate() sums it) needs only its chunks' bases
// and stashes, not their times: this puts them in m_costs (by chunk index) and says whether
// position d fits the least capacity of its devices (1), does not (0), or a chunk's option is
// not from the lists (-1, cannot happen: then use evaluate()).
int StageCostCache::loadPosition(InterleavedPass &p, int d)
{
    double capacity = std::numeric_limits<double>::infinity();
    for (int s = d; s < p.n; s += p.pp) {
        const StageChoice &ch = p.chunks[static_cast<size_t>(s)];
        const std::vector<StageConfig> &opts = options(p.wIdx, ch.firstLayer, ch.endLayer);
        int idx = 0;
        if (&opts == p.lastOpts && opts[static_cast<size_t>(p.lastIdx)] == ch.option) {
            idx = p.lastIdx;
        } else {
            while (idx < static_cast<int>(opts.size()) && opts[idx] != ch.option)
                ++idx;
            if (idx == static_cast<int>(opts.size()))
                return -1;
            p.lastOpts = &opts;
            p.lastIdx = idx;
        }
        const int blk = block(m_store.rangeClass(ch.firstLayer, ch.endLayer), placementClass(d * p.w, p.wIdx),
                              ch.firstLayer, ch.endLayer, d * p.w, p.wIdx);
        StageCost &cost = m_costs[static_cast<size_t>(s)];
        cost = base(blk, idx);
        p.ctx.stageIndex = s;
        cost.stash = stageStashBytes(cost, p.ctx);
        // The chunks of one position share its devices, so their capacities are equal.
        capacity = std::min(capacity, cost.memoryCapacity);
    }
    return positionMemory(m_costs, d, p.pp).total > capacity ? 0 : 1;
}

// iterationTime() = (m + (pp-1)/v) * max over devices of the sum of their chunks' t + max
// extra; every term is >= 0, so one device's sum times the weight bounds it below: this
// finishes position d's loaded chunks in place (as on a fresh copy of the base) and says
// whether that bound stays below the cutoff.
bool StageCostCache::positionTimeBelow(InterleavedPass &p, int d, double cutoff)
{
    auto linkAfter = [&](int s) {
        const int at = s % p.pp;
        return at == p.pp - 1 ? p.wrap : m_links.link(linkId((at + 1) * p.w, p.wIdx, p.wIdx));
    };
    double deviceT = 0;
    for (int s = d; s < p.n; s += p.pp) {
        const StageChoice &ch = p.chunks[static_cast<size_t>(s)];
        StagePlan &stage = m_stage;
        stage.firstLayer = ch.firstLayer;
        stage.endLayer = ch.endLayer;
        stage.config() = ch.option;
        p.ctx.stageIndex = s;
        if (s > 0)
            p.ctx.prev = linkAfter(s - 1);
        else
            p.ctx.prev = m_ctx.prev;
        if (s + 1 < p.n)
            p.ctx.next = linkAfter(s);
        else
            p.ctx.next.reset();
        StageCost &cost = m_costs[static_cast<size_t>(s)];
        finishStageCost(cost, p.ctx);
        deviceT += cost.perMicroBatch;
        if (p.weight * deviceT >= cutoff)
            return false;
    }
    return true;
}

double StageCostCache::interleavedTime(const InterleavedChoice &c, const std::vector<StageChoice> &chunks,
                                       double cutoff, bool *fits)
{
    if (fits)
        *fits = false;
    const int w = c.option.width();
    const int wIdx = static_cast<int>(std::find(m_widths.begin(), m_widths.end(), w) - m_widths.begin());
    const int pp = c.pp;
    const int n = static_cast<int>(chunks.size());
    m_ilPlan.virtualStages = n / pp;
    m_ilPlan.stages.resize(static_cast<size_t>(n));
    m_costs.resize(static_cast<size_t>(n));
    const std::pair<int, int> wrapKey(pp, wIdx);
    auto wrapIt = m_wrapLinks.find(wrapKey);
    if (wrapIt == m_wrapLinks.end())
        wrapIt = m_wrapLinks.emplace(wrapKey, boundaryLink(m_topo, stageAt((pp - 1) * w, wIdx), stageAt(0, wIdx))).first;
    InterleavedPass p{chunks, n, pp, w, wIdx, m_ctx, wrapIt->second,
                      interleavedWeight(m_ilPlan.numMicroBatches(), pp, m_ilPlan.virtualStages)};
    p.ctx.stage = &m_stage;
    p.ctx.numStages = pp;
    p.ctx.virtualStages = m_ilPlan.virtualStages;
    // The order (docs/planner.md, "Interleaved candidates: memory before time"): the last
    // position first (it holds the head, usually the heaviest in time, so a candidate the
    // incumbent beats is usually known after its v chunks; the first position first gave 5 %
    // less in a re-plan, this one 11 %), then the first position's memory (it holds the most
    // micro-batches in flight: most candidates of a deep model that do not fit fail there),
    // then each other position's memory and time, down, and the first position's time. Each
    // chunk's cost is that of its own index whatever the order, so the value is unchanged.
    int loaded = loadPosition(p, pp - 1);
    if (loaded <= 0)
        return loaded < 0 ? -1 : kInf;
    if (!positionTimeBelow(p, pp - 1, cutoff))
        return kInf;
    if (pp > 1 && (loaded = loadPosition(p, 0)) <= 0)
        return loaded < 0 ? -1 : kInf;
    for (int d = pp - 2; d >= 1; --d) {
        if ((loaded = loadPosition(p, d)) <= 0)
            return loaded < 0 ? -1 : kInf;
        if (!positionTimeBelow(p, d, cutoff))
            return kInf;
    }
    if (fits)
        *fits = true;
    if (pp > 1 && !positionTimeBelow(p, 0, cutoff))
        return kInf;
    queueInterleavedSyncs(m_costs, m_ilPlan);
    return iterationTime(m_costs, m_ilPlan);
}

} // namespace nest

#include "NestPlanner.h"

#include "PlanSpace.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

namespace nest {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Cancelled {};

// One feasible option of a stage: per-micro-batch time, per-iteration extra, option index.
struct OptCost {
    double t, e;
    int opt;
};

struct OptEntry {
    int begin = 0, count = 0;
    bool fits = false;          // at least one option fits in memory
    double minCompute = kInf;   // min over all options of forward + backward
};

// A point of a DP cell's Pareto frontier of (max t, max extra) over the suffix.
struct Point {
    double a, b;
    int jEnd;   // end layer of the cell's first stage
    int opt;    // its option index
    int w2;     // width index of the next stage, -1 for the last stage
    int succ;   // index of the successor point in the pool, -1 for the last stage,
                // kLastStage - o when the successor is the last stage with option o
};
constexpr int kLastStage = -2;

struct Span {
    int begin = 0, count = 0;
};

// A 128-bit key for the memo tables.
struct Key {
    uint64_t hi = 0, lo = 0;
    bool operator==(const Key &) const = default;
};

// Open-addressing hash map (linear probing) from Key to a small value: no allocation per
// entry, and clear() in O(1) by a generation stamp. Values are returned by copy. With
// Rows, the low 32 bits of Key::hi are added to the hash of the rest instead of mixed in,
// so keys that differ only there (a DP row: consecutive first layers) sit side by side.
template <typename V, bool Rows = false>
class FlatMap {
public:
    FlatMap() { rehash(1024); }

    bool find(const Key &k, V &out) const
    {
        for (size_t i = slot(k);; i = (i + 1) & m_mask) {
            const Slot &s = m_slots[i];
            if (s.stamp != m_gen)
                return false;
            if (s.key == k) {
                out = s.value;
                return true;
            }
        }
    }
    // k must not be present.
    void insert(const Key &k, const V &v)
    {
        if ((m_size + 1) * 2 > m_slots.size())
            rehash(m_slots.size() * 2);
        size_t i = slot(k);
        while (m_slots[i].stamp == m_gen)
            i = (i + 1) & m_mask;
        m_slots[i] = {k, v, m_gen};
        ++m_size;
    }
    void clear()
    {
        // A table much larger than its last use would only cost cache misses: shrink it.
        if (m_slots.size() > 4096 && m_size * 16 < m_slots.size()) {
            const size_t want = std::max<size_t>(1024, std::bit_ceil(m_size * 4));
            m_size = 0;
            m_slots.clear();
            rehash(want);
            return;
        }
        m_size = 0;
        if (++m_gen == 0) {
            for (Slot &s : m_slots)
                s.stamp = 0;
            m_gen = 1;
        }
    }

private:
    struct Slot {
        Key key;
        V value;
        uint32_t stamp = 0;
    };
    std::vector<Slot> m_slots;
    uint32_t m_gen = 1;
    size_t m_size = 0, m_mask = 0;

    static uint64_t mix(uint64_t x)
    {
        // splitmix64 finaliser
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebull;
        return x ^ (x >> 31);
    }
    static uint64_t hash(const Key &k)
    {
        if constexpr (Rows)
            return mix((k.hi >> 32) ^ mix(k.lo)) + (k.hi & 0xffffffffull);
        else
            return mix(k.hi ^ mix(k.lo));
    }
    size_t slot(const Key &k) const { return static_cast<size_t>(hash(k)) & m_mask; }
    void rehash(size_t capacity)
    {
        std::vector<Slot> slots(capacity);
        const size_t mask = capacity - 1;
        for (const Slot &s : m_slots) {
            if (s.stamp != m_gen)
                continue;
            size_t j = static_cast<size_t>(hash(s.key)) & mask;
            while (slots[j].stamp == 1u)
                j = (j + 1) & mask;
            slots[j] = {s.key, s.value, 1u};
        }
        m_slots.swap(slots);
        m_gen = 1;
        m_mask = mask;
    }
};

// Placement facts of one (dp, layout): they do not depend on the micro-batch or schedule,
// so every outer point with this (dp, layout) shares them.
struct Placement {
    int dp = 1;
    Layout layout = Layout::ReplicasOutside;
    std::vector<int> sig;   // q * nW + w -> placement class, -1 = not yet computed
    std::vector<int> link;  // (q * nW + wp) * nW + w -> boundary link id, -1 = not yet
};

class Search {
public:
    Search(const PlanSpace &space, const CancelToken &cancel, SearchStats &stats)
        : m_space(space), m_topo(space.topology()), m_model(space.model()), m_cancel(cancel),
          m_stats(stats), m_classes(space), m_L(space.layerCount()),
          m_has1F1B(std::find(space.options().schedules.begin(), space.options().schedules.end(),
                              Schedule::OneFOneB) != space.options().schedules.end())
    {
    }

    double best = kInf;
    Plan bestPlan;
    MemoryObstacle obstacle;

    // Search order: smallest lower bound first, ties broken towards pipelines just large
    // enough to hold the model's training state (a good incumbent early makes the bounds
    // cut more); any order gives the same optimum.
    std::vector<OuterConfig> order(std::vector<OuterConfig> configs)
    {
        double capacity = 0;
        for (const DeviceSpec &d : m_topo.deviceTypes)
            capacity = std::max(capacity, d.memoryBytes);
        const CostOptions co = m_space.costOptions();
        const double state = m_model.totalParams() *
                             (m_model.bytesPerParam + co.gradBytesPerParam + co.optimizerBytesPerParam);
        const double wantPositions = std::max(1.0, state / std::max(capacity, 1.0));
        std::vector<std::pair<std::pair<double, double>, size_t>> keyed;
        for (size_t i = 0; i < configs.size(); ++i) {
            const double lb = lowerBound(configs[i]);
            keyed.push_back({{lb, std::abs(std::log2(configs[i].positions / wantPositions))}, i});
        }
        std::stable_sort(keyed.begin(), keyed.end(),
                         [](const auto &a, const auto &b) { return a.first < b.first; });
        std::vector<OuterConfig> out;
        for (const auto &k : keyed)
            out.push_back(configs[k.second]);
        return out;
    }

    void run(const OuterConfig &cfg)
    {
        if (lowerBound(cfg) >= best) {
            ++m_stats.configsSkipped;
            return;
        }
        if (cfg.schedule == Schedule::GPipe && m_has1F1B) {
            // Dominated by the 1F1B point with the same (mb, dp, layout): the same plans
            // with the same times and never more stashed micro-batches (docs/planner.md).
            ++m_stats.configsSkipped;
            return;
        }
        ++m_stats.configs;
        if (cfg.schedule == Schedule::Interleaved)
            runInterleaved(cfg);
        else
            runDp(cfg);
    }

    // A quick incumbent from a 1F1B/GPipe point: per width, a pipeline of that width that
    // fills the positions, cut by compute, each stage with a good feasible option; valued
    // with the DP's own arithmetic (so exactly evaluate()'s value), so the bounds cut from
    // the first point on. Only ever lowers `best` to a real plan's value; the optimum is
    // unchanged (docs/planner.md, "Incumbent seeding").
    void seed(const OuterConfig &cfg)
    {
        if (cfg.schedule == Schedule::Interleaved || (cfg.schedule == Schedule::GPipe && m_has1F1B))
            return;
        setupConfig(cfg);
        const int m = cfg.numMicroBatches;
        for (int wIdx = 0; wIdx < m_nW; ++wIdx) {
            const int w = m_widths[wIdx];
            const int stages = std::min(m_space.maxStages(), cfg.positions / w);
            if (stages < 1)
                continue;
            // Cuts where the compute (the bound's per-layer device-seconds, else the layer
            // count) crosses k / S of the total, every stage non-empty.
            m_seedChunks.clear();
            int first = 0;
            for (int k = 0; k < stages; ++k) {
                int end = m_L - (stages - 1 - k);
                if (k + 1 < stages && m_bound) {
                    const double total = m_bound->suffixDeviceSeconds[0];
                    const double target = total * (k + 1) / stages;
                    int e = first + 1;
                    while (e < end && total - m_bound->suffixDeviceSeconds[e] < target)
                        ++e;
                    end = e;
                } else if (k + 1 < stages) {
                    end = std::min(end, first + std::max(1, (m_L - first) / (stages - k)));
                }
                m_seedChunks.push_back({first, end, StageOption()});
                first = end;
            }
            // Per stage the feasible option with the least (m + S - 1) t + e; then, keeping
            // that max t, the least e per stage.
            const double weight = m + stages - 1;
            m_seedCosts.assign(static_cast<size_t>(stages), {});
            bool fits = true;
            double a = 0;
            for (int k = 0; k < stages && fits; ++k) {
                poll();
                StageChoice &ch = m_seedChunks[static_cast<size_t>(k)];
                const int q = k * w;
                const std::vector<StageOption> &opts = optionsFor(wIdx, ch.firstLayer, ch.endLayer);
                const int blk = block(m_classes.rangeClass(ch.firstLayer, ch.endLayer), sigId(q, wIdx),
                                      ch.firstLayer, ch.endLayer, q, wIdx);
                StageContext ctx = m_ctx;
                ctx.stageIndex = k;
                ctx.numStages = stages;
                if (k > 0)
                    ctx.prev = m_links.link(linkId(q, wIdx, wIdx));
                if (k + 1 < stages)
                    ctx.next = m_links.link(linkId(q + w, wIdx, wIdx));
                StagePlan &stage = m_stage;
                stage.firstLayer = ch.firstLayer;
                stage.endLayer = ch.endLayer;
                ctx.stage = &stage;
                std::vector<OptCost> &list = m_seedCosts[static_cast<size_t>(k)];
                double bestValue = kInf, bestT = 0;
                for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
                    applyOption(stage, opts[i]);
                    StageCost c = m_bases[static_cast<size_t>(m_blockBegin[static_cast<size_t>(blk)] + i)];
                    finishStageCost(c, ctx);
                    ++m_stats.stageCostCalls;
                    if (!c.fitsMemory)
                        continue;
                    list.push_back({c.perMicroBatch, c.iterationExtra, i});
                    const double value = weight * c.perMicroBatch + c.iterationExtra;
                    if (value < bestValue) {
                        bestValue = value;
                        bestT = c.perMicroBatch;
                    }
                }
                fits = !list.empty();
                a = std::max(a, bestT);
            }
            if (!fits)
                continue;
            double maxT = 0, maxE = 0;
            for (int k = 0; k < stages; ++k) {
                StageChoice &ch = m_seedChunks[static_cast<size_t>(k)];
                const OptCost *pick = nullptr;
                for (const OptCost &o : m_seedCosts[static_cast<size_t>(k)])
                    if (o.t <= a && (!pick || o.e < pick->e || (o.e == pick->e && o.t < pick->t)))
                        pick = &o;
                ch.option = optionsFor(wIdx, ch.firstLayer, ch.endLayer)[static_cast<size_t>(pick->opt)];
                maxT = std::max(maxT, pick->t);
                maxE = std::max(maxE, pick->e);
            }
            const double t = (m + stages - 1) * maxT + maxE;
            if (t < best) {
                best = t;
                bestPlan = m_space.makePlan(cfg, m_seedChunks);
            }
        }
    }

private:
    const PlanSpace &m_space;
    const Topology &m_topo;
    const ModelProfile &m_model;
    const CancelToken &m_cancel;
    SearchStats &m_stats;
    SearchClasses m_classes;
    const int m_L;
    const bool m_has1F1B;

    // Per outer point.
    OuterConfig m_cfg;
    std::vector<int> m_widths;
    int m_nW = 0;
    std::vector<std::vector<StageOption>> m_options;  // [wIdx * 2 + moe]
    Placement *m_pl = nullptr;                        // of (m_cfg.dp, m_cfg.layout)
    int m_mbIdx = 0;                                  // index of m_cfg.microBatch in m_mbs
    FlatMap<Span, true> m_memo;                       // DP cells
    std::vector<Point> m_points;
    std::vector<std::vector<Point>> m_scratch;

    // Shared by all outer points (every key below determines its value, Evaluator.h):
    std::vector<Placement> m_placements;
    LinkTable m_links;
    std::vector<int> m_mbs;                           // micro-batch sizes seen
    // Stage costs in parts: geometry per (placement class, tp, cp, ep); layer sums per
    // (range class, tp, cp, ep, sp, recompute, device speed, micro-batch); the base
    // (stageCostBase) of every option per (range class, placement class, width,
    // micro-batch) -- a "block"; the Pareto-filtered options per (block, stashed
    // micro-batches, prev link, next link).
    std::map<std::array<int, 4>, int> m_geomIdx;
    std::vector<StageGeometry> m_geoms;
    std::vector<std::pair<double, double>> m_speeds;  // distinct (rate, hbm)
    FlatMap<int> m_sumIdx;
    std::vector<StageLayerSums> m_sums;
    FlatMap<int> m_blockIdx;
    std::vector<int> m_blockBegin;                    // block -> first base in m_bases
    std::vector<StageCost> m_bases;
    FlatMap<OptEntry> m_optMemo;
    std::vector<OptCost> m_optPool;
    std::vector<OptCost> m_tmp;
    StagePlan m_stage;                                // scratch
    StageContext m_ctx;                               // makeContext(m_cfg)
    std::vector<StageCost> m_costs;                   // scratch
    Plan m_ilPlan;                                    // interleaved: scalars and chunk count
    std::vector<StageChoice> m_seedChunks;            // seed(): the uniform pipeline
    std::vector<std::vector<OptCost>> m_seedCosts;    // seed(): feasible options per stage
    std::map<std::pair<int, int>, BoundaryLink> m_wrapLinks;  // (pp, wIdx) -> last -> first

    // Per (micro-batch, widest width that fits the positions): the bound's options.
    std::map<std::pair<int, int>, LayerComputeBound> m_bounds;

    void poll() const
    {
        if (m_cancel.cancelled())
            throw Cancelled{};
    }

    const LayerComputeBound *m_bound = nullptr;  // of the current config, null = none

    // Lower bound on max t of a suffix [j, L) in `stages` stages placed on positions
    // [q, positions): its stages use at most min(positions - q, stages * widest) positions.
    double suffixBound(int j, int q, int stages) const
    {
        if (!m_bound)
            return 0;
        const double usable = std::min<double>(m_cfg.positions - q, double(stages) * m_widths.back());
        return std::max(m_bound->suffixDeviceSeconds[j] / usable, m_bound->suffixSlowest[j]);
    }

    const LayerComputeBound &bounds(const OuterConfig &cfg)
    {
        int widest = 0;
        for (int w : m_space.widths())
            if (w <= cfg.positions)
                widest = w;
        const std::pair<int, int> key(cfg.microBatch, widest);
        auto it = m_bounds.find(key);
        if (it == m_bounds.end()) {
            poll();
            it = m_bounds.emplace(key, layerComputeBound(m_space, cfg, m_stats)).first;
        }
        return it->second;
    }

    // T >= m * max(sum of per-layer device-seconds / usable devices, slowest layer), valid
    // for one device type (docs/planner.md); 0 otherwise.
    double lowerBound(const OuterConfig &cfg, double usable)
    {
        if (m_topo.deviceTypes.size() != 1)
            return 0;
        const LayerComputeBound &b = bounds(cfg);
        return cfg.numMicroBatches * std::max(b.deviceSeconds / usable, b.slowestLayer);
    }

    double lowerBound(const OuterConfig &cfg)
    {
        const int wmax = m_space.widths().back();
        return lowerBound(cfg, std::min<double>(cfg.positions, double(m_space.maxStages()) * wmax));
    }

    void setupConfig(const OuterConfig &cfg)
    {
        m_cfg = cfg;
        m_ctx = makeContext(m_space, cfg);
        m_widths.clear();
        for (int w : m_space.widths())
            if (w <= cfg.positions)
                m_widths.push_back(w);
        m_nW = static_cast<int>(m_widths.size());
        m_options.assign(m_nW * 2, {});
        for (int i = 0; i < m_nW; ++i) {
            // Options depend on the range only through "holds a MoE layer".
            m_options[i * 2] = m_space.stageOptions(cfg, m_widths[i], 0, 0);
            if (m_space.hasMoe(0, m_L)) {
                int moeLayer = 0;
                while (m_model.layers[moeLayer].kind != LayerKind::Moe)
                    ++moeLayer;
                m_options[i * 2 + 1] = m_space.stageOptions(cfg, m_widths[i], moeLayer, moeLayer + 1);
            }
        }
        m_pl = nullptr;
        for (Placement &p : m_placements)
            if (p.dp == cfg.dp && p.layout == cfg.layout)
                m_pl = &p;
        if (!m_pl) {
            Placement p;
            p.dp = cfg.dp;
            p.layout = cfg.layout;
            const size_t positions = static_cast<size_t>(cfg.positions) + 1;
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
        m_memo.clear();
        m_points.clear();
        m_scratch.resize(m_space.maxStages() + 1);
        m_bound = m_topo.deviceTypes.size() == 1 ? &bounds(cfg) : nullptr;
    }

    StagePlan stageAt(int q, int wIdx) const
    {
        StagePlan s;
        s.devices = m_space.stageDevices(m_cfg, q, m_widths[wIdx]);
        return s;
    }

    int sigId(int q, int wIdx)
    {
        int &s = m_pl->sig[static_cast<size_t>(q) * m_nW + wIdx];
        if (s < 0)
            s = m_classes.placementClass(stageAt(q, wIdx).devices);
        return s;
    }

    // Link id of the boundary at position q between a stage of width index wp and one of w.
    int linkId(int q, int wp, int w)
    {
        int &id = m_pl->link[(static_cast<size_t>(q) * m_nW + wp) * m_nW + w];
        if (id < 0)
            id = m_links.intern(boundaryLink(m_topo, stageAt(q - m_widths[wp], wp), stageAt(q, w)));
        return id;
    }

    const std::vector<StageOption> &optionsFor(int wIdx, int j, int jEnd) const
    {
        return m_options[wIdx * 2 + (m_space.hasMoe(j, jEnd) ? 1 : 0)];
    }

    int geometryId(int sig, int q, int wIdx, const StageOption &o)
    {
        const std::array<int, 4> key{sig, o.tp, o.cp, o.ep};
        auto it = m_geomIdx.find(key);
        if (it != m_geomIdx.end())
            return it->second;
        StagePlan stage = stageAt(q, wIdx);
        applyOption(stage, o);
        m_geoms.push_back(stageGeometry(m_topo, stage, m_cfg.dp, m_space.costOptions()));
        const int id = static_cast<int>(m_geoms.size()) - 1;
        m_geomIdx.emplace(key, id);
        return id;
    }

    const StageLayerSums &layerSums(int range, const StageContext &ctx, const StageGeometry &g)
    {
        int speed = 0;
        while (speed < static_cast<int>(m_speeds.size()) &&
               (m_speeds[speed].first != g.rate || m_speeds[speed].second != g.hbm))
            ++speed;
        if (speed == static_cast<int>(m_speeds.size()))
            m_speeds.emplace_back(g.rate, g.hbm);
        const StagePlan &st = *ctx.stage;
        // tp, cp, ep <= devices < 2^21 each.
        const Key key{(static_cast<uint64_t>(range) << 32) | (static_cast<uint64_t>(m_mbIdx) << 16) |
                          (static_cast<uint64_t>(speed) << 2) | (st.sp ? 2u : 0u) | (st.recompute ? 1u : 0u),
                      (static_cast<uint64_t>(st.tp) << 42) | (static_cast<uint64_t>(st.cp) << 21) |
                          static_cast<uint64_t>(st.ep)};
        int idx = -1;
        if (!m_sumIdx.find(key, idx)) {
            idx = static_cast<int>(m_sums.size());
            m_sums.push_back(stageLayerSums(ctx, g.rate, g.hbm));
            m_sumIdx.insert(key, idx);
        }
        return m_sums[static_cast<size_t>(idx)];
    }

    // The block of base costs (stageCostBase, one per option) of the stage [j, jEnd) at
    // (q, wIdx), whose range class is `range` and placement class `sig`.
    int block(int range, int sig, int j, int jEnd, int q, int wIdx)
    {
        const Key key{(static_cast<uint64_t>(range) << 32) | static_cast<uint64_t>(m_mbIdx),
                      (static_cast<uint64_t>(sig) << 32) | static_cast<uint64_t>(m_widths[wIdx])};
        int id = -1;
        if (m_blockIdx.find(key, id))
            return id;
        id = static_cast<int>(m_blockBegin.size());
        m_blockBegin.push_back(static_cast<int>(m_bases.size()));
        StagePlan &stage = m_stage;
        stage.firstLayer = j;
        stage.endLayer = jEnd;
        StageContext ctx = m_ctx;
        ctx.stage = &stage;
        for (const StageOption &o : optionsFor(wIdx, j, jEnd)) {
            applyOption(stage, o);
            const StageGeometry &g = m_geoms[static_cast<size_t>(geometryId(sig, q, wIdx, o))];
            m_bases.push_back(stageCostBase(ctx, g, layerSums(range, ctx, g)));
        }
        m_blockIdx.insert(key, id);
        return id;
    }

    // Feasible, mutually non-dominated options of the stage [j, jEnd) of width wIdx whose
    // base costs are block `blk`, with k stages after it, prev link v and next link u
    // (0 = none). Depends on k only through the stashed micro-batches.
    OptEntry stageEntry(int blk, int j, int jEnd, int wIdx, int k, int v, int u)
    {
        const int stash = m_cfg.schedule == Schedule::GPipe ? m_cfg.numMicroBatches
                                                              : std::min(k + 1, m_cfg.numMicroBatches);
        const Key key{(static_cast<uint64_t>(stash) << 32) | static_cast<uint64_t>(blk),
                      (static_cast<uint64_t>(v) << 32) | static_cast<uint64_t>(u)};
        OptEntry entry;
        if (m_optMemo.find(key, entry))
            return entry;
        poll();
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
        const std::vector<StageOption> &opts = optionsFor(wIdx, j, jEnd);
        const int base = m_blockBegin[static_cast<size_t>(blk)];
        for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
            applyOption(stage, opts[i]);
            StageCost c = m_bases[static_cast<size_t>(base + i)];
            finishStageCost(c, ctx);
            ++m_stats.stageCostCalls;
            entry.minCompute = std::min(entry.minCompute, c.forward + c.backward);
            if (!c.fitsMemory) {
                ++m_stats.pruned;
                obstacle.consider(c, stage);
                continue;
            }
            entry.fits = true;
            m_tmp.push_back({c.perMicroBatch, c.iterationExtra, i});
        }
        // Pareto filter on (t, e); ties keep the lowest option index.
        std::sort(m_tmp.begin(), m_tmp.end(), [](const OptCost &x, const OptCost &y) {
            if (x.t != y.t)
                return x.t < y.t;
            if (x.e != y.e)
                return x.e < y.e;
            return x.opt < y.opt;
        });
        entry.begin = static_cast<int>(m_optPool.size());
        double bestE = kInf;
        for (const OptCost &o : m_tmp) {
            if (o.e < bestE) {
                m_optPool.push_back(o);
                bestE = o.e;
            }
        }
        entry.count = static_cast<int>(m_optPool.size()) - entry.begin;
        m_optMemo.insert(key, entry);
        return entry;
    }

    static Key stateKey(int k, int j, int q, int v, int w)
    {
        // q <= devices < 2^21; link ids and width indices < 2^20.
        return {(static_cast<uint64_t>(k) << 32) | static_cast<uint64_t>(j),
                (static_cast<uint64_t>(q) << 40) | (static_cast<uint64_t>(v) << 20) | static_cast<uint64_t>(w)};
    }

    // Frontier of the best suffixes covering layers [j, L) with k + 1 stages, the first of
    // width index w at position q, whose previous boundary has link id v (0 = none).
    Span solve(int k, int j, int q, int v, int w)
    {
        const Key key = stateKey(k, j, q, v, w);
        Span found;
        if (m_memo.find(key, found))
            return found;
        poll();
        ++m_stats.states;
        const double weight = m_cfg.numMicroBatches + k;
        if (weight * suffixBound(j, q, k + 1) >= best) {
            // No suffix from here can beat the incumbent (docs/planner.md, "bounds").
            ++m_stats.pruned;
            const Span none{static_cast<int>(m_points.size()), 0};
            m_memo.insert(key, none);
            return none;
        }
        std::vector<Point> &buf = m_scratch[k];
        buf.clear();
        const int width = m_widths[w];
        const int wmin = m_widths.front();
        const int lastEnd = k == 0 ? m_L : m_L - k;
        const int sig = sigId(q, w);
        for (int jEnd = k == 0 ? m_L : j + 1; jEnd <= lastEnd; ++jEnd) {
            int blk = -1;  // computed on first use
            int lastU = -1;
            OptEntry lastEntry;
            auto blockOf = [&] {
                if (blk < 0)
                    blk = block(m_classes.rangeClass(j, jEnd), sig, j, jEnd, q, w);
                return blk;
            };
            // Compute alone already too slow: so is every longer stage.
            if (m_bound && weight * (m_bound->suffixDeviceSeconds[j] - m_bound->suffixDeviceSeconds[jEnd]) / width >= best) {
                ++m_stats.pruned;
                break;
            }
            bool anyFit = false;
            bool computeCut = true;
            bool costed = false;
            if (k == 0) {
                const OptEntry e = stageEntry(blockOf(), j, jEnd, w, 0, v, 0);
                anyFit = e.fits;
                computeCut = weight * e.minCompute >= best;
                for (int i = 0; i < e.count; ++i) {
                    const OptCost o = m_optPool[e.begin + i];
                    ++m_stats.transitions;
                    if (weight * o.t + o.e >= best) {
                        ++m_stats.pruned;
                        continue;
                    }
                    buf.push_back({o.t, o.e, jEnd, o.opt, -1, -1});
                }
            } else {
                for (int w2 = 0; w2 < m_nW; ++w2) {
                    if (q + width + m_widths[w2] + (k - 1) * wmin > m_cfg.positions)
                        break;
                    if (weight * suffixBound(jEnd, q + width, k) >= best) {
                        ++m_stats.pruned;
                        continue;  // nothing after this stage can be fast enough
                    }
                    const int u = linkId(q + width, w, w2);
                    if (u != lastU) {
                        lastEntry = stageEntry(blockOf(), j, jEnd, w, k, v, u);
                        lastU = u;
                    }
                    const OptEntry e = lastEntry;
                    costed = true;
                    anyFit = anyFit || e.fits;
                    if (weight * e.minCompute < best)
                        computeCut = false;
                    if (e.count == 0)
                        continue;
                    if (weight * std::max(m_optPool[e.begin].t, suffixBound(jEnd, q + width, k)) >= best) {
                        ++m_stats.pruned;
                        continue;
                    }
                    if (k == 1) {
                        // The last stage [jEnd, L) inline: its feasible non-dominated options are
                        // the frontier solve(0, jEnd, q + width, u, w2) would return (the bound
                        // there is implied by the one below), without a DP cell.
                        const int q2 = q + width;
                        if (m_bound && weight * (m_bound->suffixDeviceSeconds[jEnd] / m_widths[w2]) >= best) {
                            ++m_stats.pruned;
                            continue;
                        }
                        const int blk2 = block(m_classes.rangeClass(jEnd, m_L), sigId(q2, w2), jEnd, m_L, q2, w2);
                        const OptEntry last = stageEntry(blk2, jEnd, m_L, w2, 0, u, 0);
                        for (int i = 0; i < e.count; ++i) {
                            const OptCost o = m_optPool[e.begin + i];
                            if (weight * o.t + o.e >= best) {
                                ++m_stats.pruned;
                                continue;
                            }
                            for (int p = 0; p < last.count; ++p) {
                                const OptCost o2 = m_optPool[last.begin + p];
                                ++m_stats.transitions;
                                const double a = std::max(o.t, o2.t), b = std::max(o.e, o2.e);
                                if (weight * a + b >= best) {
                                    ++m_stats.pruned;
                                    continue;
                                }
                                buf.push_back({a, b, jEnd, o.opt, w2, kLastStage - o2.opt});
                            }
                        }
                        continue;
                    }
                    const Span sub = solve(k - 1, jEnd, q + width, u, w2);
                    for (int i = 0; i < e.count; ++i) {
                        const OptCost o = m_optPool[e.begin + i];
                        if (weight * o.t + o.e >= best) {
                            ++m_stats.pruned;
                            continue;
                        }
                        for (int p = 0; p < sub.count; ++p) {
                            const Point &sp = m_points[sub.begin + p];
                            ++m_stats.transitions;
                            const double a = std::max(o.t, sp.a), b = std::max(o.e, sp.b);
                            if (weight * a + b >= best) {
                                ++m_stats.pruned;
                                continue;
                            }
                            buf.push_back({a, b, jEnd, o.opt, w2, sub.begin + p});
                        }
                    }
                }
            }
            // More layers never need less memory nor less compute (docs/planner.md).
            if (k == 0 || costed) {
                if (!anyFit || computeCut)
                    break;
            }
        }
        std::sort(buf.begin(), buf.end(), [](const Point &x, const Point &y) {
            if (x.a != y.a)
                return x.a < y.a;
            if (x.b != y.b)
                return x.b < y.b;
            if (x.jEnd != y.jEnd)
                return x.jEnd < y.jEnd;
            if (x.w2 != y.w2)
                return x.w2 < y.w2;
            return x.opt < y.opt;
        });
        Span span;
        span.begin = static_cast<int>(m_points.size());
        double bestB = kInf;
        for (const Point &p : buf) {
            if (p.b < bestB) {
                m_points.push_back(p);
                bestB = p.b;
            }
        }
        span.count = static_cast<int>(m_points.size()) - span.begin;
        m_memo.insert(key, span);
        return span;
    }

    void runDp(const OuterConfig &cfg)
    {
        setupConfig(cfg);
        if (m_nW == 0)
            return;
        const int m = cfg.numMicroBatches;
        for (int k = 0; k < m_space.maxStages(); ++k) {
            for (int w = 0; w < m_nW; ++w) {
                if (m_widths[w] + k * m_widths.front() > cfg.positions)
                    break;
                const Span s = solve(k, 0, 0, 0, w);
                for (int p = 0; p < s.count; ++p) {
                    const Point &pt = m_points[s.begin + p];
                    const double t = (m + k) * pt.a + pt.b;
                    if (t < best) {
                        best = t;
                        bestPlan = reconstruct(w, s.begin + p);
                    }
                }
            }
        }
    }

    Plan reconstruct(int w, int point)
    {
        std::vector<StageChoice> stages;
        int j = 0;
        while (point >= 0) {
            const Point &p = m_points[point];
            StageChoice c;
            c.firstLayer = j;
            c.endLayer = p.jEnd;
            c.option = optionsFor(w, j, p.jEnd)[p.opt];
            stages.push_back(c);
            j = p.jEnd;
            w = p.w2;
            point = p.succ;
            if (point <= kLastStage) {
                c.firstLayer = j;
                c.endLayer = m_L;
                c.option = optionsFor(w, j, m_L)[kLastStage - point];
                stages.push_back(c);
            }
        }
        return m_space.makePlan(m_cfg, stages);
    }

    static bool sameOption(const StageOption &a, const StageOption &b)
    {
        return a.tp == b.tp && a.cp == b.cp && a.ep == b.ep && a.sp == b.sp && a.zero == b.zero &&
               a.recompute == b.recompute;
    }

    // The iteration time of an interleaved candidate with the evaluator's arithmetic
    // (stageCostBase from the cached blocks, finishStageCost, iterationTime).
    double interleavedTime(const InterleavedChoice &c, const std::vector<StageChoice> &chunks)
    {
        const int w = c.option.width();
        const int wIdx = static_cast<int>(std::find(m_widths.begin(), m_widths.end(), w) - m_widths.begin());
        const int pp = c.pp;
        const int n = static_cast<int>(chunks.size());
        // Chunk s runs on position s % pp; chunk s -> s + 1 crosses an adjacent boundary
        // except from position pp - 1 back to 0.
        const std::pair<int, int> wrapKey(pp, wIdx);
        auto wrapIt = m_wrapLinks.find(wrapKey);
        if (wrapIt == m_wrapLinks.end())
            wrapIt = m_wrapLinks.emplace(wrapKey, boundaryLink(m_topo, stageAt((pp - 1) * w, wIdx), stageAt(0, wIdx))).first;
        auto linkAfter = [&](int s) {
            const int d = s % pp;
            return d == pp - 1 ? wrapIt->second : m_links.link(linkId((d + 1) * w, wIdx, wIdx));
        };
        m_ilPlan.virtualStages = n / pp;
        m_ilPlan.stages.resize(static_cast<size_t>(n));
        m_costs.clear();
        for (int s = 0; s < n; ++s) {
            const StageChoice &ch = chunks[static_cast<size_t>(s)];
            const int q = (s % pp) * w;
            const std::vector<StageOption> &opts = optionsFor(wIdx, ch.firstLayer, ch.endLayer);
            int idx = 0;
            while (idx < static_cast<int>(opts.size()) && !sameOption(opts[idx], ch.option))
                ++idx;
            if (idx == static_cast<int>(opts.size()))
                return -1;  // not from the option lists (cannot happen): use evaluate()
            const int blk = block(m_classes.rangeClass(ch.firstLayer, ch.endLayer), sigId(q, wIdx), ch.firstLayer,
                                  ch.endLayer, q, wIdx);
            StageCost cost = m_bases[static_cast<size_t>(m_blockBegin[static_cast<size_t>(blk)] + idx)];
            StagePlan &stage = m_stage;
            stage.firstLayer = ch.firstLayer;
            stage.endLayer = ch.endLayer;
            applyOption(stage, ch.option);
            StageContext ctx = m_ctx;
            ctx.stage = &stage;
            ctx.stageIndex = s;
            ctx.numStages = pp;
            ctx.virtualStages = m_ilPlan.virtualStages;
            if (s > 0)
                ctx.prev = linkAfter(s - 1);
            if (s + 1 < n)
                ctx.next = linkAfter(s);
            finishStageCost(cost, ctx);
            m_costs.push_back(cost);
        }
        return iterationTime(m_costs, m_ilPlan);
    }

    void runInterleaved(const OuterConfig &cfg)
    {
        setupConfig(cfg);
        m_wrapLinks.clear();
        m_ilPlan = m_space.planSkeleton(cfg);
        for (const InterleavedChoice &c : m_space.interleavedChoices(cfg)) {
            poll();
            ++m_stats.states;
            if (lowerBound(cfg, double(c.pp) * c.option.width()) >= best) {
                ++m_stats.pruned;
                continue;
            }
            const std::vector<StageChoice> chunks = m_space.interleavedChunks(c);
            const double t = interleavedTime(c, chunks);
            m_stats.stageCostCalls += static_cast<long long>(chunks.size());
            ++m_stats.transitions;
            if (t >= best) {
                ++m_stats.pruned;
                continue;
            }
            // Feasibility needs the per-device memory of all chunks: the full evaluator,
            // only for a candidate that would improve the incumbent.
            const Plan plan = m_space.makeInterleavedPlan(cfg, c);
            const Report r = evaluate(plan, m_topo, m_model, m_space.costOptions());
            if (!r.feasible) {
                ++m_stats.pruned;
                continue;
            }
            if (r.iterationTime < best) {
                best = r.iterationTime;
                bestPlan = plan;
            }
        }
    }
};

} // namespace

PlanResult NestPlanner::plan(const Topology &topo, const ModelProfile &model,
                             const SearchOptions &options, const ProgressFn &progress,
                             const CancelToken &cancel) const
{
    const auto start = std::chrono::steady_clock::now();
    PlanResult result;
    const PlanSpace space(topo, model, options);
    if (!space.problem().empty()) {
        result.message = space.problem();
        return result;
    }
    Search search(space, cancel, result.stats);
    try {
        const std::vector<OuterConfig> configs = search.order(space.configs());
        for (const OuterConfig &c : configs)
            search.seed(c);
        for (size_t i = 0; i < configs.size(); ++i) {
            search.run(configs[i]);
            if (progress)
                progress(double(i + 1) / double(configs.size()),
                         search.best < kInf ? search.best : 0.0);
        }
    } catch (const Cancelled &) {
        result.cancelled = true;
        result.message = "search cancelled";
    }
    if (!result.cancelled) {
        if (search.best < kInf) {
            result.found = true;
            result.plan = search.bestPlan;
            result.objective = search.best;
            finishResult(result, topo, model, options);
        } else {
            result.message = search.obstacle.message(space);
        }
    }
    result.stats.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace nest

#include "NestPlanner.h"

#include "PlanSpace.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <unordered_map>

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
    int succ;   // index of the successor point in the pool, -1 for the last stage
};

struct Span {
    int begin = 0, count = 0;
};

struct OptKey {
    int range, width, sig, k, v, u;
    bool operator==(const OptKey &) const = default;
};

struct OptKeyHash {
    size_t operator()(const OptKey &x) const
    {
        uint64_t h = 1469598103934665603ull;
        for (int f : {x.range, x.width, x.sig, x.k, x.v, x.u}) {
            h ^= static_cast<uint64_t>(static_cast<uint32_t>(f));
            h *= 1099511628211ull;
        }
        return static_cast<size_t>(h ^ (h >> 29));
    }
};

class Search {
public:
    Search(const PlanSpace &space, const CancelToken &cancel, SearchStats &stats)
        : m_space(space), m_topo(space.topology()), m_model(space.model()), m_cancel(cancel),
          m_stats(stats), m_classes(space), m_L(space.layerCount())
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
        ++m_stats.configs;
        if (cfg.schedule == Schedule::Interleaved)
            runInterleaved(cfg);
        else
            runDp(cfg);
    }

private:
    const PlanSpace &m_space;
    const Topology &m_topo;
    const ModelProfile &m_model;
    const CancelToken &m_cancel;
    SearchStats &m_stats;
    SearchClasses m_classes;
    const int m_L;

    // Per-config state.
    OuterConfig m_cfg;
    std::vector<int> m_widths;
    int m_nW = 0;
    std::vector<std::vector<StageOption>> m_options;  // [wIdx * 2 + moe]
    LinkTable m_links;
    std::vector<int> m_linkIdx;                        // (Q * nW + wp) * nW + w -> link id
    std::vector<int> m_sigIdx;                         // Q * nW + w -> signature id
    std::vector<StagePlan> m_stageCache;               // Q * nW + w -> devices filled
    std::vector<char> m_stageReady;
    std::unordered_map<OptKey, OptEntry, OptKeyHash> m_optMemo;
    std::vector<OptCost> m_optPool;
    std::unordered_map<uint64_t, Span> m_memo;
    std::vector<Point> m_points;
    std::vector<std::vector<Point>> m_scratch;
    std::vector<OptCost> m_tmp;

    // Per (micro-batch, widest width that fits the positions): the bound's options.
    std::map<std::pair<int, int>, LayerComputeBound> m_bounds;

    void poll() const
    {
        if (m_cancel.cancelled())
            throw Cancelled{};
    }

    const LayerComputeBound *m_bound = nullptr;  // of the current config, null = none

    // Lower bound on max t of a suffix [j, L) placed on positions [q, positions).
    double suffixBound(int j, int q) const
    {
        if (!m_bound)
            return 0;
        return std::max(m_bound->suffixDeviceSeconds[j] / (m_cfg.positions - q), m_bound->suffixSlowest[j]);
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
        m_links = LinkTable();
        const size_t positions = static_cast<size_t>(cfg.positions) + 1;
        m_linkIdx.assign(positions * m_nW * m_nW, -1);
        m_sigIdx.assign(positions * m_nW, -1);
        m_stageCache.assign(positions * m_nW, StagePlan());
        m_stageReady.assign(positions * m_nW, 0);
        m_optMemo.clear();
        m_optPool.clear();
        m_memo.clear();
        m_points.clear();
        m_scratch.assign(m_space.maxStages() + 1, {});
        m_bound = m_topo.deviceTypes.size() == 1 ? &bounds(cfg) : nullptr;
    }

    StagePlan &stageAt(int q, int wIdx)
    {
        const size_t i = static_cast<size_t>(q) * m_nW + wIdx;
        if (!m_stageReady[i]) {
            m_stageCache[i].devices = m_space.stageDevices(m_cfg, q, m_widths[wIdx]);
            m_stageReady[i] = 1;
        }
        return m_stageCache[i];
    }

    int sigId(int q, int wIdx)
    {
        int &s = m_sigIdx[static_cast<size_t>(q) * m_nW + wIdx];
        if (s < 0)
            s = m_classes.placementClass(stageAt(q, wIdx).devices);
        return s;
    }

    // Link id of the boundary at position q between a stage of width index wp and one of w.
    int linkId(int q, int wp, int w)
    {
        int &id = m_linkIdx[(static_cast<size_t>(q) * m_nW + wp) * m_nW + w];
        if (id < 0) {
            const StagePlan &a = stageAt(q - m_widths[wp], wp);
            const StagePlan &b = stageAt(q, w);
            id = m_links.intern(boundaryLink(m_topo, a, b));
        }
        return id;
    }

    const std::vector<StageOption> &optionsFor(int wIdx, int j, int jEnd) const
    {
        return m_options[wIdx * 2 + (m_space.hasMoe(j, jEnd) ? 1 : 0)];
    }

    // Feasible, mutually non-dominated options of the stage [j, jEnd) at q with width wIdx,
    // k stages after it, prev link v and next link u (0 = none).
    OptEntry stageEntry(int j, int jEnd, int q, int wIdx, int k, int v, int u)
    {
        const OptKey key{m_classes.rangeClass(j, jEnd), wIdx, sigId(q, wIdx), k, v, u};
        auto it = m_optMemo.find(key);
        if (it != m_optMemo.end())
            return it->second;
        poll();
        StagePlan &stage = stageAt(q, wIdx);
        stage.firstLayer = j;
        stage.endLayer = jEnd;
        StageContext ctx = makeContext(m_space, m_cfg);
        ctx.stage = &stage;
        ctx.stageIndex = v == 0 ? 0 : 1;
        ctx.numStages = ctx.stageIndex + k + 1;
        if (v != 0)
            ctx.prev = m_links.link(v);
        if (u != 0)
            ctx.next = m_links.link(u);
        OptEntry entry;
        m_tmp.clear();
        const std::vector<StageOption> &opts = optionsFor(wIdx, j, jEnd);
        for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
            applyOption(stage, opts[i]);
            const StageCost c = stageCost(ctx);
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
        m_optMemo.emplace(key, entry);
        return entry;
    }

    static uint64_t stateKey(int k, int j, int q, int v, int w)
    {
        return (static_cast<uint64_t>(k) << 52) | (static_cast<uint64_t>(j) << 40) |
               (static_cast<uint64_t>(q) << 18) | (static_cast<uint64_t>(v) << 9) |
               static_cast<uint64_t>(w);
    }

    // Frontier of the best suffixes covering layers [j, L) with k + 1 stages, the first of
    // width index w at position q, whose previous boundary has link id v (0 = none).
    Span solve(int k, int j, int q, int v, int w)
    {
        const uint64_t key = stateKey(k, j, q, v, w);
        auto found = m_memo.find(key);
        if (found != m_memo.end())
            return found->second;
        poll();
        ++m_stats.states;
        const double weight = m_cfg.numMicroBatches + k;
        if (weight * suffixBound(j, q) >= best) {
            // No suffix from here can beat the incumbent (docs/planner.md, "bounds").
            ++m_stats.pruned;
            const Span none{static_cast<int>(m_points.size()), 0};
            m_memo.emplace(key, none);
            return none;
        }
        std::vector<Point> &buf = m_scratch[k];
        buf.clear();
        const int width = m_widths[w];
        const int wmin = m_widths.front();
        const int lastEnd = k == 0 ? m_L : m_L - k;
        for (int jEnd = k == 0 ? m_L : j + 1; jEnd <= lastEnd; ++jEnd) {
            // Compute alone already too slow: so is every longer stage.
            if (m_bound && weight * (m_bound->suffixDeviceSeconds[j] - m_bound->suffixDeviceSeconds[jEnd]) / width >= best) {
                ++m_stats.pruned;
                break;
            }
            bool anyFit = false;
            bool computeCut = true;
            bool costed = false;
            if (k == 0) {
                const OptEntry e = stageEntry(j, jEnd, q, w, 0, v, 0);
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
                    if (weight * suffixBound(jEnd, q + width) >= best) {
                        ++m_stats.pruned;
                        continue;  // nothing after this stage can be fast enough
                    }
                    const int u = linkId(q + width, w, w2);
                    const OptEntry e = stageEntry(j, jEnd, q, w, k, v, u);
                    costed = true;
                    anyFit = anyFit || e.fits;
                    if (weight * e.minCompute < best)
                        computeCut = false;
                    if (e.count == 0)
                        continue;
                    if (weight * std::max(m_optPool[e.begin].t, suffixBound(jEnd, q + width)) >= best) {
                        ++m_stats.pruned;
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
        m_memo.emplace(key, span);
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
        }
        return m_space.makePlan(m_cfg, stages);
    }

    void runInterleaved(const OuterConfig &cfg)
    {
        for (const InterleavedChoice &c : m_space.interleavedChoices(cfg)) {
            poll();
            ++m_stats.states;
            if (lowerBound(cfg, double(c.pp) * c.option.width()) >= best) {
                ++m_stats.pruned;
                continue;
            }
            const Plan plan = m_space.makeInterleavedPlan(cfg, c);
            const Report r = evaluate(plan, m_topo, m_model, m_space.costOptions());
            m_stats.stageCostCalls += static_cast<long long>(plan.stages.size());
            ++m_stats.transitions;
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

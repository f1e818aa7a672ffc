#include "NestPlanner.h"

#include "SearchEstimate.h"
#include "StageCostCache.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>

namespace nest {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

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

class Search {
public:
    Search(const PlanSpace &space, const CancelToken &cancel, SearchStats &stats)
        : m_space(space), m_topo(space.topology()), m_model(space.model()), m_cancel(cancel),
          m_stats(stats), m_cache(space, cancel, stats, obstacle), m_L(space.layerCount()),
          m_has1F1B(std::find(space.options().schedules.begin(), space.options().schedules.end(),
                              Schedule::OneFOneB) != space.options().schedules.end()),
          m_widths(m_cache.widths())
    {
    }

    double best = kInf;
    Plan bestPlan;
    MemoryObstacle obstacle;

    // Progress within the outer loop: point `index` of `count`, `within` its own fraction.
    void setProgress(const ProgressFn *progress, size_t index, size_t count)
    {
        m_progress = progress;
        m_pointIndex = index;
        m_pointCount = count;
    }
    void report(double within) const
    {
        if (m_progress && *m_progress && m_pointCount > 0)
            (*m_progress)((double(m_pointIndex) + std::clamp(within, 0.0, 1.0)) / double(m_pointCount),
                          best < kInf ? best : 0.0);
    }

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
                m_seedChunks.push_back({first, end, StageConfig()});
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
                const std::vector<StageConfig> &opts = m_cache.options(wIdx, ch.firstLayer, ch.endLayer);
                const int blk = m_cache.block(m_cache.rangeClass(ch.firstLayer, ch.endLayer),
                                              m_cache.placementClass(q, wIdx), ch.firstLayer, ch.endLayer, q, wIdx);
                StageContext ctx = m_cache.context();
                ctx.stageIndex = k;
                ctx.numStages = stages;
                if (k > 0)
                    ctx.prev = m_cache.link(m_cache.linkId(q, wIdx, wIdx));
                if (k + 1 < stages)
                    ctx.next = m_cache.link(m_cache.linkId(q + w, wIdx, wIdx));
                StagePlan &stage = m_seedStage;
                stage.firstLayer = ch.firstLayer;
                stage.endLayer = ch.endLayer;
                ctx.stage = &stage;
                std::vector<OptCost> &list = m_seedCosts[static_cast<size_t>(k)];
                double bestValue = kInf, bestT = 0;
                for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
                    stage.config() = opts[i];
                    StageCost c = m_cache.base(blk, i);
                    finishStageCost(c, ctx);
                    ++m_stats.stageCostCalls;
                    if (!c.fitsMemory || !std::isfinite(c.perMicroBatch) || !std::isfinite(c.iterationExtra))
                        continue;  // infeasible, as evaluate() says of a non-finite cost
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
                if (!pick) {  // cannot happen with finite costs; never dereference null
                    fits = false;
                    break;
                }
                ch.option = m_cache.options(wIdx, ch.firstLayer, ch.endLayer)[static_cast<size_t>(pick->opt)];
                maxT = std::max(maxT, pick->t);
                maxE = std::max(maxE, pick->e);
            }
            if (!fits)
                continue;
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
    StageCostCache m_cache;    // stage costs in parts, placement facts, the current point
    const int m_L;
    const bool m_has1F1B;

    // Per outer point.
    OuterConfig m_cfg;
    const std::vector<int> &m_widths;                 // m_cache.widths()
    int m_nW = 0;
    FlatHashMap<Span, true> m_memo;                   // DP cells
    std::vector<Point> m_points;
    std::vector<std::vector<Point>> m_scratch;
    std::vector<StageChoice> m_seedChunks;            // seed(): the uniform pipeline
    std::vector<std::vector<OptCost>> m_seedCosts;    // seed(): feasible options per stage
    StagePlan m_seedStage;                            // seed(): scratch

    // Per (micro-batch, widest width that fits the positions): the bound's options.
    std::map<std::pair<int, int>, LayerComputeBound> m_bounds;

    void poll() const
    {
        if (m_cancel.cancelled())
            throw SearchCancelled{};
    }

    // The estimate before the search is rough: the memo of one outer point is also held to
    // the budget while it grows (SearchEstimate.h), refused instead of allocated.
    long long m_cells = 0;  // DP cells of the current outer point
    void checkMemory() const
    {
        const double bytes = double(m_cells) * 96.0 + double(m_points.capacity()) * sizeof(Point);
        const double budget = memoryBudgetOf(m_space.options());
        if (bytes > budget) {
            char buf[256];
            std::snprintf(buf, sizeof buf,
                          "search would need more than %.1f GB (%lld states at one outer point so far), "
                          "above the budget of %.1f GB",
                          bytes / 1e9, m_cells, budget / 1e9);
            throw SearchLimitExceeded{buf};
        }
    }

    const LayerComputeBound *m_bound = nullptr;  // of the current config, null = none
    const ProgressFn *m_progress = nullptr;
    size_t m_pointIndex = 0, m_pointCount = 0;

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
        m_cache.setConfig(cfg);
        m_cfg = cfg;
        m_nW = m_cache.widthCount();
        m_memo.clear();
        m_points.clear();
        m_cells = 0;
        m_scratch.resize(m_space.maxStages() + 1);
        m_bound = m_topo.deviceTypes.size() == 1 ? &bounds(cfg) : nullptr;
    }

    static FlatKey stateKey(int k, int j, int q, int v, int w)
    {
        // q <= devices < 2^21; link ids and width indices < 2^20.
        return {(static_cast<uint64_t>(k) << 32) | static_cast<uint64_t>(j),
                (static_cast<uint64_t>(q) << 40) | (static_cast<uint64_t>(v) << 20) | static_cast<uint64_t>(w)};
    }

    // Frontier of the best suffixes covering layers [j, L) with k + 1 stages, the first of
    // width index w at position q, whose previous boundary has link id v (0 = none).
    Span solve(int k, int j, int q, int v, int w)
    {
        const FlatKey key = stateKey(k, j, q, v, w);
        Span found;
        if (m_memo.find(key, found))
            return found;
        poll();
        ++m_stats.states;
        if ((++m_cells & 4095) == 0)
            checkMemory();
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
        const int sig = m_cache.placementClass(q, w);
        for (int jEnd = k == 0 ? m_L : j + 1; jEnd <= lastEnd; ++jEnd) {
            int blk = -1;  // computed on first use
            int lastU = -1;
            OptEntry lastEntry;
            auto blockOf = [&] {
                if (blk < 0)
                    blk = m_cache.block(m_cache.rangeClass(j, jEnd), sig, j, jEnd, q, w);
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
                const OptEntry e = m_cache.entry(blockOf(), j, jEnd, w, 0, v, 0);
                anyFit = e.fits;
                computeCut = weight * e.minCompute >= best;
                for (int i = 0; i < e.count; ++i) {
                    const OptCost o = m_cache.optCost(e.begin + i);
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
                    const int u = m_cache.linkId(q + width, w, w2);
                    if (u != lastU) {
                        lastEntry = m_cache.entry(blockOf(), j, jEnd, w, k, v, u);
                        lastU = u;
                    }
                    const OptEntry e = lastEntry;
                    costed = true;
                    anyFit = anyFit || e.fits;
                    if (weight * e.minCompute < best)
                        computeCut = false;
                    if (e.count == 0)
                        continue;
                    if (weight * std::max(m_cache.optCost(e.begin).t, suffixBound(jEnd, q + width, k)) >= best) {
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
                        const int blk2 = m_cache.block(m_cache.rangeClass(jEnd, m_L), m_cache.placementClass(q2, w2), jEnd,
                                                      m_L, q2, w2);
                        const OptEntry last = m_cache.entry(blk2, jEnd, m_L, w2, 0, u, 0);
                        for (int i = 0; i < e.count; ++i) {
                            const OptCost o = m_cache.optCost(e.begin + i);
                            if (weight * o.t + o.e >= best) {
                                ++m_stats.pruned;
                                continue;
                            }
                            for (int p = 0; p < last.count; ++p) {
                                const OptCost o2 = m_cache.optCost(last.begin + p);
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
                        const OptCost o = m_cache.optCost(e.begin + i);
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
                // Deeper pipelines reuse the shallower cells: progress by pipeline depth.
                report((double(k) + double(w + 1) / m_nW) / m_space.maxStages());
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
            c.option = m_cache.options(w, j, p.jEnd)[p.opt];
            stages.push_back(c);
            j = p.jEnd;
            w = p.w2;
            point = p.succ;
            if (point <= kLastStage) {
                c.firstLayer = j;
                c.endLayer = m_L;
                c.option = m_cache.options(w, j, m_L)[kLastStage - point];
                stages.push_back(c);
            }
        }
        return m_space.makePlan(m_cfg, stages);
    }

    void runInterleaved(const OuterConfig &cfg)
    {
        setupConfig(cfg);
        const std::vector<InterleavedChoice> choices = m_space.interleavedChoices(cfg);
        for (size_t ci = 0; ci < choices.size(); ++ci) {
            const InterleavedChoice &c = choices[ci];
            if ((ci & 15) == 0)
                report(double(ci) / double(choices.size()));
            poll();
            ++m_stats.states;
            // Compute bound with the interleaved bubble: T >= (m + (pp-1)/v) * max(device
            // seconds / devices, slowest layer) (docs/planner.md, "bounds").
            const double m = cfg.numMicroBatches;
            const double bubble = (m + double(c.pp - 1) / c.virtualStages) / m;
            if (bubble * lowerBound(cfg, double(c.pp) * c.option.width()) >= best) {
                ++m_stats.pruned;
                continue;
            }
            const std::vector<StageChoice> chunks = m_space.interleavedChunks(c);
            const double t = m_cache.interleavedTime(c, chunks, best);
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
    if (cancel.cancelled()) {  // cancelled before it started: cancelled, not refused
        PlanResult cancelled;
        cancelled.cancelled = true;
        cancelled.message = "search cancelled";
        return cancelled;
    }
    return runSearch(topo, model, options, [&](const PlanSpace &space, SearchStats &stats) {
        Search search(space, cancel, stats);
        const std::vector<OuterConfig> configs = search.order(space.configs());
        for (const OuterConfig &c : configs)
            search.seed(c);
        for (size_t i = 0; i < configs.size(); ++i) {
            search.setProgress(&progress, i, configs.size());
            search.run(configs[i]);
            search.report(1.0);
        }
        return SearchIncumbent{search.best, search.bestPlan, search.obstacle};
    }, SearchKind::Nest);
}

} // namespace nest

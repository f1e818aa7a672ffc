#include "NestPlanner.h"
#include "NestTuning.h"

#include "Limits.h"
#include "PlanSignature.h"
#include "KeptFront.h"
#include "Pipeline.h"
#include "PositionBound.h"
#include "SearchEstimate.h"
#include "SearchRun.h"
#include "StageCostCache.h"
#include "ZeroTrafficBound.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <system_error>
#include <thread>
#include <tuple>

namespace nest {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A DP cell (docs/planner.md): the best suffixes covering layers [firstLayer, L) with
// stagesAfter + 1 stages, the first of width index `width` at position `position`, whose
// boundary with the stage before has link id `prevLink` (0 = none: the first stage).
struct Cell {
    int stagesAfter;  // k
    int firstLayer;   // j
    int position;     // q
    int prevLink;     // v
    int width;        // w, an index into the widths
};

// A point of a DP cell's Pareto front of (max t, max extra e) over the suffix.
struct Point {
    double t, e;
    int jEnd;   // end layer of the cell's first stage
    int opt;    // its option index
    int w2;     // width index of the next stage, -1 for the last stage
    int succ;   // index of the successor point in the pool, -1 for the last stage,
                // kLastStage - o when the successor is the last stage with option o
};
// topK > 1: a point with the id of its suffix's signature (stage choices and boundary tiers).
struct SignedPoint {
    Point point;
    int sig;
};
constexpr int kLastStage = -2;

struct Span {
    int begin = 0, count = 0;
};

class Search {
    const NestTuning m_tuning;

public:
    // `sums` serves the space's inputs (LayerSumsStore::serves()) and outlives the search.
    Search(const PlanSpace &space, const CancelToken &cancel, SearchStats &stats, const NestTuning &tuning,
           LayerSumsStore &sums)
        : m_tuning(tuning), m_space(space), m_topo(space.topology()), m_model(space.model()), m_cancel(cancel),
          m_stats(stats), m_cache(space, cancel, stats, obstacle, sums, std::max(1, space.options().topK)),
          m_L(space.layerCount()), m_keep(std::max(1, space.options().topK)),
          m_has1F1B(std::find(space.options().schedules.begin(), space.options().schedules.end(),
                              Schedule::OneFOneB) != space.options().schedules.end()),
          m_widths(m_cache.widths()), m_ranges(m_cache, space.model()),
          m_positionBound(m_cache, m_ranges, m_L, space.maxStages(), stats, tuning)
    {
    }

    // The incumbent: with topK = 1 the best value found and its plan; with topK = K > 1 the
    // K-th best value among the best plans of distinct signatures (PlanSignature.h), +inf
    // while fewer are known. Every bound below prunes against it.
    double best = kInf;
    Plan bestPlan;
    MemoryObstacle obstacle;

    // planWithBound(): `value` becomes the incumbent without a plan; if nothing beats it,
    // nothing is found.
    void bound(double value)
    {
        if (value < best) {
            best = value;
            m_bestHasPlan = false;
        }
    }

    // topK = 1: the value of the last plan offered (+inf: none), and that plan. bound()
    // lowers `best` without touching them.
    double offered = kInf;
    Plan offeredPlan() const { return m_bestRecipe.plan(m_space, bestPlan); }

    // A second search of the same space starts from this one's incumbent (runParallel()).
    void adoptIncumbent(const Search &o)
    {
        best = o.best;
        bestPlan = o.bestPlan;
        m_bestHasPlan = o.m_bestHasPlan;
        m_bestRecipe = o.m_bestRecipe;
        m_balancedValue = o.m_balancedValue;
        m_balancedRecipe = o.m_balancedRecipe;
        offered = o.offered;
    }

    // What the search leaves (SearchRun.h).
    SearchIncumbent incumbent() const
    {
        SearchIncumbent r{m_bestHasPlan ? best : kInf, m_bestRecipe.plan(m_space, bestPlan), obstacle, {}};
        if (!m_bestHasPlan && m_balancedValue < kInf && best == std::nextafter(m_balancedValue, kInf)) {
            r.value = m_balancedValue;  // nothing else reached it (see seed())
            r.plan = m_balancedRecipe.plan(m_space, Plan());
        }
        if (m_keep > 1) {
            r.value = m_top.empty() ? kInf : m_top.front().value;
            r.plan = m_top.empty() ? Plan() : m_top.front().plan;
            for (const Ranked &t : m_top)
                r.top.push_back({t.value, t.plan});
        }
        return r;
    }

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
                          bestValue() < kInf ? bestValue() : 0.0);
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
            // The order's key stays the one-device-type bound (0 with several types): the
            // order decides which of equal plans is met first, the cuts below do not.
            const double lb = m_topo.deviceTypes.size() == 1 ? lowerBound(configs[i]) : 0.0;
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
        setupConfig(cfg);
        // The traffic bound needs the point's placements (docs/planner.md, "ZeRO-3 that
        // memory forces").
        if (zeroTrafficBound(m_space, m_cache) >= best) {
            ++m_stats.configsSkipped;
            if (m_tuning.zeroBoundCuts)
                ++*m_tuning.zeroBoundCuts;
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
        // A seed is a plan of the point, so its value is at least the point's lower bound:
        // where that is already >= best, it could neither be offered nor bound the search
        // (both need a value below best), as run() skips the point for the same reason. So
        // is a width's: its seeds hold at most stages * width devices, and the bound with
        // that many usable devices decides. The width picked below may then differ, but the
        // balanced seed only ever bounds the search just above a plan of the space, which
        // leaves the plan it returns unchanged.
        if (lowerBound(cfg) >= best)
            return;
        setupConfig(cfg);
        int bestWidth = -1;
        double bestSeed = kInf, bestSeedT = 0;
        for (int wIdx = 0; wIdx < m_nW; ++wIdx) {
            const int stages = std::min(m_space.maxStages(), cfg.positions / m_widths[wIdx]);
            if (stages < 1 || lowerBound(cfg, double(stages) * m_widths[wIdx]) >= best)
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
            !balancedCuts(bestWidth, std::min(m_space.maxStages(), cfg.positions / m_widths[bestWidth]), bestSeedT))
            return;
        if (m_keep > 1) {
            seedValue(bestWidth);
            return;
        }
        const double weight = pipelineWeight(m_cfg.numMicroBatches, static_cast<int>(m_seedChunks.size()));
        double maxT = 0, maxE = 0;
        if (!costSeedStages(bestWidth, weight) || !pickSeedOptions(bestWidth, maxT, maxE))
            return;
        const double t = iterationSeconds(weight, maxT, maxE);
        if (t < best && std::nextafter(t, kInf) < best) {
            m_balancedValue = t;
            m_balancedRecipe = {true, m_cfg, m_seedChunks};
            bound(std::nextafter(t, kInf));
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
    const int m_keep;          // SearchOptions::topK (>= 1)
    bool m_bestHasPlan = true; // false while `best` is planWithBound()'s bound
    double m_balancedValue = kInf;  // seed(): the best balanced seed, a bound (topK = 1)
    // A plan as its outer point and stage choices, made (PlanSpace::makePlan) only when the
    // search returns it: on a wide cluster a plan is hundreds of thousands of device ids,
    // and the incumbent improves hundreds of times.
    struct Recipe {
        bool set = false;
        OuterConfig cfg;
        std::vector<StageChoice> stages;
        Plan plan(const PlanSpace &space, const Plan &otherwise) const
        {
            return set ? space.makePlan(cfg, stages) : otherwise;
        }
    };
    Recipe m_bestRecipe;  // topK = 1: the incumbent's plan when it came from stage choices
    Recipe m_balancedRecipe;
    const bool m_has1F1B;

    // topK > 1 (docs/planner.md, "The best K plans"): the best plan of each signature seen,
    // by value, at most m_keep; the signature ids of the pool's points (parallel to
    // m_points) and of the candidates (parallel to m_scratch); the ids themselves.
    struct Ranked {
        double value;
        std::vector<int> sig;
        Plan plan;
    };
    std::vector<Ranked> m_top;
    std::vector<int> m_sig;
    std::vector<std::vector<int>> m_scratchSig;
    std::vector<SignedPoint> m_signedTmp;
    FlatHashMap<int> m_sigIds;     // (stage config id, boundary tier, successor id) -> id
    FlatHashMap<int> m_configIds;  // StageConfig::key() -> id
    int m_sigCount = 0, m_configCount = 0;

    // Per outer point.
    OuterConfig m_cfg;
    const std::vector<int> &m_widths;                 // m_cache.widths()
    int m_nW = 0;
    FlatHashMap<Span, true> m_memo;                   // DP cells
    std::vector<Point> m_points;
    std::vector<std::vector<Point>> m_scratch;
    std::vector<StageChoice> m_seedChunks;            // seed(): the uniform pipeline
    std::vector<std::vector<OptCost>> m_seedCosts;    // seed(): feasible options per stage
    double m_seedT = 0;                               // seed(): the pipeline's max t
    StagePlan m_seedStage;                            // seed(): scratch
    std::vector<int> m_cutColumn;                     // balancedCuts(): (s, j) -> its maxima
    std::vector<std::vector<double>> m_cutMaxima;     // balancedCuts(): running maxima
    std::vector<double> m_cutLast;                    // balancedCuts(): the last stage's value per j

    // Range classes of the periodic part of the model, without a layer sequence per pair.
    PeriodicRanges m_ranges;
    // The positions a suffix needs at least (docs/planner.md, "Positions needed").
    PositionBound m_positionBound;

    // Per (micro-batch, widest width that fits the positions, dp with MoE layers else 0):
    // the bound's options.
    std::map<std::tuple<int, int, int>, LayerComputeBound> m_bounds;

    double bestValue() const { return m_keep > 1 ? (m_top.empty() ? kInf : m_top.front().value) : best; }

    // A plan of value t < best: with topK = 1 the new incumbent; with topK > 1 the best of its
    // signature unless one as good is known, and `best` the K-th best value then.
    void offer(double t, Plan plan)
    {
        if (m_keep == 1) {
            bestPlan = std::move(plan);
            m_bestRecipe.set = false;
            becomeIncumbent(t);
            return;
        }
        std::vector<int> sig = planSignature(plan, m_topo);
        auto same = std::find_if(m_top.begin(), m_top.end(), [&](const Ranked &r) { return r.sig == sig; });
        if (same != m_top.end()) {
            if (!(t < same->value))
                return;
            m_top.erase(same);
        }
        auto at = std::upper_bound(m_top.begin(), m_top.end(), t,
                                   [](double v, const Ranked &r) { return v < r.value; });
        m_top.insert(at, Ranked{t, std::move(sig), std::move(plan)});
        if (static_cast<int>(m_top.size()) > m_keep)
            m_top.pop_back();
        best = static_cast<int>(m_top.size()) == m_keep ? m_top.back().value : kInf;
    }

    // offer() of the plan of `stages` at the current point, made only if it is returned.
    void offerStages(double t, const std::vector<StageChoice> &stages)
    {
        if (m_keep > 1) {
            offer(t, m_space.makePlan(m_cfg, stages));
            return;
        }
        m_bestRecipe = {true, m_cfg, stages};
        becomeIncumbent(t);
    }

    // topK = 1: `t` is the incumbent's value, its plan just recorded by the caller.
    void becomeIncumbent(double t)
    {
        best = t;
        m_bestHasPlan = true;
        offered = t;
    }

    // topK > 1: the id of a suffix whose first stage has option `c`, whose boundary to the
    // next stage crosses `tier` (-1: none, the last stage) and whose rest has id `next`.
    int suffixSig(const StageConfig &c, int tier, int next)
    {
        const FlatKey ck = c.key();
        int config = -1;
        if (!m_configIds.find(ck, config)) {
            config = m_configCount++;
            m_configIds.insert(ck, config);
        }
        const FlatKey key{(static_cast<uint64_t>(config) << 32) | static_cast<uint32_t>(tier + 1),
                          static_cast<uint64_t>(static_cast<uint32_t>(next))};
        int id = -1;
        if (!m_sigIds.find(key, id)) {
            id = ++m_sigCount;
            m_sigIds.insert(key, id);
        }
        return id;
    }
    int tierOf(int link) const { return link == 0 ? -1 : m_cache.link(link).level; }

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
        const double bytes = double(m_cells) * kBytesPerSearchCell + double(m_points.capacity()) * sizeof(Point);
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

    const LayerComputeBound *m_bound = nullptr;      // of the current config
    const LayerComputeBound *m_seedBound = nullptr;  // the same with one device type, else null
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

    // Whether the k stages after the cell's first can be wide enough (docs/planner.md,
    // "Narrow stages"): each holds a layer of [j+1, L) and a stage of width w has
    // weight * t >= weight * d / w for each of its layers' device-seconds d, which must stay
    // below the incumbent. One of them may hold the lightest layer, the others a layer at
    // least as heavy as the second lightest; each needs the narrowest width that allows it.
    bool suffixFits(const Cell &cell, double weight) const
    {
        if (!m_bound || cell.stagesAfter == 0)
            return true;
        const int j = cell.firstLayer + 1;
        const int narrowest = narrowestWidth(weight * m_bound->suffixLightest[j]);
        const int narrowOthers = cell.stagesAfter > 1 ? narrowestWidth(weight * m_bound->suffixSecondLightest[j]) : 0;
        if (narrowest < 0 || narrowOthers < 0)
            return false;
        return double(cell.position) + m_widths[cell.width] + narrowest + double(cell.stagesAfter - 1) * narrowOthers <=
               m_cfg.positions;
    }
    // The narrowest width w of the point with weightedDeviceSeconds / w < best; -1 if none.
    int narrowestWidth(double weightedDeviceSeconds) const
    {
        for (int w = 0; w < m_nW; ++w)
            if (weightedDeviceSeconds / m_widths[w] < best)
                return m_widths[w];
        return -1;
    }

    const LayerComputeBound &bounds(const OuterConfig &cfg)
    {
        int widest = 0;
        for (int w : m_space.widths())
            if (w <= cfg.positions)
                widest = w;
        // With MoE layers the bound depends on dp too (layerComputeBound()).
        const std::tuple<int, int, int> key(cfg.microBatch, widest, m_space.hasMoe(0, m_L) ? cfg.dp : 0);
        auto it = m_bounds.find(key);
        if (it == m_bounds.end()) {
            poll();
            it = m_bounds.emplace(key, layerComputeBound(m_space, cfg, m_stats)).first;
        }
        return it->second;
    }

    // T >= m * max(sum of per-layer device-seconds / usable devices, slowest layer)
    // (docs/planner.md); with several device types each layer's compute is the least over
    // the types' rates (layerComputeBound), so it bounds every placement too.
    double lowerBound(const OuterConfig &cfg, double usable)
    {
        const LayerComputeBound &b = bounds(cfg);
        return cfg.numMicroBatches * std::max(b.deviceSeconds / usable, b.slowestLayer);
    }

    double lowerBound(const OuterConfig &cfg)
    {
        return lowerBound(cfg, m_space.usablePositions(cfg));
    }

    void setupConfig(const OuterConfig &cfg)
    {
        m_cache.setConfig(cfg);
        m_cfg = cfg;
        m_nW = m_cache.widthCount();
        m_memo.clear();
        m_points.clear();
        m_sig.clear();
        m_cells = 0;
        m_scratch.resize(m_space.maxStages() + 1);
        if (m_keep > 1)
            m_scratchSig.resize(m_space.maxStages() + 1);
        m_bound = &bounds(cfg);
        // The seeds' cuts and the positions relaxation keep to one device type, as before:
        // the seeds' plans decide ties, and the relaxation's summaries assume one capacity.
        m_seedBound = m_topo.deviceTypes.size() == 1 ? m_bound : nullptr;
        m_positionBound.setConfig(m_seedBound);
        m_rootWeight = 0;
    }

    // Whether a suffix [j, L) in k + 1 stages from position q needs more positions than the
    // point has (docs/planner.md, "Positions needed").
    // Only once the point's recurrence has grown past NestTuning::relaxAfterCells cells: on
    // the many small points the relaxation would cost more than the cells it saves.
    bool tooFewPositions(int k, int j, int q)
    {
        if (m_cells <= m_tuning.relaxAfterCells ||
            q + m_positionBound.need(k, j, best, m_rootWeight, m_cfg.positions - q) <= m_cfg.positions)
            return false;
        ++relaxationCuts;
        return true;
    }

public:
    long long relaxationCuts = 0;  // cells and transitions the relaxation ruled out

private:

    // The pipeline weight the bounds use in a cell with k stages after its first: every plan
    // through it has at least k + 1 stages, and at least as many as the root being solved
    // (runDp() solves the roots by depth, ascending, so a cell is only ever reused by roots
    // at least as deep as the one that created it; docs/planner.md, "Root weight").
    double cellWeight(int k) const { return std::max(pipelineWeight(m_cfg.numMicroBatches, k + 1), m_rootWeight); }
    double m_rootWeight = 0;

    // seed(): the value of the pipeline m_seedChunks of width index wIdx (+inf when a stage
    // has no feasible option), offered when it beats the incumbent.
    double seedValue(int wIdx)
    {
        const int stages = static_cast<int>(m_seedChunks.size());
        const double weight = pipelineWeight(m_cfg.numMicroBatches, stages);
        double maxT = 0, maxE = 0;
        if (!costSeedStages(wIdx, weight) || !pickSeedOptions(wIdx, maxT, maxE))
            return kInf;
        const double t = iterationSeconds(weight, maxT, maxE);
        if (t < best)
            offerStages(t, m_seedChunks);
        return t;
    }

    // seed(): the least per-micro-batch time of a feasible option of the stage [j, jEnd) as
    // stage s of `stages` of width index wIdx at positions 0, w, 2w, ... (+inf: none fits).
    double fastestOption(int wIdx, int s, int stages, int j, int jEnd)
    {
        const int w = m_widths[wIdx];
        const int q = s * w;
        const int blk = m_cache.block(m_ranges.rangeClass(j, jEnd), m_cache.placementClass(q, wIdx), j, jEnd, q, wIdx);
        const int v = s > 0 ? m_cache.linkId(q, wIdx, wIdx) : 0;
        const int u = s + 1 < stages ? m_cache.linkId(q + w, wIdx, wIdx) : 0;
        const OptEntry e = m_cache.entry(blk, j, jEnd, wIdx, stages - 1 - s, v, u);
        return e.count > 0 ? m_cache.optCost(e.begin).t : kInf;  // t ascending
    }

    // seed(): cuts into m_seedChunks for `stages` stages of width index wIdx whose largest
    // fastest-option time is (nearly) the least: bisection on that time `limit` below
    // `high` (a time the compute cut reached), each stage filled greedily while its fastest
    // feasible option stays within the limit. False when no limit up to `high` works.
    bool balancedCuts(int wIdx, int stages, double high)
    {
        if (stages < 2 || !(high < kInf))
            return false;
        std::vector<int> cuts, found;
        // The bisection reads the same values fill after fill: per (stage s, first layer j)
        // the running maxima of fastestOption(.., j, e) for e = j + 1, j + 2, ... as far as
        // a fill has read them, and per j the last stage's value. A fill then reads what
        // the loop "extend the stage while the next end stays within the limit" would, in
        // the same order, and takes the end from the maxima (the same ends, the same
        // cache entries made in the same order).
        m_cutColumn.assign(static_cast<size_t>(stages) * static_cast<size_t>(m_L), -1);
        m_cutLast.assign(static_cast<size_t>(m_L), -1.0);
        size_t columns = 0;
        auto column = [&](int s, int j) -> std::vector<double> & {
            int &c = m_cutColumn[static_cast<size_t>(s) * static_cast<size_t>(m_L) + static_cast<size_t>(j)];
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
                const int cap = m_L - (stages - 1 - s);  // the last end stage s may take
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
                last = fastestOption(wIdx, stages - 1, stages, j, m_L);
            return last <= limit;
        };
        double low = 0;
        if (!fill(high))
            return false;
        found = cuts;
        for (int i = 0; i < 24 && high - low > 1e-6 * high; ++i) {
            poll();
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
            const int end = s + 1 < stages ? found[static_cast<size_t>(s)] : m_L;
            m_seedChunks.push_back({first, end, StageConfig()});
            first = end;
        }
        return true;
    }

    // seed(): `stages` non-empty stages cut where the compute (the bound's per-layer
    // device-seconds, else the layer count) crosses k / stages of the total.
    void cutByCompute(int stages)
    {
        m_seedChunks.clear();
        int first = 0;
        for (int k = 0; k < stages; ++k) {
            int end = m_L - (stages - 1 - k);
            if (k + 1 < stages && m_seedBound) {
                const double total = m_seedBound->suffixDeviceSeconds[0];
                const double target = total * (k + 1) / stages;
                int e = first + 1;
                while (e < end && total - m_seedBound->suffixDeviceSeconds[e] < target)
                    ++e;
                end = e;
            } else if (k + 1 < stages) {
                end = std::min(end, first + std::max(1, (m_L - first) / (stages - k)));
            }
            m_seedChunks.push_back({first, end, StageConfig()});
            first = end;
        }
    }

    // seed(): every stage's feasible options into m_seedCosts, and m_seedT = the largest over
    // stages of the t of each stage's option with the least weight * t + e. False when a
    // stage has no feasible option.
    bool costSeedStages(int wIdx, double weight)
    {
        const int w = m_widths[wIdx];
        const int stages = static_cast<int>(m_seedChunks.size());
        // Cleared, not reassigned: the lists keep their storage from one seed to the next.
        m_seedCosts.resize(static_cast<size_t>(stages));
        for (std::vector<OptCost> &list : m_seedCosts)
            list.clear();
        m_seedT = 0;
        for (int k = 0; k < stages; ++k) {
            poll();
            const StageChoice &ch = m_seedChunks[static_cast<size_t>(k)];
            const int q = k * w;
            const std::vector<StageConfig> &opts = m_cache.options(wIdx, ch.firstLayer, ch.endLayer);
            const int blk = m_cache.block(m_ranges.rangeClass(ch.firstLayer, ch.endLayer),
                                          m_cache.placementClass(q, wIdx), ch.firstLayer, ch.endLayer, q, wIdx);
            StageContext ctx = m_cache.context();
            ctx.stageIndex = k;
            ctx.numStages = stages;
            const int v = k > 0 ? m_cache.linkId(q, wIdx, wIdx) : 0;
            const int u = k + 1 < stages ? m_cache.linkId(q + w, wIdx, wIdx) : 0;
            if (v != 0)
                ctx.prev = m_cache.link(v);
            if (u != 0)
                ctx.next = m_cache.link(u);
            StagePlan &stage = m_seedStage;
            stage.firstLayer = ch.firstLayer;
            stage.endLayer = ch.endLayer;
            ctx.stage = &stage;
            // Each option's time and extra as finishStageCost() gives them here (kept per
            // block and links: StageCostCache::stageTimes()), its memory at this position.
            const StageCostCache::TimeRow times = m_cache.stageTimes(blk, v, u, ctx, opts);
            std::vector<OptCost> &list = m_seedCosts[static_cast<size_t>(k)];
            double bestValue = kInf, bestT = 0;
            for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
                const StageCost &b = m_cache.base(blk, i);
                const double t = m_cache.timeOf(times, i), e = m_cache.extraOf(times, i);
                ++m_stats.stageCostCalls;
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
    bool pickSeedOptions(int wIdx, double &maxT, double &maxE)
    {
        for (size_t k = 0; k < m_seedChunks.size(); ++k) {
            StageChoice &ch = m_seedChunks[k];
            const OptCost *pick = nullptr;
            for (const OptCost &o : m_seedCosts[k])
                if (o.t <= m_seedT && (!pick || o.e < pick->e || (o.e == pick->e && o.t < pick->t)))
                    pick = &o;
            if (!pick)  // cannot happen with finite costs; never dereference null
                return false;
            ch.option = m_cache.options(wIdx, ch.firstLayer, ch.endLayer)[static_cast<size_t>(pick->opt)];
            maxT = std::max(maxT, pick->t);
            maxE = std::max(maxE, pick->e);
        }
        return true;
    }

    // --- the recurrence (docs/planner.md, "In the code") -----------------------------------
    // cellKey(): hi = stagesAfter (32 bits) | firstLayer (32); lo = position (kPositionBits) |
    // prevLink (StageCostCache::kLinkIdBits) | width index (kWidthIndexBits). Exact for every
    // input the loaders accept.
    static constexpr int kPositionBits = 24;
    static constexpr int kWidthIndexBits = 20;
    static_assert(kPositionBits + StageCostCache::kLinkIdBits + kWidthIndexBits == 64, "cellKey() packs 64 bits");
    static_assert(limits::devices.max < double(uint64_t{1} << kPositionBits), "positions no longer fit cellKey()");
    static_assert(limits::devices.max <= double(uint64_t{1} << kWidthIndexBits),
                  "width indices no longer fit cellKey()");
    static_assert(limits::stages.max < 4294967296.0 && limits::layers.max < 4294967296.0,
                  "stage and layer counts no longer fit cellKey()");

    static FlatKey cellKey(const Cell &c)
    {
        return {(static_cast<uint64_t>(c.stagesAfter) << 32) | static_cast<uint64_t>(c.firstLayer),
                (static_cast<uint64_t>(c.position) << (StageCostCache::kLinkIdBits + kWidthIndexBits)) |
                    (static_cast<uint64_t>(c.prevLink) << kWidthIndexBits) | static_cast<uint64_t>(c.width)};
    }

    // The Pareto front of the best suffixes of `cell` (docs/planner.md): memoised; empty when
    // the suffix bound shows that none can beat the incumbent.
    Span solve(const Cell &cell)
    {
        const FlatKey key = cellKey(cell);
        Span found;
        if (m_memo.find(key, found))
            return found;
        poll();
        ++m_stats.states;
        if ((++m_cells & 4095) == 0)
            checkMemory();
        const double weight = cellWeight(cell.stagesAfter);
        if (weight * suffixBound(cell.firstLayer, cell.position, cell.stagesAfter + 1) >= best ||
            !suffixFits(cell, weight) || tooFewPositions(cell.stagesAfter, cell.firstLayer, cell.position)) {
            // No suffix from here can beat the incumbent (docs/planner.md, "bounds").
            ++m_stats.pruned;
            const Span none{static_cast<int>(m_points.size()), 0};
            m_memo.insert(key, none);
            return none;
        }
        // One scratch list per depth: solve() of the next cell (one stage fewer) uses another.
        std::vector<Point> &candidates = m_scratch[cell.stagesAfter];
        candidates.clear();
        std::vector<int> *sigs = nullptr;
        if (m_keep > 1) {
            sigs = &m_scratchSig[cell.stagesAfter];
            sigs->clear();
        }
        collectCandidates(cell, weight, candidates, sigs);
        const Span span = m_keep > 1 ? appendKeptPoints(candidates, *sigs) : appendFront(candidates);
        m_memo.insert(key, span);
        return span;
    }

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
    int blockOf(const Cell &cell, FirstStage &first)
    {
        if (first.block < 0)
            first.block = m_cache.block(m_ranges.rangeClass(cell.firstLayer, first.end), first.placement,
                                        cell.firstLayer, first.end, cell.position, cell.width);
        return first.block;
    }

    // What one end layer of the first stage says about the longer ones.
    struct EndLayerFacts {
        bool anyFit = false;     // some option of the stage fits in memory
        bool computeCut = true;  // its compute alone reaches the incumbent in every context
        bool costed = false;     // some context was costed at all
    };

    // Every end layer of the cell's first stage, in order, each adding its candidates; two
    // monotone cuts end the scan (more layers never need less memory nor less compute,
    // docs/planner.md).
    void collectCandidates(const Cell &cell, double weight, std::vector<Point> &out, std::vector<int> *sigs)
    {
        const int k = cell.stagesAfter;
        const int width = m_widths[cell.width];
        const int placement = m_cache.placementClass(cell.position, cell.width);
        const int lastEnd = k == 0 ? m_L : m_L - k;
        int firstEnd = k == 0 ? m_L : cell.firstLayer + 1;
        if (k > 0) {
            // The ends whose rest alone cannot beat the incumbent (the first test of
            // addStageBeforeSuffixes) form a prefix: the rest's bound never rises as the end
            // moves right (suffix sums and maxima of LayerComputeBound). Skipped by bisection
            // instead of one by one (docs/planner.md, "Monotonicity in j'"); the first stage's
            // compute test below is monotone the other way, so if it would have ended the scan
            // inside the prefix, it ends it at the prefix's end too.
            const int next = cell.position + m_widths[cell.width];
            auto restTooSlow = [&](int end) { return weight * suffixBound(end, next, k) >= best; };
            if (firstEnd <= lastEnd && restTooSlow(firstEnd)) {
                int lo = firstEnd, hi = lastEnd + 1;  // restTooSlow(lo); hi: none or the first that is not
                while (hi - lo > 1) {
                    const int mid = lo + (hi - lo) / 2;
                    (restTooSlow(mid) ? lo : hi) = mid;
                }
                m_stats.pruned += hi - firstEnd;
                firstEnd = hi;
            }
        }
        for (int end = firstEnd; end <= lastEnd; ++end) {
            // Compute alone already too slow: so is every longer stage.
            if (m_bound &&
                weight * (m_bound->suffixDeviceSeconds[cell.firstLayer] - m_bound->suffixDeviceSeconds[end]) / width >=
                    best) {
                ++m_stats.pruned;
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
    EndLayerFacts addLastStage(const Cell &cell, FirstStage &first, double weight, std::vector<Point> &out,
                               std::vector<int> *sigs)
    {
        EndLayerFacts facts;
        const OptEntry e = m_cache.entry(blockOf(cell, first), cell.firstLayer, first.end, cell.width, 0,
                                         cell.prevLink, 0);
        facts.anyFit = e.fits;
        facts.computeCut = weight * e.minCompute >= best;
        for (int i = 0; i < e.count; ++i) {
            const OptCost o = m_cache.optCost(e.begin + i);
            ++m_stats.transitions;
            if (iterationSeconds(weight, o.t, o.e) >= best) {
                ++m_stats.pruned;
                continue;
            }
            out.push_back({o.t, o.e, first.end, o.opt, -1, -1});
            if (sigs)
                sigs->push_back(suffixSig(m_cache.options(cell.width, cell.firstLayer, first.end)[o.opt], -1, 0));
        }
        return facts;
    }

    // stagesAfter >= 1: the first stage before every next cell (width index w2 at the next
    // position, behind the link u between them) that can still beat the incumbent.
    EndLayerFacts addStageBeforeSuffixes(const Cell &cell, FirstStage &first, double weight, std::vector<Point> &out,
                                         std::vector<int> *sigs)
    {
        EndLayerFacts facts;
        const int k = cell.stagesAfter;
        const int next = cell.position + m_widths[cell.width];
        // Too slow or too wide from here on whatever the next width: nothing to cost.
        if (weight * suffixBound(first.end, next, k) >= best || next + k * m_widths.front() > m_cfg.positions ||
            tooFewPositions(k - 1, first.end, next)) {
            ++m_stats.pruned;
            return facts;
        }
        int lastU = -1;
        OptEntry lastEntry;
        for (int w2 = 0; w2 < m_nW; ++w2) {
            if (next + m_widths[w2] + (k - 1) * m_widths.front() > m_cfg.positions)
                break;
            const int u = m_cache.linkId(next, cell.width, w2);
            if (u != lastU) {
                lastEntry = m_cache.entry(blockOf(cell, first), cell.firstLayer, first.end, cell.width, k,
                                          cell.prevLink, u);
                lastU = u;
            }
            const OptEntry e = lastEntry;
            facts.costed = true;
            facts.anyFit = facts.anyFit || e.fits;
            if (weight * e.minCompute < best)
                facts.computeCut = false;
            if (e.count == 0)
                continue;
            if (weight * std::max(m_cache.optCost(e.begin).t, suffixBound(first.end, next, k)) >= best) {
                ++m_stats.pruned;
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
    void combineWithLastStage(const Cell &last, const OptEntry &e, double weight, std::vector<Point> &out,
                              const StageOf &stageOf, std::vector<int> *sigs)
    {
        if (m_bound && weight * (m_bound->suffixDeviceSeconds[last.firstLayer] / m_widths[last.width]) >= best) {
            ++m_stats.pruned;
            return;
        }
        const int blk = m_cache.block(m_ranges.rangeClass(last.firstLayer, m_L),
                                      m_cache.placementClass(last.position, last.width), last.firstLayer, m_L,
                                      last.position, last.width);
        const OptEntry lastOptions = m_cache.entry(blk, last.firstLayer, m_L, last.width, 0, last.prevLink, 0);
        combine(e, lastOptions.count, last, weight, out, stageOf, sigs, [&](int p) {
            const OptCost o2 = m_cache.optCost(lastOptions.begin + p);
            return SuffixPoint{o2.t, o2.e, kLastStage - o2.opt};
        }, [&](int p) {
            const OptCost o2 = m_cache.optCost(lastOptions.begin + p);
            return suffixSig(m_cache.options(last.width, last.firstLayer, m_L)[o2.opt], -1, 0);
        });
    }

    // stagesAfter >= 2: the first stage's options against the front of the next cell.
    void combineWithSuffixes(const Cell &suffix, const OptEntry &e, double weight, std::vector<Point> &out,
                             const StageOf &stageOf, std::vector<int> *sigs)
    {
        const Span sub = solve(suffix);
        combine(e, sub.count, suffix, weight, out, stageOf, sigs, [&](int p) {
            const Point &sp = m_points[sub.begin + p];
            return SuffixPoint{sp.t, sp.e, sub.begin + p};
        }, [&](int p) { return m_sig[static_cast<size_t>(sub.begin + p)]; });
    }

    // What combine() pairs a first-stage option with: a suffix's (t, e) and the successor
    // the new point records.
    struct SuffixPoint {
        double t, e;
        int succ;
    };

    // Every option of the first stage (entry e) with each of `count` suffix points
    // (suffixAt(p)), kept when the pair can still beat the incumbent.
    // With topK > 1 (sigs given) every suffix point is paired (the fronts are not strict
    // then) and each new point's signature id goes to sigs (suffixSigAt(p): the suffix's).
    template <typename SuffixAt, typename SuffixSigAt>
    void combine(const OptEntry &e, int count, const Cell &suffix, double weight, std::vector<Point> &out,
                 const StageOf &stageOf, std::vector<int> *sigs, SuffixAt suffixAt, SuffixSigAt suffixSigAt)
    {
        for (int i = 0; i < e.count; ++i) {
            const OptCost o = m_cache.optCost(e.begin + i);
            if (iterationSeconds(weight, o.t, o.e) >= best) {
                ++m_stats.pruned;
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
                ++m_stats.transitions;
                const double t = std::max(o.t, next.t), extra = std::max(o.e, next.e);
                if (iterationSeconds(weight, t, extra) >= best) {
                    ++m_stats.pruned;
                    continue;
                }
                out.push_back({t, extra, suffix.firstLayer, o.opt, suffix.width, next.succ});
                if (sigs)
                    sigs->push_back(suffixSig(m_cache.options(stageOf.width, stageOf.first, stageOf.end)[o.opt],
                                              tierOf(suffix.prevLink), suffixSigAt(p)));
            }
        }
    }

    // On a front of `count` points (t strictly ascending, e strictly descending): the first
    // index whose t is above `t` / whose e is at most `e` (count when none).
    template <typename Key>
    static int firstAbove(int count, double t, Key key)
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
    static int firstAtMost(int count, double e, Key key)
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
    static bool tieOrder(const Point &x, const Point &y)
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
    Span appendFront(std::vector<Point> &candidates)
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
    Span appendKeptPoints(const std::vector<Point> &candidates, const std::vector<int> &sigs)
    {
        m_signedTmp.clear();
        for (size_t i = 0; i < candidates.size(); ++i)
            m_signedTmp.push_back({candidates[i], sigs[i]});
        sortByTimeThenExtra(m_signedTmp, tieOrder, [](const SignedPoint &s) -> const Point & { return s.point; });
        Span span;
        span.begin = static_cast<int>(m_points.size());
        KeptFilter filter(m_keep);  // the signatures are the classes
        for (const SignedPoint &c : m_signedTmp) {
            if (filter.offer(c.point.e, c.sig)) {
                m_points.push_back(c.point);
                m_sig.push_back(c.sig);
            }
        }
        span.count = static_cast<int>(m_points.size()) - span.begin;
        return span;
    }

    // After setupConfig(cfg).
    void runDp(const OuterConfig &cfg)
    {
        if (m_nW == 0)
            return;
        const int m = cfg.numMicroBatches;
        for (int k = 0; k < m_space.maxStages(); ++k) {
            m_rootWeight = pipelineWeight(m, k + 1);
            for (int w = 0; w < m_nW; ++w) {
                if (m_widths[w] + k * m_widths.front() > cfg.positions)
                    break;
                const Span s = solve(Cell{k, 0, 0, 0, w});
                for (int p = 0; p < s.count; ++p) {
                    const Point &pt = m_points[s.begin + p];
                    const double t = iterationSeconds(pipelineWeight(m, k + 1), pt.t, pt.e);
                    if (t < best)
                        offerStages(t, reconstruct(w, s.begin + p));
                }
                // Deeper pipelines reuse the shallower cells: progress by pipeline depth.
                report((double(k) + double(w + 1) / m_nW) / m_space.maxStages());
            }
        }
    }

    std::vector<StageChoice> reconstruct(int w, int point)
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
        return stages;
    }

    // After setupConfig(cfg).
    void runInterleaved(const OuterConfig &cfg)
    {
        const std::vector<InterleavedChoice> choices = m_space.interleavedChoices(cfg);
        // The choices come by (pp, v), then width and option: the chunk cuts depend on (pp, v)
        // only, so they are made once per pair and the option set into them.
        std::vector<StageChoice> chunks;
        int chunksPp = 0, chunksV = 0;
        for (size_t ci = 0; ci < choices.size(); ++ci) {
            const InterleavedChoice &c = choices[ci];
            if ((ci & 15) == 0)
                report(double(ci) / double(choices.size()));
            poll();
            ++m_stats.states;
            // Compute bound with the interleaved bubble: T >= (m + (pp-1)/v) * max(device
            // seconds / devices, slowest layer) (docs/planner.md, "bounds").
            const double bubble =
                interleavedWeight(cfg.numMicroBatches, c.pp, c.virtualStages) / double(cfg.numMicroBatches);
            if (bubble * lowerBound(cfg, double(c.pp) * c.option.width()) >= best) {
                ++m_stats.pruned;
                continue;
            }
            if (c.pp != chunksPp || c.virtualStages != chunksV) {
                chunks = m_space.interleavedChunks(c);
                chunksPp = c.pp;
                chunksV = c.virtualStages;
            } else {
                m_space.setInterleavedOption(chunks, c.option);
            }
            // +inf also when a pipeline position does not fit in memory (most fast candidates
            // of a deep model do not): evaluate() would find the plan infeasible, so it is
            // skipped without building and evaluating it.
            const double t = m_cache.interleavedTime(c, chunks, best);
            m_stats.stageCostCalls += static_cast<long long>(chunks.size());
            ++m_stats.transitions;
            if (t >= best) {
                ++m_stats.pruned;
                continue;
            }
            const Plan plan = m_space.makeInterleavedPlan(cfg, c);
            const Report r = evaluate(plan, m_topo, m_model, m_space.costOptions());
            if (!r.feasible) {
                ++m_stats.pruned;
                continue;
            }
            if (r.iterationTime < best)
                offer(r.iterationTime, plan);
        }
    }
};

} // namespace

namespace {

void addStats(SearchStats &to, const SearchStats &from)
{
    to.states += from.states;
    to.transitions += from.transitions;
    to.pruned += from.pruned;
    to.stageCostCalls += from.stageCostCalls;
    to.configs += from.configs;
    to.configsSkipped += from.configsSkipped;
}

// New layer sums for the searches of `space` (its model, sequence length and cost options).
std::unique_ptr<LayerSumsStore> newLayerSums(const PlanSpace &space)
{
    return std::make_unique<LayerSumsStore>(space.model(), space.seqLength(), space.costOptions());
}

// SearchOptions::threads > 1 (docs/planner.md, "Outer points in parallel"): the points after
// the seeds, in the search order, each to whichever of `threads` searches of their own (own
// caches) is free, which share only the best value found so far. A search takes another's
// value v as the bound just above it (as planWithBound()), so it still meets every plan of
// value v or below: the point of the global order where the sequential search first meets
// its optimum meets the same plan here (its cells hold plans below every bound it sees, so
// none of them is cut), and no earlier point meets a plan that good (else the sequential
// search would have met it there). The result is the lowest value found, ties to the
// earliest point: the sequential search's plan, bit for bit. Only the counters differ (each
// search prunes with what it knows when).
SearchIncumbent runParallel(Search &main, const std::vector<OuterConfig> &configs, int threads,
                            const PlanSpace &space, SearchStats &stats, const CancelToken &cancel,
                            const NestTuning &tuning, const ProgressFn &progress, long long *relaxationCuts)
{
    const SearchIncumbent seeded = main.incumbent();
    std::atomic<double> shared{kInf};
    std::atomic<bool> stop{false};
    std::atomic<size_t> next{0};  // the next point in the order, to whichever search is free
    struct Found {
        double value = kInf;
        size_t index = 0;
        Plan plan;
        std::exception_ptr error;
        long long cuts = 0;
        SearchStats stats;
    };
    std::vector<Found> found(static_cast<size_t>(threads));
    // Each search takes its points in the order (the strict `< best` of its own offers
    // relies on it): the next one free, or with NestTuning::parallelFirstParity the second
    // search those of that parity and the first search the others.
    const int parity = tuning.parallelFirstParity;
    std::vector<size_t> cursor = {parity == 0 ? size_t{1} : size_t{0}, static_cast<size_t>(std::max(parity, 0))};
    auto take = [&](int t) -> size_t {
        if (parity < 0)
            return next.fetch_add(1);
        if (t > 1 || cursor[static_cast<size_t>(t)] >= configs.size())
            return configs.size();
        const size_t i = cursor[static_cast<size_t>(t)];
        cursor[static_cast<size_t>(t)] += 2;
        return i;
    };
    auto work = [&](int t, Search &search) {
        Found &f = found[static_cast<size_t>(t)];
        try {
            for (size_t i = take(t); i < configs.size() && !stop.load(); i = take(t)) {
                const double v = shared.load();
                if (v < kInf && std::nextafter(v, kInf) < search.best)
                    search.bound(std::nextafter(v, kInf));
                if (t == 0)
                    search.setProgress(&progress, i, configs.size());
                const double before = search.offered;
                search.run(configs[i]);
                if (t == 0)
                    search.report(1.0);
                if (search.offered < before) {
                    f.value = search.offered;
                    f.index = i;
                    double cur = shared.load();
                    while (f.value < cur && !shared.compare_exchange_weak(cur, f.value)) {
                    }
                }
            }
            if (f.value < kInf)
                f.plan = search.offeredPlan();
        } catch (...) {
            f.error = std::current_exception();
            stop.store(true);
        }
        f.cuts = search.relaxationCuts;
    };
    // The other searches take the seeded incumbent before any of them (main included) runs.
    // Each has its own layer sums (a store serves one search at a time).
    std::vector<std::unique_ptr<LayerSumsStore>> sums;
    std::vector<std::unique_ptr<Search>> others;
    for (int t = 1; t < threads; ++t) {
        sums.push_back(newLayerSums(space));
        others.push_back(
            std::make_unique<Search>(space, cancel, found[static_cast<size_t>(t)].stats, tuning, *sums.back()));
        others.back()->adoptIncumbent(main);
    }
    // A search whose thread cannot be started takes no points: the others take them all
    // (the result does not depend on which search runs a point, nor when).
    std::vector<std::thread> workers;
    try {
        for (int t = 1; t < threads; ++t)
            workers.emplace_back([&, t] { work(t, *others[static_cast<size_t>(t) - 1]); });
    } catch (const std::system_error &) {
    }
    if (parity >= 0)
        for (std::thread &w : workers)
            w.join();
    work(0, main);
    for (std::thread &w : workers)
        if (w.joinable())
            w.join();
    for (int t = 1; t < threads; ++t)
        addStats(stats, found[static_cast<size_t>(t)].stats);
    long long cuts = 0;
    for (const Found &f : found) {
        if (f.error)
            std::rethrow_exception(f.error);
        cuts += f.cuts;
    }
    if (relaxationCuts)
        *relaxationCuts = cuts;
    // The closest memory miss of all searches (the message when nothing fits; among equal
    // ratios the calling thread's, then the others' in order).
    SearchIncumbent r = seeded;
    r.obstacle = main.obstacle;
    for (const std::unique_ptr<Search> &o : others)
        if (o->obstacle.ratio < r.obstacle.ratio)
            r.obstacle = o->obstacle;
    Found *winner = nullptr;
    for (Found &f : found)
        if (f.value < kInf && (!winner || f.value < winner->value || (f.value == winner->value && f.index < winner->index)))
            winner = &f;
    if (!winner)
        return r;
    r.value = winner->value;
    r.plan = std::move(winner->plan);
    return r;
}

PlanResult runNest(const Topology &topo, const ModelProfile &model, const SearchOptions &options, double bound,
                   const ProgressFn &progress, const CancelToken &cancel, const NestTuning &tuning,
                   long long *relaxationCuts, std::unique_ptr<LayerSumsStore> *kept = nullptr)
{
    if (cancel.cancelled())
        return cancelledBeforeStart();
    return runSearch(topo, model, options, [&](const PlanSpace &space, SearchStats &stats) {
        // The caller's layer sums when they are this search's (their values are the ones
        // this search would compute: LayerSumsStore), else new ones (kept for the caller).
        std::unique_ptr<LayerSumsStore> local;
        std::unique_ptr<LayerSumsStore> &store = kept ? *kept : local;
        if (!store || !store->serves(space.model(), space.seqLength(), space.costOptions()) ||
            !store->hasRoom(static_cast<int>(space.topology().deviceTypes.size()),
                            static_cast<int>(space.options().microBatches.size())))
            store = newLayerSums(space);
        store->beginSearch();
        Search search(space, cancel, stats, tuning, *store);
        // Interleaved points first: each is a short list of closed forms, and its optimum
        // is often the incumbent that lets the bounds cut the 1F1B recurrence (any order gives
        // the same optimum, docs/planner.md).
        std::vector<OuterConfig> configs = search.order(space.configs());
        std::stable_partition(configs.begin(), configs.end(),
                              [](const OuterConfig &c) { return c.schedule == Schedule::Interleaved; });
        for (const OuterConfig &c : configs)
            search.seed(c);
        // A known value, strictly above it: every plan the search would return without it
        // (value <= bound) still passes every `>= best` cut, and the same one is first.
        if (options.topK <= 1 && bound < kInf)
            search.bound(std::nextafter(bound, kInf));
        // No more searches than points (each holds its own caches).
        const int most = static_cast<int>(std::clamp<size_t>(configs.size(), 1, static_cast<size_t>(limits::searchThreads.max)));
        const int threads = options.topK <= 1 ? std::clamp(options.threads, 1, most) : 1;
        if (threads > 1)
            return runParallel(search, configs, threads, space, stats, cancel, tuning, progress, relaxationCuts);
        for (size_t i = 0; i < configs.size(); ++i) {
            search.setProgress(&progress, i, configs.size());
            search.run(configs[i]);
            search.report(1.0);
        }
        if (relaxationCuts)
            *relaxationCuts = search.relaxationCuts;
        return search.incumbent();
    }, SearchKind::Nest);
}

} // namespace

PlanResult NestPlanner::plan(const Topology &topo, const ModelProfile &model,
                             const SearchOptions &options, const ProgressFn &progress,
                             const CancelToken &cancel) const
{
    return planWithBound(topo, model, options, kInf, progress, cancel);
}

PlanResult NestPlanner::planWithBound(const Topology &topo, const ModelProfile &model,
                                      const SearchOptions &options, double bound, const ProgressFn &progress,
                                      const CancelToken &cancel, std::unique_ptr<LayerSumsStore> *kept) const
{
    return runNest(topo, model, options, bound, progress, cancel, NestTuning(), nullptr, kept);
}

PlanResult planNestTuned(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                         const NestTuning &tuning, long long *relaxationCuts)
{
    return runNest(topo, model, options, kInf, ProgressFn(), CancelToken(), tuning, relaxationCuts);
}

} // namespace nest

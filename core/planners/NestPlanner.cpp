#include "NestPlanner.h"
#include "NestTuning.h"

#include "IncumbentSeed.h"
#include "InterleavedSearch.h"
#include "Limits.h"
#include "NestRecurrence.h"
#include "Pipeline.h"
#include "SearchEstimate.h"
#include "SearchRun.h"
#include "SearchState.h"
#include "SuffixBounds.h"
#include "ZeroTrafficBound.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <memory>
#include <system_error>
#include <thread>

namespace nest {

namespace {

// One NEST search of a plan space: the outer loop over its points (docs/planner.md), each
// 1F1B/GPipe point by the recurrence (NestRecurrence), each interleaved one by its closed
// forms (InterleavedSearch), after the incumbent seeding (IncumbentSeed), all pruned by the
// bounds (SuffixBounds, PositionBound, zeroTrafficBound()) against the incumbent.
class Search {
public:
    // `sums` serves the space's inputs (LayerSumsStore::serves()) and outlives the search.
    Search(const PlanSpace &space, const CancelToken &cancel, SearchStats &stats, const NestTuning &tuning,
           LayerSumsStore &sums)
        : m_s(space, cancel, stats, tuning, sums), m_bounds(m_s), m_recurrence(m_s, m_bounds), m_seed(m_s, m_bounds),
          m_interleaved(m_s, m_bounds),
          m_has1F1B(std::find(space.options().schedules.begin(), space.options().schedules.end(),
                              Schedule::OneFOneB) != space.options().schedules.end())
    {
    }

    // The incumbent: with topK = 1 the best value found and its plan; with topK = K > 1 the
    // K-th best value among the best plans of distinct signatures (Incumbent.h).
    double best() const { return m_s.incumbent.best; }
    // planWithBound(): `value` becomes the incumbent without a plan.
    void bound(double value) { m_s.incumbent.bound(value); }
    // topK = 1: the value of the last plan offered (+inf: none), and that plan.
    double offered() const { return m_s.incumbent.offered; }
    Plan offeredPlan() const { return m_s.incumbent.offeredPlan(); }
    const MemoryObstacle &obstacle() const { return m_s.obstacle; }
    long long relaxationCuts() const { return m_recurrence.relaxationCuts; }
    // A second search of the same space starts from this one's incumbent (runParallel()).
    void adoptIncumbent(const Search &o) { m_s.incumbent.adopt(o.m_s.incumbent); }
    // What the search leaves (SearchRun.h).
    SearchIncumbent incumbent() const { return m_s.incumbent.result(m_s.obstacle); }

    void setProgress(const ProgressFn *progress, size_t index, size_t count) { m_s.setProgress(progress, index, count); }
    void report(double within) const { m_s.report(within); }

    // Search order: smallest lower bound first, ties broken towards pipelines just large
    // enough to hold the model's training state (a good incumbent early makes the bounds
    // cut more); any order gives the same optimum.
    std::vector<OuterConfig> order(std::vector<OuterConfig> configs)
    {
        double capacity = 0;
        for (const DeviceSpec &d : m_s.topo.deviceTypes)
            capacity = std::max(capacity, d.memoryBytes);
        const CostOptions co = m_s.space.costOptions();
        const double state = m_s.model.totalParams() *
                             (m_s.model.bytesPerParam + co.gradBytesPerParam + co.optimizerBytesPerParam);
        const double wantPositions = std::max(1.0, state / std::max(capacity, 1.0));
        std::vector<std::pair<std::pair<double, double>, size_t>> keyed;
        for (size_t i = 0; i < configs.size(); ++i) {
            // The order's key stays the one-device-type bound (0 with several types): the
            // order decides which of equal plans is met first, the cuts below do not.
            const double lb = m_s.topo.deviceTypes.size() == 1 ? m_bounds.lowerBound(configs[i]) : 0.0;
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
        if (m_bounds.lowerBound(cfg) >= m_s.incumbent.best) {
            ++m_s.stats.configsSkipped;
            return;
        }
        if (cfg.schedule == Schedule::GPipe && m_has1F1B) {
            // Dominated by the 1F1B point with the same (mb, dp, layout): the same plans
            // with the same times and never more stashed micro-batches (docs/planner.md).
            ++m_s.stats.configsSkipped;
            return;
        }
        setupConfig(cfg);
        // The traffic bound needs the point's placements (docs/planner.md, "ZeRO-3 that
        // memory forces").
        if (zeroTrafficBound(m_s.space, m_s.cache) >= m_s.incumbent.best) {
            ++m_s.stats.configsSkipped;
            if (m_s.tuning.zeroBoundCuts)
                ++*m_s.tuning.zeroBoundCuts;
            return;
        }
        ++m_s.stats.configs;
        if (cfg.schedule == Schedule::Interleaved)
            m_interleaved.run(cfg);
        else
            m_recurrence.runDp(cfg);
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
        if (m_bounds.lowerBound(cfg) >= m_s.incumbent.best)
            return;
        setupConfig(cfg);
        m_seed.seedPoint(cfg);
    }

private:
    SearchState m_s;
    SuffixBounds m_bounds;
    NestRecurrence m_recurrence;
    IncumbentSeed m_seed;
    InterleavedSearch m_interleaved;
    const bool m_has1F1B;

    // A new outer point: the cache's point, the recurrence's memo, the point's bounds.
    void setupConfig(const OuterConfig &cfg)
    {
        m_s.cache.setConfig(cfg);
        m_s.cfg = cfg;
        m_s.nW = m_s.cache.widthCount();
        m_recurrence.beginPoint();
        m_s.bound = &m_bounds.of(cfg);
        // The seeds' cuts and the positions relaxation keep to one device type, as before:
        // the seeds' plans decide ties, and the relaxation's summaries assume one capacity.
        m_s.seedBound = m_s.topo.deviceTypes.size() == 1 ? m_s.bound : nullptr;
        m_s.positionBound.setConfig(m_s.seedBound);
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
class ParallelSearch {
public:
    ParallelSearch(const std::vector<OuterConfig> &configs, int threads, const NestTuning &tuning,
                   const ProgressFn &progress)
        : m_configs(configs), m_threads(threads), m_parity(tuning.parallelFirstParity), m_progress(progress),
          m_found(static_cast<size_t>(threads)),
          m_cursor{m_parity == 0 ? size_t{1} : size_t{0}, static_cast<size_t>(std::max(m_parity, 0))}
    {
    }

    SearchIncumbent run(Search &main, const PlanSpace &space, SearchStats &stats, const CancelToken &cancel,
                        const NestTuning &tuning, long long *relaxationCuts)
    {
        const SearchIncumbent seeded = main.incumbent();
        // The other searches take the seeded incumbent before any of them (main included)
        // runs. Each has its own layer sums (a store serves one search at a time).
        std::vector<std::unique_ptr<LayerSumsStore>> sums;
        std::vector<std::unique_ptr<Search>> others;
        for (int t = 1; t < m_threads; ++t) {
            sums.push_back(newLayerSums(space));
            others.push_back(
                std::make_unique<Search>(space, cancel, m_found[static_cast<size_t>(t)].stats, tuning, *sums.back()));
            others.back()->adoptIncumbent(main);
        }
        runAll(main, others);
        for (int t = 1; t < m_threads; ++t)
            addStats(stats, m_found[static_cast<size_t>(t)].stats);
        long long cuts = 0;
        for (const Found &f : m_found) {
            if (f.error)
                std::rethrow_exception(f.error);
            cuts += f.cuts;
        }
        if (relaxationCuts)
            *relaxationCuts = cuts;
        return merged(seeded, main, others);
    }

private:
    struct Found {
        double value = kInf;
        size_t index = 0;
        Plan plan;
        std::exception_ptr error;
        long long cuts = 0;
        SearchStats stats;
    };
    const std::vector<OuterConfig> &m_configs;
    const int m_threads;
    const int m_parity;
    const ProgressFn &m_progress;
    std::atomic<double> m_shared{kInf};
    std::atomic<bool> m_stop{false};
    std::atomic<size_t> m_next{0};  // the next point in the order, to whichever search is free
    std::vector<Found> m_found;
    std::vector<size_t> m_cursor;

    // Each search takes its points in the order (the strict `< best` of its own offers
    // relies on it): the next one free, or with NestTuning::parallelFirstParity the second
    // search those of that parity and the first search the others.
    size_t take(int t)
    {
        if (m_parity < 0)
            return m_next.fetch_add(1);
        if (t > 1 || m_cursor[static_cast<size_t>(t)] >= m_configs.size())
            return m_configs.size();
        const size_t i = m_cursor[static_cast<size_t>(t)];
        m_cursor[static_cast<size_t>(t)] += 2;
        return i;
    }

    // Search t's loop: its points, each bounded by the best value any search has found.
    void work(int t, Search &search)
    {
        Found &f = m_found[static_cast<size_t>(t)];
        try {
            for (size_t i = take(t); i < m_configs.size() && !m_stop.load(); i = take(t)) {
                const double v = m_shared.load();
                if (v < kInf && std::nextafter(v, kInf) < search.best())
                    search.bound(std::nextafter(v, kInf));
                if (t == 0)
                    search.setProgress(&m_progress, i, m_configs.size());
                const double before = search.offered();
                search.run(m_configs[i]);
                if (t == 0)
                    search.report(1.0);
                if (search.offered() < before) {
                    f.value = search.offered();
                    f.index = i;
                    double cur = m_shared.load();
                    while (f.value < cur && !m_shared.compare_exchange_weak(cur, f.value)) {
                    }
                }
            }
            if (f.value < kInf)
                f.plan = search.offeredPlan();
        } catch (...) {
            f.error = std::current_exception();
            m_stop.store(true);
        }
        f.cuts = search.relaxationCuts();
    }

    // A search whose thread cannot be started takes no points: the others take them all
    // (the result does not depend on which search runs a point, nor when).
    void runAll(Search &main, const std::vector<std::unique_ptr<Search>> &others)
    {
        std::vector<std::thread> workers;
        try {
            for (int t = 1; t < m_threads; ++t)
                workers.emplace_back([&, t] { work(t, *others[static_cast<size_t>(t) - 1]); });
        } catch (const std::system_error &) {
        }
        if (m_parity >= 0)
            for (std::thread &w : workers)
                w.join();
        work(0, main);
        for (std::thread &w : workers)
            if (w.joinable())
                w.join();
    }

    // The lowest value found, ties to the earliest point; the closest memory miss of all
    // searches (the message when nothing fits; among equal ratios the calling thread's, then
    // the others' in order).
    SearchIncumbent merged(const SearchIncumbent &seeded, const Search &main,
                           const std::vector<std::unique_ptr<Search>> &others)
    {
        SearchIncumbent r = seeded;
        r.obstacle = main.obstacle();
        for (const std::unique_ptr<Search> &o : others)
            if (o->obstacle().ratio < r.obstacle.ratio)
                r.obstacle = o->obstacle();
        Found *winner = nullptr;
        for (Found &f : m_found)
            if (f.value < kInf &&
                (!winner || f.value < winner->value || (f.value == winner->value && f.index < winner->index)))
                winner = &f;
        if (!winner)
            return r;
        r.value = winner->value;
        r.plan = std::move(winner->plan);
        return r;
    }
};

SearchIncumbent runParallel(Search &main, const std::vector<OuterConfig> &configs, int threads,
                            const PlanSpace &space, SearchStats &stats, const CancelToken &cancel,
                            const NestTuning &tuning, const ProgressFn &progress, long long *relaxationCuts)
{
    return ParallelSearch(configs, threads, tuning, progress).run(main, space, stats, cancel, tuning, relaxationCuts);
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
            *relaxationCuts = search.relaxationCuts();
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

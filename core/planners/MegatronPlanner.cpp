#include "MegatronPlanner.h"

#include "PlanBuilder.h"
#include "PlanSpace.h"
#include "SearchEstimate.h"
#include "SearchRun.h"

#include <algorithm>

namespace nest {

namespace {

int smallestNode(const Topology &topo)
{
    int smallest = topo.deviceCount();
    for (int node : topo.groupsAtLevel(0))
        smallest = std::min(smallest, topo.deviceCountUnder(node));
    return std::max(1, smallest);
}

int transformerBlocks(const ModelProfile &model)
{
    int blocks = 0;
    for (const LayerProfile &l : model.layers)
        if (isDecoderBlock(l.kind))
            ++blocks;
    return blocks > 0 ? blocks : model.layerCount();
}

bool hasSchedule(const std::vector<Schedule> &v, Schedule s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

// One (schedule, depth) pair of the grid: 1F1B (or GPipe when it is the only schedule
// allowed) and interleaved 1F1B at each depth.
struct ScheduleChoice {
    Schedule schedule;
    int depth;
};

std::vector<ScheduleChoice> scheduleChoices(const SearchOptions &o)
{
    std::vector<ScheduleChoice> v;
    if (hasSchedule(o.schedules, Schedule::OneFOneB))
        v.push_back({Schedule::OneFOneB, 1});
    else if (hasSchedule(o.schedules, Schedule::GPipe))
        v.push_back({Schedule::GPipe, 1});
    if (hasSchedule(o.schedules, Schedule::Interleaved))
        for (int d : o.virtualStages)
            if (d >= 2)
                v.push_back({Schedule::Interleaved, d});
    return v;
}

class ManualGrid {
public:
    ManualGrid(const PlanSpace &space, const CancelToken &cancel, const ProgressFn &progress,
               SearchStats &stats)
        : m_space(space), m_cancel(cancel), m_progress(progress), m_stats(stats)
    {
    }

    SearchIncumbent run()
    {
        const ModelProfile &model = m_space.model();
        const Topology &topo = m_space.topology();
        const SearchOptions &o = m_space.options();
        const int n = topo.deviceCount();
        const int node = smallestNode(topo);

        // tp: the largest candidate dividing the heads that fits a node.
        int tp = 1;
        for (int t : m_space.tpDegrees())
            if (t <= node)
                tp = std::max(tp, t);
        std::vector<int> eps{1};
        if (model.numExperts > 1) {
            eps.clear();
            for (int e : o.epCandidates)
                if (e >= 1 && StageConfig::epDividesExperts(e, model.numExperts))
                    eps.push_back(e);
            if (eps.empty())
                eps.push_back(1);
        }
        std::vector<int> zeros{0};
        if (o.allowZero)
            zeros.push_back(1);
        const std::vector<ScheduleChoice> schedules = scheduleChoices(o);
        const int blocks = transformerBlocks(model);
        std::vector<int> pps;
        for (int p = 1; p <= std::min(blocks, m_space.maxStages()); ++p)
            if (blocks % p == 0)
                pps.push_back(p);

        const double total = double(m_space.cpDegrees().size()) * eps.size() * o.microBatches.size() *
                             schedules.size() * m_space.recomputeModes().size() * zeros.size();
        double done = 0;
        for (int cp : m_space.cpDegrees())
            for (int ep : eps)
                for (int mb : o.microBatches)
                    for (const ScheduleChoice &sc : schedules)
                        for (Recompute rc : m_space.recomputeModes())
                            for (int zero : zeros) {
                                UniformLayout u;
                                u.config() = searchedStage(o, tp, cp, ep, 0, zero, rc);
                                u.microBatch = mb;
                                u.globalBatch = m_space.globalBatch();
                                u.seqLength = m_space.seqLength();
                                u.schedule = sc.schedule;
                                u.virtualStages = sc.depth;
                                fewestStages(u, pps, n);
                                ++done;
                                if (m_progress)
                                    m_progress(done / total, m_best.value);
                            }
        return m_best;
    }

private:
    // Tries pp ascending and keeps the first layout that fits.
    void fewestStages(UniformLayout u, const std::vector<int> &pps, int n)
    {
        ++m_stats.configs;
        for (int pp : pps) {
            if (m_cancel.cancelled())
                throw SearchCancelled{};
            const int width = u.tp * u.cp * pp;
            if (width > n)
                break;
            int dp = n / width;
            while (dp >= 1 && (m_space.globalBatch() % (1LL * u.microBatch * dp) != 0 || dp % u.ep != 0))
                --dp;
            if (dp < 1)
                continue;
            u.pp = pp;
            u.dp = dp;
            Result<Plan> plan = buildUniformPlan(u, m_space.topology(), m_space.model());
            if (!plan)
                continue;
            plan->precision = m_space.costOptions().precision;
            ++m_stats.states;
            const Report r = evaluate(*plan, m_space.topology(), m_space.model(), m_space.costOptions());
            if (r.feasible) {
                if (r.iterationTime < m_best.value) {
                    m_best.value = r.iterationTime;
                    m_best.plan = *plan;
                }
                return;
            }
            ++m_stats.pruned;
            for (size_t s = 0; s < r.stages.size() && s < plan->stages.size(); ++s)
                if (!r.stages[s].cost.fitsMemory)
                    m_best.obstacle.consider(r.stages[s].cost, plan->stages[s]);
        }
    }

    const PlanSpace &m_space;
    const CancelToken &m_cancel;
    const ProgressFn &m_progress;
    SearchStats &m_stats;
    SearchIncumbent m_best;
};

} // namespace

PlanResult MegatronPlanner::plan(const Topology &topo, const ModelProfile &model,
                                 const SearchOptions &options, const ProgressFn &progress,
                                 const CancelToken &cancel) const
{
    // With the grid's estimate: refused past the limits before it starts (issue 48).
    return runSearch(topo, model, options, [&](const PlanSpace &space, SearchStats &stats) {
        return ManualGrid(space, cancel, progress, stats).run();
    }, SearchKind::Megatron);
}

} // namespace nest

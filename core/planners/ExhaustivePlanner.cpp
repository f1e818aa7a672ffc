#include "ExhaustivePlanner.h"

#include "Pipeline.h"
#include "PlanSpace.h"
#include "SearchRun.h"
#include "SearchEstimate.h"

#include <algorithm>
#include <functional>

namespace nest {

namespace {

struct Option {
    double t, e;
    int opt;
};

class Enumerator {
public:
    Enumerator(const PlanSpace &space, const CancelToken &cancel, SearchStats &stats)
        : m_space(space), m_cancel(cancel), m_stats(stats), m_L(space.layerCount())
    {
    }

    double best = kInf;
    Plan bestPlan;
    MemoryObstacle obstacle;
    std::function<void(double)> within;   // progress within the current outer point

    void run(const OuterConfig &cfg)
    {
        ++m_stats.configs;
        m_cfg = cfg;
        if (cfg.schedule == Schedule::Interleaved) {
            for (const InterleavedChoice &c : m_space.interleavedChoices(cfg)) {
                poll();
                ++m_stats.states;
                const Plan plan = m_space.makeInterleavedPlan(cfg, c);
                const Report r = evaluate(plan, m_space.topology(), m_space.model(),
                                          m_space.costOptions());
                if (r.feasible && r.iterationTime < best) {
                    best = r.iterationTime;
                    bestPlan = plan;
                }
            }
            return;
        }
        for (int s = 1; s <= m_space.maxStages(); ++s) {
            m_cuts.assign(s + 1, 0);
            m_cuts[s] = m_L;
            enumerateCuts(s, 1);
            if (within)
                within(double(s) / m_space.maxStages());
        }
    }

private:
    const PlanSpace &m_space;
    const CancelToken &m_cancel;
    SearchStats &m_stats;
    const int m_L;
    OuterConfig m_cfg;
    std::vector<int> m_cuts;    // stage s holds [m_cuts[s], m_cuts[s + 1])
    std::vector<int> m_widths;  // per stage

    void poll() const
    {
        if (m_cancel.cancelled())
            throw SearchCancelled{};
    }

    // All compositions of the layers into s non-empty stages.
    void enumerateCuts(int s, int i)
    {
        poll();   // the enumeration alone can run for minutes on a large instance
        if (i == s) {
            m_widths.assign(s, 0);
            enumerateWidths(s, 0, 0);
            return;
        }
        for (int c = m_cuts[i - 1] + 1; c <= m_L - (s - i); ++c) {
            m_cuts[i] = c;
            enumerateCuts(s, i + 1);
        }
    }

    // All width sequences whose sum fits the positions of one replica.
    void enumerateWidths(int s, int i, int used)
    {
        if (i == s) {
            evaluateLayout(s);
            return;
        }
        for (int w : m_space.widths()) {
            if (used + w > m_cfg.positions)
                break;
            m_widths[i] = w;
            enumerateWidths(s, i + 1, used + w);
        }
    }

    // Fixed cuts and widths: cost every option of every stage on its true devices and
    // neighbours, then try every combination of the non-dominated options.
    void evaluateLayout(int s)
    {
        poll();
        ++m_stats.states;
        std::vector<StagePlan> stages(s);
        std::vector<std::vector<StageConfig>> options(s);
        int pos = 0;
        for (int i = 0; i < s; ++i) {
            options[i] = m_space.stageOptions(m_cfg, m_widths[i], m_cuts[i], m_cuts[i + 1]);
            if (options[i].empty())
                return;
            StageChoice c;
            c.firstLayer = m_cuts[i];
            c.endLayer = m_cuts[i + 1];
            c.option = options[i][0];
            stages[i] = m_space.makeStage(m_cfg, pos, c);
            pos += m_widths[i];
        }
        std::vector<std::vector<Option>> costs(s);
        StageContext ctx = makeContext(m_space, m_cfg);
        ctx.numStages = s;
        for (int i = 0; i < s; ++i) {
            ctx.stageIndex = i;
            ctx.prev.reset();
            ctx.next.reset();
            if (i > 0)
                ctx.prev = boundaryLink(m_space.topology(), stages[i - 1], stages[i]);
            if (i + 1 < s)
                ctx.next = boundaryLink(m_space.topology(), stages[i], stages[i + 1]);
            StagePlan stage = stages[i];
            ctx.stage = &stage;
            std::vector<Option> list;
            poll();
            for (int o = 0; o < static_cast<int>(options[i].size()); ++o) {
                stage.config() = options[i][o];
                const StageCost c = stageCost(ctx);
                ++m_stats.stageCostCalls;
                if (!c.fitsMemory) {
                    ++m_stats.pruned;
                    obstacle.consider(c, stage);
                    continue;
                }
                list.push_back({c.perMicroBatch, c.iterationExtra, o});
            }
            if (list.empty())
                return;
            // Drop options dominated in (t, e): they cannot lower the objective. The front
            // is tried in option order (the first of equal plans wins).
            const auto byOption = [](const Option &x, const Option &y) { return x.opt < y.opt; };
            std::vector<Option> kept;
            appendParetoFront(list, kept, byOption);
            std::sort(kept.begin(), kept.end(), byOption);
            costs[i] = kept;
        }
        // Every combination.
        std::vector<int> pick(s, 0);
        const double weight = pipelineWeight(m_cfg.numMicroBatches, s);
        while (true) {
            if ((++m_stats.transitions & 1023) == 0)
                poll();
            double a = 0, b = 0;
            for (int i = 0; i < s; ++i) {
                a = std::max(a, costs[i][pick[i]].t);
                b = std::max(b, costs[i][pick[i]].e);
            }
            const double t = iterationSeconds(weight, a, b);
            if (t < best) {
                best = t;
                std::vector<StageChoice> choice(s);
                for (int i = 0; i < s; ++i) {
                    choice[i].firstLayer = m_cuts[i];
                    choice[i].endLayer = m_cuts[i + 1];
                    choice[i].option = options[i][costs[i][pick[i]].opt];
                }
                bestPlan = m_space.makePlan(m_cfg, choice);
            }
            int i = 0;
            while (i < s && ++pick[i] == static_cast<int>(costs[i].size())) {
                pick[i] = 0;
                ++i;
            }
            if (i == s)
                break;
        }
    }
};

} // namespace

PlanResult ExhaustivePlanner::plan(const Topology &topo, const ModelProfile &model,
                                   const SearchOptions &options, const ProgressFn &progress,
                                   const CancelToken &cancel) const
{
    if (cancel.cancelled())
        return cancelledBeforeStart();
    return runSearch(topo, model, options, [&](const PlanSpace &space, SearchStats &stats) {
        Enumerator e(space, cancel, stats);
        const auto &configs = space.configs();
        for (size_t i = 0; i < configs.size(); ++i) {
            if (progress)
                e.within = [&](double f) { progress((double(i) + f) / double(configs.size()), e.best < kInf ? e.best : 0.0); };
            e.run(configs[i]);
            if (progress)
                progress(double(i + 1) / double(configs.size()), e.best < kInf ? e.best : 0.0);
        }
        return SearchIncumbent{e.best, e.bestPlan, e.obstacle};
    }, SearchKind::Exhaustive);
}

} // namespace nest

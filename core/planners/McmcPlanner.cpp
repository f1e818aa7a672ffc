#include "McmcPlanner.h"

#include "PlanSpace.h"
#include "SearchRun.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

namespace nest {

namespace {

struct State {
    int config = 0;                   // index into PlanSpace::configs()
    std::vector<StageChoice> stages;  // 1F1B / GPipe points
    int interleaved = -1;             // index into interleavedChoices() (interleaved points)
};

class Annealer {
public:
    Annealer(const PlanSpace &space, const CancelToken &cancel, const ProgressFn &progress,
             SearchStats &stats)
        : m_space(space), m_cancel(cancel), m_progress(progress), m_stats(stats),
          m_rng(space.options().seed)
    {
        const int budget = space.options().evaluationBudget;
        m_budget = budget > 0 ? budget : McmcPlanner::defaultBudget;
        for (size_t c = 0; c < space.configs().size(); ++c) {
            const OuterConfig &cfg = space.configs()[c];
            if (cfg.schedule == Schedule::Interleaved)
                m_interleaved.push_back(space.interleavedChoices(cfg));
            else
                m_interleaved.emplace_back();
        }
    }

    SearchIncumbent run()
    {
        const std::vector<OuterConfig> &configs = m_space.configs();
        if (configs.empty() || m_space.widths().empty())
            return m_best;
        State current;
        double energy = kInf;
        // A few random starts; keep the best as the chain's start.
        for (int tries = 0; tries < 16 && m_used < m_budget; ++tries) {
            State s = randomState();
            const double e = score(s);
            if (e < energy) {
                energy = e;
                current = s;
            }
        }
        const double t0 = 0.5, t1 = 0.002;
        // Moves that do not apply (no cut to shift...) cost no evaluation; the attempts are
        // capped so that a space with no applicable move still ends.
        long long attempts = 0;
        while (m_used < m_budget && attempts++ < 64LL * m_budget) {
            if (m_cancel.cancelled())
                throw SearchCancelled{};
            State next = current;
            if (!mutate(next))
                continue;
            const double e = score(next);
            const double temperature = t0 * std::pow(t1 / t0, double(m_used) / m_budget);
            if (e < energy || (e < kInf && uniform() < std::exp((energy - e) / temperature))) {
                current = std::move(next);
                energy = e;
            }
        }
        return m_best;
    }

private:
    // Written out rather than std::uniform_*_distribution, whose output differs between
    // standard libraries: the same seed must give the same plan everywhere.
    int pick(int n) { return static_cast<int>(m_rng() % static_cast<unsigned long long>(n)); }
    double uniform() { return double(m_rng() >> 11) * 0x1.0p-53; }

    const OuterConfig &cfg(const State &s) const { return m_space.configs()[s.config]; }

    StageConfig randomOption(const OuterConfig &c, int width, int first, int end)
    {
        const std::vector<StageConfig> opts = m_space.stageOptions(c, width, first, end);
        return opts.empty() ? StageConfig{} : opts[pick(static_cast<int>(opts.size()))];
    }

    // Widths that keep the pipeline within the replica's positions when stage `skip`
    // (or no stage, -1) takes the new width.
    std::vector<int> widthsThatFit(const State &s, int skip) const
    {
        int used = 0;
        for (size_t i = 0; i < s.stages.size(); ++i)
            if (static_cast<int>(i) != skip)
                used += s.stages[i].option.width();
        std::vector<int> v;
        for (int w : m_space.widths())
            if (used + w <= cfg(s).positions)
                v.push_back(w);
        return v;
    }

    State randomState()
    {
        State s;
        s.config = pick(static_cast<int>(m_space.configs().size()));
        if (cfg(s).schedule == Schedule::Interleaved) {
            const auto &choices = m_interleaved[s.config];
            s.interleaved = choices.empty() ? -1 : pick(static_cast<int>(choices.size()));
        } else {
            randomPipeline(s);
        }
        return s;
    }

    // 1..16 stages of one width with even cuts and random options.
    void randomPipeline(State &s)
    {
        const OuterConfig &c = cfg(s);
        const int L = m_space.layerCount();
        const std::vector<int> &widths = m_space.widths();
        const int minWidth = widths.front();
        const int maxS = std::max(1, std::min({m_space.maxStages(), L, c.positions / minWidth}));
        const int S = 1 + pick(std::min(maxS, 16));
        std::vector<int> fit;
        for (int x : widths)
            if (x * S <= c.positions)
                fit.push_back(x);
        const int w = fit.empty() ? minWidth : fit[pick(static_cast<int>(fit.size()))];
        s.stages.clear();
        s.interleaved = -1;
        for (int k = 0; k < S; ++k) {
            StageChoice sc;
            sc.firstLayer = L * k / S;
            sc.endLayer = L * (k + 1) / S;
            sc.option = randomOption(c, w, sc.firstLayer, sc.endLayer);
            s.stages.push_back(sc);
        }
    }

    // Redraws every stage option that is no longer valid (after a change of outer point,
    // width or layers); false when some stage has none.
    bool repair(State &s)
    {
        const OuterConfig &c = cfg(s);
        for (StageChoice &sc : s.stages) {
            const std::vector<StageConfig> opts =
                m_space.stageOptions(c, sc.option.width(), sc.firstLayer, sc.endLayer);
            if (opts.empty())
                return false;
            const bool valid = std::any_of(opts.begin(), opts.end(), [&](const StageConfig &o) {
                return o.tp == sc.option.tp && o.cp == sc.option.cp && o.ep == sc.option.ep &&
                       o.sp == sc.option.sp && o.zero == sc.option.zero &&
                       o.recompute == sc.option.recompute;
            });
            if (!valid)
                sc.option = opts[pick(static_cast<int>(opts.size()))];
        }
        return true;
    }

    bool mutate(State &s)
    {
        const int move = pick(6);
        if (move == 0 || s.config < 0) {  // another outer point
            const int before = s.config;
            s.config = pick(static_cast<int>(m_space.configs().size()));
            if (s.config == before)
                return false;
            const OuterConfig &c = cfg(s);
            if (c.schedule == Schedule::Interleaved) {
                const auto &choices = m_interleaved[s.config];
                if (choices.empty())
                    return false;
                s.interleaved = pick(static_cast<int>(choices.size()));
                return true;
            }
            if (s.stages.empty()) {
                randomPipeline(s);
                return true;
            }
            s.interleaved = -1;
            int used = 0;
            for (const StageChoice &sc : s.stages)
                used += sc.option.width();
            if (used > c.positions)
                return false;
            return repair(s);
        }
        if (cfg(s).schedule == Schedule::Interleaved) {
            const int n = static_cast<int>(m_interleaved[s.config].size());
            if (n < 2)
                return false;
            const int step = 1 + pick(std::min(n - 1, 4));
            s.interleaved = (s.interleaved + (pick(2) ? step : n - step)) % n;
            return true;
        }
        const int S = static_cast<int>(s.stages.size());
        const OuterConfig &c = cfg(s);
        switch (move) {
        case 1: {  // shift a cut
            if (S < 2)
                return false;
            const int k = 1 + pick(S - 1);
            const int lo = s.stages[k - 1].firstLayer + 1, hi = s.stages[k].endLayer - 1;
            if (hi < lo)
                return false;
            const int span = std::max(1, (hi - lo + 1) / 4);
            int cut = s.stages[k].firstLayer + (pick(2) ? 1 : -1) * (1 + pick(span));
            cut = std::clamp(cut, lo, hi);
            if (cut == s.stages[k].firstLayer)
                return false;
            s.stages[k - 1].endLayer = cut;
            s.stages[k].firstLayer = cut;
            return repair(s);
        }
        case 2: {  // split a stage
            if (S >= m_space.maxStages())
                return false;
            const int k = pick(S);
            StageChoice &a = s.stages[k];
            if ((a.endLayer - a.firstLayer) < 2)
                return false;
            const std::vector<int> fit = widthsThatFit(s, -1);
            if (fit.empty())
                return false;
            StageChoice b = a;
            const int cut = a.firstLayer + 1 + pick((a.endLayer - a.firstLayer) - 1);
            a.endLayer = cut;
            b.firstLayer = cut;
            b.option = randomOption(c, fit[pick(static_cast<int>(fit.size()))], b.firstLayer, b.endLayer);
            s.stages.insert(s.stages.begin() + k + 1, b);
            return repair(s);
        }
        case 3: {  // merge two neighbours
            if (S < 2)
                return false;
            const int k = pick(S - 1);
            s.stages[k].endLayer = s.stages[k + 1].endLayer;
            s.stages.erase(s.stages.begin() + k + 1);
            return repair(s);
        }
        case 4: {  // another width for one stage
            const int k = pick(S);
            const std::vector<int> fit = widthsThatFit(s, k);
            if (fit.size() < 2)
                return false;
            StageChoice &sc = s.stages[k];
            const int w = fit[pick(static_cast<int>(fit.size()))];
            if (w == sc.option.width())
                return false;
            sc.option = randomOption(c, w, sc.firstLayer, sc.endLayer);
            return true;
        }
        default: {  // another option for one stage
            StageChoice &sc = s.stages[pick(S)];
            sc.option = randomOption(c, sc.option.width(), sc.firstLayer, sc.endLayer);
            return true;
        }
        }
    }

    double score(const State &s)
    {
        if (m_cancel.cancelled())
            throw SearchCancelled{};
        ++m_used;
        ++m_stats.states;
        const OuterConfig &c = cfg(s);
        Plan plan;
        if (c.schedule == Schedule::Interleaved) {
            if (s.interleaved < 0)
                return kInf;
            plan = m_space.makeInterleavedPlan(c, m_interleaved[s.config][s.interleaved]);
        } else {
            if (s.stages.empty())
                return kInf;
            plan = m_space.makePlan(c, s.stages);
        }
        const Report r = evaluate(plan, m_space.topology(), m_space.model(), m_space.costOptions());
        if (m_progress && (m_used % 16 == 0 || m_used == m_budget))
            m_progress(double(m_used) / m_budget, m_best.value);
        if (r.feasible && std::isfinite(r.iterationTime)) {
            if (r.iterationTime < m_best.value) {
                m_best.value = r.iterationTime;
                m_best.plan = std::move(plan);
            }
            return std::log(r.iterationTime);
        }
        ++m_stats.pruned;
        double worst = 0;
        for (size_t k = 0; k < r.stages.size() && k < plan.stages.size(); ++k) {
            const StageCost &cost = r.stages[k].cost;
            if (!cost.fitsMemory && cost.memoryCapacity > 0) {
                m_best.obstacle.consider(cost, plan.stages[k]);
                worst = std::max(worst, cost.memoryTotal / cost.memoryCapacity);
            }
        }
        return worst > 0 && std::isfinite(worst) ? 100 + std::log(worst) : kInf;
    }

    const PlanSpace &m_space;
    const CancelToken &m_cancel;
    const ProgressFn &m_progress;
    SearchStats &m_stats;
    std::mt19937_64 m_rng;
    std::vector<std::vector<InterleavedChoice>> m_interleaved;
    int m_budget = McmcPlanner::defaultBudget;
    int m_used = 0;
    SearchIncumbent m_best;
};

} // namespace

PlanResult McmcPlanner::plan(const Topology &topo, const ModelProfile &model,
                             const SearchOptions &options, const ProgressFn &progress,
                             const CancelToken &cancel) const
{
    return runSearch(topo, model, options, [&](const PlanSpace &space, SearchStats &stats) {
        return Annealer(space, cancel, progress, stats).run();
    });
}

} // namespace nest

#include "Incumbent.h"

#include "PlanSignature.h"

#include <algorithm>
#include <cmath>

namespace nest {

void Incumbent::bound(double value)
{
    if (value < best) {
        best = value;
        m_bestHasPlan = false;
    }
}

void Incumbent::adopt(const Incumbent &o)
{
    best = o.best;
    bestPlan = o.bestPlan;
    m_bestHasPlan = o.m_bestHasPlan;
    m_bestRecipe = o.m_bestRecipe;
    m_balancedValue = o.m_balancedValue;
    m_balancedRecipe = o.m_balancedRecipe;
    offered = o.offered;
}

SearchIncumbent Incumbent::result(const MemoryObstacle &obstacle) const
{
    SearchIncumbent r{m_bestHasPlan ? best : kInf, m_bestRecipe.plan(m_space, bestPlan), obstacle, {}};
    if (!m_bestHasPlan && m_balancedValue < kInf && best == std::nextafter(m_balancedValue, kInf)) {
        r.value = m_balancedValue;  // nothing else reached it (see boundByBalancedSeed())
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

double Incumbent::bestValue() const
{
    return m_keep > 1 ? (m_top.empty() ? kInf : m_top.front().value) : best;
}

void Incumbent::offer(double t, Plan plan)
{
    if (m_keep == 1) {
        bestPlan = std::move(plan);
        m_bestRecipe.set = false;
        becomeIncumbent(t);
        return;
    }
    std::vector<int> sig = planSignature(plan, m_space.topology());
    auto same = std::find_if(m_top.begin(), m_top.end(), [&](const Ranked &r) { return r.sig == sig; });
    if (same != m_top.end()) {
        if (!(t < same->value))
            return;
        m_top.erase(same);
    }
    auto at = std::upper_bound(m_top.begin(), m_top.end(), t, [](double v, const Ranked &r) { return v < r.value; });
    m_top.insert(at, Ranked{t, std::move(sig), std::move(plan)});
    if (static_cast<int>(m_top.size()) > m_keep)
        m_top.pop_back();
    best = static_cast<int>(m_top.size()) == m_keep ? m_top.back().value : kInf;
}

void Incumbent::offerStages(double t, const OuterConfig &cfg, const std::vector<StageChoice> &stages)
{
    if (m_keep > 1) {
        offer(t, m_space.makePlan(cfg, stages));
        return;
    }
    m_bestRecipe = {true, cfg, stages};
    becomeIncumbent(t);
}

void Incumbent::boundByBalancedSeed(double t, const OuterConfig &cfg, const std::vector<StageChoice> &stages)
{
    m_balancedValue = t;
    m_balancedRecipe = {true, cfg, stages};
    bound(std::nextafter(t, kInf));
}

void Incumbent::becomeIncumbent(double t)
{
    best = t;
    m_bestHasPlan = true;
    offered = t;
}

} // namespace nest

#pragma once
// Which (t, e) candidates a planner keeps, defined once for the stage options
// (StageCostCache) and the DP's suffix fronts (NestRecurrence). A candidate dominates another
// when neither its t nor its e is larger (Pipeline.h: T grows with both).
//   keep = 1:     the Pareto front (Pipeline.h's appendParetoFront);
//   keep = K > 1: the best K plans (docs/planner.md, "The best K plans"): every candidate
//                 that fewer than K others dominate -- or, where candidates carry classes
//                 (plan signatures), fewer than K of pairwise distinct classes and none of its
//                 own class. Any completion of a dropped one is matched by K distinct ones at
//                 least as good.
// Candidates are taken in the order of sortByTimeThenExtra: by t, then e, then `tieLess`
// (a strict order on what t and e leave equal), so that of equal ones the first is kept.
#include "Pipeline.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace nest {

// Sorts `candidates` by (t, e) of cost(candidate), then by tieLess(cost(x), cost(y)): the
// order of appendParetoFront. `cost` projects an element on what has members t and e.
template <typename P, typename TieLess, typename Cost>
void sortByTimeThenExtra(std::vector<P> &candidates, TieLess tieLess, Cost cost)
{
    std::sort(candidates.begin(), candidates.end(), [&](const P &a, const P &b) {
        const auto &x = cost(a);
        const auto &y = cost(b);
        if (x.t != y.t)
            return x.t < y.t;
        if (x.e != y.e)
            return x.e < y.e;
        return tieLess(x, y);
    });
}

// Decides, for candidates offered in the order of sortByTimeThenExtra, which to keep when
// `keep` > 1 (keep = 1 is appendParetoFront).
class KeptFilter {
public:
    explicit KeptFilter(int keep) : m_keep(keep) {}

    // A candidate of extra `e` that is a class of its own: kept when fewer than `keep`
    // candidates before it have an e at most its own (each of those dominates it).
    bool offer(double e)
    {
        const bool kept = !dominatedByK(e);
        enterLeast(e, 0);
        return kept;
    }

    // A candidate of extra `e` in class `cls`: kept when no candidate of its class before it
    // has an e at most its own, and fewer than `keep` classes have one.
    bool offer(double e, int cls)
    {
        const auto mine = m_own.find(cls);
        const bool kept = !(mine != m_own.end() && mine->second <= e) && !dominatedByK(e);
        if (mine == m_own.end() || e < mine->second) {
            m_own[cls] = e;
            const auto in = std::find_if(m_least.begin(), m_least.end(), [&](const auto &l) { return l.second == cls; });
            if (in != m_least.end())
                m_least.erase(in);
            enterLeast(e, cls);
        }
        return kept;
    }

private:
    // `keep` candidates of distinct classes before it have an e at most `e`.
    bool dominatedByK(double e) const
    {
        return static_cast<int>(m_least.size()) == m_keep && m_least.back().first <= e;
    }
    void enterLeast(double e, int cls)
    {
        m_least.insert(std::upper_bound(m_least.begin(), m_least.end(), std::make_pair(e, cls)), {e, cls});
        if (static_cast<int>(m_least.size()) > m_keep)
            m_least.pop_back();
    }

    int m_keep;
    std::vector<std::pair<double, int>> m_least;  // the `keep` smallest least-e of distinct classes, ascending
    std::map<int, double> m_own;                   // least e per class seen (offer with a class)
};

// Appends to `front` the candidates kept of `candidates` (each a class of its own), sorted
// as sortByTimeThenExtra leaves them. P has members t and e.
template <typename P, typename TieLess>
void appendKeptFront(std::vector<P> &candidates, std::vector<P> &front, int keep, TieLess tieLess)
{
    if (keep <= 1) {
        appendParetoFront(candidates, front, tieLess);
        return;
    }
    sortByTimeThenExtra(candidates, tieLess, [](const P &p) -> const P & { return p; });
    KeptFilter filter(keep);
    for (const P &p : candidates)
        if (filter.offer(p.e))
            front.push_back(p);
}

} // namespace nest

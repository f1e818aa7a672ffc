#pragma once
// The incumbent of a NEST search (docs/planner.md, "Bounds and cuts" and "The best K
// plans"): with topK = 1 the best value found and its plan; with topK = K > 1 the best plan of
// each signature (PlanSignature.h), at most K, and `best` the K-th best value (+inf while
// fewer are known). Every bound of the search prunes against `best`.
//
// Plans made once: an improvement found by the recurrence keeps its outer point and stage
// choices (a Recipe); PlanSpace::makePlan() runs only when the search returns it (on a wide
// cluster a plan is hundreds of thousands of device ids, and the incumbent improves hundreds
// of times).
#include "PlanSpace.h"
#include "SearchRun.h"

#include <limits>
#include <vector>

namespace nest {

class Incumbent {
public:
    Incumbent(const PlanSpace &space, int keep) : m_space(space), m_keep(keep) {}

    double best = std::numeric_limits<double>::infinity();
    Plan bestPlan;
    // topK = 1: the value of the last plan offered (+inf: none), and that plan. bound()
    // lowers `best` without touching them.
    double offered = std::numeric_limits<double>::infinity();
    Plan offeredPlan() const { return m_bestRecipe.plan(m_space, bestPlan); }

    // planWithBound(): `value` becomes the incumbent without a plan; if nothing beats it,
    // nothing is found.
    void bound(double value);
    // A second search of the same space starts from this one's incumbent (topK = 1).
    void adopt(const Incumbent &o);
    // What the search leaves (SearchRun.h), with its closest memory miss.
    SearchIncumbent result(const MemoryObstacle &obstacle) const;
    // The best value known: `best`, or with topK > 1 the first of the K.
    double bestValue() const;

    // A plan of value t < best: with topK = 1 the new incumbent; with topK > 1 the best of its
    // signature unless one as good is known, and `best` the K-th best value then.
    void offer(double t, Plan plan);
    // offer() of the plan of `stages` at outer point `cfg`, made only if it is returned.
    void offerStages(double t, const OuterConfig &cfg, const std::vector<StageChoice> &stages);
    // The incumbent seeding's balanced pipeline (topK = 1): its value t bounds the search
    // just above it; its plan is returned only when nothing else reaches t.
    void boundByBalancedSeed(double t, const OuterConfig &cfg, const std::vector<StageChoice> &stages);

private:
    // A plan as its outer point and stage choices.
    struct Recipe {
        bool set = false;
        OuterConfig cfg;
        std::vector<StageChoice> stages;
        Plan plan(const PlanSpace &space, const Plan &otherwise) const
        {
            return set ? space.makePlan(cfg, stages) : otherwise;
        }
    };
    // topK > 1: a kept plan, its value and signature.
    struct Ranked {
        double value;
        std::vector<int> sig;
        Plan plan;
    };

    const PlanSpace &m_space;
    const int m_keep;           // SearchOptions::topK (>= 1)
    bool m_bestHasPlan = true;  // false while `best` is planWithBound()'s bound
    Recipe m_bestRecipe;        // topK = 1: the incumbent's plan when it came from stage choices
    double m_balancedValue = std::numeric_limits<double>::infinity();  // the best balanced seed
    Recipe m_balancedRecipe;
    std::vector<Ranked> m_top;  // topK > 1: by value

    // topK = 1: `t` is the incumbent's value, its plan just recorded by the caller.
    void becomeIncumbent(double t);
};

} // namespace nest

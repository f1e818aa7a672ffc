#include "PlanSignature.h"

#include "Evaluator.h"

namespace nest {

std::vector<int> planSignature(const Plan &plan, const Topology &topo)
{
    std::vector<int> sig{static_cast<int>(plan.schedule), plan.virtualStages, plan.microBatch, plan.dp,
                         static_cast<int>(plan.stages.size())};
    const size_t physical = plan.schedule == Schedule::Interleaved && plan.virtualStages > 1
                                ? plan.stages.size() / static_cast<size_t>(plan.virtualStages)
                                : plan.stages.size();
    for (size_t s = 0; s < plan.stages.size(); ++s) {
        const StagePlan &st = plan.stages[s];
        sig.insert(sig.end(), {st.tp, st.cp, st.ep, st.expertTp(), st.sp ? 1 : 0, st.zero, static_cast<int>(st.recompute)});
        // The tier the boundary to the next stage crosses (-1 after the last one).
        const bool last = s + 1 == plan.stages.size();
        sig.push_back(last ? -1 : boundaryLink(topo, st, plan.stages[s + 1]).level);
    }
    sig.push_back(static_cast<int>(physical));
    return sig;
}

} // namespace nest

#include "PlanAnalysis.h"

namespace nest {

PlanAnalysis analyzePlan(const Plan &plan, const Topology &topo, const ModelProfile &model,
                         const CostOptions &options)
{
    PlanAnalysis a;
    a.plan = plan;
    a.errors = planErrors(plan, topo, model);
    a.report = evaluate(plan, topo, model, options);
    if (a.errors.empty())
        a.simulation = simulate(plan, topo, model, options);
    else
        a.simulation.error = a.report.reasons.empty() ? std::string("the plan does not fit") : a.report.reasons.front();
    return a;
}

} // namespace nest

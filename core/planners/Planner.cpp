#include "Planner.h"

#include "PlanSpace.h"

#include <cmath>
#include <sstream>

namespace nest {

PlanResult Planner::plan(const Topology &topo, const ModelProfile &model,
                         const SearchOptions &options) const
{
    const CancelToken never;
    return plan(topo, model, options, ProgressFn(), never);
}

void finishResult(PlanResult &result, const Topology &topo, const ModelProfile &model,
                  const SearchOptions &options)
{
    result.report = evaluate(result.plan, topo, model, searchCostOptions(options));
    const double diff = std::abs(result.report.iterationTime - result.objective);
    result.verified = result.report.feasible && diff <= 1e-9 * std::abs(result.objective);
    if (!result.verified) {
        std::ostringstream s;
        s.precision(12);
        s << "internal inconsistency: the search valued the plan at " << result.objective
          << " s but the evaluator reports " << result.report.iterationTime << " s"
          << (result.report.feasible ? "" : " and calls it infeasible");
        for (const std::string &r : result.report.reasons)
            s << "; " << r;
        result.message = s.str();
    }
}

} // namespace nest

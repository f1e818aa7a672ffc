#include "SearchRun.h"

#include "SearchEstimate.h"

#include <chrono>
#include <utility>

namespace nest {

PlanResult cancelledBeforeStart()
{
    PlanResult cancelled;
    cancelled.cancelled = true;
    cancelled.message = "search cancelled";
    return cancelled;
}

PlanResult runSearch(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                     const std::function<SearchIncumbent(const PlanSpace &, SearchStats &)> &search)
{
    return runSearch(topo, model, options, search, SearchKind::None);
}

PlanResult runSearch(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                     const std::function<SearchIncumbent(const PlanSpace &, SearchStats &)> &search,
                     SearchKind kind)
{
    const auto start = std::chrono::steady_clock::now();
    PlanResult result;
    const PlanSpace space(topo, model, options);
    if (!space.problem().empty()) {
        result.message = space.problem();
        return result;
    }
    // Limits before work: refuse what would not fit the budgets, before allocating.
    if (const std::string refusal = searchLimitProblem(estimateSearch(space, kind), options); !refusal.empty()) {
        result.message = refusal;
        return result;
    }
    try {
        SearchIncumbent best = search(space, result.stats);
        if (best.value < std::numeric_limits<double>::infinity()) {
            result.found = true;
            result.plan = std::move(best.plan);  // on a wide cluster, hundreds of thousands of ids
            result.objective = best.value;
            finishResult(result, topo, model, options);
            for (const auto &[value, plan] : best.top) {
                PlanResult one;
                one.plan = plan;
                one.objective = value;
                finishResult(one, topo, model, options);
                result.top.push_back({plan, one.report, value, one.verified});
            }
        } else {
            result.message = best.obstacle.message(space);
        }
    } catch (const SearchCancelled &) {
        result.cancelled = true;
        result.message = "search cancelled";
    } catch (const SearchLimitExceeded &limit) {
        result.message = limit.message;
    }
    result.stats.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace nest

#include "SearchRun.h"

#include "SearchEstimate.h"

#include <chrono>
#include <cstdio>
#include <new>
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
    // What no plan can fit is said before the plan space and its tables exist (issue 48).
    if (topo.deviceCount() > 0 && model.layerCount() > 0)
        if (std::string whole = wholeClusterMemoryProblem(topo, model, searchCostOptions(options)); !whole.empty()) {
            result.message = whole;
            return result;
        }
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
    } catch (const std::bad_alloc &) {
        // The estimate is an order of magnitude: when the process's memory (ulimit -v, a
        // container) runs out before the budget does, the search ends with the reason, not
        // the process (issue 48: 20,000 layers under a 4 GB cap was "internal error:
        // std::bad_alloc"). Its tables are freed by now.
        const SearchEstimate e = estimateSearch(space, kind);
        char buf[96];
        std::snprintf(buf, sizeof buf, "%.1f GB", e.bytes / 1e9);
        result.message = "search ran out of memory (estimated ~" + std::string(buf) +
                         "; fewer layers or devices, a smaller --max-stages, or more memory)";
    }
    result.stats.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace nest

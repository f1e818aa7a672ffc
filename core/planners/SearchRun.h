#pragma once
// The frame every searching planner (nest, exhaustive, megatron, mcmc) runs in: build the
// PlanSpace, refuse what would pass the budgets (SearchEstimate.h), run the search, and turn
// what it leaves (a plan, a memory obstacle, a cancellation, a limit passed while it ran)
// into the PlanResult.
#include "PlanSpace.h"
#include "Planner.h"

#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace nest {

// Thrown by a search that sees its CancelToken cancelled; runSearch() catches it.
struct SearchCancelled {};
// Thrown by a search whose memory passes SearchOptions::memoryBudgetBytes while it runs
// (the estimate before it was too low); runSearch() turns it into PlanResult.message.
struct SearchLimitExceeded {
    std::string message;
};

enum class SearchKind;

// What a search leaves: the best value and plan (value infinite = none) and, for the
// message when nothing fits, the closest memory miss.
struct SearchIncumbent {
    double value = std::numeric_limits<double>::infinity();
    Plan plan;
    MemoryObstacle obstacle;
    // SearchOptions::topK > 1: the best distinct plans with their values, best first.
    std::vector<std::pair<double, Plan>> top;
};

// Builds the space (or reports why it is empty), runs `search` on it, and turns what it
// leaves into the PlanResult: cancelled (SearchCancelled), the found plan checked by
// finishResult(), or the obstacle's message; stats.wallSeconds from the start.
// With a `kind` other than None, the search is first estimated (SearchEstimate.h) and
// refused with the estimate and the limit in PlanResult.message when above the budgets.
PlanResult runSearch(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                     const std::function<SearchIncumbent(const PlanSpace &, SearchStats &)> &search,
                     SearchKind kind);
PlanResult runSearch(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                     const std::function<SearchIncumbent(const PlanSpace &, SearchStats &)> &search);

// The result of a search cancelled before it started: cancelled (not refused, whatever the
// inputs), "search cancelled".
PlanResult cancelledBeforeStart();

} // namespace nest

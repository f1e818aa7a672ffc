#pragma once
// Limits before work (issue 13): what a search will cost, estimated from the plan space
// before anything is allocated, and the refusal when that is above the budget. The CLI
// shows the estimate as progress / time left, the window shows the refusal as the run's
// error; the planners refuse through runSearch() (SearchRun.h) with the same message.
#include "PlanSpace.h"
#include "Planner.h"
#include "Result.h"

#include <string>

namespace nest {

enum class SearchKind {
    None,        // no estimate (planners that bound their own work: mcmc, manual)
    Nest,        // NestPlanner's dynamic programme
    Exhaustive,  // ExhaustivePlanner's enumeration of every plan
    Megatron,    // MegatronPlanner's grid (issue 48: thousands of candidates ran for over 600 s
                 // with no estimate): states are the plans it evaluates
};

struct SearchEstimate {
    double states = 0;     // DP cells the search is expected to visit (nest) or layouts it
                           // enumerates (exhaustive), all outer points
    double bytes = 0;      // the most memory the search holds at once (one outer point)
    double seconds = 0;    // rough wall time on one core (an order of magnitude, not a promise)
};

// Bytes one DP cell of NestPlanner holds at once: its memo slot (key + span, at most
// half-full table, doubled on growth) and its share of the Pareto points and scratch. The
// estimate and the search's own check while it grows both count with it.
inline constexpr double kBytesPerSearchCell = 96;

// Default SearchOptions::memoryBudgetBytes: half of what the process may use: the machine's
// physical memory (sysconf), or less where a limit says so: RLIMIT_AS and RLIMIT_DATA
// (ulimit -v / -d) and the cgroup's memory.max (a container). 4 GB when nothing can be read.
// Issue 48: under a 4 GB cap on a larger machine the budget was half the machine and a
// 25,000-layer model ended in std::bad_alloc.
double defaultMemoryBudgetBytes();
// Default SearchOptions::maxStates: above this a search is refused as too long.
inline constexpr double kDefaultMaxStates = 2e9;

SearchEstimate estimateSearch(const PlanSpace &space, SearchKind kind);
// The same from the inputs (builds the PlanSpace); fails with the space's problem. The
// planner name is the registry's ("nest", "exhaustive", ...); others estimate as None.
Result<SearchEstimate> estimateSearch(const Topology &topo, const ModelProfile &model,
                                      const SearchOptions &options, const std::string &planner);

// Empty when the estimate is within the options' budgets, otherwise the refusal:
// "search would need ~12.3 GB (4.1e+09 states), above the budget of 8.0 GB" or
// "search would visit ~3e+12 states, above the limit of 2e+09".
std::string searchLimitProblem(const SearchEstimate &estimate, const SearchOptions &options);

// The budget in force for `options` (its value, or the default when 0).
double memoryBudgetOf(const SearchOptions &options);
double maxStatesOf(const SearchOptions &options);

} // namespace nest

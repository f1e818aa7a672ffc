#pragma once
// The precision as a searched dimension (issue 46; docs/planner.md, "Precision"): a planner
// prices one precision (SearchOptions::cost.precision); planPrecisions() runs it once per
// precision of SearchOptions::precisions and keeps the fastest plan, so the search over the
// list is as exact as the planner is over one. Each precision changes every stage's cost, so
// the runs share nothing; a precision that nothing fits in simply loses.
#include "FrameworkProfile.h"
#include "Planner.h"
#include "Precision.h"
#include "Result.h"

#include <vector>

namespace nest {

class Topology;

// The precisions a search covers: `formats` as given (fp8 with `recipe`), each checked
// against every device type of the cluster and the framework, or, when `formats` is empty,
// every precision both support (fp8 with `recipe` when the framework runs it, else its
// first fp8 recipe). Fails naming the device or framework that lacks a listed precision.
Result<std::vector<Precision>> searchPrecisions(const std::vector<NumberFormat> &formats, Fp8Recipe recipe,
                                                bool recipeGiven, const Topology &topo, Framework framework);

// `planner` once per precision of options.precisions (options.cost.precision when empty),
// the best plan of them (top K: the best K over all of them). Progress runs over the whole;
// stats add up; a run cancelled ends the search with what was found.
PlanResult planPrecisions(const Planner &planner, const Topology &topo, const ModelProfile &model,
                          const SearchOptions &options, const ProgressFn &progress, const CancelToken &cancel);

} // namespace nest

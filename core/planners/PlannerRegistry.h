#pragma once
// The one place that knows every planner by name (BRIEF §4): the CLI, the window and the
// comparison code pick a planner through makePlanner(name) and list them with
// plannerNames(); none of them has an if/else over planner kinds.
//
//   nest        the network- and memory-aware dynamic program (NestPlanner.h)
//   exhaustive  brute force over the same space, for small instances (ExhaustivePlanner.h)
//   flat        the same DP on a network-agnostic view of the cluster (FlatPlanner.h)
//   megatron    the grid of manual Megatron-style layouts, best kept (MegatronPlanner.h)
//   mcmc        seeded simulated annealing over the plan space (McmcPlanner.h)
#include "Planner.h"

#include <memory>
#include <string>
#include <vector>

namespace nest {

struct PlannerInfo {
    std::string name;
    std::string description;   // one line, for --help and the window's tooltips
    bool baseline;             // compared against NEST by `nest-cli compare` by default
};

// Every registered planner, NEST first.
const std::vector<PlannerInfo> &plannerInfos();
// Their names, in the same order.
const std::vector<std::string> &plannerNames();
// The planner named `name`; null for an unknown name (names are case-sensitive).
std::unique_ptr<Planner> makePlanner(const std::string &name);
// "nest, exhaustive, ..." for error messages.
std::string plannerNameList();

} // namespace nest

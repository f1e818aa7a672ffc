#pragma once
// Everything the plan views show about one plan on one cluster and model: the evaluator's
// report and the simulator's timeline. The GUI computes no cost itself: it asks for this.
#include "Evaluator.h"
#include "Plan.h"
#include "Simulator.h"

#include <string>
#include <vector>

namespace nest {

struct PlanAnalysis {
    Plan plan;
    Report report;                  // report.reasons say why a plan is infeasible
    SimulationResult simulation;    // simulation.error is set when it could not run
    std::vector<std::string> errors;  // planErrors(): the plan does not fit this cluster/model
    bool wellFormed() const { return errors.empty(); }
};

PlanAnalysis analyzePlan(const Plan &plan, const Topology &topo, const ModelProfile &model,
                         const CostOptions &options = {});

} // namespace nest

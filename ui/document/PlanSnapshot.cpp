#include "PlanSnapshot.h"

#include "Calibration.h"  // modelErrorBand

#include <utility>

namespace nest::ui {

std::shared_ptr<PlanSnapshot> analysedSnapshot(const Plan &plan, const std::string &label, const std::string &planner,
                                               const Topology &topology, ModelProfile model,
                                               std::optional<ModelSource> modelSource, const SearchSettings &settings,
                                               const std::optional<Calibration> &calibration, const CostOptions &cost)
{
    auto snap = std::make_shared<PlanSnapshot>();
    snap->label = label;
    snap->planner = planner;
    snap->topology = topology;
    snap->model = std::move(model);
    snap->modelSource = std::move(modelSource);
    snap->settings = settings;
    snap->calibration = calibration;
    snap->band = modelErrorBand(cost, calibration, topology);
    snap->cost = cost;
    snap->analysis = analyzePlan(plan, topology, snap->model, cost);
    return snap;
}

} // namespace nest::ui

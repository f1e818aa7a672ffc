#pragma once
// One plan as every plan view shows it: what was planned (or opened), on which cluster and
// model, what the evaluator and the simulator say of it, and how the search went. A
// snapshot is immutable and shared (std::shared_ptr<const PlanSnapshot>) between the
// views; the worker builds it, the views only read it.
#include "Calibration.h"
#include "JsonUtil.h"
#include "ModelSource.h"
#include "Planner.h"
#include "PlanAnalysis.h"
#include "SearchSettings.h"
#include "Topology.h"

#include <QMetaType>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nest::ui {

struct PlanSnapshot {
    std::uint64_t jobId = 0;           // the planning job that made it (0 = opened / pinned)
    std::string label;            // "nest 14:02", the file name, the pinned label
    std::string planner;          // "nest", "exhaustive", "file"
    Topology topology;            // the cluster it was planned on
    ModelProfile model;           // the model it was planned for
    std::optional<ModelSource> modelSource;   // ... as the workspace named it (for pinning); none = not said
    SearchSettings settings;      // the settings it was planned with
    std::optional<Calibration> calibration;   // the cost model's calibration it was priced with
    CostOptions cost;             // the cost model it was priced with (calibration applied): what
                                  // the views ask core with for more than the report (layerKindSplit)
    ErrorBand band;               // the error band of its times (modelErrorBand)
    PlanAnalysis analysis;        // plan + report + simulation
    bool searched = false;        // true: stats/objective below come from a search
    SearchStats stats;            // stats.wallSeconds: search time (also kept for pinned plans)
    double objective = 0;         // the value the planner optimised (seconds)
    bool verified = false;        // objective == report.iterationTime
    // The nest search reused the previous one (PlanningSession: the same inputs, or the
    // previous optimum as a bound); stats.wallSeconds is then the re-plan's time.
    bool replanned = false;
    // The best K distinct plans (the settings' top_k > 1): this plan's rank in its group
    // (1 = the best; 0 = no group), the group's size, its time above the best (percent),
    // and, on the best only, the others (ranks 2..K) as snapshots of their own.
    int rank = 0;
    int groupSize = 0;
    double deltaPercent = 0;
    std::vector<std::shared_ptr<const PlanSnapshot>> alternatives;

    const Plan &plan() const { return analysis.plan; }
    const Report &report() const { return analysis.report; }
    const SimulationResult &simulation() const { return analysis.simulation; }
};

using PlanSnapshotPtr = std::shared_ptr<const PlanSnapshot>;

// A snapshot of `plan` on `topology` with `model` (as `modelSource` named it), planned under
// `settings` and analysed (evaluated, simulated) with `cost`, its error band from the
// framework and `calibration`: the one place a snapshot's inputs and analysis are set (a
// search's result, a baseline planner's, a pinned plan). The caller adds what the search
// says (searched, stats, objective, verified) and the job id.
std::shared_ptr<PlanSnapshot> analysedSnapshot(const Plan &plan, const std::string &label, const std::string &planner,
                                               const Topology &topology, ModelProfile model,
                                               std::optional<ModelSource> modelSource, const SearchSettings &settings,
                                               const std::optional<Calibration> &calibration, const CostOptions &cost);

} // namespace nest::ui

Q_DECLARE_METATYPE(nest::ui::PlanSnapshotPtr)

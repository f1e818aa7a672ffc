#pragma once
// A plan kept in a workspace: its label, the planner that made it, the plan itself, the
// search settings it was planned with and the cluster it was planned on (so that it can be
// shown, compared and re-evaluated after the cluster has been edited).
//
// JSON (an element of the workspace's "plans"):
//   {"label": "nest 14:02", "planner": "nest", "plan": { ...plan JSON (PlanIO.h)... },
//    "search": { ...search settings... }, "cluster": { ...cluster JSON... },
//    "model": { ...model object as the workspace's "model"... }, "search_time_s": 0.42}
// "plan" is required; "label" defaults to "", "planner" to "file", "search" to the
// defaults, "cluster" to the workspace's own cluster, "model" to the workspace's own model
// (it is written only when it differs), "search_time_s" to 0 (not searched / unknown).
#include "JsonUtil.h"
#include "ModelProfile.h"
#include "ModelSource.h"
#include "Plan.h"
#include "Result.h"
#include "SearchSettings.h"
#include "Topology.h"

#include <optional>
#include <string>

namespace nest {

struct PinnedPlan {
    std::string label;
    std::string planner = "file";   // a PlannerRegistry name, or "file" (opened from a file)
    Plan plan;
    SearchSettings settings;
    Topology cluster;
    std::optional<ModelSource> model;   // none = the workspace's model
    double searchSeconds = 0;        // the planner's wall time; 0 = not searched / unknown

    bool operator==(const PinnedPlan &) const = default;
};

Json pinnedPlanToJson(const PinnedPlan &p);
// `path` is the JSON path of the object ("plans[2]"); `fallbackCluster` is used when the
// object has no "cluster". Messages are "ORIGIN: at PATH.KEY: REASON".
Result<PinnedPlan> pinnedPlanFromJson(const Json &j, const std::string &origin, const std::string &path,
                                      const Topology &fallbackCluster);
// The model the plan was planned for: its own "model" (or `workspaceModel` when it has
// none), with the plan's sequence length and global batch, so that it re-evaluates to the
// time it was planned with. Errors name `origin`.
Result<ModelProfile> pinnedPlanModel(const PinnedPlan &p, const ModelSource &workspaceModel, const std::string &origin);

} // namespace nest

#include "PinnedPlan.h"

#include "ClusterIO.h"
#include "ModelIO.h"
#include "PlanIO.h"

namespace nest {

Json pinnedPlanToJson(const PinnedPlan &p)
{
    Json j{{"label", p.label},
           {"planner", p.planner},
           {"plan", planToJson(p.plan)},
           {"search", searchSettingsToJson(p.settings)},
           {"cluster", clusterToJson(p.cluster)}};
    if (p.model)
        j["model"] = p.model->toJson();
    if (p.searchSeconds > 0)
        j["search_time_s"] = p.searchSeconds;
    return j;
}

Result<ModelProfile> pinnedPlanModel(const PinnedPlan &p, const ModelSource &workspaceModel, const std::string &origin)
{
    ModelOptions mo;
    mo.seqLength = p.plan.seqLength;
    mo.globalBatch = p.plan.globalBatch;
    return (p.model ? *p.model : workspaceModel).profile(origin, mo);
}

namespace {

// Re-roots a nested loader's "ORIGIN: at PATH: REASON" message under `prefix`.
std::string nested(const std::string &message, const std::string &origin, const std::string &prefix)
{
    const std::string head = origin.empty() ? std::string() : origin + ": ";
    if (message.rfind(head + "at ", 0) == 0)
        return head + "at " + prefix + "." + message.substr(head.size() + 3);
    if (message.rfind(head, 0) == 0)
        return head + "at " + prefix + ": " + message.substr(head.size());
    return head + "at " + prefix + ": " + message;
}

} // namespace

Result<PinnedPlan> pinnedPlanFromJson(const Json &j, const std::string &origin, const std::string &path,
                                      const Topology &fallbackCluster)
{
    try {
        requireKnownKeys(j, path, {"label", "planner", "plan", "search", "cluster", "model", "search_time_s"});
        PinnedPlan p;
        p.label = getString(j, "label", path, "");
        p.planner = getString(j, "planner", path, "file");
        const Json &planJson = requireKey(j, "plan", path);
        Result<Plan> plan = planFromJson(planJson, origin);
        if (!plan)
            return Result<PinnedPlan>::failure(nested(plan.error(), origin, childPath(path, "plan")));
        p.plan = std::move(plan).value();
        if (has(j, "search"))
            p.settings = searchSettingsFromJson(j.at("search"), childPath(path, "search"));
        if (has(j, "cluster")) {
            Result<Topology> topo = clusterFromJson(j.at("cluster"), origin);
            if (!topo)
                return Result<PinnedPlan>::failure(nested(topo.error(), origin, childPath(path, "cluster")));
            p.cluster = std::move(topo).value();
        } else {
            p.cluster = fallbackCluster;
        }
        if (has(j, "model"))
            p.model = modelSourceFromJson(j.at("model"), childPath(path, "model"));
        if (has(j, "search_time_s"))
            p.searchSeconds = getInRange(j, "search_time_s", path, Range{0, 1e9, "s"}, 0);
        return p;
    } catch (const JsonError &e) {
        return Result<PinnedPlan>::failure(formatError(origin, e.path(), e.reason()));
    }
}

} // namespace nest

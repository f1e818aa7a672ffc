#include "PinnedPlan.h"

#include "ClusterIO.h"
#include "Limits.h"
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
        if (p.label.size() > static_cast<size_t>(limits::labelChars.max))
            throw JsonError(childPath(path, "label"), "must be at most " + std::to_string(static_cast<int>(limits::labelChars.max)) +
                                                         " characters, found " + std::to_string(p.label.size()));
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
        if (has(j, "model")) {
            // The pin's own model must load (with the plan's sequence length and batch, as
            // the window evaluates it): a preset that does not exist or a broken profile is
            // refused here with its path, not when the pin is shown.
            const std::string mpath = childPath(path, "model");
            p.model = modelSourceFromJson(j.at("model"), mpath);
            ModelOptions mo;
            mo.seqLength = p.plan.seqLength;
            mo.globalBatch = p.plan.globalBatch;
            if (const Result<ModelProfile> m = p.model->profile(origin, mo); !m)
                return Result<PinnedPlan>::failure(nested(m.error(), origin, mpath));
        }
        if (has(j, "search_time_s"))
            p.searchSeconds = getInRange(j, "search_time_s", path, Range{0, 1e9, "s"}, 0);
        return p;
    } catch (const JsonError &e) {
        return Result<PinnedPlan>::failure(formatError(origin, e.path(), e.reason()));
    }
}

} // namespace nest

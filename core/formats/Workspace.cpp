#include "Workspace.h"

#include "ClusterIO.h"
#include "ModelIO.h"

#include <filesystem>

namespace nest {

namespace {

// A nested loader names paths inside its own object ("ORIGIN: at levels[1]: ..."): put
// them under the workspace's `key` ("ORIGIN: at cluster.levels[1]: ...").
std::string underKey(const std::string &message, const std::string &origin, const std::string &key)
{
    const std::string head = origin.empty() ? std::string() : origin + ": ";
    if (message.rfind(head + "at ", 0) == 0)
        return head + "at " + key + "." + message.substr(head.size() + 3);
    if (message.rfind(head, 0) == 0)
        return head + key + ": " + message.substr(head.size());
    return message;
}

} // namespace

bool looksLikeWorkspace(const Json &j)
{
    if (!j.is_object())
        return false;
    const auto f = j.find("format");
    if (f != j.end() && f->is_string() && f->get<std::string>() == "nest-workspace")
        return true;
    return j.contains("cluster");
}

Result<Workspace> workspaceFromJson(const Json &j, const std::string &origin)
{
    try {
        requireKnownKeys(j, "", {"format", "version", "cluster", "model", "search", "plans", "calibration"});
        if (has(j, "format") && getString(j, "format", "") != "nest-workspace")
            throw JsonError("format", "expected \"nest-workspace\"");
        if (has(j, "version"))
            getInt(j, "version", "", 1, 1);
        Workspace w;
        const Json &cluster = requireKey(j, "cluster", "");
        Result<Topology> topo = clusterFromJson(cluster, origin);
        if (!topo) {
            return Result<Workspace>::failure(underKey(topo.error(), origin, "cluster"));
        }
        w.cluster = std::move(topo).value();
        if (has(j, "model"))
            w.model = modelSourceFromJson(j.at("model"), "model");
        if (has(j, "search"))
            w.search = searchSettingsFromJson(j.at("search"), "search");
        if (has(j, "plans")) {
            const Json &plans = j.at("plans");
            requireArray(plans, "plans");
            for (size_t i = 0; i < plans.size(); ++i) {
                Result<PinnedPlan> p = pinnedPlanFromJson(plans[i], origin, childPath("plans", i), w.cluster);
                if (!p)
                    return Result<Workspace>::failure(p.error());
                w.plans.push_back(std::move(p).value());
            }
        }
        if (has(j, "calibration")) {
            const Json &c = j.at("calibration");
            Result<Calibration> cal = Result<Calibration>::failure("");
            if (c.is_string()) {
                w.calibrationFile = c.get<std::string>();
                if (w.calibrationFile.empty())
                    throw JsonError("calibration", "expected a calibration file's name or a nest-calibration object");
                std::filesystem::path file(w.calibrationFile);
                if (file.is_relative())
                    file = std::filesystem::path(origin).parent_path() / file;
                cal = loadCalibration(file.string());
                if (!cal)
                    throw JsonError("calibration", cal.error());
            } else if (c.is_object()) {
                cal = calibrationFromJson(c, origin);
                if (!cal)
                    return Result<Workspace>::failure(underKey(cal.error(), origin, "calibration"));
            } else {
                throw JsonError("calibration", "expected a calibration file's name or a nest-calibration object");
            }
            w.calibration = std::move(cal).value();
        }
        return w;
    } catch (const JsonError &e) {
        return Result<Workspace>::failure(formatError(origin, e.path(), e.reason()));
    }
}

Json workspaceToJson(const Workspace &w)
{
    Json plans = Json::array();
    for (const PinnedPlan &p : w.plans) {
        Json pj = pinnedPlanToJson(p);
        if (p.model && *p.model == w.model)
            pj.erase("model");   // the workspace's own model: said once, at the top (none on load)
        plans.push_back(std::move(pj));
    }
    Json out{{"format", "nest-workspace"},
             {"version", 1},
             {"cluster", clusterToJson(w.cluster)},
             {"model", w.model.toJson()},
             {"search", searchSettingsToJson(w.search)},
             {"plans", plans}};
    if (w.calibration)
        out["calibration"] = w.calibrationFile.empty() ? w.calibration->toJson() : Json(w.calibrationFile);
    return out;
}

Result<ModelProfile> workspaceModel(const Workspace &w, const std::string &origin)
{
    Result<ModelProfile> m = w.model.profile(origin);
    if (m)
        return m;
    return Result<ModelProfile>::failure(underKey(m.error(), origin, "model"));
}

Result<Workspace> loadWorkspace(const std::string &file)
{
    Result<Json> j = readJsonFile(file);
    if (!j)
        return Result<Workspace>::failure(j.error());
    return workspaceFromJson(*j, file);
}

} // namespace nest

#include "Workspace.h"

#include "ClusterIO.h"

namespace nest {

bool looksLikeWorkspace(const Json &j)
{
    if (!j.is_object())
        return false;
    const auto f = j.find("format");
    if (f != j.end() && f->is_string() && f->get<std::string>() == "nest-workspace")
        return true;
    return j.contains("cluster");
}

Json searchSettingsToJson(const SearchSettings &s)
{
    Json schedules = Json::array();
    for (Schedule sc : s.schedules)
        schedules.push_back(toString(sc));
    return Json{{"micro_batches", s.microBatches},
                {"schedules", schedules},
                {"max_stages", s.maxStages},
                {"allow_zero", s.allowZero},
                {"allow_recompute", s.allowRecompute},
                {"allow_sp", s.allowSequenceParallel},
                {"memory_headroom", s.memoryHeadroom}};
}

SearchSettings searchSettingsFromJson(const Json &j, const std::string &path)
{
    requireObject(j, path);
    static const char *const known[] = {"micro_batches", "schedules", "max_stages", "allow_zero",
                                        "allow_recompute", "allow_sp", "memory_headroom"};
    for (const auto &item : j.items()) {
        bool ok = false;
        for (const char *k : known)
            ok = ok || item.key() == k;
        if (!ok)
            throw JsonError(childPath(path, item.key()), "unknown key");
    }
    SearchSettings s;
    if (has(j, "micro_batches")) {
        const std::string p = childPath(path, "micro_batches");
        const Json &list = j.at("micro_batches");
        requireArray(list, p);
        if (list.empty())
            throw JsonError(p, "needs at least one micro-batch size");
        s.microBatches.clear();
        for (size_t i = 0; i < list.size(); ++i)
            s.microBatches.push_back(static_cast<int>(asInt(list[i], childPath(p, i), 1, 1 << 20)));
    }
    if (has(j, "schedules")) {
        const std::string p = childPath(path, "schedules");
        const Json &list = j.at("schedules");
        requireArray(list, p);
        if (list.empty())
            throw JsonError(p, "needs at least one schedule");
        s.schedules.clear();
        for (size_t i = 0; i < list.size(); ++i) {
            Schedule sc;
            if (!list[i].is_string() || !scheduleFromString(list[i].get<std::string>(), sc))
                throw JsonError(childPath(p, i), "expected one of \"1f1b\", \"gpipe\", \"interleaved\"");
            s.schedules.push_back(sc);
        }
    }
    s.maxStages = static_cast<int>(getInt(j, "max_stages", path, 0, 1 << 20, 0));
    s.allowZero = getBool(j, "allow_zero", path, true);
    s.allowRecompute = getBool(j, "allow_recompute", path, true);
    s.allowSequenceParallel = getBool(j, "allow_sp", path, true);
    s.memoryHeadroom = getNonNegative(j, "memory_headroom", path, 0.0);
    if (s.memoryHeadroom >= 1)
        throw JsonError(childPath(path, "memory_headroom"), "must be a fraction below 1");
    return s;
}

Result<Workspace> workspaceFromJson(const Json &j, const std::string &origin)
{
    try {
        requireObject(j, "");
        static const char *const known[] = {"format", "version", "cluster", "model", "search", "plans"};
        for (const auto &item : j.items()) {
            bool ok = false;
            for (const char *k : known)
                ok = ok || item.key() == k;
            if (!ok)
                throw JsonError(item.key(), "unknown key");
        }
        if (has(j, "format") && getString(j, "format", "") != "nest-workspace")
            throw JsonError("format", "expected \"nest-workspace\"");
        if (has(j, "version"))
            getInt(j, "version", "", 1, 1);
        Workspace w;
        const Json &cluster = requireKey(j, "cluster", "");
        Result<Topology> topo = clusterFromJson(cluster, origin);
        if (!topo) {
            // ClusterIO's paths are relative to the cluster object: prefix them.
            const std::string prefix = origin.empty() ? std::string() : origin + ": ";
            std::string msg = topo.error();
            if (msg.rfind(prefix + "at ", 0) == 0)
                msg = prefix + "at cluster." + msg.substr(prefix.size() + 3);
            else if (msg.rfind(prefix, 0) == 0)
                msg = prefix + "cluster: " + msg.substr(prefix.size());
            return Result<Workspace>::failure(msg);
        }
        w.cluster = std::move(topo).value();
        if (has(j, "model")) {
            const Json &m = j.at("model");
            if (m.is_string())
                w.model = Json{{"preset", m.get<std::string>()}};
            else if (m.is_object())
                w.model = m;
            else
                throw JsonError("model", "expected a preset name or a model object");
        }
        if (has(j, "search"))
            w.search = searchSettingsFromJson(j.at("search"), "search");
        if (has(j, "plans")) {
            const Json &plans = j.at("plans");
            requireArray(plans, "plans");
            for (size_t i = 0; i < plans.size(); ++i) {
                requireObject(plans[i], childPath("plans", i));
                w.plans.push_back(plans[i]);
            }
        }
        return w;
    } catch (const JsonError &e) {
        return Result<Workspace>::failure(formatError(origin, e.path(), e.reason()));
    }
}

Json workspaceToJson(const Workspace &w)
{
    Json plans = Json::array();
    for (const Json &p : w.plans)
        plans.push_back(p);
    return Json{{"format", "nest-workspace"},
                {"version", 1},
                {"cluster", clusterToJson(w.cluster)},
                {"model", w.model},
                {"search", searchSettingsToJson(w.search)},
                {"plans", plans}};
}

Result<Workspace> loadWorkspace(const std::string &file)
{
    Result<Json> j = readJsonFile(file);
    if (!j)
        return Result<Workspace>::failure(j.error());
    return workspaceFromJson(*j, file);
}

} // namespace nest

// nest-cli inspect [--cluster C] [--model M] [--seq N] [--batch N] [--json]
// What a cluster and a model are, in numbers: devices and levels; parameters, FLOPs per
// token and weight memory. Everything is computed by core; this file only prints.
#include "CliArgs.h"
#include "CliCommands.h"
#include "CliPlanOptions.h"

#include "ClusterIO.h"
#include "ModelIO.h"

#include <cstdio>
#include <iostream>
#include <map>

namespace nest::cli {

namespace {

Json clusterJson(const Topology &t)
{
    Json levels = Json::array();
    std::vector<int> groupsPerLevel(t.levels.size(), 0);
    for (const auto &g : t.groups)
        if (g.level >= 0 && g.level < t.levelCount())
            ++groupsPerLevel[g.level];
    for (int l = 0; l < t.levelCount(); ++l) {
        const auto &lv = t.levels[l];
        levels.push_back({{"level", l},
                          {"name", lv.name},
                          {"groups", groupsPerLevel[l]},
                          {"bandwidth_GBps", lv.link.bandwidth / 1e9},
                          // What the costs move: NCCL's share of the nominal rate
                          // (Topology::achievableLevelLink, docs/cost-model.md section 2).
                          {"achievable_GBps", t.achievableLevelLink(l).bandwidth / 1e9},
                          {"latency_us", lv.link.latency * 1e6},
                          {"oversubscription", lv.link.oversubscription}});
    }
    std::map<std::string, int> perType;
    for (const auto &d : t.devices)
        ++perType[t.deviceTypes[d.type].name];
    Json types = Json::array();
    for (const auto &spec : t.deviceTypes)
        types.push_back({{"name", spec.name},
                         {"count", perType[spec.name]},
                         {"peak_tflops", spec.peakFlops / 1e12},
                         {"memory_GB", spec.memoryBytes / 1e9},
                         {"memory_bandwidth_GBps", spec.memoryBandwidth / 1e9}});
    // Each node with its device ids (ids below a node are contiguous), as exports name hosts.
    Json nodes = Json::array();
    for (int g : t.groupsAtLevel(0)) {
        const std::vector<int> ids = t.devicesUnder(g);
        nodes.push_back({{"name", t.groups[static_cast<size_t>(g)].name},
                         {"first_device", ids.empty() ? 0 : ids.front()},
                         {"devices", ids.size()},
                         {"device_type", t.deviceTypes[static_cast<size_t>(t.groups[static_cast<size_t>(g)].deviceType)].name}});
    }
    return {{"name", t.name}, {"devices", t.deviceCount()}, {"device_types", types}, {"levels", levels},
            {"nodes", nodes}};
}

Json modelJson(const ModelProfile &m)
{
    int moe = 0;
    double mtp = 0;
    Json kinds = Json::array(), labels = Json::array(), params = Json::array(), counts = Json::object();
    for (const auto &l : m.layers) {
        moe += l.kind == LayerKind::Moe;
        mtp += l.kind == LayerKind::Mtp ? l.params : 0;
        kinds.push_back(toString(l.kind));
        labels.push_back(layerLabel(l));
        params.push_back(l.params);
    }
    for (const LayerRun &c : layerKindCounts(m))
        counts[c.kind] = c.count;
    // The router: top-k of the experts, and where group-limited, inside how many groups.
    const ExpertRouting r = m.routing();
    const Json routing = r.experts > 1 ? Json{{"experts", r.experts},
                                              {"top_k", r.topK},
                                              {"router_groups", r.groupLimited() ? r.groups : 0},
                                              {"router_group_topk", r.groupLimited() ? r.groupTopK : 0}}
                                       : Json(nullptr);
    return {{"name", m.name},
            {"family", m.family},
            {"layers", m.layerCount()},
            {"moe_layers", moe},
            {"seq_length", m.seqLength},
            {"global_batch", m.globalBatch},
            {"parameters", m.totalParams()},
            {"active_parameters", m.activeParams()},
            {"flops_per_token", m.flopsPerToken()},
            {"weight_bytes", m.weightBytes()},
            {"layer_kinds", kinds},
            {"mtp_parameters", mtp},
            {"layer_pattern", formatLayerPattern(layerRuns(m))},
            {"layer_kind_counts", counts},
            {"routing", routing},
            {"layer_labels", labels},
            {"layer_parameters", params}};
}

void printCluster(const Json &c)
{
    std::printf("Cluster %s: %d devices\n", c["name"].get<std::string>().c_str(), c["devices"].get<int>());
    for (const auto &t : c["device_types"])
        std::printf("  %5d x %-16s %8.1f TFLOP/s  %7.1f GB  %7.0f GB/s HBM\n", t["count"].get<int>(),
                    t["name"].get<std::string>().c_str(), t["peak_tflops"].get<double>(),
                    t["memory_GB"].get<double>(), t["memory_bandwidth_GBps"].get<double>());
    std::printf("  level  name          groups   bandwidth/device   priced at     latency   oversubscription\n");
    for (const auto &l : c["levels"])
        std::printf("  %5d  %-12s %7d   %10.1f GB/s   %7.1f GB/s   %7.2f us   %5.2f\n", l["level"].get<int>(),
                    l["name"].get<std::string>().c_str(), l["groups"].get<int>(),
                    l["bandwidth_GBps"].get<double>(), l["achievable_GBps"].get<double>(),
                    l["latency_us"].get<double>(), l["oversubscription"].get<double>());
}

void printModel(const Json &m)
{
    std::printf("Model %s (%s): %d layers (%d MoE), sequence %d, global batch %d\n",
                m["name"].get<std::string>().c_str(), m["family"].get<std::string>().c_str(),
                m["layers"].get<int>(), m["moe_layers"].get<int>(), m["seq_length"].get<int>(),
                m["global_batch"].get<int>());
    std::printf("  layers:            %s\n", m["layer_pattern"].get<std::string>().c_str());
    std::printf("  parameters:        %.4g (%.3f B)\n", m["parameters"].get<double>(),
                m["parameters"].get<double>() / 1e9);
    if (m["mtp_parameters"].get<double>() > 0)
        std::printf("  of which MTP:      %.4g (%.3f B)\n", m["mtp_parameters"].get<double>(),
                    m["mtp_parameters"].get<double>() / 1e9);
    std::printf("  active parameters: %.4g (%.3f B)\n", m["active_parameters"].get<double>(),
                m["active_parameters"].get<double>() / 1e9);
    if (const Json &r = m["routing"]; !r.is_null()) {
        std::printf("  routing:           top-%d of %d experts", r["top_k"].get<int>(), r["experts"].get<int>());
        if (r["router_groups"].get<int>() > 0)
            std::printf(", inside %d of %d groups", r["router_group_topk"].get<int>(), r["router_groups"].get<int>());
        std::printf("\n");
    }
    std::printf("  FLOPs per token:   %.4g (forward + backward)\n", m["flops_per_token"].get<double>());
    std::printf("  weight memory:     %.2f GB (BF16)\n", m["weight_bytes"].get<double>() / 1e9);
}

// What --json prints: the cluster's and the model's objects, and their headline numbers at
// the top (null for the one not given).
Json inspectJson(const std::optional<Topology> &topo, const std::optional<ModelProfile> &model)
{
    Json out = {{"devices", nullptr}, {"levels", nullptr}, {"parameters", nullptr},
                {"active_parameters", nullptr}, {"flops_per_token", nullptr}};
    if (topo) {
        const Json c = clusterJson(*topo);
        out["cluster"] = c;
        out["devices"] = c["devices"];
        out["levels"] = c["levels"];
    }
    if (model) {
        const Json m = modelJson(*model);
        out["model"] = m;
        for (const char *k : {"parameters", "active_parameters", "flops_per_token", "weight_bytes"})
            out[k] = m[k];
    }
    return out;
}

} // namespace

int cmdInspect(const Args &args)
{
    const CliArgs a(args, {"workspace", "cluster", "model", "seq", "batch"}, {"json"}, "inspect");
    if (!a.positional().empty())
        throw UsageError{"unexpected argument '" + a.positional().front() + "'"};
    if (!a.has("cluster") && !a.has("model") && !a.has("workspace"))
        throw UsageError{"give --cluster FILE|PRESET and/or --model FILE|PRESET, or --workspace FILE"};

    ModelOptions opts;
    if (a.has("seq"))
        opts.seqLength = a.intValue("seq", 0, limits::seqLength);
    if (a.has("batch"))
        opts.globalBatch = a.intValue("batch", 0, limits::batch);
    std::optional<Topology> topo;
    std::optional<ModelProfile> model;
    if (a.has("workspace")) {
        ClusterAndModel cm = loadClusterAndModel(a, opts.seqLength, opts.globalBatch);
        topo = std::move(cm.topology);
        model = std::move(cm.model);
    }
    if (a.has("cluster")) {
        auto t = resolveCluster(a.value("cluster"));
        if (!t) {
            std::cerr << "nest-cli inspect: " << t.error() << "\n";
            return 2;
        }
        topo = std::move(t).value();
    }
    if (a.has("model") && !a.has("workspace")) {
        auto m = resolveModel(a.value("model"), opts);
        if (!m) {
            std::cerr << "nest-cli inspect: " << m.error() << "\n";
            return 2;
        }
        model = std::move(m).value();
    }
    const Json out = inspectJson(topo, model);
    if (a.flag("json")) {
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    if (out.contains("cluster"))
        printCluster(out["cluster"]);
    if (out.contains("cluster") && out.contains("model"))
        std::printf("\n");
    if (out.contains("model"))
        printModel(out["model"]);
    return 0;
}

} // namespace nest::cli

// nest-cli presets [--json]: what can be named on the command line without a file.
#include "CliArgs.h"
#include "CliCommands.h"

#include "ClusterTemplates.h"
#include "DeviceSpec.h"
#include "JsonUtil.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"

#include <cstdio>
#include <iostream>

namespace nest::cli {

namespace {

Json presetsJson()
{
    Json devices = Json::array();
    for (const auto &d : devicePresets())
        devices.push_back({{"name", d.name},
                           {"peak_tflops", d.peakFlops / 1e12},
                           {"memory_GB", d.memoryBytes / 1e9},
                           {"memory_bandwidth_GBps", d.memoryBandwidth / 1e9},
                           {"source", d.source}});
    Json templates = Json::array();
    for (const auto &t : clusterTemplates()) {
        Json params = Json::array();
        for (const auto &p : t.params)
            params.push_back({{"key", p.key}, {"label", p.label}, {"default", p.value},
                              {"min", p.min}, {"max", p.max}, {"integer", p.integer}});
        templates.push_back({{"key", t.key}, {"title", t.title}, {"description", t.description},
                             {"default_device", t.defaultDevice}, {"params", params}});
    }
    Json clusters = Json::array();
    for (const auto &p : clusterPresets()) {
        Json entry = {{"key", p.key}, {"description", p.description}, {"template", p.templateKey}};
        if (auto topo = clusterPreset(p.key))
            entry["devices"] = topo->deviceCount();
        clusters.push_back(entry);
    }
    Json models = Json::array();
    for (const auto &m : modelPresets()) {
        const ModelProfile profile = buildProfile(m);
        models.push_back({{"name", m.name},
                          {"family", profile.family},
                          {"layers", m.layers},
                          {"hidden", m.hidden},
                          {"seq_length", profile.seqLength},
                          {"parameters", profile.totalParams()},
                          {"active_parameters", profile.activeParams()}});
    }
    return {{"devices", devices}, {"cluster_templates", templates}, {"clusters", clusters},
            {"models", models}};
}

void printPresetTable(const Json &j)
{
    std::printf("Devices (dense BF16/FP16 peak):\n");
    for (const auto &d : j["devices"])
        std::printf("  %-16s %8.1f TFLOP/s  %7.1f GB  %7.0f GB/s\n", d["name"].get<std::string>().c_str(),
                    d["peak_tflops"].get<double>(), d["memory_GB"].get<double>(),
                    d["memory_bandwidth_GBps"].get<double>());
    std::printf("\nCluster templates (nest-planner: File > New from template):\n");
    for (const auto &t : j["cluster_templates"]) {
        std::string params;
        for (const auto &p : t["params"])
            params += (params.empty() ? "" : ", ") + p["key"].get<std::string>();
        std::printf("  %-16s %s\n  %-16s   params: %s\n", t["key"].get<std::string>().c_str(),
                    t["title"].get<std::string>().c_str(), "", params.c_str());
    }
    std::printf("\nCluster presets (--cluster NAME):\n");
    for (const auto &c : j["clusters"])
        std::printf("  %-22s %6d devices  %s\n", c["key"].get<std::string>().c_str(),
                    c.value("devices", 0), c["description"].get<std::string>().c_str());
    std::printf("\nModel presets (--model NAME):\n");
    for (const auto &m : j["models"])
        std::printf("  %-14s %-8s %3d layers  hidden %5d  seq %5d  %8.2f B params (%.2f B active)\n",
                    m["name"].get<std::string>().c_str(), m["family"].get<std::string>().c_str(),
                    m["layers"].get<int>(), m["hidden"].get<int>(), m["seq_length"].get<int>(),
                    m["parameters"].get<double>() / 1e9, m["active_parameters"].get<double>() / 1e9);
}

} // namespace

int cmdPresets(const Args &args)
{
    const CliArgs a(args, {}, {"json"}, "presets");
    if (!a.positional().empty())
        throw UsageError{"unexpected argument '" + a.positional().front() + "'"};
    const Json j = presetsJson();
    if (a.flag("json"))
        std::cout << j.dump(2) << "\n";
    else
        printPresetTable(j);
    return 0;
}

} // namespace nest::cli

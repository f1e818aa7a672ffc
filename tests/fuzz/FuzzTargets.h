#pragma once
// The fuzz targets as plain functions: each libFuzzer harness (fuzz_*.cpp) calls one, and
// tests/core/test_reliability_regressions.cpp runs the same function on every kept input of
// tests/fuzz/regressions/ in the normal suite. A target returns normally or aborts (a
// broken contract); sanitizers report the rest.
#include "AstraSimNetwork.h"
#include "Calibration.h"
#include "CalibrationIO.h"
#include "ClusterIO.h"
#include "HfConfigImport.h"
#include "JsonUtil.h"
#include "ModelBuilder.h"
#include "ModelIO.h"
#include "NcclTopology.h"
#include "NvidiaSmiTopology.h"
#include "NestPlanner.h"
#include "PlanAnalysis.h"
#include "PlanBuilder.h"
#include "PlanIO.h"
#include "PlannerRuns.h"
#include "ProfileIO.h"
#include "SafeText.h"
#include "SearchSettings.h"
#include "SlurmTopology.h"
#include "Workspace.h"

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace nest::fuzz {

// The input as JSON text (a loader's whole input); a parse failure must say why.
inline std::optional<Json> parse(const uint8_t *data, size_t size)
{
    const std::string text(reinterpret_cast<const char *>(data), size);
    Result<Json> j = parseJsonText(text, "fuzz.json");
    if (!j) {
        if (j.error().empty())
            std::abort();
        return std::nullopt;
    }
    return std::move(j).value();
}

// A refusal must say why.
template <typename T>
bool accepted(const Result<T> &r)
{
    if (!r.ok() && r.error().empty())
        std::abort();  // a refusal must say why
    return r.ok();
}

// A feasible report has finite, positive times and finite memory.
inline void checkReport(const Report &r)
{
    if (!r.feasible)
        return;
    if (!std::isfinite(r.iterationTime) || !(r.iterationTime > 0) || !std::isfinite(r.peakMemoryBytes))
        std::abort();
    for (const auto &s : r.stages)
        if (!std::isfinite(s.cost.perMicroBatch) || !std::isfinite(s.cost.memoryTotal))
            std::abort();
}

// Cluster JSON in every form (compact, template, explicit): load, validate, write back and
// load again (the writer's output must be accepted and describe the same devices).
inline int cluster(const uint8_t *data, size_t size)
{
    const auto j = parse(data, size);
    if (!j)
        return 0;
    const Result<Topology> t = clusterFromJson(*j, "fuzz.json");
    if (!accepted(t))
        return 0;
    const Result<Topology> again = clusterFromJson(clusterToJson(*t), "again.json");
    if (!again.ok() || again->deviceCount() != t->deviceCount())
        std::abort();
    if (t->deviceCount() > 1)
        (void)t->level(0, t->deviceCount() - 1);
    return 0;
}

// Model JSON (our hyperparameter format; also what file detection routes to the Hugging
// Face, profile and artifact readers): load and build the layer profile.
inline int model(const uint8_t *data, size_t size)
{
    const auto j = parse(data, size);
    if (!j)
        return 0;
    const Result<ModelProfile> m = modelFromJson(*j, "fuzz.json");
    if (accepted(m) && m->layerCount() < 1)
        std::abort();
    return 0;
}

// Hugging Face config.json: import the hyperparameters, then build the profile.
inline int hfConfig(const uint8_t *data, size_t size)
{
    const auto j = parse(data, size);
    if (!j)
        return 0;
    const Result<ModelConfig> c = importHfConfig(*j, "config.json");
    if (!accepted(c))
        return 0;
    const Result<ModelProfile> m = buildValidatedProfile(*c);
    if (accepted(m) && m->layerCount() < 1)
        std::abort();
    return 0;
}

// Measured profiles: ours ("nest-profile") and the NEST artifact's solver input; the first
// byte picks which reader (and the artifact's file-name hints), the rest is the JSON.
inline int profile(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t mode = data[0];
    const auto j = parse(data + 1, size - 1);
    if (!j)
        return 0;
    if ((mode & 1) == 0) {
        const Result<ModelProfile> p = profileFromJson(*j, "fuzz.json");
        if (accepted(p)) {
            const Result<ModelProfile> again = profileFromJson(profileToJson(*p), "again.json");
            if (!again.ok() || again->layerCount() != p->layerCount())
                std::abort();
        }
    } else {
        const char *names[] = {"ilp_llama2_mbs_1_sl_4096_dev64.json", "artifact.json", "x_mixtral_sl_128.json",
                               "x_mbs_3_sl_7.json"};
        const Result<ModelProfile> p = profileFromArtifactJson(*j, names[(mode >> 1) & 3], (mode & 8) ? std::optional<int>(2048) : std::nullopt);
        (void)accepted(p);
    }
    return 0;
}

// Plan JSON: load, write back, load again (same plan).
inline int plan(const uint8_t *data, size_t size)
{
    const auto j = parse(data, size);
    if (!j)
        return 0;
    const Result<Plan> p = planFromJson(*j, "fuzz.json");
    if (!accepted(p))
        return 0;
    const Result<Plan> again = planFromJson(planToJson(*p), "again.json");
    if (!again.ok() || again->stages.size() != p->stages.size())
        std::abort();
    return 0;
}

// Workspace JSON (cluster + model + search settings + pinned plans): load, resolve its
// model, write back and load again.
inline int workspace(const uint8_t *data, size_t size)
{
    const auto j = parse(data, size);
    if (!j)
        return 0;
    const Result<Workspace> w = workspaceFromJson(*j, "fuzz.nestws.json");
    if (!accepted(w))
        return 0;
    (void)accepted(workspaceModel(*w, "fuzz.nestws.json"));
    const Result<Workspace> again = workspaceFromJson(workspaceToJson(*w), "again.nestws.json");
    if (!again.ok())
        std::abort();
    return 0;
}

// End to end: a small fuzzed cluster and model ({"cluster": ..., "model": ...}, capped at
// 64 devices and 24 layers so one input stays well under a second), then a uniform plan
// evaluated and simulated, and the NEST planner with a small budget. Checks the contract:
// no crash, a feasible report has finite positive times, a found plan is verified.
inline int pipeline(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const uint8_t a = data[0], b = data[1];
    const auto j = parse(data + 2, size - 2);
    if (!j || !j->is_object() || !j->contains("cluster") || !j->contains("model"))
        return 0;
    const Result<Topology> topo = clusterFromJson(j->at("cluster"), "cluster.json");
    if (!accepted(topo) || topo->deviceCount() > 64)
        return 0;
    const Result<ModelProfile> model = modelFromJson(j->at("model"), "model.json");
    if (!accepted(model) || model->layerCount() > 24)
        return 0;

    UniformLayout layout;
    layout.tp = 1 << (a & 3);
    layout.pp = 1 + ((a >> 2) & 3);
    layout.dp = 1 << ((a >> 4) & 3);
    layout.microBatch = 1 + (b & 3);
    layout.globalBatch = layout.dp * layout.microBatch * (1 + ((b >> 2) & 7));
    layout.seqLength = model->seqLength;
    layout.zero = (b >> 5) & 3;
    if (b & 0x80) {
        layout.schedule = Schedule::Interleaved;
        layout.virtualStages = 2;
    }
    CostOptions cost;
    if (a & 0x40)
        cost.memoryHeadroom = 0.5;
    if (const Result<Plan> plan = buildUniformPlan(layout, *topo, *model); accepted(plan)) {
        const PlanAnalysis analysis = analyzePlan(*plan, *topo, *model, cost);
        checkReport(analysis.report);
        if (analysis.report.feasible && analysis.simulation.error.empty() &&
            !(std::isfinite(analysis.simulation.makespan) && analysis.simulation.makespan > 0))
            std::abort();
    }

    SearchOptions options;
    options.globalBatch = 8 * (1 + (b & 3));
    options.microBatches = {1, 2};
    options.maxStages = 6;
    options.memoryBudgetBytes = 256e6;
    options.maxStates = 2e6;
    CancelToken cancel;
    const auto start = std::chrono::steady_clock::now();
    const ProgressFn progress = [&](double, double) {
        if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(800))
            cancel.cancel();  // a bounded budget per input; cancellation is part of the contract
    };
    const PlanResult r = NestPlanner().plan(*topo, *model, options, progress, cancel);
    if (r.found) {
        checkReport(r.report);
        if (!r.report.feasible || !std::isfinite(r.objective) || !r.verified)
            std::abort();
    } else if (!r.cancelled && r.message.empty()) {
        std::abort();  // a search that finds nothing says why
    }
    return 0;
}

// A search as `plan --workspace` and `compare` run it (issue 25): {"cluster": ..., "model":
// (a workspace's model value), "search": (search settings), "planners": [names] (default: the
// settings' planner)}, every planner through runPlanners on two threads, with the default
// state limit and a 1 GB memory budget. Contract: the estimate refuses what it cannot afford,
// so no planner throws (std::bad_alloc in a thread is std::terminate), every planner ends
// with a plan, a refusal or a reason, and none runs for minutes (a watchdog cancels after
// 120 s and aborts: the estimate let through a search that does not end).
inline int search(const uint8_t *data, size_t size)
{
    const auto j = parse(data, size);
    if (!j || !j->is_object() || !j->contains("cluster") || !j->contains("model"))
        return 0;
    const Result<Topology> topo = clusterFromJson(j->at("cluster"), "cluster.json");
    if (!accepted(topo))
        return 0;
    SearchSettings settings;
    std::vector<std::string> planners;
    try {
        if (j->contains("search"))
            settings = searchSettingsFromJson(j->at("search"), "search");
        const ModelSource source = modelSourceFromJson(j->at("model"), "model");
        if (j->contains("planners"))
            for (const Json &name : j->at("planners"))
                planners.push_back(name.is_string() ? name.get<std::string>() : std::string());
        const Result<ModelProfile> model = source.profile("model.json");
        if (!accepted(model))
            return 0;
        if (planners.empty())
            planners.push_back(settings.planner);
        SearchOptions options = searchOptionsFrom(settings, *model);
        options.memoryBudgetBytes = 1e9;
        CancelToken cancel;
        std::atomic<bool> overran{false};
        const auto start = std::chrono::steady_clock::now();
        const ComparisonProgressFn progress = [&](int, double, double) {
            if (std::chrono::steady_clock::now() - start > std::chrono::seconds(120)) {
                overran = true;
                cancel.cancel();
            }
        };
        const std::vector<PlannerRun> runs = runPlanners(*topo, *model, options, planners, 2, progress, cancel);
        if (overran)
            std::abort();
        for (const PlannerRun &run : runs) {
            if (run.result.found)
                checkReport(run.result.report);
            else if (run.result.message.empty())
                std::abort();  // a planner that finds nothing says why
        }
    } catch (const JsonError &) {
        return 0;  // bad settings: the loader's message (searchSettingsFromJson throws it)
    }
    return 0;
}

// ---- issue 48: the parsers added since issue 13 ------------------------------------------------

inline std::string text(const uint8_t *data, size_t size)
{
    return std::string(reinterpret_cast<const char *>(data), size);
}

// Every name a hostlist or topology.conf gives is a host name, and the file's budget holds.
inline void checkHostNames(const std::vector<std::string> &names)
{
    if (static_cast<long long>(names.size()) > HostlistBudget::maxNames)
        std::abort();
    for (const std::string &n : names)
        if (!hostNameProblem(n).empty())
            std::abort();  // a name a launch script would have to quote
}

// A Slurm hostlist expression ("gpu[001-016,020],login1").
inline int hostlist(const uint8_t *data, size_t size)
{
    const Result<std::vector<std::string>> names = expandHostlist(text(data, size));
    if (accepted(names))
        checkHostNames(*names);
    return 0;
}

// A Slurm topology.conf: the tree is connected, one root, every node and switch a host name.
inline int slurm(const uint8_t *data, size_t size)
{
    const Result<SlurmTopology> topo = parseSlurmTopology(text(data, size), "topology.conf");
    if (!accepted(topo))
        return 0;
    if (topo->root < 0 || topo->root >= static_cast<int>(topo->switches.size()))
        std::abort();
    for (const SlurmSwitch &sw : topo->switches) {
        checkHostNames(sw.nodes);
        if (!hostNameProblem(sw.name).empty() || sw.height < 1)
            std::abort();
    }
    return 0;
}

// A node description (NCCL dump or nvidia-smi matrix): at least one GPU, finite bandwidths.
inline void checkNode(const NodeDescription &node)
{
    if (node.gpuCount < 1 || node.nvlinksPerGpu < 0)
        std::abort();
    for (const std::optional<double> &bw : {node.nvlinkBandwidth, node.nicBandwidthPerGpu})
        if (bw && !(std::isfinite(*bw) && *bw > 0))
            std::abort();
}

inline int ncclXml(const uint8_t *data, size_t size)
{
    const Result<NodeDescription> node = parseNcclTopology(text(data, size), "nccl.xml");
    if (accepted(node))
        checkNode(*node);
    return 0;
}

inline int nvidiaSmi(const uint8_t *data, size_t size)
{
    const Result<NodeDescription> node = parseNvidiaSmiTopology(text(data, size), "topo.txt");
    if (accepted(node))
        checkNode(*node);
    return 0;
}

// ASTRA-sim network YAML: an accepted network makes a valid cluster that the cluster loader
// reads back (issue 48: import-cluster wrote bandwidths its loader refused), and its YAML
// reads back to the same network.
inline int astraSim(const uint8_t *data, size_t size)
{
    const Result<AstraSimNetwork> net = parseAstraSimNetwork(text(data, size), "network.yml");
    if (!accepted(net))
        return 0;
    long long devices = 1;
    for (const AstraSimDimension &d : net->dimensions)
        devices *= d.npus;
    if (devices > 65536)
        return 0;  // a large but valid tree: not this target's business
    const Result<DeviceSpec> device = devicePreset("h100-sxm-80gb");
    const Topology t = topologyFromAstraSim(*net, *device, "fuzz");
    if (!t.validate().empty())
        std::abort();
    if (!clusterFromJson(clusterToJson(t), "back.json").ok())
        std::abort();
    if (!parseAstraSimNetwork(astraSimNetworkToYaml(*net), "back.yml").ok())
        std::abort();
    return 0;
}

// Measured runs: their clusters and models are files next to the runs or presets; here no
// folder exists, so only presets resolve. Accepted step times are in range.
inline int runs(const uint8_t *data, size_t size)
{
    const auto j = parse(data, size);
    if (!j)
        return 0;
    const Result<std::vector<MeasuredRun>> r = measuredRunsFromJson(*j, "runs.json", "/nonexistent-nest-fuzz");
    if (!accepted(r))
        return 0;
    for (const MeasuredRun &run : *r)
        if (!limits::stepSeconds.contains(run.measuredSeconds))
            std::abort();
    return 0;
}

// A calibration: an accepted one has finite residuals, the band's (issue 48: "±inf %").
inline int calibration(const uint8_t *data, size_t size)
{
    const auto j = parse(data, size);
    if (!j)
        return 0;
    const Result<Calibration> c = calibrationFromJson(*j, "calibration.json");
    if (accepted(c))
        for (const double r : c->residuals())
            if (!std::isfinite(r) || !(r > 0))
                std::abort();
    return 0;
}

} // namespace nest::fuzz

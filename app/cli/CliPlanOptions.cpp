#include "CliPlanOptions.h"

#include "MeasuredDevice.h"

#include "Calibration.h"
#include "ClusterIO.h"
#include "Evaluator.h"
#include "Limits.h"
#include "ModelIO.h"
#include "PlanBuilder.h"
#include "PlanIO.h"
#include "ProfileIO.h"
#include "RankMapping.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <utility>

namespace nest::cli {

std::set<std::string> planValueOptions()
{
    return {"workspace", "cluster", "model", "plan", "tp", "pp", "dp", "ep", "cp", "microbatch", "batch", "seq",
            "schedule", "zero", "recompute", "order", "rank-map", "stage-blocks", "pipeline-units", "efficiency",
            "dp-overlap", "pipeline-grad-overlap", "grad-reduce-overlap", "grad-bucket-mb", "optimizer-dtype", "grad-accum-dtype", "framework", "calibration",
            "precision", "fp8-recipe", "etp", "moe-imbalance", "capacity-factor", "moe-dispatcher", "moe-a2a-overlap", "stack",
            "recompute-modules"};
}

std::set<std::string> planFlagOptions()
{
    return {"sp", "match-artifact", "fp8-attention"};
}

std::set<std::string> planSearchValueOptions()
{
    return {"planner", "microbatch", "max-stages", "memory-headroom", "cp", "vpp", "recompute", "out",
            "budget", "seed", "pipeline-units", "max-states", "target", "ep", "etp"};
}

std::set<std::string> planSearchFlagOptions()
{
    return {"no-zero", "no-recompute", "json", "progress", "match-artifact"};
}

void searchCommandOptions(std::set<std::string> &values, std::set<std::string> &flags)
{
    values = planValueOptions();
    flags = planFlagOptions();
    for (const char *layoutOnly : {"plan", "tp", "pp", "dp", "ep", "etp", "schedule", "zero", "order", "rank-map", "stage-blocks"})
        values.erase(layoutOnly);
    flags.erase("sp");
    values.merge(planSearchValueOptions());
    flags.merge(planSearchFlagOptions());
}

ModelOptions modelSizeOptions(const CliArgs &args)
{
    ModelOptions o;
    if (args.has("seq"))
        o.seqLength = args.intValue("seq", 0, limits::seqLength);
    if (args.has("batch"))
        o.globalBatch = args.intValue("batch", 0, limits::batch);
    return o;
}

Topology loadClusterOption(const CliArgs &args)
{
    if (!args.has("cluster")) {
        // A NEST artifact input describes its own cluster (bws, latency_per_level,
        // devices_per_level, maxMemoryPerDevice, maxDevices).
        if (args.has("model")) {
            const std::string file = args.value("model");
            std::error_code ec;
            if (std::filesystem::is_regular_file(file, ec)) {
                auto json = readJsonFile(file);
                if (json && json->is_object() && detectModelFileKind(*json) == ModelFileKind::Artifact) {
                    auto topo = artifactClusterFromJson(*json, file);
                    if (!topo)
                        throw UsageError{topo.error()};
                    return std::move(topo).value();
                }
            }
        }
        throw UsageError{"--cluster FILE|PRESET is required (see `nest-cli presets`), unless --model is a NEST "
                         "artifact input, which gives its own cluster"};
    }
    auto topo = resolveCluster(args.value("cluster"));
    if (!topo)
        throw UsageError{topo.error()};
    return std::move(topo).value();
}

ModelProfile loadModelOption(const CliArgs &args, std::optional<int> seqLength, std::optional<int> globalBatch)
{
    if (!args.has("model"))
        throw UsageError{"--model FILE|PRESET is required (see `nest-cli presets`)"};
    ModelOptions mo;
    mo.seqLength = seqLength;
    mo.globalBatch = globalBatch;
    auto model = resolveModel(args.value("model"), mo);
    if (!model)
        throw UsageError{model.error()};
    return std::move(model).value();
}

// --NAME F, a finite number in [lo, hi], or `fallback` when absent.
static double number(const CliArgs &args, const std::string &name, double fallback, double lo, double hi)
{
    if (!args.has(name))
        return fallback;
    double v = 0;
    if (!args.numberValue(name, v) || !(v >= lo && v <= hi))
        throw UsageError{"option --" + name + " expects a number from " + std::to_string(static_cast<int>(lo)) +
                         " to " + std::to_string(static_cast<int>(hi)) + ", got '" + args.value(name) + "'"};
    return v;
}

// --NAME F with F in [0, 1], or in [0, 1) when `oneAllowed` is false.
static double fraction(const CliArgs &args, const std::string &name, double fallback, bool oneAllowed = true)
{
    if (!args.has(name))
        return fallback;
    double v = 0;
    if (!args.numberValue(name, v) || !(v >= 0 && (oneAllowed ? v <= 1 : v < 1)))
        throw UsageError{"option --" + name +
                         (oneAllowed ? " expects a fraction between 0 and 1, got '" : " expects a fraction in [0, 1), got '") +
                         args.value(name) + "'"};
    return v;
}

// --NAME on|off as 1 or 0 (a CostOptions tri-state whose -1 means "as the framework runs it");
// `fallback` when the flag is absent.
static int onOff(const CliArgs &args, const std::string &name, int fallback)
{
    if (!args.has(name))
        return fallback;
    const std::string v = args.value(name);
    if (v != "on" && v != "off")
        throw UsageError{"option --" + name + " expects on or off, got '" + v + "'"};
    return v == "on" ? 1 : 0;
}

CostOptions costOptionsFrom(const CliArgs &args, CostOptions base)
{
    CostOptions o = std::move(base);
    o.matmulEfficiency = fraction(args, "efficiency", o.matmulEfficiency);
    if (args.has("efficiency")) {
        // A fraction of peak so small that every time overflows is not a setting (issue 13).
        if (const auto problem = checkRange(o.matmulEfficiency, limits::efficiency, "option --efficiency"))
            throw UsageError{*problem};
    }
    o.dpOverlap = fraction(args, "dp-overlap", o.dpOverlap);
    o.pipelineGradOverlap = onOff(args, "pipeline-grad-overlap", o.pipelineGradOverlap);
    o.gradReduceOverlap = onOff(args, "grad-reduce-overlap", o.gradReduceOverlap);
    if (args.has("grad-bucket-mb")) {
        double mib = 0;
        if (!args.numberValue("grad-bucket-mb", mib))
            throw UsageError{"option --grad-bucket-mb expects a number of MiB, got '" + args.value("grad-bucket-mb") + "'"};
        if (const auto problem = checkRange(mib, limits::gradBucketMiB, "option --grad-bucket-mb"))
            throw UsageError{*problem};
        o.gradientBucketBytes = mib * 1024 * 1024;
    }
    if (args.has("optimizer-dtype")) {
        const std::string v = args.value("optimizer-dtype");
        if (v != "fp32" && v != "bf16" && v != "bf16-moments")
            throw UsageError{"option --optimizer-dtype expects fp32, bf16 or bf16-moments, got '" + v + "'"};
        setOptimizerDtype(o, v == "bf16"           ? OptimizerDtype::Bf16
                             : v == "bf16-moments" ? OptimizerDtype::Bf16Moments
                                                   : OptimizerDtype::Fp32);
    }
    if (args.has("grad-accum-dtype")) {
        const std::string v = args.value("grad-accum-dtype");
        if (v != "fp32" && v != "bf16" && v != "fp16")
            throw UsageError{"option --grad-accum-dtype expects fp32, bf16 or fp16, got '" + v + "'"};
        o.gradAccumDtype = v == "fp32" ? GradAccumDtype::Fp32 : GradAccumDtype::Half;
    }
    // MoE: the most loaded rank's routed tokens over the mean (dropless), the capacity
    // factor (0 = dropless), the dispatcher and the expert-parallel overlap
    // (docs/cost-model.md, "MoE parallelism"), over a workspace's search.moe_* keys.
    o.moeImbalance = number(args, "moe-imbalance", o.moeImbalance, limits::moeImbalance.min, limits::moeImbalance.max);
    if (args.flag("fp8-attention"))  // on top of a workspace's search.fp8_attention
        o.fp8Attention = true;
    if (args.has("recompute-modules")) {  // over a workspace's search.recompute_modules
        std::string why;
        const auto modules = parseRecomputeModules(args.value("recompute-modules"), &why);
        if (!modules)
            throw UsageError{"option --recompute-modules: " + why};
        o.recomputeModules = *modules;
    }
    o.moeCapacityFactor =
        number(args, "capacity-factor", o.moeCapacityFactor, limits::capacityFactor.min, limits::capacityFactor.max);
    if (args.has("moe-dispatcher")) {
        const std::string v = args.value("moe-dispatcher");
        const std::optional<bool> hierarchical = moeDispatcherIsHierarchical(v);
        if (!hierarchical)
            throw UsageError{"option --moe-dispatcher expects alltoall or deepep, got '" + v + "'"};
        o.moeHierarchicalDispatch = *hierarchical;
    }
    if (args.has("moe-a2a-overlap")) {
        const std::string v = args.value("moe-a2a-overlap");
        if (v != "on" && v != "off")
            throw UsageError{"option --moe-a2a-overlap expects on or off, got '" + v + "'"};
        o.moeA2aOverlap = v == "on";
    }
    if (args.has("framework")) {
        const std::string name = args.value("framework");
        const auto f = frameworkFromString(name);
        if (!f)
            throw UsageError{"option --framework expects one of " + frameworkNameList() + ", got '" + name + "'"};
        o.framework = *f;
    }
    if (args.has("stack")) {
        const std::string name = args.value("stack");
        const auto st = stackFromString(name);
        if (!st)
            throw UsageError{"option --stack expects defaults or tuned, got '" + name + "'"};
        o.stack = *st;
    }
    return o;
}

// --pipeline-units UNITS (exact spelling), or `fallback` when absent.
static PipelineUnits pipelineUnitsOption(const CliArgs &args, PipelineUnits fallback)
{
    if (!args.has("pipeline-units"))
        return fallback;
    const std::string text = args.value("pipeline-units");
    PipelineUnits u;
    if (!pipelineUnitsFromString(text, u))
        throw UsageError{"option --pipeline-units expects layers, layers+embedding or layers+embedding+loss, got '" +
                         text + "'"};
    return u;
}

static void parseSchedule(const std::string &text, UniformLayout &u)
{
    const auto colon = text.find(':');
    const std::string name = text.substr(0, colon);
    if (!scheduleFromString(name, u.schedule))
        throw UsageError{"option --schedule expects 1f1b, gpipe or interleaved:V, got '" + text + "'"};
    u.virtualStages = 1;
    if (u.schedule == Schedule::Interleaved) {
        if (colon == std::string::npos)
            throw UsageError{"option --schedule interleaved needs the chunks per device, e.g. interleaved:2"};
        const std::string v = text.substr(colon + 1);
        char *end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || !limits::virtualStages.contains(static_cast<double>(n)))
            throw UsageError{"option --schedule interleaved:V expects a whole V (" +
                             describeRange(limits::virtualStages) + "), got '" + text + "'"};
        u.virtualStages = static_cast<int>(n);
    } else if (colon != std::string::npos) {
        throw UsageError{"option --schedule: only interleaved takes :V, got '" + text + "'"};
    }
}

std::optional<Workspace> loadWorkspaceOption(const CliArgs &args)
{
    if (!args.has("workspace"))
        return std::nullopt;
    if (args.has("cluster") || args.has("model"))
        throw UsageError{"--workspace FILE cannot be combined with --cluster or --model: the workspace "
                         "gives the cluster and the model"};
    auto w = loadWorkspace(args.value("workspace"));
    if (!w)
        throw UsageError{w.error()};
    return std::move(w).value();
}

namespace {

// The workspace's model; rebuilt with the overrides when there are any (errors in the
// model object itself are reported first, with their path under "model").
ModelProfile workspaceModelWith(const Workspace &w, const std::string &file, const ModelOptions &options)
{
    auto model = workspaceModel(w, file);
    if (!model)
        throw UsageError{model.error()};
    if (!options.seqLength && !options.globalBatch)
        return std::move(model).value();
    auto rebuilt = w.model.profile(file, options);
    if (!rebuilt)
        throw UsageError{rebuilt.error()};
    return std::move(rebuilt).value();
}

// A profile measured on one device planned on another (MeasuredDevice.h): said on stderr.
void warnOfMeasuredDevice(const ClusterAndModel &in)
{
    if (const std::string warning = measuredDeviceWarning(in.model, in.topology); !warning.empty())
        std::cerr << "nest-cli: warning: " << warning << "\n";
}

} // namespace

ClusterAndModel loadClusterAndModel(const CliArgs &args, std::optional<int> seqLength,
                                    std::optional<int> globalBatch)
{
    ClusterAndModel out;
    if (std::optional<Workspace> w = loadWorkspaceOption(args)) {
        out.model = workspaceModelWith(*w, args.value("workspace"), ModelOptions{seqLength, globalBatch});
        out.topology = std::move(w->cluster);
        out.search = std::move(w->search);
        out.modelSource = std::move(w->model);
        out.calibration = calibrationOption(args, std::move(w->calibration));
        warnOfMeasuredDevice(out);
        return out;
    }
    out.topology = loadClusterOption(args);
    out.model = loadModelOption(args, seqLength, globalBatch);
    out.calibration = calibrationOption(args, std::nullopt);
    if (args.has("cluster") && out.model.groupDevices > 1)
        std::cerr << "nest-cli: warning: the model file's numbers are per device of a group of " << out.model.groupDevices
                  << " (ep_degree x cp_degree); each device of --cluster is taken as one such group "
                     "(omit --cluster to plan on the file's own cluster)\n";
    warnOfMeasuredDevice(out);
    return out;
}

std::string mfuValueText(const Report &report)
{
    if (!mfuKnown(report))
        return "unknown (the model gives no FLOPs)";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f %%", 100 * report.mfu);
    return text;
}

std::optional<Calibration> calibrationOption(const CliArgs &args, std::optional<Calibration> workspace)
{
    if (!args.has("calibration"))
        return workspace;
    auto cal = loadCalibration(args.value("calibration"));
    if (!cal)
        throw UsageError{cal.error()};
    return std::move(cal).value();
}

// The recompute modules (--recompute-modules, or the workspace's) apply to `model`, as
// Megatron-Core checks them; exit 2 with the reason otherwise.
static void requireRecomputeModulesFit(const CostOptions &o, const ModelProfile &model)
{
    if (const std::string why = recomputeModulesProblem(o.recomputeModules, model); !why.empty())
        throw UsageError{"recompute modules (--recompute-modules): " + why};
}

CostOptions costOptionsFor(const CliArgs &args, const PlanInputs &in)
{
    const CostOptions base = in.search ? settingsCostOptions(*in.search) : CostOptions{};
    CostOptions o = calibratedOptions(costOptionsFrom(args, base), in.calibration, in.topology);
    if (args.flag("match-artifact"))
        o = artifactCostOptions(o, in.model);
    requireRecomputeModulesFit(o, in.model);
    return o;
}

static void requireArtifactModel(const ModelProfile &model)
{
    if (model.tensorWidths.empty())
        throw UsageError{"--match-artifact needs a NEST artifact solver input as --model (a file with \"nodes\" "
                         "keyed by tensor width)"};
}

CostOptions artifactCostOptions(CostOptions o, const ModelProfile &model)
{
    requireArtifactModel(model);
    o.artifactMemory = true;
    o.gradBytesPerParam = model.bytesPerParam;  // the artifact: 2 x parameterSize = weights + gradients
    o.runtimeOverheadBytes = 0;
    o.memoryHeadroom = 0;
    return o;
}

SearchSettings artifactSearchSettings(SearchSettings s, const ModelProfile &model)
{
    requireArtifactModel(model);
    s.schedules = {Schedule::OneFOneB};
    s.allowZero = false;
    s.allowSequenceParallel = false;  // the artifact's solver has none (its inputs: sp_enabled false)
    s.allowCp = false;
    s.cpCandidates = {1};
    s.allowTp = true;
    s.tpCandidates = model.tensorWidths;
    if (model.measuredMicroBatch > 0)
        s.microBatches = {model.measuredMicroBatch};
    if (model.measuredRecompute) {
        // The artifact recomputes every stage but the last when the file says so: full
        // recomputation is allowed per stage (and none, as on its last stage).
        s.allowRecompute = *model.measuredRecompute;
        s.recomputeModes = *model.measuredRecompute ? std::vector<Recompute>{Recompute::None, Recompute::Full}
                                                    : std::vector<Recompute>{Recompute::None};
    }
    s.memoryHeadroom = 0;
    return s;
}

namespace {

// --fp8-recipe NAME, unset when absent.
std::optional<Fp8Recipe> fp8RecipeOption(const CliArgs &args)
{
    if (!args.has("fp8-recipe"))
        return std::nullopt;
    Fp8Recipe r;
    if (!fp8RecipeFromString(args.value("fp8-recipe"), r))
        throw UsageError{"option --fp8-recipe expects one of " + fp8RecipeNames() + ", got '" +
                         args.value("fp8-recipe") + "'"};
    return r;
}

// --precision LIST: formats, each once.
std::vector<NumberFormat> precisionListOption(const CliArgs &args)
{
    std::vector<NumberFormat> out;
    const std::string text = args.value("precision");
    size_t at = 0;
    while (true) {
        const size_t comma = text.find(',', at);
        const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        NumberFormat f;
        if (!numberFormatFromString(item, f))
            throw UsageError{"option --precision expects a list of " + numberFormatNames() + ", got '" + item + "'"};
        if (std::find(out.begin(), out.end(), f) != out.end())
            throw UsageError{"option --precision lists '" + item + "' twice"};
        out.push_back(f);
        if (comma == std::string::npos)
            break;
        at = comma + 1;
    }
    return out;
}

} // namespace

std::optional<Precision> precisionOption(const CliArgs &args, const Topology &topo, const CostOptions &cost)
{
    const std::optional<Fp8Recipe> recipe = fp8RecipeOption(args);
    if (!args.has("precision")) {
        if (recipe)
            throw UsageError{"option --fp8-recipe needs --precision fp8"};
        return std::nullopt;
    }
    const std::vector<NumberFormat> formats = precisionListOption(args);
    if (formats.size() != 1)
        throw UsageError{"option --precision takes one precision here (a plan runs in one); plan and compare search a list"};
    if (recipe && formats.front() != NumberFormat::Fp8)
        throw UsageError{"option --fp8-recipe needs --precision fp8"};
    const Precision p{formats.front(), formats.front() == NumberFormat::Fp8 ? recipe.value_or(Fp8Recipe::Delayed)
                                                                           : Fp8Recipe::Delayed};
    if (const std::string why = precisionProblem(topo, p); !why.empty())
        throw UsageError{"option --precision: " + why};
    if (!frameworkProfile(cost.framework).supports(p))
        throw UsageError{"option --precision: " + precisionLabel(p) + " is not one " + toString(cost.framework) +
                         " trains in"};
    return p;
}

namespace {

// --planner and --target (megatron-lm is megatron's other name).
void readPlannerOptions(const CliArgs &args, SearchSettings &s)
{
    if (args.has("planner"))
        s.planner = args.value("planner");
    if (!makePlanner(s.planner)) {
        std::string names;
        for (const std::string &n : plannerNames())
            names += (names.empty() ? "'" : ", '") + n + "'";
        throw UsageError{"--planner must be one of " + names + ", found '" + s.planner + "'"};
    }
    if (args.has("target")) {
        s.target = args.value("target");
        if (s.target == "megatron-lm")
            s.target = "megatron";
        if (std::find(searchTargetNames().begin(), searchTargetNames().end(), s.target) == searchTargetNames().end())
            throw UsageError{"--target must be one of 'megatron', 'nemo', 'deepspeed', 'torchtitan', found '" +
                             s.target + "'"};
    }
}

// --vpp: 1 = the non-interleaved schedules, >= 2 = interleaving depths.
void readScheduleOption(const CliArgs &args, SearchSettings &s)
{
    bool plain = false;
    std::vector<int> depths;
    for (int v : args.intList("vpp", {}, limits::searchDepths)) {
        if ((v == 1 && plain) || std::find(depths.begin(), depths.end(), v) != depths.end())
            throw UsageError{"option --vpp lists " + std::to_string(v) + " twice"};
        if (v == 1)
            plain = true;
        else
            depths.push_back(v);
    }
    std::vector<Schedule> schedules;
    if (plain) {
        for (Schedule sc : s.schedules)
            if (sc != Schedule::Interleaved)
                schedules.push_back(sc);
        if (schedules.empty())
            schedules.push_back(Schedule::OneFOneB);
    }
    if (!depths.empty()) {
        schedules.push_back(Schedule::Interleaved);
        s.virtualStages.assign(depths.begin(), depths.end());
    }
    s.schedules = schedules;
}

// --recompute: a list of modes, each once.
std::vector<Recompute> recomputeListOption(const CliArgs &args)
{
    const std::string text = args.value("recompute");
    std::vector<Recompute> modes;
    size_t at = 0;
    while (true) {
        const size_t comma = text.find(',', at);
        const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        Recompute r;
        if (!recomputeFromString(item, r))
            throw UsageError{"option --recompute expects a list of none, selective, full, got '" + item + "'"};
        if (std::find(modes.begin(), modes.end(), r) != modes.end())
            throw UsageError{"option --recompute lists '" + item + "' twice"};
        modes.push_back(r);
        if (comma == std::string::npos)
            break;
        at = comma + 1;
    }
    return modes;
}

// Candidate lists: an explicit list is searched as given (and switches its strategy on).
void readCandidateOptions(const CliArgs &args, SearchSettings &s)
{
    if (args.has("ep")) {
        s.epCandidates = args.intList("ep", {}, limits::candidateWidth);
        s.allowEp = true;
    }
    if (args.has("etp"))
        s.etpCandidates = args.intList("etp", {}, limits::candidateWidth);
    if (args.has("cp")) {
        s.cpCandidates = args.intList("cp", {}, limits::candidateWidth);
        for (size_t i = 0; i < s.cpCandidates.size(); ++i)
            for (size_t k = 0; k < i; ++k)
                if (s.cpCandidates[k] == s.cpCandidates[i])
                    throw UsageError{"option --cp lists " + std::to_string(s.cpCandidates[i]) + " twice"};
        s.cpMinTokensPerRank = 0;
        s.allowCp = true;
    }
    if (args.has("vpp"))
        readScheduleOption(args, s);
    if (args.has("recompute")) {
        if (args.flag("no-recompute"))
            throw UsageError{"option --recompute cannot be combined with --no-recompute"};
        s.recomputeModes = recomputeListOption(args);
        s.allowRecompute = true;
    }
}

} // namespace

SearchSettings searchSettingsFrom(const CliArgs &args, const std::optional<SearchSettings> &base)
{
    SearchSettings s = base.value_or(SearchSettings{});
    if (args.has("precision"))
        s.precisions = precisionListOption(args);
    if (const auto recipe = fp8RecipeOption(args)) {
        if (!s.precisions.empty() && std::find(s.precisions.begin(), s.precisions.end(), NumberFormat::Fp8) == s.precisions.end())
            throw UsageError{"option --fp8-recipe needs fp8 among the precisions"};
        s.fp8Recipe = recipe;
    }
    readPlannerOptions(args, s);
    s.microBatches = args.intList("microbatch", s.microBatches, limits::microBatch);
    s.maxStages = args.intValue("max-stages", s.maxStages, limits::maxStages);
    s.pipelineUnits = pipelineUnitsOption(args, s.pipelineUnits);
    s.memoryHeadroom = fraction(args, "memory-headroom", s.memoryHeadroom, false);
    if (const auto problem = checkRange(s.memoryHeadroom, limits::memoryHeadroom, "option --memory-headroom"))
        throw UsageError{*problem};
    if (args.flag("no-zero"))
        s.allowZero = false;
    if (args.flag("no-recompute"))
        s.allowRecompute = false;
    readCandidateOptions(args, s);
    return s;
}

namespace {

// --precision / --fp8-recipe of a one-plan command onto its plan, checked against the cluster
// and the framework in use (--framework, else the workspace's).
void applyPrecisionOption(const CliArgs &args, PlanInputs &in)
{
    CostOptions base;
    if (in.search)
        base.framework = in.search->framework;
    if (const auto p = precisionOption(args, in.topology, costOptionsFrom(args, base)))
        in.plan.precision = *p;
    // FP8 attention exists only inside an FP8 recipe: the plan's precision (--precision, else
    // the plan file's) must be one.
    if (args.flag("fp8-attention") && !allowsFp8Attention(in.plan.precision))
        throw UsageError{"option --fp8-attention needs an fp8 or mxfp8 plan (--precision fp8 or mxfp8, or a plan "
                         "file in one): Transformer Engine runs the attention in FP8 only within an FP8 recipe"};
}

} // namespace

namespace {

void takeClusterAndModel(ClusterAndModel &cm, PlanInputs &in)
{
    in.topology = std::move(cm.topology);
    in.model = std::move(cm.model);
    in.search = std::move(cm.search);
    in.modelSource = std::move(cm.modelSource);
    in.calibration = std::move(cm.calibration);
}

// A framework export's rank map (nest-cli export): rank r on the device it names.
std::vector<int> rankMapOption(const CliArgs &args)
{
    const std::string file = args.value("rank-map");
    auto json = readJsonFile(file);
    if (!json)
        throw UsageError{json.error()};
    try {
        return rankDevicesFromJson(*json, "");
    } catch (const JsonError &e) {
        throw UsageError{formatError(file, e.path(), e.reason())};
    }
}

// The uniform layout the options spell (tp, pp, dp, ... with their defaults) for `model`.
UniformLayout uniformLayoutOptions(const CliArgs &args, const ModelProfile &model)
{
    UniformLayout u;
    u.tp = args.intValue("tp", 1, limits::devices);
    u.pp = args.intValue("pp", 1, limits::devices);
    u.dp = args.intValue("dp", 1, limits::devices);
    u.ep = args.intValue("ep", 1, limits::devices);
    u.cp = args.intValue("cp", 1, limits::devices);
    u.etp = StageConfig::etpField(args.intValue("etp", u.tp, limits::parallelWidth), u.tp);
    u.sp = args.flag("sp");
    u.zero = args.intValue("zero", 0, 0);
    if (u.zero > 3)
        throw UsageError{"option --zero expects 0, 1, 2 or 3"};
    const std::string rec = args.value("recompute", "none");
    if (!recomputeFromString(rec, u.recompute))
        throw UsageError{"option --recompute expects none, selective or full, got '" + rec + "'"};
    u.microBatch = args.intValue("microbatch", 1, limits::microBatch);
    u.globalBatch = model.globalBatch;
    u.seqLength = model.seqLength;
    parseSchedule(args.value("schedule", "1f1b"), u);
    u.order = args.value("order", u.order);
    if (args.has("rank-map"))
        u.rankDevices = rankMapOption(args);
    u.pipelineUnits = pipelineUnitsOption(args, PipelineUnits::Layers);
    if (args.has("stage-blocks"))
        u.stageBlocks = args.intList("stage-blocks", {}, Range{0, limits::devices.max, "", false, true});
    return u;
}

} // namespace

PlanInputs loadPlanInputs(const CliArgs &args)
{
    static const char *layoutOptions[] = {"tp", "pp", "dp", "ep", "etp", "cp", "microbatch", "batch", "seq",
                                          "schedule", "zero", "recompute", "order", "rank-map", "stage-blocks",
                                          "pipeline-units"};
    PlanInputs in;
    if (args.has("plan")) {
        for (const char *o : layoutOptions)
            if (args.has(o))
                throw UsageError{std::string("--plan FILE cannot be combined with --") + o};
        if (args.flag("sp"))
            throw UsageError{"--plan FILE cannot be combined with --sp"};
        auto plan = loadPlan(args.value("plan"));
        if (!plan)
            throw UsageError{plan.error()};
        in.plan = std::move(plan).value();
        ClusterAndModel cm = loadClusterAndModel(args, in.plan.seqLength, in.plan.globalBatch);
        takeClusterAndModel(cm, in);
        applyPrecisionOption(args, in);  // --precision over the file's own
        return in;
    }
    const ModelOptions sizes = modelSizeOptions(args);
    ClusterAndModel cm = loadClusterAndModel(args, sizes.seqLength, sizes.globalBatch);
    takeClusterAndModel(cm, in);
    auto plan = buildUniformPlan(uniformLayoutOptions(args, in.model), in.topology, in.model);
    if (!plan)
        throw UsageError{plan.error()};
    in.plan = std::move(plan).value();
    applyPrecisionOption(args, in);
    return in;
}

std::optional<ModelConfig> modelConfigFor(const CliArgs &args, const std::optional<ModelSource> &workspaceModel)
{
    if (workspaceModel) {
        auto c = workspaceModel->config(args.value("workspace"));
        return c ? std::optional<ModelConfig>(*c) : std::nullopt;
    }
    const std::string name = args.value("model");
    if (auto preset = modelPreset(name))
        return *preset;
    std::error_code ec;  // a 300-character name or a symlink loop is no file (issue 48)
    if (std::filesystem::is_regular_file(name, ec))
        if (auto c = loadModelConfig(name))
            return *c;
    return std::nullopt;
}

SearchJob loadSearchJob(const CliArgs &args)
{
    const ModelOptions sizes = modelSizeOptions(args);
    ClusterAndModel in = loadClusterAndModel(args, sizes.seqLength, sizes.globalBatch);
    SearchJob job;
    job.config = modelConfigFor(args, in.modelSource);
    job.settings = searchSettingsFrom(args, in.search);
    job.topology = std::move(in.topology);
    job.model = std::move(in.model);
    if (args.has("cp")) {
        for (int cp : job.settings.cpCandidates)
            if (job.model.seqLength % cp != 0)
                throw UsageError{"option --cp: " + std::to_string(cp) + " does not divide the sequence length " +
                                 std::to_string(job.model.seqLength)};
    }
    if (args.flag("match-artifact"))
        job.settings = artifactSearchSettings(std::move(job.settings), job.model);
    job.options = searchOptionsFrom(job.settings, job.model);
    job.options.cost = costOptionsFrom(args, job.options.cost);  // the settings' headroom and framework, flags on top
    requireRecomputeModulesFit(job.options.cost, job.model);
    {
        auto precisions = searchPrecisionsFor(job.settings, job.topology, job.options.cost.framework);
        if (!precisions)
            throw UsageError{(args.has("precision") ? "option --precision: " : "the search's precisions: ") +
                             precisions.error()};
        job.options.precisions = std::move(precisions).value();
        if (job.options.cost.fp8Attention &&
            std::none_of(job.options.precisions.begin(), job.options.precisions.end(), allowsFp8Attention))
            throw UsageError{"option --fp8-attention needs fp8 or mxfp8 among the precisions searched (Transformer "
                             "Engine runs the attention in FP8 only within an FP8 recipe)"};
    }
    job.calibration = std::move(in.calibration);
    job.options.cost = calibratedOptions(job.options.cost, job.calibration, job.topology);
    if (args.flag("match-artifact")) {
        job.options.cost = artifactCostOptions(job.options.cost, job.model);
        job.options.padBatch = true;  // the artifact's ceil(mbsInBatch / d) micro-batches per replica
    }
    // The workspace's mcmc_budget and seed (searchOptionsFrom), the flags on top.
    if (args.has("budget"))
        job.options.evaluationBudget = args.intValue("budget", 0, limits::evaluationBudget);
    // --max-states N (issue 48): raises (or lowers) the limit a search's estimate is held to,
    // states and the seconds they stand for; the refusals name it.
    if (args.has("max-states")) {
        double n = 0;
        if (!args.numberValue("max-states", n))
            throw UsageError{"option --max-states expects a number of states (e.g. 1e10), got '" +
                             args.value("max-states") + "'"};
        if (auto why = checkRange(n, limits::searchStates, "option --max-states"))
            throw UsageError{*why};
        job.options.maxStates = n;
    }
    if (args.has("seed"))
        job.options.seed = static_cast<unsigned long long>(args.intValue("seed", 1, limits::searchSeed));
    return job;
}

} // namespace nest::cli

#include "FrameworkExport.h"

#include "FrameworkModels.h"
#include "FrameworkSearch.h"
#include "LaunchContext.h"
#include "SafeText.h"
#include "TextCase.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace nest {

const std::vector<ExportFormat> &exportFormats()
{
    static const std::vector<ExportFormat> all{ExportFormat::Megatron, ExportFormat::Nemo, ExportFormat::DeepSpeed,
                                               ExportFormat::Torchtitan, ExportFormat::Nest};
    return all;
}

const char *toString(ExportFormat f)
{
    switch (f) {
    case ExportFormat::Megatron: return "megatron";
    case ExportFormat::Nemo: return "nemo";
    case ExportFormat::DeepSpeed: return "deepspeed";
    case ExportFormat::Torchtitan: return "torchtitan";
    case ExportFormat::Nest: return "nest";
    }
    return "nest";
}

std::optional<ExportFormat> exportFormatFromString(const std::string &name)
{
    const std::string n = asciiLower(name);
    if (n == "megatron-lm")
        return ExportFormat::Megatron;
    if (n == "nest-json")
        return ExportFormat::Nest;
    for (ExportFormat f : exportFormats())
        if (n == toString(f))
            return f;
    return std::nullopt;
}

std::string exportFormatNameList()
{
    std::string out;
    for (ExportFormat f : exportFormats())
        out += (out.empty() ? "" : ", ") + std::string(toString(f));
    return out;
}

const char *exportFormatTitle(ExportFormat f)
{
    switch (f) {
    case ExportFormat::Megatron: return "Megatron-LM";
    case ExportFormat::Nemo: return "NeMo";
    case ExportFormat::DeepSpeed: return "DeepSpeed";
    case ExportFormat::Torchtitan: return "torchtitan";
    case ExportFormat::Nest: return "NEST artifact JSON";
    }
    return "NEST artifact JSON";
}

std::string defaultExportFileName(ExportFormat f)
{
    switch (f) {
    case ExportFormat::Megatron: return "launch_megatron.sh";
    case ExportFormat::Nemo: return "nemo_config.yaml";
    case ExportFormat::DeepSpeed: return "ds_config.json";
    case ExportFormat::Torchtitan: return "torchtitan_job.toml";
    case ExportFormat::Nest: return "nest_output.json";
    }
    return "nest_output.json";
}

FrameworkRules frameworkRules(ExportFormat f)
{
    using Split = FrameworkRules::Split;
    FrameworkRules r;
    switch (f) {
    case ExportFormat::Megatron:
        // Megatron-LM (docs/interop.md): one tp/cp/ep for all stages, the distributed
        // optimizer (ZeRO-1), 1F1B or interleaved, --pipeline-model-parallel-layout for any
        // split with one chunk per stage (--decoder-first/last-pipeline-num-layers where only
        // the end stages differ), --use-tp-pp-dp-mapping for the second rank order.
        r.title = "Megatron-LM";
        r.orders = {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"};
        r.expertTensorWidth = true;  // --expert-tensor-parallel-size
        // --fp8-format / --fp8-recipe delayed|tensorwise|blockwise|mxfp8, --fp4-format e2m1.
        r.precisions = kAllPrecisionBits;
        r.zeroStages = {0, 1};
        r.split = Split::Layout;
        break;
    case ExportFormat::Nemo:
        // NeMo 1.x (Megatron-Core underneath): no uneven-stage keys in its configs.
        r.title = "NeMo";
        r.orders = {"tp-cp-ep-dp-pp"};
        // NeMo 1.x's model.fp8 is Transformer Engine's DelayedScaling only.
        r.precisions = precisionBit({}) | precisionBit({NumberFormat::Fp8, Fp8Recipe::Delayed});
        r.zeroStages = {0, 1};
        r.split = Split::Even;
        break;
    case ExportFormat::DeepSpeed:
        // DeepSpeed's PipelineModule: PipeModelDataParallelTopology (model, data, pipe
        // fastest first), no context or expert parallelism in the pipeline engine, its own
        // 1F1B-like TrainSchedule, ZeRO-2/3 refused with pipelining (engine.py assert); the
        // blocks split by partition_balanced, which Megatron-DeepSpeed's GPTModelPipe
        // hard-codes (partition_method='type:transformer').
        r.title = "DeepSpeed";
        r.orders = {"tp-cp-dp-pp"};
        r.contextParallel = false;
        r.expertParallel = false;
        r.expertFolding = false;
        r.interleaved = false;
        r.zeroStages = {0, 1, 2, 3};
        r.zeroAbove1WithPipeline = false;
        r.split = Split::Balanced;
        break;
    case ExportFormat::Torchtitan:
        // torchtitan: mesh [pp, dp_replicate, dp_shard, cp, tp] (tp fastest), FSDP2 for
        // ZeRO-2 (reshard never) and ZeRO-3, no ZeRO-1; module_fqns_per_model_part lists
        // each stage's modules; its TP plan shards norms over the sequence; BF16 with tp or
        // pp only under FSDP or cp (maybe_enable_amp).
        r.title = "torchtitan";
        r.orders = {"tp-cp-dp-pp"};
        // The float8 converter (tensorwise: current scaling) and the mx converter (MXFP8).
        r.precisions = precisionBit({}) | precisionBit({NumberFormat::Fp8, Fp8Recipe::Current}) |
                       precisionBit({NumberFormat::Mxfp8, Fp8Recipe::Delayed});
        r.expertParallel = false;
        r.expertFolding = false;
        r.gpipe = true;
        r.zeroStages = {0, 2, 3};
        r.split = Split::Any;
        r.sequenceParallelWithTp = true;
        r.mixedPrecisionNeedsSharding = true;
        break;
    case ExportFormat::Nest:
        // The artifact's solver: one global tensor width, 1F1B, any stage boundaries.
        r.title = "the NEST artifact";
        r.orders = {"tp-cp-ep-dp-pp"};
        r.precisions = kAllPrecisionBits;  // the solver's output names no precision
        r.launcher = false;
        r.interleaved = false;
        r.zeroStages = {0, 1, 2, 3};
        r.split = Split::Any;
        break;
    }
    return r;
}

namespace {

std::string seconds(double s)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, s >= 100 ? "%.1f s" : s >= 1 ? "%.2f s" : "%.3f s", s);
    return buf;
}

} // namespace

std::string ExportResult::timeComparison() const
{
    auto timeOf = [](const Report &r) {
        return r.feasible ? seconds(r.iterationTime) + " per iteration"
                          : seconds(r.iterationTime) + " per iteration but does not fit in memory";
    };
    if (!fellBack())
        return timeOf(original);
    char pct[64];
    std::snprintf(pct, sizeof pct, "%+.1f %%", 100 * (exported.iterationTime / original.iterationTime - 1));
    return timeOf(exported) + " instead of " + seconds(original.iterationTime) + " (" + pct + ")";
}

std::string ExportResult::gpuUsage() const
{
    const int used = exported.devicesUsed, planned = original.devicesUsed, all = devicesAvailable;
    if (used >= all)
        return "uses all " + std::to_string(all) + " GPUs";
    std::string out = "uses " + std::to_string(used) + " of the " + std::to_string(all) + " GPUs (" +
                      std::to_string(all - used) + " idle";
    if (planned != used)
        out += "; the plan used " + std::to_string(planned);
    return out + ")";
}

std::string ExportResult::summary() const
{
    const std::string title = exportFormatTitle(format);
    const std::string fw = format == ExportFormat::Nest ? "The NEST artifact" : title;
    std::string out;
    if (!fellBack()) {
        out = fw + " runs the plan as it is: " + timeComparison();
    } else {
        for (const std::string &c : runnable.changes)
            out += out.empty() ? c : "; " + c;
        if (out.rfind("the ", 0) == 0)
            out[0] = 'T';
        out += ": " + timeComparison();
    }
    if (fellBack()) {
        // Never idle GPUs without saying so (issue 47), and offer what the framework runs best.
        out += "; the exported plan " + gpuUsage();
        if (alternative)
            out += ". Best plan " + fw + " runs as it is: " + seconds(alternative->report.iterationTime) +
                   " per iteration on " + std::to_string(alternative->report.devicesUsed) + " of the " +
                   std::to_string(devicesAvailable) + " GPUs (" + alternative->layout + "; nest-cli plan --target " +
                   toString(format) + ")";
    }
    for (const std::string &n : runnable.notes)
        out += ". Note: " + n;
    return out;
}

std::string layoutDescription(const UniformLayout &u)
{
    std::string s = "tp " + std::to_string(u.tp) + (u.cp > 1 ? " cp " + std::to_string(u.cp) : "") +
                    (u.ep > 1 ? " ep " + std::to_string(u.ep) : "") + " pp " + std::to_string(u.pp) + " dp " +
                    std::to_string(u.dp) + " mb " + std::to_string(u.microBatch) + " " + toString(u.schedule) +
                    (u.virtualStages > 1 ? " v " + std::to_string(u.virtualStages) : "") + " ZeRO-" +
                    std::to_string(u.zero) + (u.sp ? " sp" : "") + " recompute " + toString(u.recompute);
    if (!u.stageBlocks.empty() && u.pp > 1) {
        s += " blocks";
        for (size_t i = 0; i < u.stageBlocks.size(); ++i)
            s += (i ? "," : " ") + std::to_string(u.stageBlocks[i]);
    }
    return s;
}

Result<ExportResult> exportPlan(const ExportRequest &request, ExportFormat format)
{
    using R = Result<ExportResult>;
    const std::vector<std::string> problems = planErrors(request.plan, request.topology, request.model);
    if (!problems.empty()) {
        std::string msg = "the plan does not match this cluster and model:";
        for (const std::string &p : problems)
            msg += "\n  " + p;
        return R::failure(msg);
    }
    // The node names become hosts in the launch scripts (quoted there) and in the hostfile,
    // which has no quoting at all: a cluster that was not loaded through the loaders (which
    // refuse such names) is refused here too (issue 48).
    for (const int node : request.topology.groupsAtLevel(0))
        if (const std::string why = hostNameProblem(request.topology.groups[static_cast<size_t>(node)].name);
            !why.empty())
            return R::failure("node #" + std::to_string(node) + " of the cluster: " + why);
    const FrameworkRules rules = frameworkRules(format);
    auto runnable = nearestRunnablePlan(request.plan, request.topology, request.model, rules, request.cost);
    if (!runnable)
        return R::failure(runnable.error());
    // A model the framework cannot build is refused with or without --strict: the files would
    // train another model (FrameworkModels.h).
    const ModelShape shape = modelShape(request);
    if (const std::string why = frameworkModelProblem(format, shape, runnable->layout.pp); !why.empty())
        return R::failure(std::string(exportFormatTitle(format)) + " cannot train this model: " + why);
    if (request.strict && (!runnable->changes.empty() || !shape.guessed.empty())) {
        std::string msg = std::string(exportFormatTitle(format)) + " cannot run this plan as it is (--strict):";
        for (const std::string &c : runnable->changes)
            msg += "\n  " + c;
        for (const std::string &g : shape.guessed)
            msg += "\n  the model is a measured profile without its " + g + ": the exported shape is a guess";
        return R::failure(msg);
    }
    ExportResult result;
    result.format = format;
    result.runnable = std::move(runnable).value();
    result.original = evaluate(request.plan, request.topology, request.model, request.cost);
    result.exported = result.fellBack()
                          ? evaluate(result.runnable.plan, request.topology, request.model, request.cost)
                          : result.original;
    result.devicesAvailable = request.topology.deviceCount();
    if (result.fellBack() && format != ExportFormat::Nest) {
        // The best plan the framework runs as it is, of the same job (batch, sequence).
        SearchOptions options;
        options.globalBatch = request.plan.globalBatch;
        options.seqLength = request.plan.seqLength;
        options.pipelineUnits = request.plan.pipelineUnits;
        options.cost = request.cost;
        if (std::find(options.microBatches.begin(), options.microBatches.end(), request.plan.microBatch) ==
            options.microBatches.end())
            options.microBatches.push_back(request.plan.microBatch);
        const TargetResult best = searchForFramework(request.topology, request.model, format, options, request.config);
        if (best.found && (best.report.iterationTime < result.exported.iterationTime * (1 - 1e-9) ||
                           best.report.devicesUsed > result.exported.devicesUsed || !result.exported.feasible))
            result.alternative = RunnableAlternative{best.plan, best.report, layoutDescription(best.layout)};
    }

    result.files = exportFiles(request, result);
    return result;
}

std::vector<ExportFile> exportFiles(const ExportRequest &request, const ExportResult &result)
{
    const ExportFormat format = result.format;
    const std::string name = request.fileName.empty() ? defaultExportFileName(format) : request.fileName;
    const size_t dot = name.find_last_of('.');
    const LaunchContext context{request,
                                result,
                                format,
                                request.cost.profile(),
                                modelShape(request),
                                name,
                                dot == std::string::npos || dot == 0 ? name : name.substr(0, dot)};
    switch (format) {
    case ExportFormat::Megatron: return writeMegatron(context);
    case ExportFormat::Nemo: return writeNemo(context);
    case ExportFormat::DeepSpeed: return writeDeepSpeed(context);
    case ExportFormat::Torchtitan: return writeTorchtitan(context);
    case ExportFormat::Nest: return writeNestArtifact(context);
    }
    return writeNestArtifact(context);
}

} // namespace nest

#include "PlanIO.h"

namespace nest {

namespace {
constexpr const char *kFormat = "nest-plan";
constexpr int kVersion = 1;
constexpr long long kMaxInt = 1'000'000'000;

} // namespace

Json planToJson(const Plan &plan)
{
    Json stages = Json::array();
    for (const StagePlan &s : plan.stages) {
        Json stage = {{"first_layer", s.firstLayer}, {"end_layer", s.endLayer}};
        writeStageConfig(stage, s);
        stage["devices"] = s.devices;
        stages.push_back(std::move(stage));
    }
    Json out = {{"format", kFormat},
                {"version", kVersion},
                {"global_batch", plan.globalBatch},
                {"micro_batch", plan.microBatch},
                {"seq_length", plan.seqLength},
                {"schedule", toString(plan.schedule)},
                {"virtual_stages", plan.virtualStages},
                {"dp", plan.dp},
                {"stages", stages}};
    // Only when it says more than the default, so plans counted in layers read as before.
    if (plan.pipelineUnits != PipelineUnits::Layers)
        out["pipeline_units"] = toString(plan.pipelineUnits);
    writePrecision(out, plan.precision);  // bf16 writes nothing, as before precisions
    return out;
}

Result<Plan> planFromJson(const Json &j, const std::string &origin)
{
    try {
        requireObject(j, "");
        // Unknown keys are errors (docs/formats.md): exactly what planToJson writes.
        requireKnownKeys(j, "", {"format", "version", "global_batch", "micro_batch", "seq_length", "schedule",
                                 "virtual_stages", "dp", "pipeline_units", "precision", "fp8_recipe", "stages",
                                 "error_band"});
        // The band the plan was saved with is informational: the plan is priced again.
        if (has(j, "error_band"))
            requireObject(j.at("error_band"), "error_band");
        if (has(j, "format") && getString(j, "format", "") != kFormat)
            throw JsonError("format", "expected \"nest-plan\", found \"" + getString(j, "format", "") + "\"");
        if (has(j, "version") && getInt(j, "version", "", 1, kMaxInt) > kVersion)
            throw JsonError("version", "written by a newer version (" + j.at("version").dump() +
                                           "); this build reads version " + std::to_string(kVersion));
        Plan p;
        p.globalBatch = static_cast<int>(getInt(j, "global_batch", "", 1, kMaxInt));
        p.microBatch = static_cast<int>(getInt(j, "micro_batch", "", 1, kMaxInt, 1));
        p.seqLength = static_cast<int>(getInt(j, "seq_length", "", 1, kMaxInt));
        const std::string sched = getString(j, "schedule", "", "1f1b");
        if (!scheduleFromString(sched, p.schedule))
            throw JsonError("schedule", "unknown schedule \"" + sched + "\" (use 1f1b, gpipe or interleaved)");
        p.virtualStages = static_cast<int>(getInt(j, "virtual_stages", "", 1, 1024, 1));
        p.dp = static_cast<int>(getInt(j, "dp", "", 1, kMaxInt));
        const std::string units = getString(j, "pipeline_units", "", "layers");
        if (!pipelineUnitsFromString(units, p.pipelineUnits))
            throw JsonError("pipeline_units", "unknown pipeline units \"" + units +
                                                  "\" (use layers, layers+embedding or layers+embedding+loss)");
        p.precision = readPrecision(j, "");
        requireInRange(p.globalBatch, limits::batch, "global_batch");
        requireInRange(p.microBatch, limits::microBatch, "micro_batch");
        requireInRange(p.seqLength, limits::seqLength, "seq_length");
        requireInRange(p.dp, limits::devices, "dp");
        const Json &stages = requireKey(j, "stages", "");
        requireArray(stages, "stages");
        if (stages.empty())
            throw JsonError("stages", "must list at least one stage");
        requireInRange(static_cast<double>(stages.size()), limits::stages, "stages");
        for (size_t i = 0; i < stages.size(); ++i) {
            const std::string path = childPath("stages", i);
            const Json &s = stages[i];
            requireKnownKeys(s, path, {"first_layer", "end_layer", "tp", "cp", "ep", "etp", "sp", "zero", "recompute", "devices"});
            StagePlan st;
            st.firstLayer = static_cast<int>(getInt(s, "first_layer", path, 0, kMaxInt));
            st.endLayer = static_cast<int>(getInt(s, "end_layer", path, 1, kMaxInt));
            if (st.endLayer <= st.firstLayer)
                throw JsonError(childPath(path, "end_layer"), "must be greater than first_layer");
            st.config() = readStageConfig(s, path);
            const std::string dpath = childPath(path, "devices");
            const Json &devs = requireKey(s, "devices", path);
            requireArray(devs, dpath);
            if (static_cast<int>(devs.size()) != p.dp)
                throw JsonError(dpath, "lists " + std::to_string(devs.size()) + " replicas, dp is " +
                                           std::to_string(p.dp));
            for (size_t r = 0; r < devs.size(); ++r) {
                const std::string rpath = childPath(dpath, r);
                requireArray(devs[r], rpath);
                if (static_cast<int>(devs[r].size()) != st.tp * st.cp)
                    throw JsonError(rpath, "lists " + std::to_string(devs[r].size()) +
                                               " devices, tp x cp is " + std::to_string(st.tp * st.cp));
                std::vector<int> row;
                for (size_t q = 0; q < devs[r].size(); ++q)
                    row.push_back(static_cast<int>(asInt(devs[r][q], childPath(rpath, q), 0, kMaxInt)));
                st.devices.push_back(std::move(row));
            }
            p.stages.push_back(std::move(st));
        }
        if (p.schedule == Schedule::Interleaved && p.stages.size() % static_cast<size_t>(p.virtualStages) != 0)
            throw JsonError("stages", "an interleaved plan lists pipeline depth x virtual_stages stages (" +
                                          std::to_string(p.stages.size()) + " is not a multiple of " +
                                          std::to_string(p.virtualStages) + ")");
        if (p.schedule != Schedule::Interleaved && p.virtualStages != 1)
            throw JsonError("virtual_stages", "must be 1 unless the schedule is interleaved");
        // In 64 bits: micro_batch (up to 65,536) x dp (up to 1,048,576) overflows an int, and
        // a product that wrapped to 0 ended `evaluate --plan` in SIGFPE (issue 25).
        const long long perIteration = static_cast<long long>(p.microBatch) * p.dp;
        if (p.globalBatch % perIteration != 0)
            throw JsonError("global_batch", "must be a multiple of micro_batch x dp = " + std::to_string(perIteration));
        return p;
    } catch (const JsonError &e) {
        return Result<Plan>::failure(formatError(origin, e.path(), e.reason()));
    }
}

Result<Plan> loadPlan(const std::string &file)
{
    auto j = readJsonFile(file);
    if (!j)
        return Result<Plan>::failure(j.error());
    return planFromJson(*j, file);
}

Result<bool> savePlan(const std::string &file, const Plan &plan, const Json &errorBand)
{
    Json j = planToJson(plan);
    if (!errorBand.is_null())
        j["error_band"] = errorBand;
    return writeJsonFile(file, j);
}

Json errorBandToJson(const ErrorBand &band, double seconds)
{
    return Json{{"basis", band.basis}, {"low_s", band.lowSeconds(seconds)}, {"high_s", band.highSeconds(seconds)}};
}

Json reportToJson(const Report &r)
{
    Json stages = Json::array();
    for (const StageReport &s : r.stages) {
        const StageCost &c = s.cost;
        stages.push_back({{"index", s.index},
                          {"first_layer", s.firstLayer},
                          {"end_layer", s.endLayer},
                          {"time_s",
                           {{"forward", c.forward},
                            {"backward", c.backward},
                            {"recompute", c.recompute},
                            {"tp_comm", c.tpComm},
                            {"ep_comm", c.epComm},
                            {"cp_comm", c.cpComm},
                            {"p2p", c.p2p},
                            {"zero_comm", c.zeroComm},
                            {"per_micro_batch", c.perMicroBatch},
                            {"dp_sync", c.dpSync},
                            {"zero_gather", c.zeroGather},
                            {"optimizer", c.optimizer},
                            {"ep_unpaired", c.epUnpaired},
                            {"iteration_extra", c.iterationExtra},
                            {"bubble", s.bubble}}},
                          {"memory_bytes",
                           {{"weights", c.weights},
                            {"gradients", c.gradients},
                            {"optimizer_state", c.optimizerState},
                            {"activations", c.activations},
                            {"stash", c.stash},
                            {"overhead", c.overhead},
                            {"total", c.memoryTotal},
                            {"capacity", c.memoryCapacity}}},
                          {"stashed_micro_batches", c.stashedMicroBatches},
                          {"params_per_device", c.paramsPerDevice},
                          {"fits_memory", c.fitsMemory}});
    }
    Json devices = Json::array();
    for (const DeviceReport &d : r.devices) {
        devices.push_back({{"device", d.device},
                           {"stage", d.stage},
                           {"replica", d.replica},
                           {"shard", d.shard},
                           {"weights", d.weights},
                           {"gradients", d.gradients},
                           {"optimizer_state", d.optimizerState},
                           {"activations", d.activations},
                           {"stash", d.stash},
                           {"overhead", d.overhead},
                           {"total", d.total},
                           {"capacity", d.capacity}});
    }
    return {{"feasible", r.feasible},
            {"reasons", r.reasons},
            {"iteration_time_s", r.iterationTime},
            {"throughput_samples_per_s", r.samplesPerSecond},
            {"tokens_per_s", r.tokensPerSecond},
            {"mfu", r.mfu},
            {"peak_memory_bytes", r.peakMemoryBytes},
            {"model_flops_per_iteration", r.modelFlopsPerIteration},
            {"devices_used", r.devicesUsed},
            {"stages", stages},
            {"devices", devices}};
}

} // namespace nest

#include "Plan.h"

#include "ModelProfile.h"
#include "TextCase.h"
#include "Topology.h"

#include <algorithm>
#include <cctype>

namespace nest {

const char *toString(Schedule s)
{
    switch (s) {
    case Schedule::OneFOneB:
        return "1f1b";
    case Schedule::GPipe:
        return "gpipe";
    case Schedule::Interleaved:
        return "interleaved";
    }
    return "1f1b";
}

bool scheduleFromString(const std::string &text, Schedule &out)
{
    const std::string t = asciiLower(text);
    if (t == "1f1b") {
        out = Schedule::OneFOneB;
    } else if (t == "gpipe") {
        out = Schedule::GPipe;
    } else if (t == "interleaved" || t == "interleaved-1f1b") {
        out = Schedule::Interleaved;
    } else {
        return false;
    }
    return true;
}

const char *toString(PipelineUnits u)
{
    switch (u) {
    case PipelineUnits::Layers:
        return "layers";
    case PipelineUnits::LayersEmbedding:
        return "layers+embedding";
    case PipelineUnits::LayersEmbeddingLoss:
        return "layers+embedding+loss";
    }
    return "layers";
}

bool pipelineUnitsFromString(const std::string &text, PipelineUnits &out)
{
    for (PipelineUnits u : {PipelineUnits::Layers, PipelineUnits::LayersEmbedding, PipelineUnits::LayersEmbeddingLoss}) {
        if (text == toString(u)) {
            out = u;
            return true;
        }
    }
    return false;
}

int Plan::deviceCount() const
{
    int n = 0;
    const int depth = std::min(pipelineDepth(), static_cast<int>(stages.size()));
    for (int p = 0; p < depth; ++p)
        n += stages[p].width() * dp;
    return n;
}

namespace {

// The plan-wide scalars: sizes at least 1, the batch divisible, the schedule's depth. False
// at the first group of problems that makes the stages meaningless to check.
bool addShapeErrors(std::vector<std::string> &errors, const Plan &plan, const ModelProfile &model, int devices)
{
    auto add = [&](std::string e) { errors.push_back(std::move(e)); };
    if (model.layerCount() == 0)
        add("the model has no layers");
    if (devices == 0)
        add("the cluster has no devices");
    if (plan.microBatch < 1)
        add("micro_batch must be at least 1");
    if (plan.globalBatch < 1)
        add("global_batch must be at least 1");
    if (plan.dp < 1)
        add("dp must be at least 1");
    if (plan.virtualStages < 1)
        add("virtual_stages must be at least 1");
    if (!errors.empty())
        return false;
    if (plan.globalBatch % (1LL * plan.microBatch * plan.dp) != 0)  // 64 bits: the product overflows an int
        add("global_batch " + std::to_string(plan.globalBatch) + " is not a multiple of micro_batch x dp = " +
            std::to_string(1LL * plan.microBatch * plan.dp));
    if (plan.seqLength != model.seqLength)
        add("plan seq_length " + std::to_string(plan.seqLength) + " differs from the model profile's " +
            std::to_string(model.seqLength) + " (build the model with the plan's sequence length)");
    if (plan.stages.empty()) {
        add("the plan has no stages");
        return false;
    }
    const int k = static_cast<int>(plan.stages.size());
    if (plan.schedule == Schedule::Interleaved) {
        if (k % plan.virtualStages != 0)
            add("interleaved plan lists " + std::to_string(k) + " stages, not a multiple of virtual_stages " +
                std::to_string(plan.virtualStages));
    } else if (plan.virtualStages != 1) {
        add(std::string("virtual_stages > 1 needs the interleaved schedule (schedule is ") +
            toString(plan.schedule) + ")");
    }
    if (!errors.empty())
        return false;
    if (plan.schedule == Schedule::Interleaved && plan.virtualStages > 1 && plan.pipelineDepth() < 2)
        add("the interleaved schedule needs a pipeline of at least 2 stages (with one, every chunk would "
            "send its activations to itself)");
    return true;
}

// Stage s's device matrix: dp replicas of tp x cp devices of the cluster; true when it is
// well formed (its devices can then be checked for reuse).
bool devicesWellFormed(std::vector<std::string> &errors, const Plan &plan, const StagePlan &st,
                       const std::string &name, int devices)
{
    if (static_cast<int>(st.devices.size()) != plan.dp) {
        errors.push_back(name + " lists " + std::to_string(st.devices.size()) + " replicas, dp is " +
                         std::to_string(plan.dp));
        return false;
    }
    bool rowsOk = true;
    for (size_t r = 0; r < st.devices.size(); ++r) {
        if (static_cast<int>(st.devices[r].size()) != st.width()) {
            errors.push_back(name + " replica " + std::to_string(r) + " lists " + std::to_string(st.devices[r].size()) +
                             " devices, tp x cp is " + std::to_string(st.width()));
            rowsOk = false;
            continue;
        }
        for (int d : st.devices[r]) {
            if (d < 0 || d >= devices) {
                errors.push_back(name + " uses device " + std::to_string(d) + ", the cluster has devices 0.." +
                                 std::to_string(devices - 1));
                rowsOk = false;
            }
        }
    }
    return rowsOk;
}

// Stage s: its layers follow the previous stage's (expectFirst is advanced), its choice obeys
// StageConfig's rules, its devices are well formed, and a physical stage's devices are used
// by no other stage (`used`); an interleaved chunk runs on its position's devices.
void addStageErrors(std::vector<std::string> &errors, const Plan &plan, const ModelProfile &model, int s,
                    int &expectFirst, std::vector<char> &used, int devices)
{
    const StagePlan &st = plan.stages[s];
    const int depth = plan.pipelineDepth();
    const std::string name = "stage " + std::to_string(s);
    if (st.firstLayer != expectFirst)
        errors.push_back(name + " starts at layer " + std::to_string(st.firstLayer) + ", expected " +
                         std::to_string(expectFirst) + " (stages must cover the layers in order)");
    if (st.endLayer <= st.firstLayer)
        errors.push_back(name + " has no layers");
    expectFirst = st.endLayer;
    // The choice's own rules (StageConfig), the same PlanSpace's candidates obey.
    for (const std::string &problem : st.problems(model.heads, model.numExperts, plan.seqLength, plan.dp))
        errors.push_back(name + ": " + problem);
    if (!model.allowsTensorWidth(st.tp)) {
        std::string listed;
        for (int t : model.tensorWidths)
            listed += (listed.empty() ? "" : ", ") + std::to_string(t);
        errors.push_back(name + ": tensor width " + std::to_string(st.tp) + " is not measured by the model file (widths " +
                         listed + ")");
    }
    if (st.tp < 1 || st.cp < 1 || st.ep < 1)
        return;
    if (!devicesWellFormed(errors, plan, st, name, devices))
        return;
    if (s >= depth) {
        if (st.devices != plan.stages[s % depth].devices)
            errors.push_back(name + " must run on the devices of stage " + std::to_string(s % depth) +
                             " (interleaved: stage k uses the devices of stage k mod pipeline depth)");
        return;
    }
    for (const auto &row : st.devices) {
        for (int d : row) {
            if (used[static_cast<size_t>(d)])
                errors.push_back("device " + std::to_string(d) + " is used twice (" + name + ")");
            used[static_cast<size_t>(d)] = 1;
        }
    }
}

} // namespace

std::vector<std::string> planErrors(const Plan &plan, const Topology &topo, const ModelProfile &model)
{
    std::vector<std::string> errors;
    const int layers = model.layerCount();
    const int devices = topo.deviceCount();
    if (!addShapeErrors(errors, plan, model, devices))
        return errors;
    int expectFirst = 0;
    std::vector<char> used(static_cast<size_t>(devices), 0);
    for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s)
        addStageErrors(errors, plan, model, s, expectFirst, used, devices);
    if (expectFirst < layers)
        errors.push_back("the stages end at layer " + std::to_string(expectFirst) + ", the model has " +
                         std::to_string(layers) + " layers");
    else if (expectFirst > layers)
        errors.push_back("the stages reach layer " + std::to_string(expectFirst) + ", the model has only " +
                         std::to_string(layers));
    std::vector<char> usedTypes(topo.deviceTypes.size(), 0);
    for (int d = 0; d < devices; ++d)
        if (used[static_cast<size_t>(d)])
            usedTypes[static_cast<size_t>(topo.devices[static_cast<size_t>(d)].type)] = 1;
    if (const std::string why = precisionProblem(topo, plan.precision, &usedTypes); !why.empty())
        errors.push_back(why);
    return errors;
}

std::string precisionProblem(const Topology &topo, const Precision &precision, const std::vector<char> *types)
{
    for (size_t t = 0; t < topo.deviceTypes.size(); ++t) {
        const DeviceSpec &d = topo.deviceTypes[t];
        if (types != nullptr && (t >= types->size() || !(*types)[t]))
            continue;
        if (!d.supports(precision.format))
            return "precision " + precisionLabel(precision) + " needs " + toString(precision.format) +
                   " tensor cores, which the " + d.name + " devices do not have (they support " +
                   formatList(d.formats()) + ")";
    }
    return {};
}

std::string formatList(const std::vector<NumberFormat> &formats)
{
    std::string s;
    for (NumberFormat f : formats)
        s += (s.empty() ? "" : ", ") + std::string(toString(f));
    return s;
}

} // namespace nest

#include "PlanBuilder.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace nest {

Result<std::vector<std::string>> parseRankOrder(const std::string &order)
{
    std::vector<std::string> dims;
    std::stringstream ss(order);
    std::string item;
    while (std::getline(ss, item, '-'))
        dims.push_back(item);
    const std::vector<std::string> known = {"tp", "cp", "ep", "dp", "pp"};
    for (const auto &d : dims) {
        if (std::find(known.begin(), known.end(), d) == known.end())
            return Result<std::vector<std::string>>::failure("rank order '" + order + "': unknown dimension '" + d +
                                                             "' (use tp, cp, ep, dp, pp)");
        if (std::count(dims.begin(), dims.end(), d) > 1)
            return Result<std::vector<std::string>>::failure("rank order '" + order + "': '" + d +
                                                             "' appears twice");
    }
    for (const char *need : {"tp", "cp", "dp", "pp"})
        if (std::find(dims.begin(), dims.end(), need) == dims.end())
            return Result<std::vector<std::string>>::failure("rank order '" + order + "' lacks '" + need + "'");
    if (std::find(dims.begin(), dims.end(), "ep") == dims.end())
        dims.insert(std::find(dims.begin(), dims.end(), "dp"), "ep");
    return dims;
}

PipelineSpan pipelineSpan(const ModelProfile &model)
{
    const int layers = model.layerCount();
    const auto isBlock = [&](int i) {
        return isDecoderBlock(model.layers[static_cast<size_t>(i)].kind);
    };
    int lead = 0;
    while (lead < layers && !isBlock(lead))
        ++lead;
    int tail = layers;
    while (tail > lead && !isBlock(tail - 1))
        --tail;
    return {lead, tail - lead, layers - tail};
}

int pipelineUnitCount(const PipelineSpan &span, PipelineUnits units)
{
    return span.blocks + (countsEmbedding(units) && span.lead > 0 ? 1 : 0) +
           (countsLoss(units) && span.tail > 0 ? 1 : 0);
}

std::vector<int> balancedStageBlocks(const PipelineSpan &span, int stages, PipelineUnits units)
{
    const int total = pipelineUnitCount(span, units);
    std::vector<int> out(static_cast<size_t>(stages), 0);
    for (int k = 0; k < stages; ++k)
        out[static_cast<size_t>(k)] = total / stages + (k < total % stages ? 1 : 0);
    // The embedding and the head are units, not blocks, of the first and the last stage.
    if (countsEmbedding(units) && span.lead > 0)
        --out.front();
    if (countsLoss(units) && span.tail > 0)
        --out.back();
    return out;
}

Result<Plan> buildUniformPlan(const UniformLayout &u, const Topology &topo, const ModelProfile &model)
{
    using R = Result<Plan>;
    if (u.tp < 1 || u.pp < 1 || u.dp < 1 || u.ep < 1 || u.cp < 1)
        return R::failure("tp, pp, dp, ep and cp must all be at least 1");
    if (u.microBatch < 1 || u.globalBatch < 1)
        return R::failure("micro-batch and global batch must be at least 1");
    if (u.zero < 0 || u.zero > 3)
        return R::failure("zero must be 0, 1, 2 or 3");
    const int v = u.schedule == Schedule::Interleaved ? std::max(u.virtualStages, 1) : 1;
    if (u.schedule != Schedule::Interleaved && u.virtualStages > 1)
        return R::failure("virtual stages > 1 need the interleaved schedule");
    const long long need = 1LL * u.tp * u.cp * u.dp * u.pp;
    if (need > topo.deviceCount())
        return R::failure("tp x cp x dp x pp = " + std::to_string(need) + " devices, the cluster has " +
                          std::to_string(topo.deviceCount()));
    if (u.etp < 0 || !StageConfig::expertGridFits(u.tp, u.cp, u.dp, u.expertTp(), u.ep))
        return R::failure("etp " + std::to_string(u.expertTp()) + " x ep " + std::to_string(u.ep) +
                          " does not divide tp x cp x dp = " + std::to_string(1LL * u.tp * u.cp * u.dp) +
                          " (Megatron-Core folds the experts' etp x ep x expert-dp grid onto those ranks)");
    if (u.globalBatch % (1LL * u.microBatch * u.dp) != 0)  // 64 bits: the product overflows an int
        return R::failure("global batch " + std::to_string(u.globalBatch) + " is not a multiple of micro-batch x dp = " +
                          std::to_string(1LL * u.microBatch * u.dp));
    auto dims = parseRankOrder(u.order);
    if (!dims)
        return R::failure(dims.error());
    if (!u.rankDevices.empty()) {
        if (static_cast<long long>(u.rankDevices.size()) != need)
            return R::failure("the rank map lists " + std::to_string(u.rankDevices.size()) +
                              " devices, tp x cp x dp x pp = " + std::to_string(need) + " ranks");
        std::vector<char> seen(static_cast<size_t>(topo.deviceCount()), 0);
        for (size_t r = 0; r < u.rankDevices.size(); ++r) {
            const int d = u.rankDevices[r];
            if (d < 0 || d >= topo.deviceCount())
                return R::failure("rank " + std::to_string(r) + " is mapped to device " + std::to_string(d) +
                                  ", the cluster has devices 0.." + std::to_string(topo.deviceCount() - 1));
            if (seen[static_cast<size_t>(d)]++)
                return R::failure("rank " + std::to_string(r) + " is mapped to device " + std::to_string(d) +
                                  ", which an earlier rank already runs on");
        }
    }

    // Layer split: blocks between the leading and trailing non-block layers.
    const int layers = model.layerCount();
    const PipelineSpan span = pipelineSpan(model);
    const int lead = span.lead, tail = span.lead + span.blocks;
    const int blocks = span.blocks;
    const int stages = u.pp * v;
    if (!u.stageBlocks.empty()) {
        if (static_cast<int>(u.stageBlocks.size()) != stages)
            return R::failure("the block split lists " + std::to_string(u.stageBlocks.size()) + " stages, the layout has " +
                              std::to_string(stages));
        long long sum = 0;
        for (int k = 0; k < stages; ++k) {
            const int b = u.stageBlocks[static_cast<size_t>(k)];
            const bool edge = (k == 0 && lead > 0) || (k == stages - 1 && tail < layers);
            if (b < (edge ? 0 : 1))
                return R::failure("stage " + std::to_string(k) + " of the block split has " + std::to_string(b) +
                                  " blocks; only a stage holding the embedding or the head may have none");
            sum += b;
        }
        if (sum != blocks)
            return R::failure("the block split sums to " + std::to_string(sum) + " blocks, the model has " +
                              std::to_string(blocks));
    } else if (pipelineUnitCount(span, u.pipelineUnits) < stages) {
        if (u.pipelineUnits == PipelineUnits::Layers)
            return R::failure("the model has " + std::to_string(blocks) + " transformer blocks, fewer than the " +
                              std::to_string(stages) + " pipeline stages asked for");
        return R::failure("the model has " + std::to_string(pipelineUnitCount(span, u.pipelineUnits)) +
                          " pipeline units (" + toString(u.pipelineUnits) + "), fewer than the " +
                          std::to_string(stages) + " pipeline stages asked for");
    }
    const std::vector<int> split =
        u.stageBlocks.empty() ? balancedStageBlocks(span, stages, u.pipelineUnits) : u.stageBlocks;

    Plan plan;
    plan.globalBatch = u.globalBatch;
    plan.microBatch = u.microBatch;
    plan.seqLength = u.seqLength;
    plan.schedule = u.schedule;
    plan.virtualStages = v;
    plan.dp = u.dp;
    plan.pipelineUnits = u.pipelineUnits;

    // Rank -> coordinates: strides in the given order, fastest first. An ep that does not
    // divide dp folds over tp x cp x dp (StageConfig) and is no dimension of the dense ranks.
    const int epDim = u.dp % u.ep == 0 ? u.ep : 1;
    const std::map<std::string, int> size = {
        {"tp", u.tp}, {"cp", u.cp}, {"ep", epDim}, {"dp", u.dp / epDim}, {"pp", u.pp}};
    std::map<std::string, int> stride;
    int acc = 1;
    for (const auto &d : *dims) {
        stride[d] = acc;
        acc *= size.at(d);
    }
    auto deviceOf = [&](int tpRank, int cpRank, int epRank, int dpRank, int ppRank) {
        const int rank = tpRank * stride["tp"] + cpRank * stride["cp"] + epRank * stride["ep"] + dpRank * stride["dp"] +
                         ppRank * stride["pp"];
        return u.rankDevices.empty() ? rank : u.rankDevices[static_cast<size_t>(rank)];
    };

    int first = 0;
    for (int k = 0; k < stages; ++k) {
        StagePlan st;
        st.firstLayer = first;
        const int count = split[static_cast<size_t>(k)];
        int end = (k == 0 ? lead : first) + count;
        if (k == stages - 1)
            end = layers;
        st.endLayer = end;
        first = end;
        st.config() = u.config();
        const int p = k % u.pp;
        st.devices.assign(static_cast<size_t>(u.dp), std::vector<int>(static_cast<size_t>(u.tp * u.cp)));
        for (int r = 0; r < u.dp; ++r)
            for (int c = 0; c < u.cp; ++c)
                for (int t = 0; t < u.tp; ++t)
                    st.devices[static_cast<size_t>(r)][static_cast<size_t>(c * u.tp + t)] =
                        deviceOf(t, c, r % epDim, r / epDim, p);
        plan.stages.push_back(std::move(st));
    }
    return plan;
}

} // namespace nest

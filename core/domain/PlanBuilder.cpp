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
    if (u.dp % u.ep != 0)
        return R::failure("ep " + std::to_string(u.ep) + " does not divide dp " + std::to_string(u.dp) +
                          " (expert parallelism shards experts over data-parallel replicas)");
    if (u.globalBatch % (u.microBatch * u.dp) != 0)
        return R::failure("global batch " + std::to_string(u.globalBatch) + " is not a multiple of micro-batch x dp = " +
                          std::to_string(u.microBatch * u.dp));
    auto dims = parseRankOrder(u.order);
    if (!dims)
        return R::failure(dims.error());

    // Layer split: blocks between the leading and trailing non-block layers.
    const int layers = model.layerCount();
    int lead = 0;
    while (lead < layers && model.layers[lead].kind != LayerKind::Transformer &&
           model.layers[lead].kind != LayerKind::Moe)
        ++lead;
    int tail = layers;
    while (tail > lead && model.layers[tail - 1].kind != LayerKind::Transformer &&
           model.layers[tail - 1].kind != LayerKind::Moe)
        --tail;
    const int blocks = tail - lead;
    const int stages = u.pp * v;
    if (blocks < stages)
        return R::failure("the model has " + std::to_string(blocks) + " transformer blocks, fewer than the " +
                          std::to_string(stages) + " pipeline stages asked for");

    Plan plan;
    plan.globalBatch = u.globalBatch;
    plan.microBatch = u.microBatch;
    plan.seqLength = u.seqLength;
    plan.schedule = u.schedule;
    plan.virtualStages = v;
    plan.dp = u.dp;

    // Rank -> coordinates: strides in the given order, fastest first.
    const std::map<std::string, int> size = {
        {"tp", u.tp}, {"cp", u.cp}, {"ep", u.ep}, {"dp", u.dp / u.ep}, {"pp", u.pp}};
    std::map<std::string, int> stride;
    int acc = 1;
    for (const auto &d : *dims) {
        stride[d] = acc;
        acc *= size.at(d);
    }
    auto deviceOf = [&](int tpRank, int cpRank, int epRank, int dpRank, int ppRank) {
        return tpRank * stride["tp"] + cpRank * stride["cp"] + epRank * stride["ep"] + dpRank * stride["dp"] +
               ppRank * stride["pp"];
    };

    const int base = blocks / stages;
    const int extra = blocks % stages;
    int first = 0;
    for (int k = 0; k < stages; ++k) {
        StagePlan st;
        st.firstLayer = first;
        int end = (k == 0 ? lead : first) + base + (k < extra ? 1 : 0);
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
                        deviceOf(t, c, r % u.ep, r / u.ep, p);
        plan.stages.push_back(std::move(st));
    }
    return plan;
}

} // namespace nest

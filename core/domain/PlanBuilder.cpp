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

namespace {

// What is wrong with the layout's widths, batch and schedule on `topo` (empty: nothing).
std::string layoutProblem(const UniformLayout &u, const Topology &topo)
{
    if (u.tp < 1 || u.pp < 1 || u.dp < 1 || u.ep < 1 || u.cp < 1)
        return "tp, pp, dp, ep and cp must all be at least 1";
    if (u.microBatch < 1 || u.globalBatch < 1)
        return "micro-batch and global batch must be at least 1";
    if (u.zero < 0 || u.zero > 3)
        return "zero must be 0, 1, 2 or 3";
    if (u.schedule != Schedule::Interleaved && u.virtualStages > 1)
        return "virtual stages > 1 need the interleaved schedule";
    const long long need = 1LL * u.tp * u.cp * u.dp * u.pp;
    if (need > topo.deviceCount())
        return "tp x cp x dp x pp = " + std::to_string(need) + " devices, the cluster has " +
               std::to_string(topo.deviceCount());
    if (u.etp < 0 || !StageConfig::expertGridFits(u.tp, u.cp, u.dp, u.expertTp(), u.ep))
        return "etp " + std::to_string(u.expertTp()) + " x ep " + std::to_string(u.ep) +
               " does not divide tp x cp x dp = " + std::to_string(1LL * u.tp * u.cp * u.dp) +
               " (Megatron-Core folds the experts' etp x ep x expert-dp grid onto those ranks)";
    if (u.globalBatch % (1LL * u.microBatch * u.dp) != 0)  // 64 bits: the product overflows an int
        return "global batch " + std::to_string(u.globalBatch) + " is not a multiple of micro-batch x dp = " +
               std::to_string(1LL * u.microBatch * u.dp);
    return {};
}

// What is wrong with the rank map (empty: nothing, or no map).
std::string rankMapProblem(const UniformLayout &u, const Topology &topo)
{
    if (u.rankDevices.empty())
        return {};
    const long long need = 1LL * u.tp * u.cp * u.dp * u.pp;
    if (static_cast<long long>(u.rankDevices.size()) != need)
        return "the rank map lists " + std::to_string(u.rankDevices.size()) + " devices, tp x cp x dp x pp = " +
               std::to_string(need) + " ranks";
    std::vector<char> seen(static_cast<size_t>(topo.deviceCount()), 0);
    for (size_t r = 0; r < u.rankDevices.size(); ++r) {
        const int d = u.rankDevices[r];
        if (d < 0 || d >= topo.deviceCount())
            return "rank " + std::to_string(r) + " is mapped to device " + std::to_string(d) +
                   ", the cluster has devices 0.." + std::to_string(topo.deviceCount() - 1);
        if (seen[static_cast<size_t>(d)]++)
            return "rank " + std::to_string(r) + " is mapped to device " + std::to_string(d) +
                   ", which an earlier rank already runs on";
    }
    return {};
}

// What is wrong with the block split of `stages` stages (empty: nothing).
std::string splitProblem(const UniformLayout &u, const PipelineSpan &span, int layers, int stages)
{
    const int lead = span.lead, tail = span.lead + span.blocks;
    const int blocks = span.blocks;
    if (!u.stageBlocks.empty()) {
        if (static_cast<int>(u.stageBlocks.size()) != stages)
            return "the block split lists " + std::to_string(u.stageBlocks.size()) + " stages, the layout has " +
                   std::to_string(stages);
        long long sum = 0;
        for (int k = 0; k < stages; ++k) {
            const int b = u.stageBlocks[static_cast<size_t>(k)];
            const bool edge = (k == 0 && lead > 0) || (k == stages - 1 && tail < layers);
            if (b < (edge ? 0 : 1))
                return "stage " + std::to_string(k) + " of the block split has " + std::to_string(b) +
                       " blocks; only a stage holding the embedding or the head may have none";
            sum += b;
        }
        if (sum != blocks)
            return "the block split sums to " + std::to_string(sum) + " blocks, the model has " +
                   std::to_string(blocks);
    } else if (pipelineUnitCount(span, u.pipelineUnits) < stages) {
        if (u.pipelineUnits == PipelineUnits::Layers)
            return "the model has " + std::to_string(blocks) + " transformer blocks, fewer than the " +
                   std::to_string(stages) + " pipeline stages asked for";
        return "the model has " + std::to_string(pipelineUnitCount(span, u.pipelineUnits)) + " pipeline units (" +
               toString(u.pipelineUnits) + "), fewer than the " + std::to_string(stages) +
               " pipeline stages asked for";
    }
    return {};
}

// Rank -> device: strides in the layout's order, fastest first. An ep that does not divide dp
// folds over tp x cp x dp (StageConfig) and is no dimension of the dense ranks.
class RankPlacer {
public:
    RankPlacer(const UniformLayout &u, const std::vector<std::string> &order)
        : m_u(u), m_epDim(u.dp % u.ep == 0 ? u.ep : 1)
    {
        const std::map<std::string, int> size = {
            {"tp", u.tp}, {"cp", u.cp}, {"ep", m_epDim}, {"dp", u.dp / m_epDim}, {"pp", u.pp}};
        int acc = 1;
        for (const auto &d : order) {
            m_stride[d] = acc;
            acc *= size.at(d);
        }
    }

    // The devices of pipeline position p: [replica][cp rank * tp + tp rank].
    std::vector<std::vector<int>> devicesOf(int p)
    {
        std::vector<std::vector<int>> devices(static_cast<size_t>(m_u.dp),
                                              std::vector<int>(static_cast<size_t>(m_u.tp * m_u.cp)));
        for (int r = 0; r < m_u.dp; ++r)
            for (int c = 0; c < m_u.cp; ++c)
                for (int t = 0; t < m_u.tp; ++t)
                    devices[static_cast<size_t>(r)][static_cast<size_t>(c * m_u.tp + t)] =
                        deviceOf(t, c, r % m_epDim, r / m_epDim, p);
        return devices;
    }

private:
    const UniformLayout &m_u;
    const int m_epDim;
    std::map<std::string, int> m_stride;

    int deviceOf(int tpRank, int cpRank, int epRank, int dpRank, int ppRank)
    {
        const int rank = tpRank * m_stride["tp"] + cpRank * m_stride["cp"] + epRank * m_stride["ep"] +
                         dpRank * m_stride["dp"] + ppRank * m_stride["pp"];
        return m_u.rankDevices.empty() ? rank : m_u.rankDevices[static_cast<size_t>(rank)];
    }
};

} // namespace

Result<Plan> buildUniformPlan(const UniformLayout &u, const Topology &topo, const ModelProfile &model)
{
    using R = Result<Plan>;
    if (const std::string why = layoutProblem(u, topo); !why.empty())
        return R::failure(why);
    const int v = u.schedule == Schedule::Interleaved ? std::max(u.virtualStages, 1) : 1;
    auto dims = parseRankOrder(u.order);
    if (!dims)
        return R::failure(dims.error());
    if (const std::string why = rankMapProblem(u, topo); !why.empty())
        return R::failure(why);

    // Layer split: blocks between the leading and trailing non-block layers.
    const int layers = model.layerCount();
    const PipelineSpan span = pipelineSpan(model);
    const int stages = u.pp * v;
    if (const std::string why = splitProblem(u, span, layers, stages); !why.empty())
        return R::failure(why);
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
    RankPlacer placer(u, *dims);
    int first = 0;
    for (int k = 0; k < stages; ++k) {
        StagePlan st;
        st.firstLayer = first;
        const int count = split[static_cast<size_t>(k)];
        int end = (k == 0 ? span.lead : first) + count;
        if (k == stages - 1)
            end = layers;
        st.endLayer = end;
        first = end;
        st.config() = u.config();
        st.devices = placer.devicesOf(k % u.pp);
        plan.stages.push_back(std::move(st));
    }
    return plan;
}

} // namespace nest

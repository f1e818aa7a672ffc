// Uniform Megatron-style layouts: rank order onto device ids, layer split, errors.
#include "Evaluator.h"
#include "PlanBuilder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace nest;

namespace {
Topology cluster(int nodes = 4)
{
    DeviceSpec dev{"b", 100e12, 80e9, 1e12, 0.5, ""};
    return Topology::uniform("b", dev, {{"node", 4, {100e9, 0, 1}}, {"cluster", nodes, {10e9, 0, 1}}});
}
// Embedding, `blocks` transformer blocks, head.
ModelProfile model(int blocks, bool moe = false)
{
    ModelProfile m;
    m.seqLength = 128;
    LayerProfile e;
    e.kind = LayerKind::Embedding;
    m.layers.push_back(e);
    for (int i = 0; i < blocks; ++i) {
        LayerProfile l;
        l.kind = moe ? LayerKind::Moe : LayerKind::Transformer;
        l.fwdFlops = 1e12;
        m.layers.push_back(l);
    }
    LayerProfile h;
    h.kind = LayerKind::Head;
    m.layers.push_back(h);
    return m;
}
} // namespace

TEST(PlanBuilder, megatronOrder)
{
    // tp-cp-ep-dp-pp: tp fastest. tp 2, dp 2, pp 2 on devices 0..7:
    // stage 0: replica 0 = {0,1}, replica 1 = {2,3}; stage 1: {4,5}, {6,7}.
    UniformLayout u;
    u.tp = 2;
    u.dp = 2;
    u.pp = 2;
    u.globalBatch = 8;
    u.seqLength = 128;
    const Plan p = *buildUniformPlan(u, cluster(), model(4));
    ASSERT_EQ(p.stages.size(), size_t(2));
    ASSERT_EQ(p.stages[0].devices, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
    ASSERT_EQ(p.stages[1].devices, (std::vector<std::vector<int>>{{4, 5}, {6, 7}}));
    ASSERT_TRUE(planErrors(p, cluster(), model(4)).empty());
}

TEST(PlanBuilder, otherOrderAndContext)
{
    // "dp-tp-cp-pp": dp fastest. tp 2, cp 2, dp 2, pp 1 -> rank = dp + 2 tp + 4 cp.
    // Replica r, shard j = cp*2 + tp: device r + 2 tp + 4 cp.
    UniformLayout u;
    u.tp = 2;
    u.cp = 2;
    u.dp = 2;
    u.globalBatch = 4;
    u.seqLength = 128;
    u.order = "dp-tp-cp-pp";
    const Plan p = *buildUniformPlan(u, cluster(), model(2));
    ASSERT_EQ(p.stages[0].devices, (std::vector<std::vector<int>>{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(PlanBuilder, expertParallelGroupsAreConsecutiveReplicas)
{
    // tp 1, dp 4, ep 2, order tp-cp-ep-dp-pp: replica r = dpRank * 2 + epRank, rank =
    // epRank + 2 dpRank = r. Replicas 0,1 form one EP group.
    UniformLayout u;
    u.dp = 4;
    u.ep = 2;
    u.globalBatch = 4;
    u.seqLength = 128;
    const Plan p = *buildUniformPlan(u, cluster(), model(2, true));
    ASSERT_EQ(p.stages[0].devices, (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}}));
    ASSERT_EQ(p.stages[0].ep, 2);
    // Putting ep outermost: "tp-cp-dp-ep-pp": rank = dpRank + 2 epRank.
    u.order = "tp-cp-dp-ep-pp";
    const Plan q = *buildUniformPlan(u, cluster(), model(2, true));
    ASSERT_EQ(q.stages[0].devices, (std::vector<std::vector<int>>{{0}, {2}, {1}, {3}}));
}

TEST(PlanBuilder, layerSplit)
{
    // 6 blocks over 4 stages: 2, 2, 1, 1 blocks (first stages take the remainder);
    // the embedding joins stage 0, the head the last: [0,3) [3,5) [5,6) [6,8).
    UniformLayout u;
    u.pp = 4;
    u.globalBatch = 4;
    u.seqLength = 128;
    const Plan p = *buildUniformPlan(u, cluster(), model(6));
    const int expect[4][2] = {{0, 3}, {3, 5}, {5, 6}, {6, 8}};
    for (int s = 0; s < 4; ++s) {
        ASSERT_EQ(p.stages[s].firstLayer, expect[s][0]);
        ASSERT_EQ(p.stages[s].endLayer, expect[s][1]);
    }
}

TEST(PlanBuilder, interleavedChunksShareDevices)
{
    UniformLayout u;
    u.pp = 2;
    u.globalBatch = 4;
    u.seqLength = 128;
    u.schedule = Schedule::Interleaved;
    u.virtualStages = 2;
    const Plan p = *buildUniformPlan(u, cluster(), model(4));
    ASSERT_EQ(p.stages.size(), size_t(4));
    ASSERT_EQ(p.pipelineDepth(), 2);
    ASSERT_EQ(p.stages[2].devices, p.stages[0].devices);
    ASSERT_EQ(p.stages[3].devices, p.stages[1].devices);
    ASSERT_TRUE(p.stages[0].devices != p.stages[1].devices);
    ASSERT_TRUE(planErrors(p, cluster(), model(4)).empty());
}

TEST(PlanBuilder, errors)
{
    struct Row {
        const char *name;
        int tp, pp, dp, ep, batch;
        std::string order, expect;
    };
    const Row rows[] = {
        {"too many devices", 4, 4, 2, 1, 8, "tp-cp-ep-dp-pp", "the cluster has 16"},
        {"etp x ep does not divide tp x cp x dp", 1, 1, 3, 2, 6, "tp-cp-ep-dp-pp", "does not divide tp x cp x dp = 3"},
        {"batch does not split", 1, 1, 4, 1, 6, "tp-cp-ep-dp-pp", "not a multiple"},
        {"too many stages", 1, 8, 1, 1, 8, "tp-cp-ep-dp-pp", "fewer than the 8"},
        {"bad order", 1, 1, 1, 1, 8, "tp-cp-xx-dp-pp", "unknown dimension 'xx'"},
        {"missing dim", 1, 1, 1, 1, 8, "tp-cp-dp", "lacks 'pp'"},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            UniformLayout u;
            u.tp = row.tp;
            u.pp = row.pp;
            u.dp = row.dp;
            u.ep = row.ep;
            u.globalBatch = row.batch;
            u.seqLength = 128;
            u.order = row.order;
            const auto r = buildUniformPlan(u, cluster(), model(4));
            ASSERT_TRUE(!r.ok());
            ASSERT_TRUE(r.error().find(row.expect) != std::string::npos) << r.error().c_str();
        }();
    }
}

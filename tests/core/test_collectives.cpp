// Collective costs on a tiny tree, each against a hand computation.
// Tree (16 devices): nodes of 4 (100 GB/s, 1 us), racks of 2 nodes (10 GB/s, 5 us),
// a spine over 2 racks (5 GB/s, 10 us, oversubscription 2).
#include "Collectives.h"

#include "CoreTestSupport.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace nest;

namespace {
Topology tree(double scale = 1.0)
{
    DeviceSpec dev{"test", 100e12, 80e9, 1e12, 0.5, ""};
    return Topology::uniform("t", dev,
                             {{"node", 4, {100e9 * scale, 1e-6, 1}},
                              {"rack", 2, {10e9 * scale, 5e-6, 1}},
                              {"spine", 2, {5e9 * scale, 10e-6, 2}}});
}
bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }
} // namespace

TEST(Collectives, allReduceInsideNode)
{
    // Ring inside one node: 2 (n-1)/n S / B + 2 (n-1) a = 2*3/4*1e9/1e11 + 6e-6.
    const double t = allReduceTime(tree(), {0, 1, 2, 3}, 1e9);
    ASSERT_TRUE(close(t, 2 * 0.75 * 1e9 / 100e9 + 6e-6));
}

TEST(Collectives, allReduceHierarchicalTwoNodes)
{
    // Level 0: g=4, full buffer: 2*(3/4*S/100e9 + 3*1e-6).
    // Level 1: g=2, each device holds S/4: 2*(1/2*S/4/10e9 + 1*5e-6).
    const double s = 1e9;
    const double expect = 2 * (0.75 * s / 100e9 + 3e-6) + 2 * (0.5 * s / 4 / 10e9 + 5e-6);
    ASSERT_TRUE(close(allReduceTime(tree(), {0, 1, 2, 3, 4, 5, 6, 7}, s), expect));
    // Reduce-scatter and all-gather are each half of it.
    ASSERT_TRUE(close(reduceScatterTime(tree(), {7, 6, 5, 4, 3, 2, 1, 0}, s), expect / 2));
    ASSERT_TRUE(close(allGatherTime(tree(), {0, 1, 2, 3, 4, 5, 6, 7}, s), expect / 2));
}

TEST(Collectives, oneDevicePerNodeSkipsLevelZero)
{
    // {0, 4}: only the rack level is crossed: 2*(1/2*S/10e9 + 5e-6).
    ASSERT_TRUE(close(allReduceTime(tree(), {0, 4}, 1e9), 2 * (0.5 * 1e9 / 10e9 + 5e-6)));
}

TEST(Collectives, oversubscribedSpine)
{
    // Full load: the spine gives 5 GB/s / 2 per device: 2*(1/2*S/2.5e9 + 10e-6).
    ASSERT_TRUE(close(allReduceTime(tree(), {0, 8}, 1e9, Contention::FullLoad), 2 * (0.5 * 1e9 / 2.5e9 + 10e-6)));
    // Only the group itself communicates: rack 0 has n=8 devices below it, k=1 sends:
    // share min(1, 8/(2*1)) = 1, full 5 GB/s.
    ASSERT_TRUE(close(allReduceTime(tree(), {0, 8}, 1e9, Contention::Concurrent), 2 * (0.5 * 1e9 / 5e9 + 10e-6)));
    // All 16 devices run such collectives at once: k = 8 -> share 8/(2*8) = 1/2.
    std::vector<int> ids = {0, 8};
    std::vector<int> all;
    for (int d = 0; d < 16; ++d)
        all.push_back(d);
    const Topology topo = tree();
    const GroupShape g = groupShape(topo, ids.data(), 2, Contention::Concurrent, all.data(), 16);
    ASSERT_TRUE(close(allReduceCost(g).at(1e9), 2 * (0.5 * 1e9 / 2.5e9 + 10e-6)));
}

TEST(Collectives, allToAllByLevel)
{
    // 8 devices in 2 nodes: each device keeps 1/8, sends 3/8 inside its node and 4/8
    // across the rack: 3/8*S/100e9 + 1e-6 + 4/8*S/10e9 + 5e-6.
    const double s = 1e9;
    const double expect = 3.0 / 8 * s / 100e9 + 1e-6 + 0.5 * s / 10e9 + 5e-6;
    ASSERT_TRUE(close(allToAllTime(tree(), {0, 1, 2, 3, 4, 5, 6, 7}, s), expect));
}

TEST(Collectives, nonUniformGroup)
{
    // 3 devices in node 0 and 1 in node 1 (fan-in ceil(3/2)=2 at level 0 on average
    // blocks: 4 devices in 2 node blocks). Level 0: g = ceil(4/2) = 2, f = 1;
    // level 1: g = 2, f = 2/4. AR = 2*(1/2*S/100e9 + 1e-6) + 2*(1/2*S/2/10e9 + 5e-6).
    const double s = 1e9;
    const double expect = 2 * (0.5 * s / 100e9 + 1e-6) + 2 * (0.5 * s / 2 / 10e9 + 5e-6);
    ASSERT_TRUE(close(allReduceTime(tree(), {0, 1, 2, 4}, s), expect));
}

TEST(Collectives, sendRecv)
{
    const LinkParams link{10e9, 5e-6, 2};
    ASSERT_TRUE(close(sendRecvTime(link, 1e9, true), 5e-6 + 1e9 / 5e9));
    ASSERT_TRUE(close(sendRecvTime(link, 1e9, false), 5e-6 + 1e9 / 10e9));
    ASSERT_QFUZZY_EQ(sendRecvTime(link, 0, true), 0.0);
}

TEST(Collectives, singleDeviceIsFree)
{
    ASSERT_QFUZZY_EQ(allReduceTime(tree(), {3}, 1e9), 0.0);
    ASSERT_QFUZZY_EQ(allReduceTime(tree(), {3, 3}, 1e9), 0.0);
}

TEST(Collectives, stageCollectivesByHand)
{
    const double s = 1e9;
    // Two replicas of a tp = 4 stage, one per node of rack 0: devices[r][j].
    const std::vector<std::vector<int>> rack = {{0, 1, 2, 3}, {4, 5, 6, 7}};
    StageCollectives c = stageCollectives(tree(), rack, StageConfig{4, 1, 2}, 2);
    // TP inside a node (ring): 2 * (3/4 S / 100 GB/s + 3 us).
    ASSERT_TRUE(close(c.tp.at(s), 2 * (0.75 * s / 100e9 + 3e-6)));
    // DP groups {j, 4 + j} cross the rack level once (fan-in 2, full buffer, 10 GB/s,
    // no oversubscription): reduce-scatter 1/2 S / 10 GB/s + 5 us, all-reduce twice.
    ASSERT_TRUE(close(c.denseReduceScatter.at(s), 0.5 * s / 10e9 + 5e-6));
    ASSERT_TRUE(close(c.denseAllReduce.at(s), s / 10e9 + 10e-6));
    // EP all-to-all on the same pairs: half of each buffer leaves the node.
    ASSERT_TRUE(close(c.ep.at(s), 0.5 * s / 10e9 + 5e-6));
    // ep = dp: one replica per expert shard, nothing to sync; no cp.
    ASSERT_QFUZZY_EQ(c.expertAllReduce.at(s), 0.0);
    ASSERT_QFUZZY_EQ(c.cp.at(s), 0.0);
    // ep = 1: the expert groups are the dense groups.
    c = stageCollectives(tree(), rack, StageConfig{4, 1, 1}, 2);
    ASSERT_QFUZZY_EQ(c.expertAllReduce.at(s), c.denseAllReduce.at(s));
    ASSERT_QFUZZY_EQ(c.ep.at(s), 0.0);

    // Replicas in different racks: the pairs {j, 8 + j} meet at the spine (5 GB/s,
    // oversubscription 2). Gradient sync is full load: 5/2 GB/s, reduce-scatter
    // 1/2 S / 2.5 GB/s + 10 us. The EP all-to-all is concurrent: 4 of the 8 devices
    // under each rack switch send, share min(1, 8 / (2 * 4)) = 1: 1/2 S / 5 GB/s + 10 us.
    const std::vector<std::vector<int>> spine = {{0, 1, 2, 3}, {8, 9, 10, 11}};
    c = stageCollectives(tree(), spine, StageConfig{4, 1, 2}, 2);
    ASSERT_TRUE(close(c.denseReduceScatter.at(s), 0.5 * s / 2.5e9 + 10e-6));
    ASSERT_TRUE(close(c.ep.at(s), 0.5 * s / 5e9 + 10e-6));
    // cp = 2 x tp = 2 on one node: the cp groups {0, 2}, {1, 3} all-gather inside it.
    c = stageCollectives(tree(), {{0, 1, 2, 3}}, StageConfig{2, 2, 1}, 1);
    ASSERT_TRUE(close(c.cp.at(s), 0.5 * s / 100e9 + 1e-6));
    ASSERT_TRUE(close(c.tp.at(s), 2 * (0.5 * s / 100e9 + 1e-6)));
    // dp = 1, but the two cp ranks of each tp rank hold the same weights, so their
    // gradients are all-reduced over {0, 2} and {1, 3}: the same shape as the tp
    // all-reduce, 2 x (1/2 S / 100 GB/s + 1 us).
    ASSERT_TRUE(close(c.denseAllReduce.at(s), 2 * (0.5 * s / 100e9 + 1e-6)));
}

TEST(Collectives, fasterLinksNeverSlower)
{
    const std::vector<std::vector<int>> groups = {{0, 1}, {0, 4}, {0, 8}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}};
    for (const auto &g : groups) {
        for (double scale : {1.5, 2.0, 10.0}) {
            ASSERT_TRUE(allReduceTime(tree(scale), g, 1e8) <= allReduceTime(tree(), g, 1e8));
            ASSERT_TRUE(allToAllTime(tree(scale), g, 1e8) <= allToAllTime(tree(), g, 1e8));
        }
    }
}

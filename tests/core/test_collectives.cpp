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
    // no oversubscription): reduce-scatter 1/2 S / 10 GB/s + 5 us per call, all-reduce
    // twice (ring; the tree's 2 S / 9 GB/s loses at a 50 MiB bucket). Gradient sync is
    // bucketed: the latency is paid S / kGradientBucketBytes + 1 times.
    const double calls = s / kGradientBucketBytes + 1;
    ASSERT_TRUE(close(c.denseReduceScatter.at(s), 0.5 * s / 10e9 + 5e-6 * calls));
    ASSERT_TRUE(close(c.denseAllReduce.at(s), s / 10e9 + 10e-6 * calls));
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
    // 1/2 S / 2.5 GB/s + 10 us per call. The EP all-to-all is concurrent: 4 of the 8 devices
    // under each rack switch send, share min(1, 8 / (2 * 4)) = 1: 1/2 S / 5 GB/s + 10 us.
    const std::vector<std::vector<int>> spine = {{0, 1, 2, 3}, {8, 9, 10, 11}};
    c = stageCollectives(tree(), spine, StageConfig{4, 1, 2}, 2);
    ASSERT_TRUE(close(c.denseReduceScatter.at(s), 0.5 * s / 2.5e9 + 10e-6 * calls));
    ASSERT_TRUE(close(c.ep.at(s), 0.5 * s / 5e9 + 10e-6));
    // cp = 2 x tp = 2 on one node: the cp groups {0, 2}, {1, 3} all-gather inside it.
    c = stageCollectives(tree(), {{0, 1, 2, 3}}, StageConfig{2, 2, 1}, 1);
    ASSERT_TRUE(close(c.cp.at(s), 0.5 * s / 100e9 + 1e-6));
    ASSERT_TRUE(close(c.tp.at(s), 2 * (0.5 * s / 100e9 + 1e-6)));
    // dp = 1, but the two cp ranks of each tp rank hold the same weights, so their
    // gradients are all-reduced over {0, 2} and {1, 3}: the same shape as the tp
    // all-reduce, 2 x (1/2 S / 100 GB/s + 1 us) per call, in buckets.
    ASSERT_TRUE(close(c.denseAllReduce.at(s), s / 100e9 + 2e-6 * calls));
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

// ---------------------------------------------------------------------------------------
// Issue 23, point 2: the algorithms NCCL chooses between (ring, double binary tree,
// hierarchical), the switch between them, bucketed gradient sync, rail-optimised fabrics.

namespace {
GroupShape shapeOf(const Topology &topo, std::vector<int> ids, Contention mode = Contention::FullLoad)
{
    return groupShape(topo, ids.data(), static_cast<int>(ids.size()), mode);
}

// 64 single-GPU nodes on one switch: 10 GB/s per device, 5 us per message.
Topology flat64()
{
    DeviceSpec dev{"test", 100e12, 80e9, 1e12, 0.5, ""};
    return Topology::uniform("flat", dev, {{"node", 1, {100e9, 1e-6, 1}}, {"cluster", 64, {10e9, 5e-6, 1}}});
}
} // namespace

TEST(CollectiveAlgorithms, ringTreeHierarchicalByHand)
{
    // Rack 0 of tree(): 8 devices in 2 nodes. n = 8, c_0 = 2 nodes, c_1 = 1 rack.
    // Level 0: fan-in 4, f_0 = 1, 100 GB/s, 1 us; level 1: fan-in 2, f_1 = 2/8, 10 GB/s, 5 us.
    const Topology topo = tree();
    const GroupShape g = shapeOf(topo, {0, 1, 2, 3, 4, 5, 6, 7});
    const double s = 1e9;
    // Ring: bottleneck max(1/100e9, (1/4)/10e9) = 2.5e-11 s/B; (n-1)/n = 7/8;
    // steps: c_{-1} - c_0 = 6 inside the nodes at 1 us, c_0 - c_1 = 1 across at 5 us.
    // reduce-scatter = 7/8 * 2.5e-11 * S + 6 * 1e-6 + 1 * 5e-6; all-reduce twice that.
    ASSERT_TRUE(close(ringReduceScatterCost(g).at(s), 7.0 / 8 * 2.5e-11 * s + 11e-6));
    ASSERT_TRUE(close(ringAllReduceCost(g).at(s), 2 * (7.0 / 8 * 2.5e-11 * s + 11e-6)));
    // Hierarchical: 2 * (3/4 * S / 100e9 + 3 * 1e-6) + 2 * (1/2 * S/4 / 10e9 + 1 * 5e-6)
    //             = 1.5e-11 S + 2.5e-11 S + 16e-6.
    ASSERT_TRUE(close(allReduceCost(g).at(s), 4e-11 * s + 16e-6));
    // Tree: 2 * S * 2.5e-11 / 0.9 + 2 * ((4 - 1) * 1e-6 + ceil(log2 2) * 5e-6) = 5.5556e-11 S + 16e-6.
    ASSERT_TRUE(close(treeAllReduceCost(g).at(s), 2 * 2.5e-11 * s / 0.9 + 16e-6));
    // At 1 GB the hierarchical algorithm moves least over the 10 GB/s level: 0.040016 s
    // against the ring's 0.043772 s and the tree's 0.055572 s.
    const CollectiveChoice ar = chooseAllReduce(g, s);
    ASSERT_EQ(ar.algorithm, CollectiveAlgorithm::Hierarchical);
    ASSERT_TRUE(close(ar.cost.at(s), 4e-11 * s + 16e-6));
    // Reduce-scatter: no tree; hierarchical 1/2 of 4e-11 S + 8e-6 = 0.020008 s beats the
    // ring's 0.021886 s.
    ASSERT_EQ(chooseReduceScatter(g, s).algorithm, CollectiveAlgorithm::Hierarchical);

    // One device per node: a single crossed level, where ring and hierarchical coincide.
    // {0, 4}: fan-in 2 at the rack level: 2 * (1/2 * S / 10e9 + 5e-6).
    const GroupShape pair = shapeOf(topo, {0, 4});
    ASSERT_TRUE(close(ringAllReduceCost(pair).at(s), allReduceCost(pair).at(s)));
    ASSERT_TRUE(close(ringAllReduceCost(pair).at(s), 2 * (0.5 * s / 10e9 + 5e-6)));
    ASSERT_EQ(chooseAllReduce(pair, s).algorithm, CollectiveAlgorithm::Ring);  // tie: ring first
}

TEST(CollectiveAlgorithms, ringLatencyGrowsLinearlyTreeLogarithmically)
{
    // 64 nodes of one GPU: ring all-reduce pays 2 (n-1) steps of 5 us, the tree
    // 2 ceil(log2 n) hops: 2 * 63 * 5e-6 = 630 us against 2 * 6 * 5e-6 = 60 us.
    const Topology topo = flat64();
    std::vector<int> all;
    for (int d = 0; d < 64; ++d)
        all.push_back(d);
    const GroupShape g = shapeOf(topo, all);
    ASSERT_TRUE(close(ringAllReduceCost(g).fixed, 630e-6));
    ASSERT_TRUE(close(treeAllReduceCost(g).fixed, 60e-6));
    // 8 and 16 of them: ring 2 * 7 * 5 = 70 us and 2 * 15 * 5 = 150 us; tree 30 and 40 us.
    ASSERT_TRUE(close(ringAllReduceCost(shapeOf(topo, {0, 1, 2, 3, 4, 5, 6, 7})).fixed, 70e-6));
    ASSERT_TRUE(close(treeAllReduceCost(shapeOf(topo, {0, 1, 2, 3, 4, 5, 6, 7})).fixed, 30e-6));
    std::vector<int> sixteen(all.begin(), all.begin() + 16);
    ASSERT_TRUE(close(ringAllReduceCost(shapeOf(topo, sixteen)).fixed, 150e-6));
    ASSERT_TRUE(close(treeAllReduceCost(shapeOf(topo, sixteen)).fixed, 40e-6));
}

TEST(CollectiveAlgorithms, switchPoint)
{
    // 64 nodes: ring  2 * 63/64 * S / 10e9 + 630e-6 = 1.96875e-10 S + 630e-6
    //           tree  2 * S / (0.9 * 10e9) + 60e-6   = 2.22222e-10 S +  60e-6
    // Equal at S* = 570e-6 / (2.22222e-10 - 1.96875e-10) = 22.488 MB: the tree below, the
    // ring above (hierarchical = ring on one level, and a tie keeps the ring).
    const Topology topo = flat64();
    std::vector<int> all;
    for (int d = 0; d < 64; ++d)
        all.push_back(d);
    const GroupShape g = shapeOf(topo, all);
    const double star = 570e-6 / (2.0 / 0.9e10 - 2.0 * 63 / 64 / 1e10);
    ASSERT_NEAR(star, 22.488e6, 0.001e6);
    ASSERT_EQ(chooseAllReduce(g, 0.9 * star).algorithm, CollectiveAlgorithm::Tree);
    ASSERT_EQ(chooseAllReduce(g, 1.1 * star).algorithm, CollectiveAlgorithm::Ring);
    // 1 MB: tree 2.2222e-4 + 60e-6 = 282 us, ring 1.96875e-4 + 630e-6 = 827 us.
    const CollectiveChoice small = chooseAllReduce(g, 1e6);
    ASSERT_EQ(small.algorithm, CollectiveAlgorithm::Tree);
    ASSERT_TRUE(close(small.cost.at(1e6), 2e6 / 0.9e10 + 60e-6));
    // Reduce-scatter has no tree: the ring at any size.
    ASSERT_EQ(chooseReduceScatter(g, 1e3).algorithm, CollectiveAlgorithm::Ring);
}

TEST(CollectiveAlgorithms, bucketedGradientSync)
{
    // Per bucket of B bytes one call and its latency: time(S) = perByte S + fixed (S/B + 1).
    const LinearCost call{1e-10, 100e-6};
    const LinearCost b = bucketed(call, 50e6);
    // 1 GB = 20 buckets: 0.1 s + 100 us * (20 + 1) = 0.1021 s.
    ASSERT_TRUE(close(b.at(1e9), 0.1 + 100e-6 * 21));
    ASSERT_TRUE(close(bucketed(call, 0).at(1e9), call.at(1e9)));  // no bucket: one call
    // The data-parallel families of stageCollectives are bucketed at kGradientBucketBytes:
    // the 64-node group of one-GPU replicas reduce-scatters with the ring,
    // 63/64 S / 10e9 + 63 * 5e-6 per call.
    const Topology topo = flat64();
    std::vector<std::vector<int>> replicas;
    for (int d = 0; d < 64; ++d)
        replicas.push_back({d});
    const StageCollectives c = stageCollectives(topo, replicas, StageConfig{1, 1, 1}, 64);
    const double s = 1e9;
    ASSERT_TRUE(close(c.denseReduceScatter.at(s), 63.0 / 64 * s / 10e9 + 315e-6 * (s / kGradientBucketBytes + 1)));
    ASSERT_EQ(c.denseReduceScatterAlgorithm, CollectiveAlgorithm::Ring);
    // All-reduce per 52.4 MB bucket (above the 22.5 MB switch point): the ring.
    ASSERT_EQ(c.denseAllReduceAlgorithm, CollectiveAlgorithm::Ring);
    ASSERT_TRUE(close(c.denseAllReduce.at(s), 2 * 63.0 / 64 * s / 10e9 + 630e-6 * (s / kGradientBucketBytes + 1)));
    // A run's own bucket (CostOptions::gradientBucketBytes, --grad-bucket-mb): 100 MiB calls,
    // half as many latencies for the same bytes.
    const double big = 2 * kGradientBucketBytes;
    const StageCollectives c2 = stageCollectives(topo, replicas, StageConfig{1, 1, 1}, 64, big);
    ASSERT_TRUE(close(c2.denseReduceScatter.at(s), 63.0 / 64 * s / 10e9 + 315e-6 * (s / big + 1)));
    ASSERT_TRUE(close(c2.denseAllReduce.at(s), 2 * 63.0 / 64 * s / 10e9 + 630e-6 * (s / big + 1)));
    ASSERT_EQ(c2.gradientBucketBytes, big);
}

TEST(CollectiveAlgorithms, railOptimizedSharesUplinksPerRail)
{
    // tree(): racks of 2 nodes x 4 GPUs, a spine at 5 GB/s with oversubscription 2.
    // The pair {0, 8} (GPU 0 of node 0 in rack 0, GPU 0 of node 2 in rack 1) crosses the
    // spine while a stage made of GPU 0 of every node, {0, 4, 8, 12}, runs the same
    // collective (Concurrent).
    Topology plain = tree();
    Topology rail = tree();
    rail.railOptimized = true;
    std::vector<int> ids = {0, 8};
    const std::vector<int> stage = {0, 4, 8, 12};
    const double s = 1e9;
    // Without rails: rack 0's uplinks serve its n = 8 GPUs, k = 2 of them ({0, 4}) send:
    // share min(1, 8 / (2 * 2)) = 1, 5 GB/s: 2 * (1/2 S / 5e9 + 10e-6).
    GroupShape g = groupShape(plain, ids.data(), 2, Contention::Concurrent, stage.data(), 4);
    ASSERT_TRUE(close(allReduceCost(g).at(s), 2 * (0.5 * s / 5e9 + 10e-6)));
    // Rail-optimised: rail 0's uplinks of rack 0 serve only GPU 0 of its 2 nodes (n = 2),
    // and both send (k = 2): share min(1, 2 / (2 * 2)) = 1/2, 2.5 GB/s: 2 * (1/2 S / 2.5e9 + 10e-6).
    g = groupShape(rail, ids.data(), 2, Contention::Concurrent, stage.data(), 4);
    ASSERT_TRUE(close(allReduceCost(g).at(s), 2 * (0.5 * s / 2.5e9 + 10e-6)));
    // The same stage spread over the rails, {0, 5, 10, 15}: rail 0 of rack 0 carries one
    // sender of its 2 GPUs, share min(1, 2 / (2 * 1)) = 1: full 5 GB/s again.
    const std::vector<int> spread = {0, 5, 10, 15};
    g = groupShape(rail, ids.data(), 2, Contention::Concurrent, spread.data(), 4);
    ASSERT_TRUE(close(allReduceCost(g).at(s), 2 * (0.5 * s / 5e9 + 10e-6)));
    // Gradient sync (FullLoad: every device below sends) is 1/o either way.
    ASSERT_TRUE(close(allReduceTime(rail, {0, 8}, s), allReduceTime(plain, {0, 8}, s)));
    ASSERT_TRUE(close(allReduceTime(rail, {0, 8}, s), 2 * (0.5 * s / 2.5e9 + 10e-6)));
    // Rail counts: 4 GPUs per node, 2 nodes per rack: rack 0 has 2 GPUs on rail 3.
    ASSERT_EQ(rail.railDeviceCountUnder(rail.ancestor(0, 1), 3), 2);
}

// The gradient groups of a stage are its columns {devices[r][cr * tp + t]}; stageCollectives()
// computes a column only when its members do not sit in the nodes of column 0's (in the
// same order), since a full-load shape reads its members only through their nodes. Its
// costs must be the worst over every column, each shaped on its own here. Node 1 is
// slower than node 0: in the second stage the columns lie in different nodes and the slow
// one decides (a shortcut that skipped it would return column 0's cost); in the first
// both columns lie in node 0 and any column's shape is the answer.
TEST(Collectives, gradientGroupsAreTheWorstColumn)
{
    Topology topo = tree();
    topo.groups[static_cast<size_t>(topo.ancestor(4, 0))].linkOverride = LinkParams{20e9, 4e-6, 1};
    const std::vector<std::vector<std::vector<int>>> stages = {
        {{0, 1}, {2, 3}},          // tp groups inside node 0
        {{0, 4}, {1, 5}},          // tp groups across nodes 0 and 1: columns {0, 1}, {4, 5}
        {{0, 1}, {4, 5}, {8, 9}},  // one tp group per node
    };
    int slowColumnDecided = 0;
    for (const auto &devices : stages) {
        const int dp = static_cast<int>(devices.size());
        const int tp = static_cast<int>(devices[0].size());
        LinearCost allReduce, reduceScatter;
        std::vector<double> perColumn;
        for (int t = 0; t < tp; ++t) {
            std::vector<int> column;
            for (int r = 0; r < dp; ++r)
                column.push_back(devices[static_cast<size_t>(r)][static_cast<size_t>(t)]);
            const GroupShape g = groupShape(topo, column.data(), static_cast<int>(column.size()), Contention::FullLoad);
            const LinearCost ar = bucketed(chooseAllReduce(g, kGradientBucketBytes).cost);
            const LinearCost rs = bucketed(chooseReduceScatter(g, kGradientBucketBytes).cost);
            allReduce = {std::max(allReduce.perByte, ar.perByte), std::max(allReduce.fixed, ar.fixed)};
            reduceScatter = {std::max(reduceScatter.perByte, rs.perByte), std::max(reduceScatter.fixed, rs.fixed)};
            perColumn.push_back(ar.at(1e9));
        }
        if (perColumn.back() > perColumn.front())
            ++slowColumnDecided;
        const StageCollectives c = stageCollectives(topo, devices, StageConfig{tp, 1, 1}, dp);
        EXPECT_EQ(c.denseAllReduce.perByte, allReduce.perByte) << devices[0][1];
        EXPECT_EQ(c.denseAllReduce.fixed, allReduce.fixed) << devices[0][1];
        EXPECT_EQ(c.denseReduceScatter.perByte, reduceScatter.perByte) << devices[0][1];
        EXPECT_EQ(c.denseReduceScatter.fixed, reduceScatter.fixed) << devices[0][1];
    }
    EXPECT_EQ(slowColumnDecided, 1);  // the second stage: its columns really differ
}

// NCCL's achievable bandwidths (DeviceSpec::scaleUpEfficiency, scaleOutEfficiency; NVIDIA/nccl
// src/graph/topo.h and search.cc): the scale-up levels run at NCCL's per-link NVLink rate over
// the nominal one, the levels above at NCCL's channel speed over the NIC's; a device without
// a source is not derated.
TEST(Collectives, scaleUpLinksAtNcclsRate)
{
    const DeviceSpec h100 = devicePreset("h100-sxm-80gb").value();
    ASSERT_TRUE(close(h100.scaleUpEfficiency, 20.6 / 25));  // SM90_NVLINK_BW over NVLink 4's 25 GB/s
    ASSERT_TRUE(close(devicePreset("a100-80gb")->scaleUpEfficiency, 20.0 / 25));
    ASSERT_TRUE(close(devicePreset("gb200")->scaleUpEfficiency, 40.1 / 50));  // NVLink 5
    ASSERT_EQ(devicePreset("mi300x")->scaleUpEfficiency, 1.0);
    ASSERT_EQ(devicePreset("mi300x")->scaleOutEfficiency, 1.0);
    ASSERT_TRUE(close(h100.scaleOutEfficiency, 0.96));

    // Two DGX H100 nodes: NVLink 450 GB/s, 2 us; network 50 GB/s, 10 us.
    const Topology two = Topology::uniform("dgx", h100, {{"node", 8, {450e9, 2e-6, 1}}, {"net", 2, {50e9, 10e-6, 1}}});
    const double e = 20.6 / 25, s = 1e9;
    // Ring inside a node: 2 (n-1)/n S / (e B) + 2 (n-1) a.
    ASSERT_TRUE(close(allReduceTime(two, {0, 1, 2, 3, 4, 5, 6, 7}, s), 2 * 7.0 / 8 * s / (e * 450e9) + 14 * 2e-6));
    // One device per node crosses the network only: 2 (1/2) S / (0.96 x 50e9) + 2 a, at NCCL's
    // 48 GB/s channel speed of a 400 Gb/s NIC (search.cc sm90SpeedArrayInter).
    ASSERT_TRUE(close(allReduceTime(two, {0, 8}, s), s / (0.96 * 50e9) + 2 * 10e-6));
    ASSERT_TRUE(close(two.achievableLink(two.ancestor(0, 0)).bandwidth, e * 450e9));
    ASSERT_EQ(two.link(two.ancestor(0, 0)).bandwidth, 450e9);  // the editor's figure
    ASSERT_TRUE(close(two.achievableLink(two.ancestor(0, 1)).bandwidth, 48e9));
    ASSERT_EQ(two.link(two.ancestor(0, 1)).bandwidth, 50e9);

    // A node is priced by its own GPUs: a cluster of an H100 node and an A100 node.
    Topology mixed = two;
    mixed.deviceTypes.push_back(devicePreset("a100-80gb").value());
    mixed.groups[static_cast<size_t>(mixed.ancestor(8, 0))].deviceType = 1;
    mixed.reindex();
    ASSERT_TRUE(close(mixed.achievableLink(mixed.ancestor(0, 0)).bandwidth, 450e9 * 20.6 / 25));
    ASSERT_TRUE(close(mixed.achievableLink(mixed.ancestor(8, 0)).bandwidth, 450e9 * 20.0 / 25));

    // The same node of MI300X: nominal.
    const Topology amd = Topology::uniform("mi", devicePreset("mi300x").value(), {{"node", 8, {448e9, 2e-6, 1}}});
    ASSERT_TRUE(close(allReduceTime(amd, {0, 1, 2, 3, 4, 5, 6, 7}, s), 2 * 7.0 / 8 * s / 448e9 + 14 * 2e-6));
}

// Width (issue 24, point 2): on a regular tree the planner costs a stage from its rows'
// spacing (stageGeometry(topo, regularBlockSizes, EvenRows, ...), evenStageCollectives())
// instead of the device matrix. The reference is the evaluator's stageGeometry() of the
// matrix itself (whose shortcuts test_planner_width checks against the member-by-member
// computation): on trees with oversubscribed levels, rails, fan-outs of 2 to 6, for every
// data-parallel degree (dividing the devices or not), both layouts, every position and
// width and every (tp, cp, ep) of it, every number must be the same double.
#include "Collectives.h"
#include "CoreTestSupport.h"
#include "Evaluator.h"
#include "Topology.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace nest;
using coretest::testDevice;

namespace {

using coretest::linkOf;

Topology tree(const std::vector<UniformLevel> &levels, bool rails = false)
{
    Topology t = Topology::uniform("even-rows", testDevice(80e9), levels);
    t.railOptimized = rails;
    return t;
}

Topology fourTier(int perNode) { return coretest::fourTierTree(perNode); }

void expectSameCost(const LinearCost &a, const LinearCost &b, const char *what)
{
    EXPECT_EQ(a.perByte, b.perByte) << what;
    EXPECT_EQ(a.fixed, b.fixed) << what;
}

struct Counted {
    long long geometries = 0, concurrentCrossing = 0, twoDimensional = 0;
};

// Every (dp, layout, position, width, tp, cp, ep) of the tree.
void checkTree(const Topology &topo, Counted &counted)
{
    const std::vector<int> sizes = regularBlockSizes(topo);
    ASSERT_FALSE(sizes.empty());
    const CostOptions options;
    const int n = topo.deviceCount();
    for (int dp = 1; dp <= n; ++dp) {
        // Every dp, as outerConfigs() takes them: one that does not divide the devices
        // leaves the last n % dp unused.
        const int positions = n / dp;
        for (bool inside : {false, true}) {
            for (int w = 1; w <= positions; ++w) {
                for (int q = 0; q + w <= positions; ++q) {
                    EvenRows rows;
                    rows.rows = dp;
                    rows.width = w;
                    rows.first = inside ? q : dp * q;
                    rows.stride = inside ? positions : w;
                    for (int tp = 1; tp <= w; ++tp) {
                        if (w % tp != 0)
                            continue;
                        for (int ep = 1; ep <= dp; ++ep) {
                            if (dp % ep != 0)
                                continue;
                            StagePlan stage;
                            stage.tp = tp;
                            stage.cp = w / tp;
                            stage.ep = ep;
                            stage.devices = deviceMatrix(rows);
                            SCOPED_TRACE("dp " + std::to_string(dp) + (inside ? " inside" : " outside") + " q " +
                                         std::to_string(q) + " w " + std::to_string(w) + " tp " + std::to_string(tp) +
                                         " ep " + std::to_string(ep));
                            const StageGeometry want = stageGeometry(topo, stage, dp, options);
                            const StageGeometry got = stageGeometry(topo, sizes, rows, stage.config(), options);
                            ++counted.geometries;
                            counted.concurrentCrossing += (tp > 1 && topo.level(rows.first, rows.first + tp - 1) > 0) ? 1 : 0;
                            counted.twoDimensional += (inside && stage.cp > 1 && dp > 1) || (ep > 1 && dp / ep > 1) ? 1 : 0;
                            EXPECT_EQ(got.devices, want.devices);
                            EXPECT_EQ(got.capacity, want.capacity);
                            EXPECT_TRUE(got.rates == want.rates);
                            expectSameCost(got.comm.tp, want.comm.tp, "tp");
                            expectSameCost(got.comm.cp, want.comm.cp, "cp");
                            expectSameCost(got.comm.ep, want.comm.ep, "ep");
                            expectSameCost(got.comm.denseAllReduce, want.comm.denseAllReduce, "dense all-reduce");
                            expectSameCost(got.comm.denseReduceScatter, want.comm.denseReduceScatter,
                                           "dense reduce-scatter");
                            expectSameCost(got.comm.expertAllReduce, want.comm.expertAllReduce, "expert all-reduce");
                            expectSameCost(got.comm.expertReduceScatter, want.comm.expertReduceScatter,
                                           "expert reduce-scatter");
                            EXPECT_EQ(got.comm.denseAllReduceAlgorithm, want.comm.denseAllReduceAlgorithm);
                            EXPECT_EQ(got.comm.denseReduceScatterAlgorithm, want.comm.denseReduceScatterAlgorithm);
                            if (::testing::Test::HasFailure())
                                return;
                        }
                    }
                }
            }
        }
    }
}

} // namespace

TEST(EvenRows, blockSizesOfRegularTreesOnly)
{
    // fourTier(2): 2 devices per node, 4 per rack, 12 per pod, 24 in all (by hand).
    EXPECT_EQ(regularBlockSizes(fourTier(2)), (std::vector<int>{2, 4, 12, 24}));
    EXPECT_EQ(regularBlockSizes(fourTier(3)), (std::vector<int>{3, 6, 18, 36}));
    // Not regular: a link override, a second device type, racks of unequal size.
    Topology slow = fourTier(2);
    slow.groups[static_cast<size_t>(slow.groupsAtLevel(1)[3])].linkOverride = linkOf(10e9, 3e-6);
    slow.reindex();
    EXPECT_TRUE(regularBlockSizes(slow).empty());
    Topology mixed = fourTier(2);
    DeviceSpec other = testDevice(60e9);
    other.name = "test-gpu-other";
    mixed.deviceTypes.push_back(other);
    mixed.groups[static_cast<size_t>(mixed.groupsAtLevel(0)[5])].deviceType = 1;
    mixed.reindex();
    EXPECT_TRUE(regularBlockSizes(mixed).empty());
    Topology uneven = fourTier(2);
    const std::vector<int> racks = uneven.groupsAtLevel(1);
    const int moved = uneven.groups[static_cast<size_t>(racks[1])].children.back();
    uneven.groups[static_cast<size_t>(racks[1])].children.pop_back();
    uneven.groups[static_cast<size_t>(racks[2])].children.push_back(moved);
    uneven.reindex();
    EXPECT_EQ(uneven.validate(), "");
    EXPECT_TRUE(regularBlockSizes(uneven).empty());
}

TEST(EvenRows, geometryEqualsTheDeviceMatrixOnes)
{
    Counted counted;
    const std::vector<Topology> trees = {
        fourTier(2),
        fourTier(3),
        // Three levels, 4 per node, both upper levels oversubscribed, with and without rails.
        tree({{"node", 4, linkOf(300e9, 1e-6)}, {"rack", 3, linkOf(50e9, 3e-6, 2)}, {"spine", 2, linkOf(25e9, 6e-6, 3)}}),
        tree({{"node", 4, linkOf(300e9, 1e-6)}, {"rack", 3, linkOf(50e9, 3e-6, 2)}, {"spine", 2, linkOf(25e9, 6e-6, 3)}},
             true),
        // Small nodes under oversubscribed racks: groups that cross nodes contend there,
        // and the stage covers some nodes only partly (rows of both layouts).
        tree({{"node", 2, linkOf(300e9, 1e-6)}, {"rack", 4, linkOf(50e9, 3e-6, 3)}, {"spine", 3, linkOf(25e9, 6e-6, 2)}}),
        tree({{"node", 2, linkOf(300e9, 1e-6)}, {"rack", 3, linkOf(50e9, 3e-6, 4)}, {"pod", 2, linkOf(40e9, 4e-6, 3)},
              {"spine", 2, linkOf(25e9, 6e-6, 2)}},
             true),
        // One node only.
        tree({{"node", 6, linkOf(300e9, 1e-6)}}),
    };
    for (const Topology &t : trees) {
        SCOPED_TRACE(std::to_string(t.deviceCount()) + " devices, " + std::to_string(t.levelCount()) + " levels" +
                     (t.railOptimized ? ", rails" : ""));
        checkTree(t, counted);
        if (::testing::Test::HasFailure())
            return;
    }
    // The cases that matter were reached: tensor-parallel groups that cross a node (their
    // contention read from the stage's coverage) and gradient groups that are not one
    // progression (the inside layout with cp > 1, the expert groups).
    EXPECT_GT(counted.geometries, 15000);
    EXPECT_GT(counted.concurrentCrossing, 1000);
    EXPECT_GT(counted.twoDimensional, 1000);
    std::printf("%lld geometries, %lld with tp groups crossing a node, %lld with 2-D gradient groups\n",
                counted.geometries, counted.concurrentCrossing, counted.twoDimensional);
}

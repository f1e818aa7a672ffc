// Width (issue 24, point 2): the planner's placement classes and boundary links come from
// per-device prefix hashes (SearchClasses::placementClassAt, boundaryKey,
// distinctReplicas, distinctOutsideReplicas) instead of building every stage's device matrix. A wrong merge there
// would silently give two different placements one cost. These tests check, on trees where
// merging by shape alone would be wrong (one rack with a slower link than its siblings, a
// node of another device type, a rack with fewer nodes, replica blocks that straddle nodes),
// for every data-parallel degree, both layouts, every position and width:
//  * the hashed classes are exactly the classes of the full signature
//    (SearchClasses::placementClass of PlanSpace::stageDevices): the same partition;
//  * two boundaries with the same key have the same boundaryLink(), and the links measured
//    on the distinct replicas only equal those of all replicas, in both layouts;
//  * NEST equals exhaustive search on small instances of those trees.
#include "ExhaustivePlanner.h"
#include "ModelBuilder.h"
#include "NestPlanner.h"
#include "PlanSpace.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace nest;
using coretest::testDevice;

namespace {

LinkParams linkOf(double bandwidth, double latency, double oversubscription = 1)
{
    LinkParams l;
    l.bandwidth = bandwidth;
    l.latency = latency;
    l.oversubscription = oversubscription;
    return l;
}

// 4 levels: `perNode` devices per node, 2 nodes per rack, 3 racks per pod, 2 pods.
Topology fourTier(int perNode, double memory = 80e9)
{
    return Topology::uniform("width-test", testDevice(memory),
                             {{"node", perNode, linkOf(200e9, 1e-6)},
                              {"rack", 2, linkOf(50e9, 2e-6)},
                              {"pod", 3, linkOf(50e9, 4e-6, 2)},
                              {"cluster", 2, linkOf(50e9, 8e-6, 4)}});
}

enum class Twist { None, SlowRack, OtherDeviceType, ShortRack };

Topology twisted(Twist twist, int perNode, double memory = 80e9)
{
    Topology t = fourTier(perNode, memory);
    const std::vector<int> racks = t.groupsAtLevel(1);
    const std::vector<int> nodes = t.groupsAtLevel(0);
    switch (twist) {
    case Twist::None:
        break;
    case Twist::SlowRack:
        // The fourth rack (second pod) has a slower rack link than its siblings.
        t.groups[racks[3]].linkOverride = linkOf(10e9, 3e-6);
        break;
    case Twist::OtherDeviceType: {
        DeviceSpec slow = testDevice(memory * 0.75);
        slow.name = "test-gpu-slow";
        slow.peakFlops = 50e12;
        t.deviceTypes.push_back(slow);
        t.groups[nodes[5]].deviceType = 1;
        break;
    }
    case Twist::ShortRack: {
        // The second rack gives its second node to the third (racks of 1 and 3 nodes).
        const int moved = t.groups[racks[1]].children.back();
        t.groups[racks[1]].children.pop_back();
        t.groups[racks[2]].children.push_back(moved);
        break;
    }
    }
    t.reindex();
    EXPECT_EQ(t.validate(), "");
    return t;
}

ModelProfile tinyModel(int layers)
{
    ModelConfig c = familyDefaults("gpt");
    c.name = "width-tiny";
    c.layers = layers;
    c.hidden = 256;
    c.heads = 8;
    c.kvHeads = 8;
    c.ffnHidden = 1024;
    c.vocab = 1000;
    c.seqLength = 256;
    if (c.maxPositions > 0)
        c.maxPositions = c.seqLength;
    c.globalBatch = 16;
    return buildProfile(c);
}

struct Checked {
    long long placements = 0, boundaries = 0, reducedLinks = 0, splitClasses = 0;
    long long reducedOutside = 0, worstBeyondFirst = 0;
};

StagePlan firstRow(const StagePlan &s)
{
    StagePlan out;
    out.devices.push_back(s.devices.front());
    return out;
}

// Classes of the hashed keys against the full signature on every (dp, layout, q, w).
void checkClasses(const Topology &topo, Checked &checked)
{
    const ModelProfile model = tinyModel(4);
    SearchOptions o;
    o.tpCandidates = {1, 2, 4};
    o.cpCandidates = {1};
    const PlanSpace space(topo, model, o);
    ASSERT_EQ(space.problem(), "");
    SearchClasses hashed(space), full(space);
    hashed.setColumnHashReplicas(2);  // the inside layout's column hashes on a small tree too
    std::map<int, int> hashedToFull, fullToHashed;
    std::map<std::pair<uint64_t, uint64_t>, BoundaryLink> byKey;
    const int n = topo.deviceCount();
    for (int dp = 1; dp <= n; ++dp) {
        for (Layout layout : {Layout::ReplicasOutside, Layout::ReplicasInside}) {
            OuterConfig cfg;
            cfg.dp = dp;
            cfg.layout = layout;
            cfg.positions = n / dp;
            for (int w : space.widths()) {
                for (int q = 0; q + w <= cfg.positions; ++q) {
                    SCOPED_TRACE("dp " + std::to_string(dp) + " layout " + toString(layout) + " q " +
                                 std::to_string(q) + " w " + std::to_string(w));
                    const int h = hashed.placementClassAt(cfg, q, w);
                    const int f = full.placementClass(space.stageDevices(cfg, q, w));
                    ++checked.placements;
                    // Same partition: each hashed class is one full class and vice versa.
                    const auto [hi, fresh] = hashedToFull.emplace(h, f);
                    ASSERT_EQ(hi->second, f) << "a hashed class merges two placements of different signatures";
                    // The other direction is not required: the inside layout's column hashes
                    // are a second encoding of the signature, so one signature may have two
                    // hashed classes (a duplicate costed twice, never a wrong merge).
                    fullToHashed.emplace(f, h);
                    checked.splitClasses += fresh && fullToHashed.at(f) != h ? 1 : 0;
                }
            }
            for (int wp : space.widths()) {
                for (int w : space.widths()) {
                    for (int q = wp; q + w <= cfg.positions; ++q) {
                        SCOPED_TRACE("boundary dp " + std::to_string(dp) + " layout " + toString(layout) + " q " +
                                     std::to_string(q) + " wp " + std::to_string(wp) + " w " + std::to_string(w));
                        StagePlan a, b;
                        a.devices = space.stageDevices(cfg, q - wp, wp);
                        b.devices = space.stageDevices(cfg, q, w);
                        const BoundaryLink link = boundaryLink(topo, a, b);
                        const auto key = hashed.boundaryKey(cfg, q, wp, w);
                        const auto [it, fresh] = byKey.emplace(key, link);
                        ++checked.boundaries;
                        ASSERT_EQ(it->second.level, link.level) << "one boundary key, two link levels";
                        ASSERT_TRUE(it->second.link == link.link) << "one boundary key, two links";
                        {
                            const std::vector<int> rows = layout == Layout::ReplicasInside
                                                              ? hashed.distinctReplicas(cfg, q - wp, wp + w)
                                                              : hashed.distinctOutsideReplicas(cfg, q, wp, w);
                            StagePlan ra, rb;
                            for (int r : rows) {
                                ra.devices.push_back(a.devices[static_cast<size_t>(r)]);
                                rb.devices.push_back(b.devices[static_cast<size_t>(r)]);
                            }
                            const BoundaryLink reduced = boundaryLink(topo, ra, rb);
                            const long long reduced1 = static_cast<int>(rows.size()) < dp ? 1 : 0;
                            (layout == Layout::ReplicasInside ? checked.reducedLinks : checked.reducedOutside) += reduced1;
                            // The worst pair may lie in any replica, not only the first.
                            checked.worstBeyondFirst += link.level > boundaryLink(topo, firstRow(a), firstRow(b)).level ? 1 : 0;
                            ASSERT_EQ(reduced.level, link.level);
                            ASSERT_TRUE(reduced.link == link.link);
                        }
                    }
                }
            }
        }
    }
}

} // namespace

TEST(PlannerWidth, hashedClassesAreTheSignatureClasses)
{
    Checked checked;
    for (Twist twist : {Twist::None, Twist::SlowRack, Twist::OtherDeviceType, Twist::ShortRack}) {
        for (int perNode : {2, 3}) {
            SCOPED_TRACE("twist " + std::to_string(static_cast<int>(twist)) + " per node " + std::to_string(perNode));
            checkClasses(twisted(twist, perNode), checked);
            if (::testing::Test::HasFatalFailure())
                return;
        }
    }
    std::cerr << "placements " << checked.placements << " boundaries " << checked.boundaries
              << " boundary links measured on fewer replicas " << checked.reducedLinks << " (inside), "
              << checked.reducedOutside << " (outside), worst pair beyond the first replica "
              << checked.worstBeyondFirst << " signatures with a second hashed class " << checked.splitClasses << "\n";
    EXPECT_GT(checked.reducedLinks, 100);  // the replica reductions were exercised
    EXPECT_GT(checked.reducedOutside, 100);
    EXPECT_GT(checked.worstBeyondFirst, 100);  // and the kept replicas matter
}

// The planner on the same trees (a model that needs a pipeline on some of them): NEST's
// objective equals exhaustive search.
TEST(PlannerWidth, nestEqualsExhaustiveOnTwistedTrees)
{
    int found = 0;
    for (Twist twist : {Twist::None, Twist::SlowRack, Twist::OtherDeviceType, Twist::ShortRack}) {
        for (int layers : {3, 5}) {
            const ModelProfile model = tinyModel(layers);
            const double state = model.weightBytes() / model.bytesPerParam * 16.0;
            for (double fraction : {0.4, 1.5}) {
                const Topology topo = twisted(twist, 1, 1e9 + state * fraction);
                SearchOptions o;
                o.globalBatch = 8;
                o.microBatches = {1, 2};
                o.schedules = {Schedule::OneFOneB};
                o.tpCandidates = {1, 2};
                o.cpCandidates = {1};
                o.epCandidates = {1};
                o.recomputeModes = {Recompute::None, Recompute::Full};
                o.maxStages = 4;
                SCOPED_TRACE("twist " + std::to_string(static_cast<int>(twist)) + " layers " + std::to_string(layers) +
                             " memory fraction " + std::to_string(fraction));
                const PlanResult nest = NestPlanner().plan(topo, model, o);
                const PlanResult ex = ExhaustivePlanner().plan(topo, model, o);
                ASSERT_EQ(nest.found, ex.found) << nest.message << " / " << ex.message;
                if (!ex.found)
                    continue;
                ++found;
                EXPECT_TRUE(nest.verified);
                EXPECT_LE(std::abs(nest.objective - ex.objective), 1e-9 * ex.objective);
            }
        }
    }
    EXPECT_GE(found, 8);
}

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
//  * NEST equals exhaustive search on small instances of those trees;
//  * the evaluator's shortcuts for wide stages (groupShape under full load by blocks, the tp
//    and cp groups inside one node skipped when they repeat) give the numbers of the
//    member-by-member computation they replace.
#include "ExhaustivePlanner.h"
#include "ModelBuilder.h"
#include "NestPlanner.h"
#include "PlanSpace.h"

#include "Collectives.h"
#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace nest;
using coretest::testDevice;

namespace {

using coretest::linkOf;

Topology fourTier(int perNode, double memory = 80e9) { return coretest::fourTierTree(perNode, memory); }

enum class Twist { None, SlowRack, OtherDeviceType, ShortRack, SlowNode };

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
    case Twist::SlowNode:
        // The fifth node's own link is slower than its siblings'.
        t.groups[nodes[4]].linkOverride = linkOf(100e9, 1.5e-6);
        break;
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
    ModelConfig c = coretest::tinyGptConfig(layers);
    c.name = "width-tiny";
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
    for (Twist twist : {Twist::None, Twist::SlowRack, Twist::OtherDeviceType, Twist::ShortRack, Twist::SlowNode}) {
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

namespace {

// groupShape() under full load as it was computed before the block-by-block shortcut: member
// by member at every level (the oracle for the shortcut).
GroupShape memberByMemberFullLoad(const Topology &topo, std::vector<int> ids)
{
    GroupShape g;
    g.fanIn.fill(1.0);
    g.bandwidth.fill(std::numeric_limits<double>::infinity());
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    const int n = static_cast<int>(ids.size());
    g.size = n;
    if (n <= 1)
        return g;
    const int levels = std::min(topo.levelCount(), kMaxCostLevels);
    double prevBlocks = n;
    for (int l = 0; l < levels; ++l) {
        int blocks = 0;
        double worstBw = std::numeric_limits<double>::infinity();
        double worstLat = 0;
        int i = 0;
        while (i < n) {
            const int block = topo.ancestor(ids[i], l);
            int j = i;
            int children = 0;
            int lastChild = -2;
            double share = 1.0;
            const LinkParams link = topo.link(block);
            while (j < n && topo.ancestor(ids[j], l) == block) {
                const int child = l == 0 ? ids[j] : topo.ancestor(ids[j], l - 1);
                const bool newChild = child != lastChild;
                if (newChild) {
                    ++children;
                    lastChild = child;
                }
                if (link.oversubscription > 1.0 && (newChild || (topo.railOptimized && l > 0)))
                    share = std::min(share, 1.0 / link.oversubscription);
                ++j;
            }
            ++blocks;
            if (children > 1) {
                worstBw = std::min(worstBw, link.bandwidth * share);
                worstLat = std::max(worstLat, link.latency);
            }
            i = j;
        }
        g.blocks[l] = blocks;
        if (blocks < prevBlocks) {
            g.fanIn[l] = std::ceil(prevBlocks / blocks - 1e-12);
            g.fraction[l] = prevBlocks / n;
            g.bandwidth[l] = worstBw;
            g.latency[l] = worstLat;
            g.topLevel = l;
        }
        prevBlocks = blocks;
        if (blocks == 1)
            break;
    }
    return g;
}

bool sameShape(const GroupShape &a, const GroupShape &b)
{
    return a.size == b.size && a.topLevel == b.topLevel && a.fanIn == b.fanIn && a.fraction == b.fraction &&
           a.blocks == b.blocks && a.bandwidth == b.bandwidth && a.latency == b.latency;
}

} // namespace

// Every stage of every (dp, layout, position, width) of the twisted trees, with every
// (tp, cp) split of its width: the full-load shapes of its gradient groups equal the
// member-by-member ones, and its tp / cp costs equal the maxima over all of its groups.
TEST(PlannerWidth, evaluatorShortcutsKeepTheNumbers)
{
    long long stages = 0, gradientGroups = 0;
    for (Twist twist : {Twist::None, Twist::SlowRack, Twist::OtherDeviceType, Twist::ShortRack, Twist::SlowNode}) {
        for (int perNode : {2, 4}) {
            const Topology topo = twisted(twist, perNode);
            const ModelProfile model = tinyModel(4);
            SearchOptions o;
            o.tpCandidates = {1, 2, 4};
            o.cpCandidates = {1};
            const PlanSpace space(topo, model, o);
            const int n = topo.deviceCount();
            for (int dp = 1; dp <= n; ++dp) {
                for (Layout layout : {Layout::ReplicasOutside, Layout::ReplicasInside}) {
                    OuterConfig cfg;
                    cfg.dp = dp;
                    cfg.layout = layout;
                    cfg.positions = n / dp;
                    for (int w : {2, 4, 8}) {
                        for (int q = 0; q + w <= cfg.positions; ++q) {
                            const std::vector<std::vector<int>> devices = space.stageDevices(cfg, q, w);
                            std::vector<int> all;
                            for (const auto &row : devices)
                                all.insert(all.end(), row.begin(), row.end());
                            std::sort(all.begin(), all.end());
                            for (int tp = 1; tp <= w; tp *= 2) {
                                SCOPED_TRACE("twist " + std::to_string(static_cast<int>(twist)) + " per node " +
                                             std::to_string(perNode) + " dp " + std::to_string(dp) + " layout " +
                                             toString(layout) + " q " + std::to_string(q) + " w " +
                                             std::to_string(w) + " tp " + std::to_string(tp));
                                StageConfig c;
                                c.tp = tp;
                                c.cp = w / tp;
                                const StageCollectives got = stageCollectives(topo, devices, c, dp);
                                ++stages;
                                LinearCost tpWorst, cpWorst;
                                for (const auto &row : devices) {
                                    for (int a = 0; a < c.cp; ++a) {
                                        std::vector<int> g;
                                        for (int t = 0; t < tp; ++t)
                                            g.push_back(row[static_cast<size_t>(a * tp + t)]);
                                        const LinearCost x = allReduceCost(groupShape(
                                            topo, g.data(), tp, Contention::Concurrent, all.data(), static_cast<int>(all.size())));
                                        tpWorst = {std::max(tpWorst.perByte, x.perByte), std::max(tpWorst.fixed, x.fixed)};
                                    }
                                    for (int t = 0; t < tp; ++t) {
                                        std::vector<int> g;
                                        for (int a = 0; a < c.cp; ++a)
                                            g.push_back(row[static_cast<size_t>(a * tp + t)]);
                                        const LinearCost x = allGatherCost(groupShape(
                                            topo, g.data(), c.cp, Contention::Concurrent, all.data(), static_cast<int>(all.size())));
                                        cpWorst = {std::max(cpWorst.perByte, x.perByte), std::max(cpWorst.fixed, x.fixed)};
                                    }
                                }
                                if (tp > 1) {
                                    ASSERT_EQ(got.tp.perByte, tpWorst.perByte);
                                    ASSERT_EQ(got.tp.fixed, tpWorst.fixed);
                                }
                                if (c.cp > 1) {
                                    ASSERT_EQ(got.cp.perByte, cpWorst.perByte);
                                    ASSERT_EQ(got.cp.fixed, cpWorst.fixed);
                                }
                                for (int t = 0; t < tp; ++t) {
                                    std::vector<int> g;
                                    for (int r = 0; r < dp; ++r)
                                        for (int a = 0; a < c.cp; ++a)
                                            g.push_back(devices[static_cast<size_t>(r)][static_cast<size_t>(a * tp + t)]);
                                    std::vector<int> copy = g;
                                    const GroupShape fast = groupShape(topo, copy.data(), static_cast<int>(copy.size()),
                                                                       Contention::FullLoad);
                                    ASSERT_TRUE(sameShape(fast, memberByMemberFullLoad(topo, g)));
                                    ++gradientGroups;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    std::cerr << "stages " << stages << " gradient groups " << gradientGroups << "\n";
    EXPECT_GT(stages, 1000);
}

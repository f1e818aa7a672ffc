// MoE parallelism as Megatron-Core runs it (issue 46, point 3): the experts' own tensor width
// (etp) and "parallel folding" (the etp x ep x expert-dp grid re-slices the stage's
// tp x cp x dp ranks), the dispatch all-to-all on the placement (flat or DeepEP's
// hierarchical form), dropless imbalance and capacity factor, the shared experts' overlap.
// Expected values are derived by hand from Megatron-Core's rank generator (order
// tp-ep-dp for the experts) and the formulas in docs/cost-model.md, "MoE parallelism".
#include "ClusterTemplates.h"
#include "Collectives.h"
#include "ComputeModel.h"
#include "Evaluator.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "PlanBuilder.h"
#include "PlanComparison.h"
#include "PlannerRegistry.h"
#include "StageConfig.h"

#include "CoreTestSupport.h"

#include <algorithm>
#include <utility>

#include <gtest/gtest.h>

#include <cmath>

using namespace nest;
using namespace coretest;

namespace {

// A MoE of `experts` experts, top-`k`, on every block (h 1,024, expert FFN 2,048, `shared`
// shared experts), 1,024 tokens, global batch 64.
ModelProfile moeModel(int experts, int k, int layers = 2, int shared = 0)
{
    ModelConfig c = tinyGptConfig(layers);
    c.hidden = 1024;
    c.heads = 16;
    c.kvHeads = 16;
    c.ffnHidden = 2048;
    c.experts = experts;
    c.topK = k;
    c.sharedExperts = shared;
    c.seqLength = 1024;
    c.globalBatch = 64;
    return buildProfile(c);
}

UniformLayout layout(int tp, int cp, int dp, int ep, int etp)
{
    UniformLayout u;
    u.tp = tp;
    u.cp = cp;
    u.dp = dp;
    u.ep = ep;
    u.etp = StageConfig::etpField(etp, tp);
    u.sp = tp > 1;
    u.globalBatch = 64;
    u.seqLength = 1024;
    return u;
}

} // namespace

TEST(MoeParallel, etpIsAFieldOfTheChoiceAndItsKey)
{
    StageConfig a;
    a.tp = 4;
    StageConfig b = a;
    b.etp = 4;  // the same as tp: one layout
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.key(), b.key());
    b.etp = 1;
    EXPECT_NE(a, b);
    EXPECT_NE(a.key(), b.key());
    EXPECT_EQ(b.expertTp(), 1);
    EXPECT_EQ(a.expertTp(), 4);
    // The JSON form: written only when it differs from tp, read back.
    Json j = Json::object();
    writeStageConfig(j, b);
    EXPECT_EQ(j.at("etp"), 1);
    EXPECT_EQ(readStageConfig(j, "s"), b);
    Json k = Json::object();
    writeStageConfig(k, a);
    EXPECT_FALSE(k.contains("etp"));
    Json same = k;
    same["etp"] = 4;
    EXPECT_EQ(readStageConfig(same, "s").etp, 0);  // stored as "the same as tp"
    // The largest widths the key holds are distinct.
    StageConfig w1, w2;
    w1.tp = 65536;
    w2.tp = 65535;
    w1.etp = 1;
    w2.etp = 1;
    EXPECT_NE(w1.key(), w2.key());
}

TEST(MoeParallel, foldingRulesAndTheirMessages)
{
    // tp 4 x cp 2 x dp 2 = 16 ranks: etp 1 x ep 16 folds, etp 4 x ep 8 = 32 does not.
    EXPECT_TRUE(StageConfig::expertGridFits(4, 2, 2, 1, 16));
    EXPECT_TRUE(StageConfig::expertGridFits(4, 2, 2, 2, 8));
    EXPECT_FALSE(StageConfig::expertGridFits(4, 2, 2, 4, 8));
    EXPECT_FALSE(StageConfig::expertGridFits(4, 1, 2, 3, 1));
    StageConfig c;
    c.tp = 4;
    c.cp = 2;
    c.ep = 16;
    c.etp = 1;
    EXPECT_EQ(c.expertDp(2), 1);
    EXPECT_TRUE(c.problems(16, 64, 1024, 2).empty());
    c.etp = 3;
    const auto problems = c.problems(16, 64, 1024, 2);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_TRUE(contains(problems.front(), "etp 3 x ep 16 does not divide")) << problems.front();
    // EP beyond dp (published layouts): ep 8 over tp 4 x dp 2 with etp 1.
    const ModelProfile model = moeModel(8, 2);
    const Topology topo = *makeCluster("fat-tree", {{"devices_per_node", 8}, {"nodes_per_rack", 1}, {"racks", 1}});
    const auto plan = buildUniformPlan(layout(4, 1, 2, 8, 1), topo, model);
    ASSERT_TRUE(plan) << plan.error();
    EXPECT_TRUE(planErrors(*plan, topo, model).empty());
    const auto refused = buildUniformPlan(layout(4, 1, 2, 8, 4), topo, model);
    ASSERT_FALSE(refused);
    EXPECT_TRUE(contains(refused.error(), "does not divide")) << refused.error();
}

TEST(MoeParallel, expertGroupsFollowMegatronCoresRankGenerator)
{
    // 4 nodes of 8: tp 4, cp 1, dp 8 on 32 devices. Megatron-Core's expert groups with
    // etp 1, ep 8: ep groups = 8 consecutive ranks (one node each); etp = tp = 4, ep 8
    // (ep over 8 replicas): ranks {i, i+4, ..., i+28}, across all 4 nodes.
    const Topology topo = *makeCluster("fat-tree", {{"devices_per_node", 8}, {"nodes_per_rack", 4}, {"racks", 1}});
    std::vector<std::vector<int>> devices(8, std::vector<int>(4));
    for (int r = 0; r < 8; ++r)
        for (int t = 0; t < 4; ++t)
            devices[r][t] = r * 4 + t;
    StageConfig folded;
    folded.tp = 4;
    folded.ep = 8;
    folded.etp = 1;
    StageConfig wide = folded;
    wide.etp = 0;
    const StageCollectives f = stageCollectives(topo, devices, folded, 8);
    const StageCollectives w = stageCollectives(topo, devices, wide, 8);
    // By hand: the folded group is one node; its all-to-all crosses level 0 only.
    std::vector<int> node0 = {0, 1, 2, 3, 4, 5, 6, 7};
    const LinearCost inNode = allToAllCost(groupShape(topo, node0.data(), 8, Contention::Concurrent));
    EXPECT_NEAR(f.ep.perByte, inNode.perByte, 1e-9 * inNode.perByte);
    EXPECT_EQ(f.epShape.topLevel, 0);
    EXPECT_EQ(w.epShape.topLevel, 1);
    EXPECT_GT(w.ep.perByte, 2 * f.ep.perByte);
    // Expert data parallelism: etp 1 x ep 8 over 32 ranks leaves 4 replicas of each shard,
    // ranks {q, q+8, q+16, q+24}: one per node, so their gradients cross the rack.
    EXPECT_EQ(folded.expertDp(8), 4);
    std::vector<int> edp = {0, 8, 16, 24};
    const LinearCost edpCost =
        bucketed(chooseAllReduce(groupShape(topo, edp.data(), 4, Contention::FullLoad), kGradientBucketBytes).cost);
    EXPECT_NEAR(f.expertAllReduce.perByte, edpCost.perByte, 1e-9 * edpCost.perByte);
    // The folded experts have their own tensor group of 1: no etp collective.
    EXPECT_EQ(f.etp.perByte, 0.0);
    // The even-rows fast path gives the same numbers bit for bit.
    EvenRows rows;
    rows.first = 0;
    rows.stride = 4;
    rows.width = 4;
    rows.rows = 8;
    const std::vector<int> blocks = regularBlockSizes(topo);
    ASSERT_FALSE(blocks.empty());
    for (const StageConfig &c : {folded, wide}) {
        const StageCollectives e = evenStageCollectives(topo, blocks, rows, c);
        const StageCollectives g = stageCollectives(topo, devices, c, 8);
        EXPECT_EQ(e.ep.perByte, g.ep.perByte);
        EXPECT_EQ(e.ep.fixed, g.ep.fixed);
        EXPECT_EQ(e.expertAllReduce.perByte, g.expertAllReduce.perByte);
        EXPECT_EQ(e.expertReduceScatter.perByte, g.expertReduceScatter.perByte);
        EXPECT_EQ(e.etp.perByte, g.etp.perByte);
    }
}

TEST(MoeParallel, expertWorkPerRankIsTheSameUnderEveryFoldingAndScalesWithTheLoad)
{
    // The routed work of a rank: b s k / (cp tp) token copies through its E / ep experts,
    // each an (m x h) (h x f / etp) GEMM: the same FLOPs per rank for every (etp, ep).
    const ModelProfile model = moeModel(16, 4, 1);
    const LayerProfile *moe = nullptr;
    for (const LayerProfile &l : model.layers)
        if (l.kind == LayerKind::Moe)
            moe = &l;
    ASSERT_NE(moe, nullptr);
    DeviceSpec d = devicePreset("h100-sxm-80gb").value();
    ComputeRates r = computeRates(d, 0.5, true, 1.0, {});
    r.hbm = 1e30;  // compute-bound: the time is the FLOPs at the shape's rate
    auto expertSeconds = [&](int tp, int ep, int etp, double load) {
        LayerProfile only = *moe;
        std::vector<GemmShape> experts;
        for (const GemmShape &g : only.gemms)
            if (g.expert)
                experts.push_back(g);
        only.gemms = experts;
        only.attentionFlops = 0;
        StageConfig c;
        c.tp = tp;
        c.ep = ep;
        c.etp = StageConfig::etpField(etp, tp);
        return layerTimes(only, 1024, 1, c, r, false, load).forward;
    };
    // With m, n, k large next to the tile, the per-rank seconds differ only through the
    // tile factor; with identical GEMM shapes they agree exactly. tp 4 etp 4 ep 2 and
    // tp 4 etp 2 ep 4: m doubles (tokens of 2x the ranks), n halves, experts per rank halve.
    const double a = expertSeconds(4, 2, 4, 1.0);
    const double b = expertSeconds(4, 4, 2, 1.0);
    ASSERT_GT(a, 0);
    EXPECT_NEAR(b / a, 1.0, 0.1);  // shape factors only
    // By hand at tp 1, ep 1: 16 experts, each on m = 1024 x 4 / 16 = 256 routed rows, an up
    // GEMM (n 2048: the GPT family's GeLU MLP, not gated; k 1024) and a down GEMM (n 1024,
    // k 2048), each at the large-GEMM rate times the tile factor f(x) = x / (x + 128) of its
    // three dimensions (§1).
    const auto f = [](double x) { return x / (x + 128); };
    const double R = r.peak * r.gemmEfficiency;
    const double m = 256;
    const double hand = 16 * (2 * m * 2048 * 1024 / (R * f(m) * f(2048) * f(1024)) +
                              2 * m * 1024 * 2048 / (R * f(m) * f(1024) * f(2048)));
    const double t1 = expertSeconds(1, 1, 1, 1.0);
    EXPECT_NEAR(t1, hand, 1e-9 * hand);
    // The most loaded rank: 1.5 x the rows, at the tile factor of its larger m.
    const double loaded = expertSeconds(1, 1, 1, 1.5);
    EXPECT_NEAR(loaded / t1, 1.5 * f(m) / f(1.5 * m), 1e-9);
}

TEST(MoeParallel, smallExpertsRunTheirGroupedGemmsLessEfficiently)
{
    // The same routed FLOPs in 8 experts of f = 4096 and in 256 experts of f = 128
    // (fine-grained): each expert's GEMM gets the tile factor of its own m and n.
    DeviceSpec d = devicePreset("h100-sxm-80gb").value();
    ComputeRates r = computeRates(d, 0.5, true, 1.0, {});
    auto seconds = [&](double experts, double f, double k) {
        LayerProfile l;
        l.kind = LayerKind::Moe;
        l.gemms.push_back({k, f, 4096, experts, GemmShape::Split::Column, true, false});
        StageConfig c;
        return layerTimes(l, 4096, 1, c, r, false).forward;
    };
    const double coarse = seconds(8, 4096, 1);   // 4096 x 1 / 8 = 512 tokens per expert
    const double fine = seconds(256, 128, 32);   // 4096 x 32 / 256 = 512 tokens, 32x narrower
    EXPECT_GT(fine, 1.5 * coarse);
}

TEST(MoeParallel, theDispatchLoadsTheMostLoadedRankAndCapacityCapsIt)
{
    const Topology topo = *makeCluster("fat-tree", {{"devices_per_node", 8}, {"nodes_per_rack", 2}, {"racks", 1}});
    const ModelProfile model = moeModel(16, 2);
    const auto plan = buildUniformPlan(layout(1, 1, 16, 16, 1), topo, model);
    ASSERT_TRUE(plan) << plan.error();
    auto epComm = [&](double imbalance, double capacity) {
        CostOptions o;
        o.framework = Framework::Serial;
        o.moeImbalance = imbalance;
        o.moeCapacityFactor = capacity;
        const Report rep = evaluate(*plan, topo, model, o);
        EXPECT_TRUE(rep.feasible);
        return rep.stages.at(0).cost.epComm;
    };
    const double one = epComm(1.0, 0), two = epComm(2.0, 0), capped = epComm(2.0, 1.25);
    // perByte * bytes + fixed per call: the per-byte part doubles, the fixed part stays.
    EXPECT_GT(two, 1.8 * one);
    EXPECT_LT(two, 2.0 * one);
    // Dropping at capacity 1.25: the rank takes min(2.0, 1.25) of the mean.
    EXPECT_NEAR((capped - one) / (two - one), 0.25, 1e-9);
}

TEST(MoeParallel, hierarchicalDispatchSendsATokenOncePerRemoteDomain)
{
    // Two nodes of 8 (NVLink domain = node, level 0), a group of 16: D = 2 domains.
    const Topology topo = *makeCluster("fat-tree", {{"devices_per_node", 8}, {"nodes_per_rack", 2}, {"racks", 1}});
    std::vector<int> ids(16);
    for (int i = 0; i < 16; ++i)
        ids[i] = i;
    const GroupShape g = groupShape(topo, ids.data(), 16, Contention::Concurrent);
    const LinearCost flat = allToAllCost(g);
    const LinearCost hier = dispatchCost(g, 0, ExpertRouting{16, 8}, true);
    // Flat: 7/16 of the bytes inside the node (1/2 - 1/16) at B0, 1/2 across at B1.
    const double b0 = g.bandwidth[0], b1 = g.bandwidth[1];
    EXPECT_NEAR(flat.perByte, (0.5 - 1.0 / 16) / b0 + 0.5 / b1, 1e-6 * flat.perByte);
    // Hierarchical, k = 8 of 16 experts, one per rank: a token goes once to each rank holding
    // one of its experts, 16 (1 - (15/16)^8) = 6.45 ranks instead of 8 copies (ratio 0.8066 of
    // the traffic inside the node), and reaches (D-1)(1 - (1 - 1/D)^k) = 1 - 2^-8 remote
    // domains instead of sending k (1 - 1/D) = 4 copies across: ratio (1 - 2^-8) / 4 of the
    // remote traffic, which is then forwarded over NVLink to its ranks (1/2 more at B0, at the
    // per-rank ratio).
    const double perRank = 16 * (1 - std::pow(15.0 / 16, 8)) / 8;
    EXPECT_NEAR(perRank, 0.8066, 1e-4);
    const double ratio = (1 - std::pow(0.5, 8)) / 4;
    EXPECT_NEAR(hier.perByte, perRank * (0.5 - 1.0 / 16) / b0 + ratio * 0.5 / b1 + perRank * 0.5 / b0,
                1e-6 * hier.perByte);
    EXPECT_LT(hier.perByte, flat.perByte);
    EXPECT_EQ(hier.fixed, flat.fixed);
    // Inside one domain: the flat all-to-all, one copy per destination rank (8 ranks, 2 experts
    // each: 8 (1 - (7/8)^8) = 5.25 ranks for 8 copies).
    const GroupShape inNode = groupShape(topo, ids.data(), 8, Contention::Concurrent);
    EXPECT_NEAR(dispatchCost(inNode, 0, ExpertRouting{16, 8}, true).perByte,
                allToAllCost(inNode).perByte * (1 - std::pow(7.0 / 8, 8)), 1e-12 * allToAllCost(inNode).perByte);
    // One expert per token: nothing to share, the flat exchange.
    EXPECT_DOUBLE_EQ(dispatchCost(inNode, 0, ExpertRouting{16, 1}, true).perByte, allToAllCost(inNode).perByte);
}

namespace {

// Blocks a token reaches, by brute force over the experts: experts in rank order, B blocks
// of E/B experts (domains or ranks) and G groups of E/G, every g-subset of the groups equally
// likely and each of the k copies uniform (with replacement) over the chosen groups'
// experts; the sum over the blocks (from block `first`: 1 leaves out the token's own domain)
// of P(the block gets a copy).
double blocksByEnumeration(int experts, int topK, int blocks, int groups, int picked, int first)
{
    double sum = 0;
    int subsets = 0;
    std::vector<bool> chosen(static_cast<size_t>(groups), false);
    std::fill(chosen.begin(), chosen.begin() + picked, true);
    do {
        ++subsets;
        std::vector<int> inBlock(static_cast<size_t>(blocks), 0);
        int allowed = 0;
        for (int e = 0; e < experts; ++e) {
            if (!chosen[static_cast<size_t>(e / (experts / groups))])
                continue;
            ++allowed;
            ++inBlock[static_cast<size_t>(e / (experts / blocks))];
        }
        for (int b = first; b < blocks; ++b)
            sum += 1 - std::pow(1 - static_cast<double>(inBlock[static_cast<size_t>(b)]) / allowed, topK);
    } while (std::prev_permutation(chosen.begin(), chosen.end()));
    return sum / subsets;
}

} // namespace

TEST(MoeParallel, groupLimitedRoutingReachesFewerRemoteDomains)
{
    // Unlimited: (D - 1)(1 - (1 - 1/D)^k), by hand for D = 8, k = 8: 7 (1 - (7/8)^8) = 4.5947.
    EXPECT_NEAR(remoteDomainsPerToken(8, ExpertRouting{256, 8}), 7 * (1 - std::pow(7.0 / 8, 8)), 1e-12);
    EXPECT_NEAR(remoteDomainsPerToken(8, ExpertRouting{256, 8}), 4.5947, 1e-4);
    // DeepSeek-V3's node-limited routing (256 experts, top 8 of 4 groups of 8, one group per
    // node of an EP group of 8 nodes), by hand: a remote node holds one of the 4 picked groups
    // with chance 1/2, and then misses all 8 copies with (3/4)^8: 7 (1/2)(1 - (3/4)^8) = 3.1496.
    const ExpertRouting v3{256, 8, 8, 4};
    EXPECT_NEAR(remoteDomainsPerToken(8, v3), 3.5 * (1 - std::pow(0.75, 8)), 1e-12);
    // Against the enumeration, for groups nested in domains, groups spanning domains, and
    // one group per token (the forced-balance gate of NeMo AutoModel's benchmarks: k
    // consecutive experts, one group of E/k).
    struct Case {
        int experts, topK, domains, groups, picked;
    };
    for (const Case c : {Case{256, 8, 8, 8, 4}, Case{64, 8, 4, 16, 4}, Case{64, 6, 8, 16, 3}, Case{64, 8, 8, 2, 1},
                         Case{32, 4, 8, 4, 2}, Case{256, 8, 8, 32, 1}, Case{48, 4, 2, 12, 5}}) {
        const double expected = blocksByEnumeration(c.experts, c.topK, c.domains, c.groups, c.picked, 1);
        EXPECT_NEAR(remoteDomainsPerToken(c.domains, ExpertRouting{c.experts, c.topK, c.groups, c.picked}), expected,
                    1e-9)
            << c.experts << " experts, top " << c.topK << ", " << c.domains << " domains, " << c.picked << " of "
            << c.groups << " groups";
    }
    EXPECT_NEAR(remoteDomainsPerToken(8, ExpertRouting{256, 8, 32, 1}), 7.0 / 8, 1e-12);
    // The ranks a token is sent to (DeepEP sends once per rank), against the same enumeration
    // over the ranks: 8 ranks of 16 experts at top 8, 5.25 by hand (8 (1 - (7/8)^8)); the
    // AutoModel gate's one group of 8 consecutive experts on 64 ranks of 4: 2 ranks, less the
    // 2 (1/2)^8 chance that the 8 picks (with replacement) all fall on one.
    EXPECT_NEAR(destinationRanksPerToken(8, ExpertRouting{128, 8}), 8 * (1 - std::pow(7.0 / 8, 8)), 1e-12);
    EXPECT_NEAR(destinationRanksPerToken(64, ExpertRouting{256, 8, 32, 1}), 2 - 2 * std::pow(0.5, 8), 1e-12);
    for (const Case c : {Case{128, 8, 8, 1, 1}, Case{256, 8, 64, 8, 4}, Case{256, 8, 64, 32, 1}, Case{64, 6, 16, 16, 3},
                         Case{64, 8, 8, 16, 4}}) {
        const double expected = blocksByEnumeration(c.experts, c.topK, c.domains, c.groups, c.picked, 0);
        EXPECT_NEAR(destinationRanksPerToken(c.domains, ExpertRouting{c.experts, c.topK, c.groups, c.picked}), expected,
                    1e-9)
            << c.experts << " experts, top " << c.topK << ", " << c.domains << " ranks, " << c.picked << " of "
            << c.groups << " groups";
    }
    EXPECT_DOUBLE_EQ(destinationRanksPerToken(1, ExpertRouting{8, 2}), 1);
    // Picking every group, or one group of all experts, is unlimited routing; groups that
    // straddle domains (3 groups on 8 domains) are priced as unlimited.
    EXPECT_DOUBLE_EQ(remoteDomainsPerToken(8, ExpertRouting{256, 8, 8, 8}), remoteDomainsPerToken(8, {256, 8}));
    EXPECT_DOUBLE_EQ(remoteDomainsPerToken(8, ExpertRouting{256, 8, 1, 1}), remoteDomainsPerToken(8, {256, 8}));
    EXPECT_DOUBLE_EQ(remoteDomainsPerToken(8, ExpertRouting{48, 8, 3, 1}), remoteDomainsPerToken(8, {48, 8}));
    // One domain: nothing is remote.
    EXPECT_DOUBLE_EQ(remoteDomainsPerToken(1, v3), 0);
}

namespace {

// 16 experts, top 2, on two nodes of 8 GPUs with ep 16 (the dispatch crosses the nodes) and
// dp 16: 4 micro-batches of 1.
struct SixteenExperts {
    ModelProfile model;
    Topology topo;
    Result<Plan> plan;
};
// Two nodes of 8 GPUs under one rack switch.
Topology twoNodesOfEight()
{
    return *makeCluster("fat-tree", {{"devices_per_node", 8}, {"nodes_per_rack", 2}, {"racks", 1}});
}

SixteenExperts sixteenExperts(int sharedExperts)
{
    ModelProfile model = moeModel(16, 2, 2, sharedExperts);
    Topology topo = twoNodesOfEight();
    Result<Plan> plan = buildUniformPlan(layout(1, 1, 16, 16, 1), topo, model);
    return {std::move(model), std::move(topo), std::move(plan)};
}

} // namespace

TEST(MoeParallel, theModelsRouterGroupsReachTheHierarchicalDispatchOnly)
{
    // 16 experts, top 2, ep 16 over two nodes: with 2 router groups of 8 (one per node) and
    // one group picked, a token reaches the other node with chance 1/2 instead of
    // 1 - (1/2)^2 = 3/4, so the dispatch's cross-node term shrinks by 2/3; the flat
    // all-to-all sends every copy as before.
    const SixteenExperts case16 = sixteenExperts(0);
    const ModelProfile &model = case16.model;
    const Topology &topo = case16.topo;
    ASSERT_TRUE(case16.plan) << case16.plan.error();
    ModelProfile grouped = model;
    grouped.routerGroups = 2;
    grouped.routerGroupTopK = 1;
    CostOptions flat;
    CostOptions deepep;
    deepep.moeHierarchicalDispatch = true;
    auto epComm = [&](const ModelProfile &m, const CostOptions &o) {
        const Report r = evaluate(*case16.plan, topo, m, o);
        EXPECT_TRUE(r.feasible);
        return r.stages.at(0).cost.epComm;
    };
    EXPECT_DOUBLE_EQ(epComm(grouped, flat), epComm(model, flat));
    const double unlimited = epComm(model, deepep), limited = epComm(grouped, deepep);
    EXPECT_LT(limited, unlimited);
    // The per-byte parts, from dispatchCost() on the group's shape, by hand. Across the nodes
    // (B1, share 1/2): remote domains over k (1 - 1/D) = 1 copy, 0.75 unlimited, 0.5 grouped.
    // Inside the nodes (B0: 7/16 of the ranks, plus the forward of the remote half): ranks
    // per token over k = 2; unlimited 16 (1 - (15/16)^2) / 2 = 0.96875; grouped, a rank's
    // group picked with chance 1/2 and then one of its 8 ranks missed by both picks with
    // (7/8)^2: 16 (1/2)(1 - (7/8)^2) / 2 = 0.9375.
    std::vector<int> ids(16);
    for (int i = 0; i < 16; ++i)
        ids[static_cast<size_t>(i)] = i;
    const GroupShape g = groupShape(topo, ids.data(), 16, Contention::Concurrent);
    const double a = dispatchCost(g, 0, model.routing(), true).perByte;
    const double b = dispatchCost(g, 0, grouped.routing(), true).perByte;
    const double b0 = g.bandwidth[0], b1 = g.bandwidth[1];
    EXPECT_NEAR(a, 0.96875 * (7.0 / 16 + 0.5) / b0 + 0.75 * 0.5 / b1, 1e-9 * a);
    EXPECT_NEAR(b, 0.9375 * (7.0 / 16 + 0.5) / b0 + 0.5 * 0.5 / b1, 1e-9 * b);
}

TEST(MoeParallel, sharedExpertsHideTheDispatchWhereTheFrameworkOverlapsThem)
{
    const auto [model, topo, plan] = sixteenExperts(1);
    ASSERT_TRUE(plan) << plan.error();
    CostOptions mcore;
    mcore.stack = Stack::Tuned;  // --moe-shared-expert-overlap is a recipe flag, off by default
    CostOptions serial;
    serial.framework = Framework::Serial;
    const Report a = evaluate(*plan, topo, model, mcore), b = evaluate(*plan, topo, model, serial);
    ASSERT_TRUE(a.feasible && b.feasible);
    EXPECT_GT(b.stages.at(0).cost.epComm, 0);
    EXPECT_LT(a.stages.at(0).cost.epComm, b.stages.at(0).cost.epComm);
}

TEST(MoeParallel, theExpertParallelOverlapHidesTheAllToAllBehindTheOtherMicroBatch)
{
    // Megatron-Core's --overlap-moe-expert-parallel-comm pairs micro-batch i + 1's forward with
    // i's backward: the all-to-all of a micro-batch (dispatch and combine, forward and
    // backward) hides behind a forward and a backward of compute, at the framework's contention,
    // and what it hides is exposed once an iteration (the unpaired first forward and last
    // backward). Derived by hand from the run without the overlap.
    const auto [model, topo, plan] = sixteenExperts(0);
    ASSERT_TRUE(plan) << plan.error();
    CostOptions off;
    off.stack = Stack::Tuned;
    CostOptions on = off;
    on.moeA2aOverlap = true;
    const Report a = evaluate(*plan, topo, model, off), b = evaluate(*plan, topo, model, on);
    ASSERT_TRUE(a.feasible && b.feasible);
    const StageCost &ca = a.stages.at(0).cost, &cb = b.stages.at(0).cost;
    ASSERT_GT(ca.epComm, 0);
    const double kappa = off.profile().contention;
    const double hidden = std::min(ca.epComm, ca.forward + ca.backward);
    EXPECT_NEAR(cb.epComm, ca.epComm - hidden + kappa * hidden, 1e-12 * ca.epComm);
    EXPECT_NEAR(cb.epUnpaired, (1 - kappa) * hidden, 1e-12 * ca.epComm);
    EXPECT_DOUBLE_EQ(ca.epUnpaired, 0);
    // One stage, 4 micro-batches: three of them gain what the overlap hides.
    EXPECT_NEAR(a.iterationTime - b.iterationTime, 3 * (1 - kappa) * hidden, 1e-9 * a.iterationTime);
    // Megatron-Core refuses the overlap with full recomputation: such a stage is priced without.
    UniformLayout full = layout(1, 1, 16, 16, 1);
    full.recompute = Recompute::Full;
    const auto fullPlan = buildUniformPlan(full, topo, model);
    ASSERT_TRUE(fullPlan) << fullPlan.error();
    EXPECT_DOUBLE_EQ(evaluate(*fullPlan, topo, model, off).iterationTime,
                     evaluate(*fullPlan, topo, model, on).iterationTime);
    // A framework without that schedule prices the option as it runs: not at all.
    CostOptions serial;
    serial.framework = Framework::Serial;
    CostOptions serialOn = serial;
    serialOn.moeA2aOverlap = true;
    EXPECT_DOUBLE_EQ(evaluate(*plan, topo, model, serial).iterationTime,
                     evaluate(*plan, topo, model, serialOn).iterationTime);
}

TEST(MoeParallel, theExpertParallelOverlapRunsOnOneStageOrOnVirtualStages)
{
    // TransformerConfig asserts a virtual pipeline for the overlap when pp > 1: two plain 1F1B
    // stages are priced as without the option, the same two stages interleaved (2 chunks
    // each) hide every chunk's all-to-all behind its own forward and backward, as one stage
    // does (derived by hand from the run without the option).
    const ModelProfile model = moeModel(16, 2, 4);
    const Topology topo = twoNodesOfEight();
    CostOptions off;
    off.stack = Stack::Tuned;
    CostOptions on = off;
    on.moeA2aOverlap = true;
    UniformLayout plain = layout(1, 1, 8, 8, 1);
    plain.pp = 2;
    const auto plainPlan = buildUniformPlan(plain, topo, model);
    ASSERT_TRUE(plainPlan) << plainPlan.error();
    const Report plainOff = evaluate(*plainPlan, topo, model, off), plainOn = evaluate(*plainPlan, topo, model, on);
    ASSERT_TRUE(plainOff.feasible && plainOn.feasible);
    EXPECT_DOUBLE_EQ(plainOff.iterationTime, plainOn.iterationTime);
    for (const StageReport &st : plainOn.stages)
        EXPECT_DOUBLE_EQ(st.cost.epUnpaired, 0);

    UniformLayout interleaved = plain;
    interleaved.schedule = Schedule::Interleaved;
    interleaved.virtualStages = 2;
    const auto ilPlan = buildUniformPlan(interleaved, topo, model);
    ASSERT_TRUE(ilPlan) << ilPlan.error();
    const Report ilOff = evaluate(*ilPlan, topo, model, off), ilOn = evaluate(*ilPlan, topo, model, on);
    ASSERT_TRUE(ilOff.feasible && ilOn.feasible);
    ASSERT_EQ(ilOn.stages.size(), 4u);
    const double kappa = off.profile().contention;
    int paired = 0;
    for (size_t k = 0; k < ilOn.stages.size(); ++k) {
        const StageCost &a = ilOff.stages[k].cost, &b = ilOn.stages[k].cost;
        const double hidden = std::min(a.epComm, a.forward + a.backward);
        EXPECT_NEAR(b.epComm, a.epComm - hidden + kappa * hidden, 1e-12 * (a.epComm + 1e-30)) << k;
        EXPECT_NEAR(b.epUnpaired, (1 - kappa) * hidden, 1e-12 * (a.epComm + 1e-30)) << k;
        paired += b.epUnpaired > 0;
    }
    EXPECT_GT(paired, 0);  // the chunks with MoE blocks
    EXPECT_LT(ilOn.iterationTime, ilOff.iterationTime);
    // The breakdown (Breakdown tab, compare) still adds up to the iteration, the unpaired
    // all-to-all counted once an iteration with the expert-parallel part.
    const IterationSplit split = iterationSplit(*ilPlan, ilOn);
    EXPECT_NEAR(split.total(), ilOn.iterationTime, 1e-9 * ilOn.iterationTime);
    double ep = 0;
    for (const StageReport &st : ilOn.stages)
        ep += ilPlan->numMicroBatches() * st.cost.epComm + st.cost.epUnpaired;
    EXPECT_NEAR(split.ep, ep / 2, 1e-12 * ilOn.iterationTime);
}

TEST(MoeParallel, megatronCoreWeightsTheTokensInsideTheExpertsAndKeepsNoExpertOutputs)
{
    // Megatron-Core's TEGroupedMLP multiplies each routed copy by its probability inside the
    // fused SwiGLU, so its combine keeps nothing; DeepSpeed's MoE weights the combine and keeps
    // the experts' outputs for its backward: k copies of s x h BF16 values per MoE layer and
    // sequence. Both profiles lose 5 % to fragmentation; nothing else in the stash differs.
    const ModelProfile model = moeModel(16, 2, 2);  // 2 MoE blocks, top-2, s = h = 1024
    const Topology topo = *makeCluster("fat-tree", {{"devices_per_node", 8}, {"nodes_per_rack", 1}, {"racks", 1}});
    const auto plan = buildUniformPlan(layout(1, 1, 8, 8, 1), topo, model);
    ASSERT_TRUE(plan) << plan.error();
    CostOptions mcore;
    CostOptions deepspeed;
    deepspeed.framework = Framework::DeepSpeed;
    const StageCost a = evaluate(*plan, topo, model, mcore).stages.at(0).cost;
    const StageCost b = evaluate(*plan, topo, model, deepspeed).stages.at(0).cost;
    const double expertOutputs = 2.0 /*blocks*/ * 2 /*k*/ * 1024 /*s*/ * 1024 /*h*/ * 2 /*B*/ * 1.05;
    EXPECT_NEAR(b.stashPerMicroBatch - a.stashPerMicroBatch, expertOutputs, 1e-6 * expertOutputs);
}

TEST(MoeParallel, onNvl72TheFoldedExpertGroupOf64StaysInOneRack)
{
    // One GB200 NVL72 rack and a second: tp 8, dp 8 on 64 GPUs of rack 0. Folding ep 64 over
    // etp 1 keeps the all-to-all inside the NVLink domain; with etp = tp the experts need 8 x 64
    // = 512 ranks, more than the stage has (refused), and ep 8 over the replicas is the flat
    // layout's best: the folded one is priced lower.
    const Topology topo = *makeCluster("nvl72", {{"sus", 1}, {"racks_per_su", 2}});
    ModelConfig c = tinyGptConfig(2);
    c.hidden = 2048;
    c.heads = 16;
    c.kvHeads = 16;
    c.ffnHidden = 1024;
    c.experts = 64;
    c.topK = 8;
    c.seqLength = 4096;
    c.globalBatch = 64;
    const ModelProfile model = buildProfile(c);
    UniformLayout folded = layout(8, 1, 8, 64, 1);
    folded.seqLength = 4096;
    const auto f = buildUniformPlan(folded, topo, model);
    ASSERT_TRUE(f) << f.error();
    const Report rf = evaluate(*f, topo, model, {});
    ASSERT_TRUE(rf.feasible) << (rf.reasons.empty() ? "" : rf.reasons.front());
    for (const auto &row : f->stages.at(0).devices)
        for (int d : row)
            EXPECT_LT(d, 72);  // one rack
    UniformLayout tooWide = folded;
    tooWide.etp = 0;
    EXPECT_FALSE(buildUniformPlan(tooWide, topo, model));
    // Across the racks: the same 64 ranks placed 36..99 (half in each rack).
    UniformLayout across = folded;
    for (int r = 0; r < 64; ++r)
        across.rankDevices.push_back(36 + r);
    const auto a = buildUniformPlan(across, topo, model);
    ASSERT_TRUE(a) << a.error();
    const Report ra = evaluate(*a, topo, model, {});
    ASSERT_TRUE(ra.feasible);
    EXPECT_GT(ra.stages.at(0).cost.epComm, 2 * rf.stages.at(0).cost.epComm);
}

namespace {

// NEST against the exhaustive search on `blocks` MoE blocks (32 experts of 2,048, top-4; with
// `routerGroups` > 0, routed inside one of that many groups) on two nodes of 4 GPUs, up to two
// stages, ep 1-8 and etp {tp, 1}; NEST's result.
PlanResult exactOnTwoNodes(int blocks, bool hierarchical, bool overlap, int routerGroups = 0)
{
    ModelConfig c = tinyGptConfig(blocks);
    c.routerGroups = routerGroups;
    c.routerGroupTopK = routerGroups > 0 ? 1 : 0;
    c.hidden = 2048;
    c.heads = 16;
    c.kvHeads = 16;
    c.ffnHidden = 2048;
    c.experts = 32;
    c.topK = 4;
    c.seqLength = 2048;
    c.globalBatch = 32;
    const ModelProfile model = buildProfile(c);
    const Topology topo = Topology::uniform("h100x8", *devicePreset("h100-sxm-80gb"),
                                            {{"node", 4, linkOf(450e9, 1e-6)}, {"rack", 2, linkOf(25e9, 5e-6)}});
    SearchOptions o;
    o.microBatches = {1, 2};
    o.maxStages = 2;
    o.epCandidates = {1, 2, 4, 8};
    o.etpCandidates = {0, 1};
    o.cost.moeHierarchicalDispatch = hierarchical;
    o.cost.moeA2aOverlap = overlap;
    PlanResult nest = makePlanner("nest")->plan(topo, model, o);
    const PlanResult exhaustive = makePlanner("exhaustive")->plan(topo, model, o);
    EXPECT_TRUE(nest.found && exhaustive.found) << nest.message << exhaustive.message;
    EXPECT_TRUE(nest.verified) << nest.message;
    EXPECT_NEAR(nest.objective, exhaustive.objective, 1e-9 * exhaustive.objective);
    return nest;
}

} // namespace

TEST(MoeParallel, theSearchStaysExactWithFoldedExpertsAndTheHierarchicalDispatch)
{
    // Two MoE blocks: an ep group of 4 or 8 crosses the nodes or not, etp 1 folds it over tp.
    // The flat and the hierarchical dispatcher (whose planner floor drops the all-to-all's
    // per-byte part: still a lower bound), and the expert-parallel overlap, which changes the
    // stage's exposed all-to-all that the search's floors must stay below; and the
    // hierarchical dispatcher with group-limited routing (8 groups of 4 experts, one picked).
    for (int variant = 0; variant < 4; ++variant) {
        SCOPED_TRACE(variant);
        const PlanResult nest = exactOnTwoNodes(2, variant == 1 || variant == 3, variant == 2, variant == 3 ? 8 : 0);
        // The case exercises the experts' widths: the best plan splits them.
        bool split = false;
        for (const StagePlan &st : nest.plan.stages)
            split = split || st.ep > 1;
        EXPECT_TRUE(split);
    }
}

TEST(MoeParallel, theSearchStaysExactWhereTheOverlapDependsOnTheSchedule)
{
    // Four MoE blocks, up to two stages: the expert-parallel overlap prices one stage and
    // interleaved stages lower, plain 1F1B stages not (expertOverlapSchedule()).
    exactOnTwoNodes(4, false, true);
}

// The point bound from the ZeRO-3 traffic memory forces (ZeroTrafficBound.h; docs/planner.md,
// "ZeRO-3 that memory forces"), checked against what it stands for:
//  * its per-parameter floors (zeroFloor(), replicaDenseParams()) against the evaluator's
//    own stage costs: a replica's training-state bytes and a ZeRO-3 stage's time, on random
//    stages of several models (dense, GQA, MoE, measured per width) under every framework
//    and several cost options;
//  * the bound of every outer point of small memory-tight instances against that point's
//    optimum found by the exhaustive search restricted to it;
//  * NestPlanner, which skips points by it, against the exhaustive search.
#include "ExhaustivePlanner.h"
#include "FrameworkProfile.h"
#include "ModelBuilder.h"
#include "NestPlanner.h"
#include "NestTuning.h"
#include "StageCostCache.h"
#include "ZeroTrafficBound.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace nest;

namespace {

// Nodes of `perNode` devices on fast links, under a slower, 2:1 oversubscribed rack tier.
Topology twoLevels(int nodes, int perNode, double memoryBytes)
{
    return Topology::uniform("zero-test", coretest::testDevice(memoryBytes),
                             {{"node", perNode, coretest::linkOf(200e9, 1e-6)},
                              {"rack", nodes, coretest::linkOf(12e9, 5e-6, 2)}});
}

ModelProfile tinyModel(const std::string &family, int layers, int hidden, int seqLength = 256)
{
    ModelConfig c = familyDefaults(family);
    c.name = "tiny-" + family;
    c.layers = layers;
    c.hidden = hidden;
    c.heads = 8;
    c.kvHeads = family == "llama" ? 2 : 8;
    c.ffnHidden = family == "llama" ? 3 * hidden : 4 * hidden;
    c.vocab = 4000;
    c.seqLength = seqLength;
    if (c.maxPositions > 0)
        c.maxPositions = c.seqLength;
    if (family == "mixtral") {
        c.experts = 4;
        c.topK = 2;
    }
    c.globalBatch = 16;
    return buildProfile(c);
}

// `p` with its transformer layers measured at tp 1 and 2 (the artifact's nodes[t]): at tp 2
// a device holds 55 % of the layer's parameters (the replicated norms and biases).
ModelProfile measuredPerWidth(ModelProfile p)
{
    for (LayerProfile &l : p.layers) {
        if (l.kind != LayerKind::Transformer)
            continue;
        for (int tp : {1, 2}) {
            WidthMeasurement m;
            m.tp = tp;
            m.fwdTime = 2e-4 / tp;
            m.bwdTime = 4e-4 / tp;
            m.params = tp == 1 ? l.params : 0.55 * l.params;
            m.stashBytes = l.stashTpBytes / tp + l.stashSpBytes;
            m.tpAllReduceBytes = tp > 1 ? l.tpAllReduceBytes : 0.0;
            l.byWidth.push_back(m);
        }
    }
    return p;
}

double paramsOf(const ModelProfile &model, int first, int end)
{
    double p = 0;
    for (int i = first; i < end; ++i)
        p += replicaDenseParams(model.layers[static_cast<size_t>(i)]);
    return p;
}

} // namespace

// Every stage the evaluator costs keeps at least replicaDenseParams() x belowZero3 (ZeRO 0-2)
// or x atZero3 (ZeRO-3) bytes of training state over one replica's devices, and a ZeRO-3
// stage's devices spend at least computeTimeFloor() x the dense group's per-byte cost x
// zero3Traffic x those parameters of per-micro-batch time.
TEST(ZeroTrafficBound, floorsAreBelowEveryStagesStateAndTraffic)
{
    const std::vector<std::pair<std::string, ModelProfile>> models = {
        {"gpt", tinyModel("gpt", 4, 512)},
        {"llama", tinyModel("llama", 3, 768)},
        {"mixtral", tinyModel("mixtral", 2, 512)},
        {"gpt measured", measuredPerWidth(tinyModel("gpt", 3, 512))},
    };
    const Framework frameworks[] = {Framework::MegatronCore, Framework::MegatronLM, Framework::DeepSpeed,
                                    Framework::Fsdp,         Framework::Torchtitan, Framework::Serial};
    const Topology topo = twoLevels(4, 4, 80e9);
    std::mt19937 rng(20261205u);
    double leastBelow = kInf, leastAt = kInf, leastTraffic = kInf;
    int stages = 0, zero3 = 0;
    for (const auto &[name, model] : models) {
        const bool measured = !model.layers[1].byWidth.empty();
        for (const Framework fw : frameworks) {
            for (int trial = 0; trial < 60; ++trial) {
                SCOPED_TRACE(name + " " + frameworkProfile(fw).name + " trial " + std::to_string(trial));
                CostOptions opt;
                opt.framework = fw;
                opt.zeroOverlap = std::uniform_int_distribution<int>(0, 2)(rng) * 0.5;
                opt.stepOverhead = std::vector<double>{0.0, -0.3, 0.25}[trial % 3];
                opt.gradBytesPerParam = std::vector<double>{0.0, 2.0, 4.0}[(trial / 3) % 3];
                opt.optimizerBytesPerParam = trial % 2 ? 12.0 : 6.0;
                StagePlan st;
                const int layers = model.layerCount();
                st.firstLayer = std::uniform_int_distribution<int>(0, layers - 1)(rng);
                st.endLayer = std::uniform_int_distribution<int>(st.firstLayer + 1, layers)(rng);
                st.tp = measured ? 1 << std::uniform_int_distribution<int>(0, 1)(rng)
                                 : 1 << std::uniform_int_distribution<int>(0, 2)(rng);
                st.cp = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? 2 : 1;
                if (st.tp * st.cp > 4)
                    st.cp = 1;
                const int dp = 1 << std::uniform_int_distribution<int>(1, 2)(rng);  // 2 or 4
                st.ep = model.numExperts > 1 ? 1 << std::uniform_int_distribution<int>(0, 1)(rng) : 1;
                st.sp = st.tp > 1 && trial % 2 == 0;
                st.zero = std::uniform_int_distribution<int>(0, 3)(rng);
                st.recompute = static_cast<Recompute>(std::uniform_int_distribution<int>(0, 2)(rng));
                // Replicas side by side (outside) or each in its own block (inside).
                const bool inside = trial % 2 == 1;
                const int width = st.width();
                st.devices.assign(static_cast<size_t>(dp), std::vector<int>(static_cast<size_t>(width)));
                for (int r = 0; r < dp; ++r)
                    for (int j = 0; j < width; ++j)
                        st.devices[r][j] = inside ? r * (topo.deviceCount() / dp) + j : j * dp + r;
                StageContext ctx;
                ctx.topology = &topo;
                ctx.model = &model;
                ctx.options = opt;
                ctx.stage = &st;
                ctx.numStages = 1;
                ctx.microBatch = 1 + trial % 2;
                ctx.numMicroBatches = 4;
                ctx.seqLength = model.seqLength;
                ctx.dp = dp;
                const StageGeometry g = stageGeometry(topo, st, dp, opt);
                const StageCost c = stageCost(ctx, g);
                const ZeroFloor f = zeroFloor(model, opt, dp);
                const double p = paramsOf(model, st.firstLayer, st.endLayer);
                ASSERT_GT(p, 0);
                const double state = width * (c.weights + c.gradients + c.optimizerState);
                const double floor = p * (st.zero >= 3 ? f.atZero3 : f.belowZero3);
                EXPECT_GE(state, floor * (1 - 1e-12)) << "zero " << st.zero << " tp " << st.tp << " cp " << st.cp;
                (st.zero >= 3 ? leastAt : leastBelow) = std::min(st.zero >= 3 ? leastAt : leastBelow, state / floor);
                if (st.zero >= 3) {
                    const double traffic = computeTimeFloor(opt) * g.comm.denseReduceScatter.perByte *
                                           f.zero3Traffic * p;
                    ASSERT_GT(traffic, 0);
                    EXPECT_GE(width * c.perMicroBatch, traffic * (1 - 1e-12))
                        << "tp " << st.tp << " cp " << st.cp << " overlap " << opt.zeroOverlap;
                    leastTraffic = std::min(leastTraffic, width * c.perMicroBatch / traffic);
                    ++zero3;
                }
                ++stages;
            }
        }
    }
    std::cerr << stages << " stages (" << zero3 << " at ZeRO-3); least state / floor: below ZeRO-3 "
              << leastBelow << ", at ZeRO-3 " << leastAt << "; least time / traffic floor " << leastTraffic << "\n";
    EXPECT_GE(zero3, 200);
    // The floors are close to what they stand for somewhere: the state below ZeRO-3 exactly at
    // tp 1 (ZeRO-2, no tied copy), and within 2x at ZeRO-3 (its floor leaves out the gathered
    // layer buffers) and for the time (the compute it overlaps with).
    EXPECT_LT(leastBelow, 1.0 + 1e-9);
    EXPECT_LT(leastAt, 2.0);
    EXPECT_LT(leastTraffic, 2.0);
}

namespace {

struct Instance {
    Topology topo;
    ModelProfile model;
    SearchOptions options;
};

// Devices that hold a fraction of the model's unsharded training state (no runtime
// overhead), so that replicas of few devices must shard the weights (ZeRO-3) and those of
// one device often cannot hold the model at all.
Instance makeInstance(int seed)
{
    std::mt19937 rng(static_cast<unsigned>(seed) * 7907u + 11u);
    const char *families[] = {"gpt", "llama", "mixtral"};
    const std::string family = families[seed % 3];
    // Wide and short (weights well above the activations): hidden 1024-2048, 128 tokens.
    ModelProfile model = tinyModel(family, std::uniform_int_distribution<int>(2, 4)(rng),
                                   512 * std::uniform_int_distribution<int>(2, 4)(rng), 128);
    if (seed % 7 == 4)
        model = measuredPerWidth(model);
    const double state = model.weightBytes() / model.bytesPerParam * 16.0;
    const double fractions[] = {0.1, 0.14, 0.2, 0.28};
    const int perNode = seed % 2 ? 4 : 2;
    const int nodes = seed % 2 ? 4 : std::uniform_int_distribution<int>(4, 8)(rng);
    Instance in{twoLevels(nodes, perNode, state * fractions[seed % 4]), model, {}};
    SearchOptions &o = in.options;
    o.globalBatch = 16;
    o.microBatches = {1, 2};
    o.schedules = {Schedule::OneFOneB, Schedule::GPipe};
    if (seed % 3 == 1)
        o.schedules.push_back(Schedule::Interleaved);
    o.virtualStages = {2};
    o.tpCandidates = {1, 2};  // the widths measuredPerWidth() has
    o.epCandidates = {1, 2};
    o.cpCandidates = {1};
    o.recomputeModes = {Recompute::None, Recompute::Full};
    o.cost.runtimeOverheadBytes = 0;
    o.cost.framework = seed % 2 ? Framework::DeepSpeed : Framework::MegatronCore;
    // Both stacks (docs/cost-model.md, "Stacks"); mostly the recipes', whose overlaps leave the
    // ZeRO traffic as the term that separates points.
    o.cost.stack = seed % 4 == 3 ? Stack::Defaults : Stack::Tuned;
    o.cost.zeroOverlap = seed % 5 == 0 ? 0.0 : 1.0;
    if (seed % 6 == 5)
        o.cost.stepOverhead = -0.2;
    return in;
}

} // namespace

// On every outer point of memory-tight instances the bound is at most the point's optimum
// (the exhaustive search restricted to the point), +infinity only where the point has no
// plan; and it is informative: above the compute bound on many points, and above the
// instance's optimum (so NestPlanner skips the point) on some.
TEST(ZeroTrafficBound, boundIsBelowEveryPointsOptimum)
{
    int points = 0, positive = 0, infinite = 0, aboveOptimum = 0;
    double tightest = 0;
    for (int seed = 1; seed <= 36; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        const Instance in = makeInstance(seed);
        const PlanResult whole = ExhaustivePlanner().plan(in.topo, in.model, in.options);
        const PlanSpace space(in.topo, in.model, in.options);
        const CancelToken cancel;
        SearchStats stats;
        MemoryObstacle obstacle;
        LayerSumsStore sums(space.model(), space.seqLength(), space.costOptions());
        StageCostCache cache(space, cancel, stats, obstacle, sums);
        for (const OuterConfig &cfg : space.configs()) {
            cache.setConfig(cfg);
            const double bound = zeroTrafficBound(space, cache);
            ++points;
            if (bound == 0)
                continue;
            SearchOptions one = in.options;
            one.microBatches = {cfg.microBatch};
            one.schedules = {cfg.schedule};
            one.dpCandidates = {cfg.dp};
            one.layouts = {cfg.layout};
            const PlanResult own = ExhaustivePlanner().plan(in.topo, in.model, one);
            SCOPED_TRACE("mb " + std::to_string(cfg.microBatch) + " dp " + std::to_string(cfg.dp) + " " +
                         toString(cfg.schedule) + " " + toString(cfg.layout));
            if (bound == kInf) {
                EXPECT_FALSE(own.found) << own.objective;
                ++infinite;
                continue;
            }
            ++positive;
            if (!own.found)
                continue;
            EXPECT_LE(bound, own.objective);
            tightest = std::max(tightest, bound / own.objective);
            if (whole.found && bound >= whole.objective)
                ++aboveOptimum;
        }
    }
    std::cerr << points << " points: " << positive << " with a finite positive bound (" << aboveOptimum
              << " above the instance's optimum), " << infinite << " with none fitting; tightest bound / own optimum "
              << tightest << "\n";
    EXPECT_GE(positive, 100);
    EXPECT_GE(infinite, 20);
    EXPECT_GE(aboveOptimum, 10);
    EXPECT_GT(tightest, 0.25);
}

// NestPlanner with the bound finds the exhaustive optimum, and the bound skipped points.
TEST(ZeroTrafficBound, nestEqualsExhaustiveWhereItSkipsPoints)
{
    long long cuts = 0;
    int compared = 0;
    for (int seed = 1; seed <= 36; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        const Instance in = makeInstance(seed);
        NestTuning tuning;
        tuning.zeroBoundCuts = &cuts;
        const PlanResult nest = planNestTuned(in.topo, in.model, in.options, tuning);
        const PlanResult ex = ExhaustivePlanner().plan(in.topo, in.model, in.options);
        ASSERT_EQ(nest.found, ex.found);
        if (!ex.found)
            continue;
        ++compared;
        ASSERT_TRUE(nest.verified);
        EXPECT_NEAR(nest.objective, ex.objective, 1e-9 * ex.objective);
    }
    std::cerr << compared << " instances compared, " << cuts << " points skipped by the bound\n";
    EXPECT_GE(compared, 25);
    EXPECT_GE(cuts, 40);
}

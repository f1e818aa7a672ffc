// Deep models on few devices (issue 24, point 1): the regime where the recurrence's
// narrow-stage bound (docs/planner.md, "Narrow stages") and the interleaved-first order cut
// the most. On seeded instances with 8-11 layers (6-9 blocks, some split into
// attention / MLP halves like an operator-level profile) on 4-8 devices with memory tight
// enough to force deep pipelines, NEST's objective equals the exhaustive optimum (relative
// 1e-9) and both plans are verified against evaluate().
#include "ExhaustivePlanner.h"
#include "ModelBuilder.h"
#include "NestPlanner.h"
#include "NestTuning.h"
#include "PlanIO.h"
#include "Pipeline.h"
#include "PlanSpace.h"
#include "PositionBound.h"
#include "StageCostCache.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>

using namespace nest;

namespace {

Topology smallTree(int nodes, int perNode, double memoryBytes)
{
    const DeviceSpec d = coretest::testDevice(memoryBytes);
    LinkParams fast, slow;
    fast.bandwidth = 200e9;
    fast.latency = 1e-6;
    slow.bandwidth = 20e9;
    slow.latency = 5e-6;
    slow.oversubscription = 2;
    return Topology::uniform("deep-test", d, {{"node", perNode, fast}, {"rack", nodes, slow}});
}

// Every block of `p` split into two halves (each half the block's compute, parameters,
// activations and communication), as an operator-level profile splits attention and MLP.
ModelProfile splitBlocks(const ModelProfile &p)
{
    ModelProfile out = p;
    out.layers.clear();
    for (const LayerProfile &l : p.layers) {
        if (l.kind != LayerKind::Transformer) {
            out.layers.push_back(l);
            continue;
        }
        for (int k = 0; k < 2; ++k) {
            LayerProfile h = l;
            h.name = l.name + (k ? ".mlp" : ".attn");
            h.fwdFlops *= 0.5;
            h.bwdFlops *= 0.5;
            for (GemmShape &g : h.gemms)
                g.count *= 0.5;
            h.attentionFlops *= 0.5;
            h.elementwiseSpBytes *= 0.5;
            h.elementwiseTpBytes *= 0.5;
            h.rmsNormSpBytes *= 0.5;
            h.rotaryTpBytes *= 0.5;
            h.attentionStashBytes *= 0.5;
            h.params *= 0.5;
            h.tpParams *= 0.5;
            h.activeParams *= 0.5;
            h.stashTpBytes *= 0.5;
            h.stashSpBytes *= 0.5;
            h.recomputeStashBytes *= 0.5;
            h.workingBytes *= 0.5;
            h.tpAllReduceBytes *= 0.5;
            out.layers.push_back(h);
        }
    }
    return out;
}

struct Counts {
    int found = 0, deep = 0, narrow = 0;
};

struct Instance {
    Topology topo;
    ModelProfile model;
    SearchOptions options;
};

// blocks > 0: that many blocks instead of the drawn 3-9.
Instance makeInstance(int seed, int blocks = 0)
{
    std::mt19937 rng(static_cast<unsigned>(seed) * 104729u + 3u);
    ModelConfig c = familyDefaults("gpt");
    c.name = "deep-tiny";
    const bool split = seed % 3 == 0;
    c.layers = split ? std::uniform_int_distribution<int>(3, 4)(rng) : std::uniform_int_distribution<int>(6, 9)(rng);
    if (blocks > 0)
        c.layers = blocks;
    c.hidden = 256 * std::uniform_int_distribution<int>(1, 3)(rng);
    c.heads = 8;
    c.kvHeads = 8;
    c.ffnHidden = 4 * c.hidden;
    c.vocab = 1000 * std::uniform_int_distribution<int>(1, 4)(rng);
    c.seqLength = 256;
    if (c.maxPositions > 0)
        c.maxPositions = c.seqLength;
    c.globalBatch = 16;
    const ModelProfile base = buildProfile(c);
    const ModelProfile model = split ? splitBlocks(base) : base;

    // Memory: a fraction of the whole model's unsharded training state, so that pipelines
    // of several stages are needed on most seeds.
    const double state = model.weightBytes() / model.bytesPerParam * 16.0;
    const double fractions[] = {0.6, 0.35, 0.2, 1.5};
    const double memory = 1e9 + state * fractions[seed % 4];
    const int nodes = std::uniform_int_distribution<int>(2, 4)(rng);
    const int perNode = std::uniform_int_distribution<int>(1, 2)(rng);
    const Topology topo = smallTree(nodes, perNode, memory);

    SearchOptions o;
    o.globalBatch = seed % 2 ? 16 : 8;
    o.microBatches = {1, 2};
    o.schedules = {Schedule::OneFOneB};
    if (seed % 4 == 1)
        o.schedules.push_back(Schedule::Interleaved);
    o.virtualStages = {2};
    o.tpCandidates = {1, 2};
    o.epCandidates = {1};
    o.cpCandidates = {1};
    o.allowZero = seed % 2 == 0;
    o.recomputeModes = {Recompute::None, Recompute::Full};
    return {topo, model, o};
}

// A StageCostCache for `space` with what it needs beside it, as the planner holds one.
struct CacheForSpace {
    explicit CacheForSpace(const PlanSpace &space)
        : sums(space.model(), space.seqLength(), space.costOptions()), cache(space, cancel, stats, obstacle, sums)
    {
    }
    const CancelToken cancel;
    SearchStats stats;
    MemoryObstacle obstacle;
    LayerSumsStore sums;
    StageCostCache cache;
};

void checkSeed(int seed, Counts &counts)
{
    const Instance in = makeInstance(seed);
    const Topology &topo = in.topo;
    const ModelProfile &model = in.model;
    const SearchOptions &o = in.options;
    const PlanResult nest = NestPlanner().plan(topo, model, o);
    const PlanResult ex = ExhaustivePlanner().plan(topo, model, o);
    const std::string info = "layers " + std::to_string(model.layerCount()) + " devices " +
                             std::to_string(topo.deviceCount()) + " nest " + std::to_string(nest.objective) +
                             " (" + nest.message + ") ex " + std::to_string(ex.objective) + " (" + ex.message + ")";
    ASSERT_EQ(nest.found, ex.found) << info;
    if (!ex.found)
        return;
    ++counts.found;
    counts.deep += ex.plan.pipelineDepth() >= 3 ? 1 : 0;
    for (const StagePlan &s : ex.plan.stages)
        if (s.width() == 1 && ex.plan.pipelineDepth() >= 3) {
            ++counts.narrow;
            break;
        }
    ASSERT_TRUE(nest.verified) << info;
    ASSERT_TRUE(ex.verified) << info;
    ASSERT_LE(std::abs(nest.objective - ex.objective), 1e-9 * ex.objective) << info;
}

// The models of the range-class tests: variant 0 is `in`'s (whole blocks, period 1); 1 and 2
// split tinyGpt(7)'s blocks into unequal halves (the first of each pair keeps 40 % of the
// compute: two layer types alternating, period 2), variant 2 with the last layers all
// weighted alike (the period broken there).
ModelProfile rangeTestModel(const Instance &in, int variant)
{
    if (variant == 0)
        return in.model;
    ModelProfile model = splitBlocks(buildProfile(coretest::tinyGptConfig(7)));
    for (size_t i = 1; i + 1 < model.layers.size(); ++i) {
        const bool first = i % 2 == 1 && (variant == 1 || i < model.layers.size() - 4);
        model.layers[i].fwdFlops *= first ? 0.8 : 1.2;
    }
    return model;
}

} // namespace

TEST(PlannerDeep, nestEqualsExhaustiveOnDeepInstances)
{
    Counts counts;
    for (int seed = 1; seed <= 40; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        checkSeed(seed, counts);
    }
    std::cerr << "found " << counts.found << " optima with >= 3 stages " << counts.deep
              << " of which with a width-1 stage " << counts.narrow << "\n";
    // The instances must be deep ones: most optima are pipelines of several stages.
    EXPECT_GE(counts.found, 20);
    EXPECT_GE(counts.deep, 10);
}

// A calibrated step overhead scales every stage's time by (1 + overhead), and a negative one
// (a calibration that found the model pessimistic; calibration files allow down to -0.5)
// makes a stage faster than its compute: the search's compute bounds scale by
// computeTimeFloor(). On the deep instances with an overhead of -0.45, -0.2 and +0.3, NEST's
// objective equals the exhaustive optimum and is verified. With the bounds left at the
// compute (computeTimeFloor() returning 1), 92 of the 174 instances with an optimum at -0.45
// got a worse plan (up to 25 %; found this way, session of 2026-12-04).
TEST(PlannerDeep, calibratedStepOverheadKeepsTheOptimum)
{
    for (const double overhead : {-0.45, -0.2, 0.3}) {
        int found = 0;
        for (int seed = 1; seed <= 240; seed += overhead < -0.4 ? 1 : 3) {
            SCOPED_TRACE("overhead " + std::to_string(overhead) + " seed " + std::to_string(seed));
            Instance in = makeInstance(seed);
            in.options.cost.stepOverhead = overhead;
            const PlanResult nest = NestPlanner().plan(in.topo, in.model, in.options);
            const PlanResult ex = ExhaustivePlanner().plan(in.topo, in.model, in.options);
            ASSERT_EQ(nest.found, ex.found) << nest.message << " / " << ex.message;
            if (!ex.found)
                continue;
            ++found;
            ASSERT_TRUE(nest.verified);
            ASSERT_LE(std::abs(nest.objective - ex.objective), 1e-9 * ex.objective)
                << "nest " << nest.objective << " exhaustive " << ex.objective;
        }
        EXPECT_GE(found, overhead < -0.4 ? 150 : 50);
    }
}

namespace {

// The instances of the relaxation's tests: the deep ones above, then (seed > 40) tighter
// ones (less memory, one micro-batch size, small batches) where the stash of deep pipelines
// decides. Runs NEST with `tuning` on each, asserts its objective equals the exhaustive
// optimum and is verified, and counts how many instances the relaxation cut on.
struct RelaxationCounts {
    int found = 0, cutInstances = 0, fullInstances = 0;
    long long cuts = 0;
};

RelaxationCounts relaxationAgainstExhaustive(const NestTuning &tuning, bool unequalHalves = false)
{
    RelaxationCounts n;
    for (int seed = 1; seed <= 120; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        Instance in = makeInstance(seed);
        if (unequalHalves && seed % 3 == 0) {
            // The split blocks' halves made unequal (two layer types alternating, period 2):
            // stages that start at a second half start only inside the periodic stretch.
            for (size_t i = 1; i + 1 < in.model.layers.size(); ++i)
                in.model.layers[i].fwdFlops *= i % 2 == 1 ? 0.8 : 1.2;
        }
        if (seed > 40) {
            // Tighter: less memory, so that deep pipelines with their larger stash decide.
            const double scale = 0.7 + 0.05 * (seed % 7);
            for (DeviceSpec &d : in.topo.deviceTypes)
                d.memoryBytes *= scale;
            in.options.microBatches = {1};
            in.options.globalBatch = seed % 3 == 0 ? 4 : 8;
        }
        long long relaxed = 0;
        const PlanResult nest = planNestTuned(in.topo, in.model, in.options, tuning, &relaxed);
        const PlanResult ex = ExhaustivePlanner().plan(in.topo, in.model, in.options);
        const std::string info = "layers " + std::to_string(in.model.layerCount()) + " devices " +
                                 std::to_string(in.topo.deviceCount()) + " nest " + std::to_string(nest.objective) +
                                 " (" + nest.message + ") ex " + std::to_string(ex.objective) + " (" + ex.message +
                                 ") relaxation cuts " + std::to_string(relaxed);
        EXPECT_EQ(nest.found, ex.found) << info;
        n.cuts += relaxed;
        n.cutInstances += relaxed > 0 ? 1 : 0;
        if (!ex.found || !nest.found)
            continue;
        ++n.found;
        int used = 0;
        for (const StagePlan &st : ex.plan.stages)
            used += st.width();
        if (relaxed > 0 && used * ex.plan.dp == in.topo.deviceCount() && ex.plan.pipelineDepth() >= 3)
            ++n.fullInstances;
        EXPECT_TRUE(nest.verified) << info;
        EXPECT_LE(std::abs(nest.objective - ex.objective), 1e-9 * ex.objective) << info;
        // The same search with the planner's own thresholds finds the same value.
        const PlanResult plain = NestPlanner().plan(in.topo, in.model, in.options);
        EXPECT_EQ(plain.objective, nest.objective) << info;
    }
    return n;
}

} // namespace

// The positions relaxation and the root weight (docs/planner.md, "Positions needed", "Root
// weight") on every cell: the planner consults the relaxation only past relaxAfterCells cells of an
// outer point, which these small instances seldom reach, so here it runs from the first cell. The
// instances are the ones above plus tighter ones (fewer devices per node, memory cut so
// that the stash of deep pipelines decides), and the test asserts that the relaxation did
// cut on many of them, including ones whose optimum uses every position or whose
// value it cut cells of by less than 1 %. Making the relaxation ask one position too many, or
// its weight or the root weight one stage too large, fails it (tried by hand, see
// docs/planner.md).
TEST(PlannerDeep, positionsRelaxationOnEveryCellEqualsExhaustive)
{
    NestTuning eager;
    eager.relaxAfterCells = 0;
    const RelaxationCounts n = relaxationAgainstExhaustive(eager);
    std::cerr << "found " << n.found << ", relaxation cut on " << n.cutInstances << " instances (" << n.cuts
              << " cuts), " << n.fullInstances << " deep optima on every device among them\n";
    EXPECT_GE(n.found, 45);
    EXPECT_GE(n.cutInstances, 40);
    EXPECT_GE(n.fullInstances, 12);
}

// The roots' bound of the relaxation (docs/planner.md, "The roots' Lagrangian bound"), a
// Lagrangian relaxation of the layers' compute over per-stage menus, tried at every root of
// every outer point from the first cell on, on the same instances and on the same with the
// split blocks' halves unequal (a period of two layer types): NEST's objective still equals the
// exhaustive optimum, and the bound ruled out roots on many of them. Making it one position
// larger fails it (tried by hand); making the periodic stretch's stages enter the menus with
// half their compute does not (on these small models the stages from layer 1, tested one by
// one, hold the same blocks and dominate the menus; docs/planner.md, "The roots' Lagrangian
// bound").
TEST(PlannerDeep, rootBoundOnEveryRootEqualsExhaustive)
{
    for (const bool unequal : {false, true}) {
        SCOPED_TRACE(unequal ? "unequal halves" : "equal halves");
        long long rootCuts = 0;
        NestTuning eager;
        eager.relaxAfterCells = 0;
        eager.rootBoundAfterRows = 0;
        eager.rootBoundCuts = &rootCuts;
        const RelaxationCounts n = relaxationAgainstExhaustive(eager, unequal);
        std::cerr << "found " << n.found << ", the roots' bound ruled out " << rootCuts << " roots\n";
        EXPECT_GE(n.found, 45);
        EXPECT_GE(rootCuts, 100);
    }
}

// Interleaved candidates whose first or last pipeline position is over every device's
// memory are dropped before evaluate() (docs/planner.md, "Interleaved candidates"). Interleaved
// points only, memory cut so that most candidates that beat the closed form do not fit:
// NEST's objective equals the exhaustive optimum (which runs evaluate() on every
// candidate) on every instance, and many instances have an interleaved optimum. Dropping
// candidates at 90 % of the capacity instead fails it (tried by hand, see docs/planner.md).
TEST(PlannerDeep, interleavedMemoryPrecheckEqualsExhaustive)
{
    int found = 0;
    for (int seed = 1; seed <= 240; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        Instance in = makeInstance(seed);
        in.options.schedules = {Schedule::Interleaved};
        in.options.virtualStages = {2, 3};
        in.options.microBatches = {1};
        const double scale = 0.6 + 0.1 * (seed % 5);
        for (DeviceSpec &d : in.topo.deviceTypes)
            d.memoryBytes *= scale;
        const PlanResult nest = NestPlanner().plan(in.topo, in.model, in.options);
        const PlanResult ex = ExhaustivePlanner().plan(in.topo, in.model, in.options);
        const std::string info = "layers " + std::to_string(in.model.layerCount()) + " devices " +
                                 std::to_string(in.topo.deviceCount()) + " nest " + std::to_string(nest.objective) +
                                 " (" + nest.message + ") ex " + std::to_string(ex.objective) + " (" + ex.message + ")";
        ASSERT_EQ(nest.found, ex.found) << info;
        if (!ex.found)
            continue;
        ++found;
        ASSERT_TRUE(nest.verified) << info;
        ASSERT_LE(std::abs(nest.objective - ex.objective), 1e-9 * ex.objective) << info;
    }
    std::cerr << "found " << found << " interleaved optima\n";
    EXPECT_GE(found, 50);
}

// PeriodicRanges (docs/planner.md, "Range classes of the periodic stretch") gives every layer
// range the class StageCostCache::rangeClass() gives it, on models whose blocks are split into
// unequal halves (two layer types alternating: period 2), whole blocks (period 1) and a mix. A
// variant that ignores the phase in the period gives the halves' ranges the wrong classes and
// fails it (tried by hand).
TEST(PlannerDeep, periodicRangeClassesEqualTheCache)
{
    for (int variant = 0; variant < 3; ++variant) {
        SCOPED_TRACE("variant " + std::to_string(variant));
        const Instance in = makeInstance(3);
        const ModelProfile model = rangeTestModel(in, variant);
        const PlanSpace space(in.topo, model, in.options);
        CacheForSpace held(space);
        StageCostCache &cache = held.cache;
        PeriodicRanges ranges(cache, model);
        const int layers = model.layerCount();
        for (int j = 0; j < layers; ++j)
            for (int e = j + 1; e <= layers; ++e)
                ASSERT_EQ(ranges.rangeClass(j, e), cache.rangeClass(j, e)) << "range " << j << ".." << e;
    }
}

// RangeClasses::rangeClass() (a trie of type sequences, docs/planner.md, "Range
// classes"): two ranges share a class exactly when their sequences (the type of the layer
// before, -1 before the first, then their layers' types) are equal, and classes are numbered
// in the order first asked, whatever that order. The oracle builds each sequence from
// layerTypes() and numbers it in a map. Asked in a shuffled order, so that ranges are met
// before their shorter prefixes and after longer ones; on whole blocks, on blocks split into
// unequal halves (period 2) and with the halves' weights broken near the end (no period).
// Dropping the type before the range fails it (tried by hand).
TEST(PlannerDeep, rangeClassesAreTheTypeSequences)
{
    for (int variant = 0; variant < 3; ++variant) {
        SCOPED_TRACE("variant " + std::to_string(variant));
        const Instance in = makeInstance(3);
        const ModelProfile model = rangeTestModel(in, variant);
        RangeClasses classes(model);
        const std::vector<int> type = layerTypes(model);
        const int layers = model.layerCount();
        std::vector<std::pair<int, int>> ranges;
        for (int j = 0; j <= layers; ++j)
            for (int e = j; e <= layers; ++e)
                ranges.push_back({j, e});
        std::mt19937 rng(static_cast<unsigned>(variant) + 11);
        std::shuffle(ranges.begin(), ranges.end(), rng);
        auto sequence = [&](int j, int e) {
            std::vector<int> seq{j > 0 ? type[static_cast<size_t>(j) - 1] : -1};
            seq.insert(seq.end(), type.begin() + j, type.begin() + e);
            return seq;
        };
        std::map<std::vector<int>, int> oracle;
        int distinct = 0;
        for (const auto &[j, e] : ranges) {
            const int expected = oracle.emplace(sequence(j, e), static_cast<int>(oracle.size())).first->second;
            ASSERT_EQ(classes.rangeClass(j, e), expected) << "range " << j << ".." << e;
            distinct = static_cast<int>(oracle.size());
        }
        // Asked again, in order: the same classes.
        for (int j = 0; j <= layers; ++j)
            for (int e = j; e <= layers; ++e)
                ASSERT_EQ(classes.rangeClass(j, e), oracle.at(sequence(j, e))) << "range " << j << ".." << e;
        // Fewer classes than ranges: some are shared, as the caches rely on.
        EXPECT_LT(distinct, static_cast<int>(ranges.size()));
    }
}

// The layer sums by extension (LayerSumsStore; docs/planner.md, "Layer sums by extension"): a
// range's sums come from the longest prefix already cached plus one layer at a time. Every base
// cost must be the one evaluate()'s path computes for that range directly (stageLayerSums over
// the whole range), whatever order the ranges are asked in: ends ascending (each extends the
// last), descending (each walks back to nothing and caches its prefixes on the way) and
// shuffled; and in a later search on an edited cluster that starts with the last store ("Layer
// sums kept across re-plans"). The model has an embedding (whose ranges count tied parameters
// differently) and unequal halves (two layer types), so a prefix of the wrong class or an
// extension across the embedding would give other numbers. Every option of a block is compared,
// so an option given the sums of the wrong twin would too.
TEST(PlannerDeep, layerSumsByExtensionEqualTheEvaluators)
{
    ModelProfile model = splitBlocks(buildProfile(coretest::tinyGptConfig(5)));
    for (size_t i = 1; i + 1 < model.layers.size(); ++i)
        model.layers[i].fwdFlops *= i % 2 == 1 ? 0.8 : 1.2;
    const Instance in = makeInstance(2);
    // Pass 3: another search, on the cluster with slower links and more memory (neither is
    // read by the layer sums), starts with pass 2's store (LayerSumsStore, as a
    // PlanningSession keeps it across re-plans).
    Topology edited = in.topo;
    edited.levels[1].link.bandwidth *= 0.5;
    for (DeviceSpec &d : edited.deviceTypes)
        d.memoryBytes *= 1.5;
    const PlanSpace first(in.topo, model, in.options), second(edited, model, in.options);
    ASSERT_TRUE(first.problem().empty()) << first.problem();
    ASSERT_TRUE(second.problem().empty()) << second.problem();
    const int layers = model.layerCount();
    std::vector<std::pair<int, int>> ranges;
    for (int j = 0; j < layers; ++j)
        for (int e = j + 1; e <= layers; ++e)
            ranges.push_back({j, e});
    std::unique_ptr<LayerSumsStore> sums;
    for (int order = 0; order < 4; ++order) {
        SCOPED_TRACE("order " + std::to_string(order));
        if (order == 1)
            std::reverse(ranges.begin(), ranges.end());
        if (order == 2)
            std::shuffle(ranges.begin(), ranges.end(), std::mt19937(17));
        const PlanSpace &space = order < 3 ? first : second;
        const Topology &topo = order < 3 ? in.topo : edited;
        const CancelToken cancel;
        SearchStats stats;
        MemoryObstacle obstacle;
        if (order < 3)
            sums = std::make_unique<LayerSumsStore>(space.model(), space.seqLength(), space.costOptions());
        else
            ASSERT_TRUE(sums->serves(space.model(), space.seqLength(), space.costOptions()));
        StageCostCache cache(space, cancel, stats, obstacle, *sums);
        int compared = 0;
        for (const OuterConfig &cfg : space.configs()) {
            if (cfg.positions < 2)
                continue;
            cache.setConfig(cfg);
            const int wIdx = 0;
            for (const auto &[j, e] : ranges) {
                const int blk = cache.block(cache.rangeClass(j, e), cache.placementClass(0, wIdx), j, e, 0, wIdx);
                StagePlan stage = cache.stageAt(0, wIdx);
                stage.firstLayer = j;
                stage.endLayer = e;
                StageContext ctx = cache.context();
                ctx.stage = &stage;
                const std::vector<StageConfig> &opts = cache.options(wIdx, j, e);
                for (size_t i = 0; i < opts.size(); ++i) {
                    stage.config() = opts[i];
                    const StageGeometry g = stageGeometry(topo, stage, cfg.dp, space.costOptions());
                    const StageCost direct = stageCostBase(ctx, g, stageLayerSums(ctx, g.rates));
                    const StageCost &cached = cache.base(blk, static_cast<int>(i));
                    ASSERT_EQ(cached.forward, direct.forward) << j << ".." << e;
                    ASSERT_EQ(cached.backward, direct.backward) << j << ".." << e;
                    ASSERT_EQ(cached.recompute, direct.recompute) << j << ".." << e;
                    ASSERT_EQ(cached.tpComm, direct.tpComm) << j << ".." << e;
                    ASSERT_EQ(cached.paramsPerDevice, direct.paramsPerDevice) << j << ".." << e;
                    ASSERT_EQ(cached.weights, direct.weights) << j << ".." << e;
                    ASSERT_EQ(cached.stashPerMicroBatch, direct.stashPerMicroBatch) << j << ".." << e;
                    ASSERT_EQ(cached.activations, direct.activations) << j << ".." << e;
                    ++compared;
                }
            }
        }
        EXPECT_GT(compared, 1000);
        std::cerr << "order " << order << ": " << compared << " base costs compared\n";
    }
}

// The end scan of a DP cell stops where the compute of its first stage alone reaches the
// incumbent (NestPlanner's collectCandidates(), docs/planner.md, "Monotonicity in j'"): it
// reads OptEntry::minCompute, the least forward + backward + recompute pass compute of the
// options that fit in memory, times computeTimeFloor() (models without MoE layers, as these).
// That is valid when (a) it is at most the time t of every option that fits (so weight x
// minCompute >= best rules out every option of the stage) and (b) it never falls as the stage
// takes more layers at the same position, stages after it and links (so it rules out every
// longer stage too); and whether some option fits never comes back once lost. Checked on every
// end of every first layer, at several positions, depths and links, with no step overhead, a
// negative and a positive one. Scaling minCompute by 1.05 fails (a); taking the least over
// every option instead of those that fit passes (it is smaller), and the end-to-end tests
// against the exhaustive search do not see a 50 % overestimate (tried by hand): this is the
// test of that cut.
TEST(PlannerDeep, entryComputeFloorIsBelowEveryFittingTimeAndMonotone)
{
    int checked = 0, tight = 0, lost = 0;
    for (int seed = 1; seed <= 18; ++seed) {
        for (const double overhead : {0.0, -0.3, 0.5}) {
            SCOPED_TRACE("seed " + std::to_string(seed) + " overhead " + std::to_string(overhead));
            Instance in = makeInstance(seed);
            in.options.allowZero = true;
            in.options.tpCandidates = {1, 2, 4};
            in.options.recomputeModes = {Recompute::None, Recompute::Selective, Recompute::Full};
            in.options.cost.stepOverhead = overhead;
            const PlanSpace space(in.topo, in.model, in.options);
            ASSERT_TRUE(space.problem().empty()) << space.problem();
            CacheForSpace held(space);
            StageCostCache &cache = held.cache;
            const int layers = in.model.layerCount();
            for (const OuterConfig &cfg : space.configs()) {
                if (cfg.schedule == Schedule::Interleaved)
                    continue;
                cache.setConfig(cfg);
                const std::vector<int> &widths = cache.widths();
                for (int w = 0; w < cache.widthCount(); ++w)
                    for (int q = 0; q + widths[static_cast<size_t>(w)] <= cfg.positions; q += 1 + q) {
                        const int next = q + widths[static_cast<size_t>(w)];
                        const int v = q >= widths.front() ? cache.linkId(q, 0, w) : 0;
                        const int u = next + widths.front() <= cfg.positions ? cache.linkId(next, w, 0) : 0;
                        for (int k = 0; k <= 2; ++k) {
                            if (k > 0 && u == 0)
                                break;
                            for (int j = 0; j < layers; ++j) {
                                double previous = 0;
                                bool fitted = true;
                                const int firstEnd = k == 0 ? layers : j + 1;
                                for (int e = firstEnd; e <= layers - k; ++e) {
                                    const int blk = cache.block(cache.rangeClass(j, e), cache.placementClass(q, w), j, e, q, w);
                                    const OptEntry entry = cache.entry(blk, j, e, w, k, v, k > 0 ? u : 0);
                                    ASSERT_TRUE(entry.fits || entry.count == 0);
                                    ASSERT_FALSE(entry.fits && !fitted) << "fits again at end " << e;
                                    if (!entry.fits && fitted && e > firstEnd)
                                        ++lost;
                                    fitted = entry.fits;
                                    for (int i = 0; i < entry.count; ++i) {
                                        const OptCost o = cache.optCost(entry.begin + i);
                                        ASSERT_LE(entry.minCompute, o.t) << "end " << e << " option " << o.opt;
                                        tight += entry.minCompute > 0.999 * o.t ? 1 : 0;
                                    }
                                    ASSERT_GE(entry.minCompute, previous) << "end " << e;
                                    previous = entry.minCompute;
                                    ++checked;
                                }
                            }
                        }
                    }
            }
        }
    }
    std::cerr << checked << " entries, " << tight << " options within 0.1 % of the floor, fit lost at " << lost
              << " ends\n";
    EXPECT_GE(checked, 10000);
    EXPECT_GE(tight, 100);
    EXPECT_GE(lost, 50);
}

// StageCostCache::floorGeometry() (docs/planner.md, "Summaries on the floor of the placement
// classes"): the relaxation's summaries
// take each option's costs on one geometry whose collectives cost the least of any placement
// class of the width, instead of one pass per class. Their argument: with one device type no
// time of an option on that floor is above its time at any class, and its memory is the same.
// Checked here against every class's own block (the evaluator's costs, as
// layerSumsByExtensionEqualTheEvaluators shows), finished as a single stage and as the first
// of two, on clusters of two and three levels with ZeRO and recompute in the space, so the
// data-parallel, TP and ZeRO collectives all differ between classes. An option's time is never
// above its time at a class, and its time plus extra neither (so neither is weight * time +
// extra for a weight >= 1); its extra alone may be: the gradient sync hides behind the
// backward and the recompute pass, whose collectives are cheaper on the floor. The bases are
// made as the summaries make them (floorGeometry() per option, then basesOn()). Taking the
// most instead of the least, or leaving the TP, the dense all-reduce or the dense
// reduce-scatter out of the floor, fails it (tried by hand).
TEST(PlannerDeep, floorBasesAreAtMostEveryPlacementClass)
{
    int compared = 0, below = 0, extraAbove = 0;
    for (int seed = 1; seed <= 24; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        Instance in = makeInstance(seed);
        in.options.allowZero = true;
        in.options.tpCandidates = {1, 2, 4};
        if (seed % 2 == 0) {
            // Three levels: nodes of 2, racks of 2 nodes, an oversubscribed spine.
            LinkParams nvlink, rack, spine;
            nvlink.bandwidth = 300e9;
            nvlink.latency = 1e-6;
            rack.bandwidth = 50e9;
            rack.latency = 3e-6;
            spine.bandwidth = 25e9;
            spine.latency = 8e-6;
            spine.oversubscription = 4;
            in.topo = Topology::uniform("floor-test", in.topo.deviceTypes.front(),
                                        {{"node", 2, nvlink}, {"rack", 2, rack}, {"spine", 2, spine}});
        }
        const PlanSpace space(in.topo, in.model, in.options);
        ASSERT_TRUE(space.problem().empty()) << space.problem();
        CacheForSpace held(space);
        StageCostCache &cache = held.cache;
        const int layers = in.model.layerCount();
        for (const OuterConfig &cfg : space.configs()) {
            if (cfg.schedule == Schedule::Interleaved)
                continue;
            cache.setConfig(cfg);
            for (int w = 0; w < cache.widthCount(); ++w) {
                std::vector<std::pair<int, int>> classes;
                for (int q = 0; q + cache.widths()[static_cast<size_t>(w)] <= cfg.positions; ++q) {
                    const int cls = cache.placementClass(q, w);
                    if (std::none_of(classes.begin(), classes.end(), [&](const auto &c) { return c.first == cls; }))
                        classes.push_back({cls, q});
                }
                // The floor does not depend on the order of the classes: every second range
                // asks with them reversed (so the first is not the best aligned).
                std::vector<std::pair<int, int>> reversed(classes.rbegin(), classes.rend());
                int asked = 0;
                for (int j = 0; j < layers; ++j)
                    for (int e = j + 1; e <= layers; e += 1 + (e - j) / 2) {
                        const int range = cache.rangeClass(j, e);
                        const std::vector<StageConfig> &opts = cache.options(w, j, e);
                        const std::vector<std::pair<int, int>> &asking = ++asked % 2 ? classes : reversed;
                        std::vector<StageGeometry> floors;
                        for (const StageConfig &o : opts)
                            floors.push_back(cache.floorGeometry(w, o, asking));
                        const std::vector<StageCost> floor = cache.basesOn(range, j, e, w, floors);
                        ASSERT_EQ(floor.size(), opts.size());
                        StagePlan stage;
                        stage.firstLayer = j;
                        stage.endLayer = e;
                        StageContext ctx = cache.context();
                        ctx.stage = &stage;
                        ctx.stageIndex = 0;
                        for (const auto &[cls, q] : classes) {
                            const int blk = cache.block(range, cls, j, e, q, w);
                            for (size_t i = 0; i < opts.size(); ++i) {
                                stage.config() = opts[i];
                                for (const int stages : {1, 2}) {
                                    ctx.numStages = stages;
                                    StageCost f = floor[i], c = cache.base(blk, static_cast<int>(i));
                                    finishStageCost(f, ctx);
                                    finishStageCost(c, ctx);
                                    const std::string at = std::to_string(j) + ".." + std::to_string(e) + " width " +
                                                           std::to_string(w) + " option " + std::to_string(i) +
                                                           " class " + std::to_string(cls);
                                    const double shade = 1 - PositionBound::kFloorShade;
                                    EXPECT_LE(f.perMicroBatch * shade, c.perMicroBatch) << at;
                                    EXPECT_LE((f.perMicroBatch + f.iterationExtra) * shade,
                                              c.perMicroBatch + c.iterationExtra)
                                        << at;
                                    EXPECT_EQ(f.memoryTotal, c.memoryTotal) << at;
                                    EXPECT_EQ(f.memoryCapacity, c.memoryCapacity) << at;
                                    ++compared;
                                    below += f.perMicroBatch < c.perMicroBatch;
                                    extraAbove += f.iterationExtra > c.iterationExtra;
                                }
                            }
                        }
                    }
            }
        }
    }
    std::cerr << compared << " option costs compared, " << below << " of them slower than on the floor, "
              << extraAbove << " with less extra than on it\n";
    EXPECT_GT(compared, 10000);
    EXPECT_GT(below, compared / 10);  // the classes really differ
}

// SearchOptions::threads (docs/planner.md, "Outer points in parallel"): the outer points
// after the seeds dealt to several searches that share only the best value. The plan must
// be the sequential search's, bit for bit, not merely one as good: on these clusters of
// identical nodes many plans tie (the same shape on other nodes, other points with the
// same value), and the sequential search returns the one it meets first. Objective and
// plan JSON are compared for 1, 2 and 3 searches on the deep instances and on two larger
// GPT profiles over two racks, with each point to the next free search and with the points
// of one parity searched before the others (NestTuning: a later neighbour's value is then
// known before an earlier point runs, whatever the timing). Taking another search's value
// v itself as the bound (not the value just above it) cuts the tying plan of an earlier
// point and fails it (tried by hand).
TEST(PlannerDeep, parallelOuterPointsGiveTheSequentialPlan)
{
    std::vector<Instance> instances;
    for (int seed = 1; seed <= 40; ++seed)
        instances.push_back(makeInstance(seed));
    for (const int layers : {8, 24}) {
        Instance in = makeInstance(4);
        in.model = buildProfile(coretest::tinyGptConfig(layers));
        in.topo = smallTree(4, 4, 8e9);
        in.options = SearchOptions();
        in.options.globalBatch = 64;
        instances.push_back(in);
    }
    int found = 0, multiPoint = 0;
    for (size_t n = 0; n < instances.size(); ++n) {
        const Instance &in = instances[n];
        SearchOptions o = in.options;
        const PlanResult one = NestPlanner().plan(in.topo, in.model, o);
        if (one.stats.configs > 1)
            ++multiPoint;
        for (const int threads : {2, 3}) {
            for (const int parity : {-1, 0, 1}) {
                o.threads = threads;
                NestTuning tuning;
                tuning.parallelFirstParity = parity;
                const PlanResult many = planNestTuned(in.topo, in.model, o, tuning);
                const std::string info =
                    "instance " + std::to_string(n) + " threads " + std::to_string(threads) + (parity >= 0 ? " parity " + std::to_string(parity) + " first" : "");
                ASSERT_EQ(many.found, one.found) << info;
                if (!one.found)
                    continue;
                ASSERT_EQ(many.objective, one.objective) << info;
                ASSERT_EQ(planToJson(many.plan).dump(), planToJson(one.plan).dump()) << info;
            }
        }
        found += one.found ? 1 : 0;
    }
    EXPECT_GE(found, 30);
    EXPECT_GE(multiPoint, 30);  // the points really are dealt to several searches
}

// The range minima of the bound of two or more stages (PositionBound::buildTwoOrMore()):
// entries settled from the right, queried over settled ranges, against a scan, on random
// arrays of every length up to 70 (powers of two and the lengths between them).
TEST(PlannerDeep, settledRangeMinEqualsAScan)
{
    std::mt19937 rng(7);
    for (int n = 1; n <= 70; ++n) {
        std::vector<int> v(static_cast<size_t>(n));
        for (int &x : v)
            x = std::uniform_int_distribution<int>(0, 50)(rng);
        SettledRangeMin r;
        r.reset(static_cast<size_t>(n), 1000);
        for (int e = n - 1; e >= 0; --e) {
            r.settle(static_cast<size_t>(e), v[static_cast<size_t>(e)]);
            for (int lo = e; lo < n; ++lo)
                for (int hi = lo; hi < n; ++hi)
                    ASSERT_EQ(r.min(lo, hi), *std::min_element(v.begin() + lo, v.begin() + hi + 1))
                        << "n " << n << " [" << lo << ", " << hi << "]";
        }
    }
}

// The relaxation's walks step over the ends of the periodic stretch whose summary is known to
// fail (PositionBound::walkEnds(), docs/planner.md, "Known failures of the periodic
// stretch"); that must leave every
// value of the relaxation as it was. On deeper models (24 to 72 blocks of the instances above,
// split into halves on every third seed, memory tight on every second), for every 1F1B outer
// point, incumbents at and above the optimum and two pipeline weights: need(k, j) for every k
// and first layer j (asked in that order, so every row is built) equals the walk's one end at
// a time, and the walks did pass over ends. Then the whole search from the first cell: the
// same objective to the last bit, plan, states, transitions and relaxation cuts. Marking an
// end that passes for k but not for k + 1 as failed (one row early), or passing over one
// length that is not known to fail, fails it (tried by hand, docs/planner.md). Two changes
// that leave every value as it is, so do not fail it: leaving the narrower widths out of the
// ends passed over (an end that passes only at a narrower width is that width's walk's, at a
// smaller value) and dropping the compute caps (a stage that compute rules out fails its
// summary's test too; the caps only spare those summaries).
TEST(PlannerDeep, skippingKnownFailuresKeepsTheRelaxation)
{
    long long skipped = 0, values = 0, finite = 0;
    int compared = 0;
    for (int seed = 1; seed <= 24; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        Instance in = makeInstance(seed, 24 + 4 * (seed % 13));
        if (seed % 2 == 0)
            for (DeviceSpec &d : in.topo.deviceTypes)
                d.memoryBytes *= 0.75;
        NestTuning stepping;
        stepping.relaxAfterCells = 0;
        stepping.skipKnownFailures = false;
        NestTuning skipping = stepping;
        skipping.skipKnownFailures = true;
        long long seen = 0;
        skipping.skippedEnds = &seen;

        long long cutsStepping = 0, cutsSkipping = 0;
        const PlanResult a = planNestTuned(in.topo, in.model, in.options, stepping, &cutsStepping);
        const PlanResult b = planNestTuned(in.topo, in.model, in.options, skipping, &cutsSkipping);
        ASSERT_EQ(a.found, b.found);
        EXPECT_EQ(a.stats.states, b.stats.states);
        EXPECT_EQ(a.stats.transitions, b.stats.transitions);
        EXPECT_EQ(cutsStepping, cutsSkipping);
        if (!a.found)
            continue;
        ++compared;
        EXPECT_EQ(a.objective, b.objective);
        EXPECT_EQ(planToJson(a.plan).dump(), planToJson(b.plan).dump());

        const PlanSpace space(in.topo, in.model, in.options);
        CacheForSpace held(space);
        StageCostCache &cache = held.cache;
        SearchStats &stats = held.stats;
        PeriodicRanges ranges(cache, space.model());
        ASSERT_GT(ranges.period(), 0);
        PositionBound one(cache, ranges, space.layerCount(), space.maxStages(), stats, stepping);
        PositionBound many(cache, ranges, space.layerCount(), space.maxStages(), stats, skipping);
        const int layers = space.layerCount();
        for (const OuterConfig &cfg : space.configs()) {
            if (cfg.schedule != Schedule::OneFOneB)
                continue;
            cache.setConfig(cfg);
            const LayerComputeBound compute = layerComputeBound(space, cfg, stats);
            one.setConfig(&compute);
            many.setConfig(&compute);
            for (const double above : {1.0, 1.05, 1.3})
                for (const int stages : {1, 4}) {
                    const double best = a.objective * above;
                    const double weight = pipelineWeight(cfg.numMicroBatches, stages);
                    for (int k = 0; k < space.maxStages(); ++k)
                        for (int j = 0; j + k < layers; ++j) {
                            const int x = one.need(k, j, best, weight, std::numeric_limits<int>::max());
                            const int y = many.need(k, j, best, weight, std::numeric_limits<int>::max());
                            ASSERT_EQ(x, y) << "k " << k << " j " << j << " best " << best << " weight " << weight;
                            ++values;
                            finite += x <= cfg.positions ? 1 : 0;
                        }
                }
        }
        skipped += seen;
    }
    std::cerr << compared << " plans compared, " << values << " values of the relaxation (" << finite
              << " within the positions), " << skipped << " ends passed over\n";
    EXPECT_GE(compared, 14);
    EXPECT_GE(finite, 10000);
    EXPECT_GE(skipped, 10000);
}

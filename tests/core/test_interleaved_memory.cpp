// Activation memory of the interleaved 1F1B schedule (issue 23, point 5; docs/cost-model.md §5):
// the chunk-micro-batches a device holds at its peak, by hand, against the simulator's own
// operation order and against the closed forms Korthikanti et al. publish.
//
// Sources: Megatron-LM forward_backward_pipelining_with_interleaving (megatron/core/
// pipeline_parallel/schedules.py): a device at pipeline rank d runs (p - d - 1) * 2 + (v - 1) * p
// warm-up chunk-forwards, then one forward before each backward; forward i runs chunk
// (i / p) % v. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
// Models" (MLSys 2023), Table 2 (activation bytes per layer: s b h (34 / t) with tensor +
// sequence parallelism and selective recomputation) and §4.2.3 (the first stage of the
// interleaved schedule holds p (1 + (p - 1) / (p v)) micro-batches' worth of its layers).
#include "Evaluator.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "PlanBuilder.h"
#include "PlanSpace.h"
#include "StageCostCache.h"
#include "Simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <vector>

using namespace nest;

namespace {

Topology smallCluster()
{
    DeviceSpec dev{"il", 100e12, 80e9, 1e12, 0.5, ""};
    return Topology::uniform("il", dev, {{"node", 4, {100e9, 1e-6, 1}}, {"cluster", 2, {10e9, 5e-6, 1}}});
}

ModelProfile blocks(int n)
{
    ModelProfile m;
    m.seqLength = 128;
    for (int i = 0; i < n; ++i) {
        LayerProfile l;
        l.kind = LayerKind::Transformer;
        l.fwdFlops = 50e12;
        l.bwdFlops = 100e12;
        l.params = l.tpParams = 1e6;
        l.outputBytes = 1e3;
        l.stashTpBytes = 1e6;
        m.layers.push_back(l);
    }
    return m;
}

} // namespace

TEST(InterleavedMemory, inFlightByHand)
{
    // p = 4 devices, v = 2 chunks, m = 8 micro-batches.
    // Device 0: 2 (4 - 0 - 1) + (2 - 1) 4 = 10 warm-up forwards, + 1 = 11 in flight.
    // Forward i runs chunk (i / 4) % 2: i = 0-3 chunk 0, 4-7 chunk 1, 8-10 chunk 0 -> 7 and 4.
    EXPECT_EQ(interleavedInFlight(4, 2, 8, 0), 11);
    EXPECT_EQ(interleavedChunkInFlight(4, 2, 8, 0, 0), 7);
    EXPECT_EQ(interleavedChunkInFlight(4, 2, 8, 0, 1), 4);
    // Device 1: 2 x 2 + 4 + 1 = 9: chunk 0 has i = 0-3 and 8 (5), chunk 1 i = 4-7 (4).
    EXPECT_EQ(interleavedInFlight(4, 2, 8, 1), 9);
    EXPECT_EQ(interleavedChunkInFlight(4, 2, 8, 1, 0), 5);
    EXPECT_EQ(interleavedChunkInFlight(4, 2, 8, 1, 1), 4);
    // Device 3 (last): 0 + 4 + 1 = 5: chunk 0 holds 4, the last chunk (the head's) only 1 --
    // not 5 / 2 each.
    EXPECT_EQ(interleavedInFlight(4, 2, 8, 3), 5);
    EXPECT_EQ(interleavedChunkInFlight(4, 2, 8, 3, 0), 4);
    EXPECT_EQ(interleavedChunkInFlight(4, 2, 8, 3, 1), 1);
    // Few micro-batches: capped at m v (m = 4, v = 2 on device 0: min(8, 11) = 8, 4 each).
    EXPECT_EQ(interleavedInFlight(4, 2, 4, 0), 8);
    EXPECT_EQ(interleavedChunkInFlight(4, 2, 4, 0, 0), 4);
    // Korthikanti §4.2.3: with enough micro-batches the first device holds
    // 2 (p - 1) + (v - 1) p + 1 = p v + p - 1 = p v (1 + (p - 1) / (p v)) chunk-micro-batches,
    // i.e. p (1 + (p - 1) / (p v)) micro-batches' worth of its L / p layers.
    for (int p : {2, 4, 8, 35})
        for (int v : {2, 3, 5}) {
            const double chunks = interleavedInFlight(p, v, 64 * p, 0);
            EXPECT_DOUBLE_EQ(chunks, p * v * (1.0 + (p - 1.0) / (p * v))) << p << " " << v;
            int sum = 0;
            for (int j = 0; j < v; ++j)
                sum += interleavedChunkInFlight(p, v, 64 * p, 0, j);
            EXPECT_EQ(sum, static_cast<int>(chunks));
        }
}

TEST(InterleavedMemory, evaluatorAndSimulatorAgree)
{
    // 8 blocks on p = 4 devices x v = 2 chunks, 8 micro-batches. The evaluator's count per
    // chunk equals, on the simulator's timeline, the forwards of that chunk that started
    // before its device's first backward; and the device's most chunk-micro-batches in flight
    // at any time equals interleavedInFlight().
    const Topology topo = smallCluster();
    const ModelProfile m = blocks(8);
    UniformLayout u;
    u.pp = 4;
    u.schedule = Schedule::Interleaved;
    u.virtualStages = 2;
    u.globalBatch = 8;
    u.seqLength = 128;
    const Plan plan = *buildUniformPlan(u, topo, m);
    const Report r = evaluate(plan, topo, m);
    ASSERT_TRUE(r.feasible);
    const SimulationResult sim = simulate(plan, topo, m);
    ASSERT_TRUE(sim.error.empty()) << sim.error;
    for (int d = 0; d < 4; ++d) {
        SCOPED_TRACE(d);
        // Events of the device: virtual stages d and d + 4.
        std::vector<std::pair<double, int>> changes;  // (time, +1 forward start / -1 backward end)
        double firstBackward = 1e300;
        for (const TimelineEvent &e : sim.events) {
            if (e.stage % 4 != d)
                continue;
            if (e.kind == "forward")
                changes.push_back({e.start, +1});
            if (e.kind == "backward") {
                changes.push_back({e.end, -1});
                firstBackward = std::min(firstBackward, e.start);
            }
        }
        std::sort(changes.begin(), changes.end());  // at equal times the end (-1) first
        int live = 0, peak = 0;
        for (const auto &[t, delta] : changes) {
            live += delta;
            peak = std::max(peak, live);
        }
        EXPECT_EQ(peak, interleavedInFlight(4, 2, 8, d));
        for (int chunk = 0; chunk < 2; ++chunk) {
            int started = 0;
            for (const TimelineEvent &e : sim.events)
                if (e.stage == chunk * 4 + d && e.kind == "forward" && e.start < firstBackward)
                    ++started;
            EXPECT_EQ(started, interleavedChunkInFlight(4, 2, 8, d, chunk));
            EXPECT_EQ(r.stages[static_cast<size_t>(chunk * 4 + d)].cost.stashedMicroBatches, started);
        }
    }
}

TEST(InterleavedMemory, korthikanti175bSelective)
{
    // The published layout of Korthikanti et al. Table 4 (GPT-3 175B on 64 A100-80GB: TP 8,
    // PP 8, interleaving 3, micro-batch 1, batch 64, sequence 2048, sequence parallel +
    // selective recomputation; Megatron-LM 2022, no distributed optimizer): it trained, so
    // it must fit, and its first device's stash must match the paper's closed forms.
    ModelConfig c = familyDefaults("gpt");
    c.name = "gpt3-175b";
    c.layers = 96;
    c.hidden = 12288;
    c.heads = 96;
    c.kvHeads = 96;
    c.ffnHidden = 49152;
    c.vocab = 51200;
    c.maxPositions = 2048;
    c.seqLength = 2048;
    c.globalBatch = 64;
    c.flashAttention = false;
    const ModelProfile m = buildProfile(c);
    const Topology topo =
        Topology::uniform("selene-64", *devicePreset("a100-80gb"), {{"node", 8, {300e9, 1e-6, 1}}, {"cluster", 8, {25e9, 4e-6, 1}}});
    UniformLayout u;
    u.tp = 8;
    u.sp = true;
    u.pp = 8;
    u.schedule = Schedule::Interleaved;
    u.virtualStages = 3;
    u.recompute = Recompute::Selective;
    u.microBatch = 1;
    u.globalBatch = 64;
    u.seqLength = 2048;
    const Plan plan = *buildUniformPlan(u, topo, m);
    CostOptions o;
    o.framework = Framework::MegatronLM;
    const Report r = evaluate(plan, topo, m, o);
    ASSERT_TRUE(r.feasible) << (r.reasons.empty() ? "" : r.reasons.front());

    // Per block, Table 2: s b h 34 / t = 2048 x 12288 x 34 / 8 = 106,954,752 B.
    const double perLayer = 2048.0 * 12288 * 34 / 8;
    // The first device holds p (1 + (p - 1) / (p v)) = 8 x 31 / 24 micro-batches of its
    // 12 blocks, i.e. L (1 + (p - 1) / (p v)) = 96 x 31 / 24 = 124 block-micro-batches:
    // 13.262 GB (§4.2.3).
    const double paper = perLayer * 96 * (1 + 7.0 / 24);
    const double fragmentation = frameworkProfile(Framework::MegatronLM).fragmentation;
    double blockStash = 0;  // the device's chunks, without the embedding's few bytes
    for (int chunk = 0; chunk < 3; ++chunk) {
        const StageCost &sc = r.stages[static_cast<size_t>(chunk * 8)].cost;
        blockStash += sc.stash / (1 + fragmentation);
    }
    const double err = (blockStash - paper) / paper;
    std::fprintf(stderr, "GPT-3 175B, TP 8 PP 8 v3, SP + selective: first device stash %.3f GB (paper %.3f GB, %+.1f %%), "
                         "peak %.1f GB of %.1f GB\n",
                 blockStash / 1e9, paper / 1e9, 100 * err, r.peakMemoryBytes / 1e9, r.devices[0].capacity / 1e9);
    EXPECT_LT(std::abs(err), 0.05);
    // Model states: Megatron-LM without the distributed optimizer keeps 18 B per parameter
    // (Megatron-Core distributed-optimizer guide, "float16 param, fp32 grads": 18).
    const DeviceReport &d = r.devices[0];
    double params = 0;
    for (int chunk = 0; chunk < 3; ++chunk)
        params += r.stages[static_cast<size_t>(chunk * 8)].cost.paramsPerDevice;
    EXPECT_NEAR((d.weights + d.gradients + d.optimizerState) / params, 18.0, 1e-9);
}

// The planner skips an interleaved candidate without timing or evaluating it when its chunks'
// bases say a pipeline position does not fit (StageCostCache::interleavedTime(), checked
// before any chunk is timed). That verdict must be evaluate()'s, candidate by candidate: on a
// cluster small enough in memory that many candidates do not fit, every candidate is checked
// against the full evaluator of the plan it stands for, and one that fits has its time.
TEST(InterleavedMemory, plannersMemoryCheckIsTheEvaluators)
{
    for (const double memory : {6e9, 12e9, 24e9}) {
        DeviceSpec dev{"il", 100e12, memory, 1e12, 0.5, ""};
        const Topology topo =
            Topology::uniform("il", dev, {{"node", 4, {100e9, 1e-6, 1}}, {"cluster", 4, {10e9, 5e-6, 1}}});
        ModelProfile model = blocks(12);
        for (LayerProfile &l : model.layers) {
            l.params = l.tpParams = 2e8;
            l.stashTpBytes = 2e8;
        }
        SearchOptions o;
        o.globalBatch = 32;
        o.schedules = {Schedule::Interleaved};
        const PlanSpace space(topo, model, o);
        ASSERT_TRUE(space.problem().empty()) << space.problem();
        SearchStats stats;
        MemoryObstacle obstacle;
        const CancelToken cancel;
        LayerSumsStore sums(space.model(), space.seqLength(), space.costOptions());
        StageCostCache cache(space, cancel, stats, obstacle, sums);
        int fits = 0, doesNot = 0;
        for (const OuterConfig &cfg : space.configs()) {
            if (cfg.schedule != Schedule::Interleaved)
                continue;
            cache.setConfig(cfg);
            for (const InterleavedChoice &c : space.interleavedChoices(cfg)) {
                bool verdict = true;
                const double t = cache.interleavedTime(c, space.interleavedChunks(c), kInf, &verdict);
                ASSERT_FALSE(t == -1);  // every chunk's option is from the lists
                const Report r = evaluate(space.makeInterleavedPlan(cfg, c), topo, model, space.costOptions());
                EXPECT_EQ(verdict, r.feasible) << "memory " << memory << " mb " << cfg.microBatch << " dp "
                                               << cfg.dp << " pp " << c.pp << " v " << c.virtualStages;
                (verdict ? fits : doesNot) += 1;
                if (r.feasible) {
                    EXPECT_EQ(t, r.iterationTime);
                } else {
                    EXPECT_EQ(t, kInf);
                }
            }
        }
        // Both verdicts occur, so the check can fail either way.
        if (memory == 12e9) {
            EXPECT_GT(fits, 0);
            EXPECT_GT(doesNot, 0);
        }
        std::printf("memory %.0f GB: %d candidates fit, %d do not\n", memory / 1e9, fits, doesNot);
    }
}


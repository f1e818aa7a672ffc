// Evaluator terms against hand computations on a tiny instance, properties, and
// predictions against published measurements (docs/cost-model.md, "Validation").
#include "Evaluator.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "ModelIO.h"
#include "PlanBuilder.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

using namespace nest;

namespace {

using coretest::rowName;

bool close(double a, double b, double rel = 1e-9)
{
    return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

// 8 devices: 2 nodes of 4 (100 GB/s inside, 10 GB/s between), zero latency.
// Device: 100 TFLOP/s at efficiency 0.5 -> 50 TFLOP/s, 80 GB, 1 TB/s HBM.
Topology tinyCluster(double scale = 1.0)
{
    DeviceSpec dev{"tiny", 100e12, 80e9, 1e12, 0.5, ""};
    return Topology::uniform("tiny", dev, {{"node", 4, {100e9 * scale, 0, 1}}, {"cluster", 2, {10e9 * scale, 0, 1}}});
}

// Embedding, 4 identical blocks, head. Per sample.
ModelProfile tinyModel()
{
    ModelProfile m;
    m.name = "tiny";
    m.seqLength = 128;
    m.globalBatch = 4;
    LayerProfile emb;
    emb.kind = LayerKind::Embedding;
    emb.params = emb.tpParams = 1e6;
    emb.outputBytes = 1e6;
    m.layers.push_back(emb);
    for (int i = 0; i < 4; ++i) {
        LayerProfile l;
        l.kind = LayerKind::Transformer;
        l.fwdFlops = 1e12;
        l.bwdFlops = 2e12;
        l.params = l.tpParams = 1e8;
        l.outputBytes = 1e6;
        l.stashTpBytes = 8e6;
        l.stashSpBytes = 2e6;
        l.recomputeStashBytes = 1e6;
        l.workingBytes = 4e6;
        l.tpAllReduceBytes = 2e6;
        m.layers.push_back(l);
    }
    LayerProfile head;
    head.kind = LayerKind::Head;
    head.fwdFlops = 0.5e12;
    head.bwdFlops = 1e12;
    m.layers.push_back(head);
    return m;
}

CostOptions plainOptions()
{
    CostOptions o;
    o.framework = Framework::Serial;  // nothing overlapped: every term by hand
    o.runtimeOverheadBytes = 0;
    o.elementwiseTraffic = false;
    o.zeroOverlap = 0;
    return o;
}

Plan onePlan(int tp, int dp, int zero = 0, bool recompute = false)
{
    UniformLayout u;
    u.tp = tp;
    u.dp = dp;
    u.zero = zero;
    u.recompute = recompute ? Recompute::Full : Recompute::None;
    u.microBatch = 2;
    u.globalBatch = 4 * dp;
    u.seqLength = 128;
    return *buildUniformPlan(u, tinyCluster(), tinyModel());
}

} // namespace

TEST(Evaluator, singleStageByHand)
{
    // tp = 2 on devices {0,1}, micro-batch 2, m = 2 micro-batches.
    const Topology topo = tinyCluster();
    const ModelProfile model = tinyModel();
    const Plan plan = onePlan(2, 1);
    const Report r = evaluate(plan, topo, model, plainOptions());
    ASSERT_TRUE(r.feasible);
    ASSERT_EQ(r.stages.size(), size_t(1));
    const StageCost &c = r.stages[0].cost;
    // forward = (4*1e12 + 0.5e12) * 2 / (2 * 50e12) = 0.09 s; backward twice that.
    ASSERT_TRUE(close(c.forward, 0.09));
    ASSERT_TRUE(close(c.backward, 0.18));
    ASSERT_QFUZZY_EQ(c.recompute, 0.0);
    // TP: 4 blocks * 2e6 B * 2 samples = 16e6 B all-reduced per pass, ring of 2 in a
    // node: 2 * 1/2 * 16e6 / 100e9 = 1.6e-4 s; forward + backward = 3.2e-4 s.
    ASSERT_TRUE(close(c.tpComm, 3.2e-4));
    ASSERT_TRUE(close(c.perMicroBatch, 0.09 + 0.18 + 3.2e-4));
    // Parameters per device: 1e6/2 + 4*1e8/2 = 2.005e8. Optimizer: 30 B each at the
    // achieved 80 % of 1 TB/s.
    ASSERT_TRUE(close(c.paramsPerDevice, 2.005e8));
    ASSERT_TRUE(close(c.optimizer, 2.005e8 * 30 / 0.8e12));
    // T = (m + S - 1) * t + extra = 2 * 0.27032 + 0.00751875.
    ASSERT_TRUE(close(r.iterationTime, 2 * 0.27032 + 0.00751875));
    // Memory: 2 B weights, 4 B grads, 12 B optimizer per parameter.
    ASSERT_TRUE(close(c.weights, 2.005e8 * 2));
    ASSERT_TRUE(close(c.gradients, 2.005e8 * 4));
    ASSERT_TRUE(close(c.optimizerState, 2.005e8 * 12));
    // Stash: 1 micro-batch (S - s = 1) of 4 * (8e6/2 + 2e6) * 2 = 4.8e7 B; working 4e6*2/2.
    ASSERT_TRUE(close(c.stash, 4.8e7));
    ASSERT_TRUE(close(c.activations, 4e6));
    // Throughput: 4 samples per T; MFU = 4 * (4*3e12 + 1.5e12) / (T * 2 * 100e12).
    ASSERT_TRUE(close(r.samplesPerSecond, 4 / r.iterationTime));
    ASSERT_TRUE(close(r.tokensPerSecond, 4 * 128 / r.iterationTime));
    ASSERT_TRUE(close(r.mfu, 4 * 13.5e12 / (r.iterationTime * 2 * 100e12)));
}

TEST(Evaluator, sequenceParallelAndRecompute)
{
    const Topology topo = tinyCluster();
    const ModelProfile model = tinyModel();
    Plan plan = onePlan(2, 1, 0, true);
    plan.stages[0].sp = true;
    const StageCost c = evaluate(plan, topo, model, plainOptions()).stages[0].cost;
    // Recompute: one more forward of the 4 blocks (4e12*2/1e14 = 0.08 s) plus their
    // forward TP all-reduce (1.6e-4 s).
    ASSERT_TRUE(close(c.recompute, 0.08 + 1.6e-4));
    // Stash with recompute: block input 1e6 / tp (SP) * 2 samples per block = 4e6 B; the
    // embedding/head keep their (zero) stash. Working set + one block's full stash
    // (8e6/2 + 2e6/2) * 2 = 1e7 B.
    ASSERT_TRUE(close(c.stash, 4e6));
    ASSERT_TRUE(close(c.activations, 4e6 + 1e7));
}

TEST(Evaluator, elementwiseTraffic)
{
    CostOptions o = plainOptions();
    const CostOptions off = o;
    o.elementwiseTraffic = true;
    const Plan plan = onePlan(2, 1);
    const StageCost a = evaluate(plan, tinyCluster(), tinyModel(), off).stages[0].cost;
    const StageCost b = evaluate(plan, tinyCluster(), tinyModel(), o).stages[0].cost;
    // Saved bytes per micro-batch 4.8e7 at 80 % of 1 TB/s: forward + 6e-5 s, backward
    // + 1.2e-4 s (profiles without operator shapes: docs/cost-model.md).
    ASSERT_TRUE(close(b.forward - a.forward, 6e-5, 1e-6));
    ASSERT_TRUE(close(b.backward - a.backward, 1.2e-4, 1e-6));
}

// --- compute from shapes (docs/cost-model.md, "Compute from shapes") -------------------------
TEST(Evaluator, operatorsFromShapes)
{
    // One Llama 3 70B block at s = 4096, tp 2, micro-batch 2 on A100-80GB, derived here
    // from the documented formulas: GEMM t = max(2mnk / (P eta f(m) f(n) f(k)),
    // 2(mk + kn + mn) / (0.8 HBM)), f(x) = x / (x + 128); backward = the (m, k, n) and
    // (k, n, m) GEMMs; causal flash attention 0.5 x 4 s^2 h at eta_attn f(s) f(s), backward
    // 2.5x; element-wise bytes at 0.8 HBM, backward 2x.
    const DeviceSpec a100 = *devicePreset("a100-80gb");
    const Topology topo = Topology::uniform("a", a100, {{"node", 8, {300e9, 0, 1}}});
    const double P = 312e12, eta = 0.734, etaAttn = 0.60, hbm = 0.8 * 2039e9;
    auto f = [](double x) { return x / (x + 128); };
    auto gemm = [&](double m, double n, double k) {
        return std::max(2 * m * n * k / (P * eta * f(m) * f(n) * f(k)), 2 * (m * k + k * n + m * n) / hbm);
    };
    const double b = 2, s = 4096, h = 8192, hkv = 1024, ffn = 28672, tp = 2, heads = 64;
    const double T = b * s;
    const double shapes[4][3] = {{T, (h + 2 * hkv) / tp, h}, {T, h, h / tp}, {T, 2 * ffn / tp, h}, {T, h, ffn / tp}};
    double fwd = 0, bwd = 0;
    for (const auto &g : shapes) {
        fwd += gemm(g[0], g[1], g[2]);
        bwd += gemm(g[0], g[2], g[1]) + gemm(g[2], g[1], g[0]);
    }
    const double attention = 0.5 * 4 * s * s * h * b / tp / (P * etaAttn * f(s) * f(s));
    fwd += attention;
    bwd += 2.5 * attention;
    const double bytes = (s * 20 * h + s * (6 * ffn + 4 * (h + hkv)) / tp) * b;  // no SP
    fwd += bytes / hbm;
    bwd += 2 * bytes / hbm;

    ModelConfig c = *modelPreset("llama3-70b");
    c.seqLength = 4096;
    UniformLayout u;
    u.tp = 2;
    u.microBatch = 2;
    u.globalBatch = 2;
    u.seqLength = 4096;
    CostOptions o = plainOptions();
    o.elementwiseTraffic = true;
    auto stage = [&](int layers, Recompute rc, bool causal) {
        c.layers = layers;
        c.causal = causal;
        const ModelProfile m = buildProfile(c);
        u.recompute = rc;
        return evaluate(*buildUniformPlan(u, topo, m), topo, m, o).stages[0].cost;
    };
    const StageCost one = stage(1, Recompute::None, true), two = stage(2, Recompute::None, true);
    ASSERT_TRUE(close(two.forward - one.forward, fwd, 1e-9));
    ASSERT_TRUE(close(two.backward - one.backward, bwd, 1e-9));
    // Without the causal mask the attention does twice the work.
    const StageCost full = stage(2, Recompute::None, false);
    ASSERT_TRUE(close(full.forward - two.forward, 2 * attention, 1e-9));
    // Selective recomputation reruns exactly the core attention and drops the flash
    // logsumexp (4 a s FP32 per sample, / tp) from the stash of both blocks.
    const StageCost sel = stage(2, Recompute::Selective, true);
    ASSERT_TRUE(close(sel.recompute - two.recompute, 2 * attention, 1e-9));
    ASSERT_TRUE(close(two.stash - sel.stash, 2 * 4 * heads * s * b / tp, 1e-9));
}

TEST(Evaluator, eagerStacksRunRmsNormAndRotaryAsOpChains)
{
    // One Llama 3 70B block (s 4096, micro-batch 2, tp 2 without SP) on A100-80GB. Fused, its
    // two RMSNorms move 4 B per element of h each (read, write) and the rotary embedding 4 B
    // per element of Q and K. Eager PyTorch (the fsdp and torchtitan profiles: 2 passes per
    // element-wise op) runs the RMSNorm as x.float(), pow, mean, mul, type_as, weight mul
    // (6 + 8 + 4 + 8 + 6 + 4 = 36 B) and the complex rotary as float(), the complex product,
    // type_as (6 + 8 + 6 = 20 B): 9 and 5 times the fused bytes, the rest twice.
    const DeviceSpec a100 = *devicePreset("a100-80gb");
    const double s = 4096, h = 8192, hkv = 1024, b = 2, tp = 2, hbm = 0.8 * 2039e9;
    auto block = [](const ModelProfile &m) {
        for (const LayerProfile &l : m.layers)
            if (l.kind == LayerKind::Transformer)
                return l;
        return LayerProfile{};
    };
    ModelConfig c = *modelPreset("llama3-70b");
    c.layers = 1;
    c.seqLength = 4096;
    const LayerProfile l = block(buildProfile(c));
    ASSERT_DOUBLE_EQ(l.rmsNormSpBytes, s * 2 * 4 * h);
    ASSERT_DOUBLE_EQ(l.rotaryTpBytes, s * 4 * (h + hkv));
    StageConfig w;
    w.tp = 2;
    const ComputeRates fused = computeRates(a100, 0, true, 1), eager = computeRates(a100, 0, true, 2);
    const LayerTimes t1 = layerTimes(l, 4096, b, w, fused, true), t2 = layerTimes(l, 4096, b, w, eager, true);
    const double extra = (l.elementwiseSpBytes + 7 * l.rmsNormSpBytes + (l.elementwiseTpBytes + 3 * l.rotaryTpBytes) / tp) * b;
    EXPECT_TRUE(close(t2.forward - t1.forward, extra / hbm, 1e-12));
    EXPECT_TRUE(close(t2.backward - t1.backward, 2 * extra / hbm, 1e-12));
    // GPT-3 (LayerNorm, learned positions): no op chains, every kernel twice.
    ModelConfig g = *modelPreset("gpt3-175b");
    g.layers = 1;
    const LayerProfile gl = block(buildProfile(g));
    EXPECT_EQ(gl.rmsNormSpBytes, 0);
    EXPECT_EQ(gl.rotaryTpBytes, 0);
    const double gs = g.seqLength;
    const LayerTimes g1 = layerTimes(gl, static_cast<int>(gs), 1, w, fused, true);
    const LayerTimes g2 = layerTimes(gl, static_cast<int>(gs), 1, w, eager, true);
    EXPECT_TRUE(close(g2.forward - g1.forward, (gl.elementwiseSpBytes + gl.elementwiseTpBytes / tp) / hbm, 1e-12));
}

namespace {

// Llama 3 70B (4 blocks, s 4096) at tp 8 with sequence parallelism, 2 replicas, ZeRO-1 on two
// A100 nodes (300 GB/s inside, 25 GB/s between): every collective a framework may overlap.
struct SequenceParallelCase {
    Topology topo = Topology::uniform("a", *devicePreset("a100-80gb"),
                                      {{"node", 8, {300e9, 0, 1}}, {"cluster", 2, {25e9, 0, 1}}});
    ModelProfile model = [] {
        ModelConfig c = *modelPreset("llama3-70b");
        c.layers = 4;
        c.seqLength = 4096;
        return buildProfile(c);
    }();
    Plan plan = [this] {
        UniformLayout u;
        u.tp = 8;
        u.dp = 2;
        u.sp = true;
        u.zero = 1;
        u.globalBatch = 8;
        u.seqLength = 4096;
        return *buildUniformPlan(u, topo, model);
    }();
};

} // namespace

TEST(Evaluator, overlapAsTheFrameworksDoIt)
{
    // Megatron-Core hides the sequence-parallel collectives behind the GEMMs: when they
    // fit in the window only the contention (0.1 x the hidden time) remains.
    const SequenceParallelCase sc;
    const Topology &topo = sc.topo;
    const ModelProfile &m = sc.model;
    const Plan &plan = sc.plan;
    CostOptions serial;
    serial.framework = Framework::Serial;
    serial.gradBytesPerParam = 4;
    CostOptions mcore = serial;
    mcore.framework = Framework::MegatronCore;
    mcore.stack = Stack::Tuned;  // as NeMo's recipes run it
    const StageCost a = evaluate(plan, topo, m, serial).stages[0].cost;
    const StageCost b = evaluate(plan, topo, m, mcore).stages[0].cost;
    ASSERT_TRUE(a.tpComm > 0);
    ASSERT_TRUE(a.tpComm < a.forward);  // fits in the window
    ASSERT_TRUE(close(b.tpComm, 0.1 * a.tpComm, 1e-9));
    // Gradient reduce-scatter behind the backward, parameter all-gather behind the forward.
    ASSERT_TRUE(a.dpSync > 0 && a.zeroGather > 0);
    const double rsExposed = std::max(0.0, a.dpSync - (a.backward + a.recompute)) +
                             0.1 * std::min(a.dpSync, a.backward + a.recompute);
    const double agExposed = std::max(0.0, a.zeroGather - a.forward) + 0.1 * std::min(a.zeroGather, a.forward);
    ASSERT_TRUE(close(b.dpSync, rsExposed, 1e-9));
    ASSERT_TRUE(close(b.zeroGather, agExposed, 1e-9));
    // Same compute: on A100 FlashAttention-2 and Transformer Engine's attention share one
    // efficiency, and both profiles run fused element-wise kernels.
    ASSERT_QFUZZY_EQ(b.forward, a.forward);
}

TEST(Evaluator, theDefaultsStackExposesWhatTheRecipesFlagsHide)
{
    // Megatron-Core as its command-line defaults run it (docs/cost-model.md, "Stacks"): no
    // --overlap-grad-reduce or --overlap-param-gather, so the gradient reduce-scatter and the
    // parameter all-gather are exposed whole, as in the serial profile; FP32 gradients (with
    // --bf16 Megatron-LM accumulates and reduces them in FP32), so the same bytes as serial's
    // 4 B and twice the tuned recipes' BF16 gradient buffer; no --tp-comm-overlap, so the
    // sequence-parallel collectives cost more than the tuned 0.1 x contention.
    const SequenceParallelCase sc;
    const Topology &topo = sc.topo;
    const ModelProfile &m = sc.model;
    const Plan &plan = sc.plan;
    CostOptions serial;
    serial.framework = Framework::Serial;
    serial.gradBytesPerParam = 4;
    CostOptions tuned;
    tuned.stack = Stack::Tuned;
    CostOptions defaults;
    defaults.stack = Stack::Defaults;
    const StageCost a = evaluate(plan, topo, m, serial).stages[0].cost;
    const StageCost t = evaluate(plan, topo, m, tuned).stages[0].cost;
    const StageCost d = evaluate(plan, topo, m, defaults).stages[0].cost;
    ASSERT_TRUE(a.dpSync > 0 && a.zeroGather > 0 && a.tpComm > 0);
    EXPECT_TRUE(close(d.dpSync, a.dpSync));
    EXPECT_TRUE(close(d.zeroGather, a.zeroGather));
    EXPECT_TRUE(close(d.gradients, 2 * t.gradients));
    EXPECT_GT(d.tpComm, t.tpComm);
    EXPECT_LE(d.tpComm, a.tpComm);
    EXPECT_GT(evaluate(plan, topo, m, defaults).iterationTime, evaluate(plan, topo, m, tuned).iterationTime);
    // Frameworks whose defaults are their profile price the same in both stacks.
    CostOptions fsdpTuned = tuned, fsdpDefaults = defaults;
    fsdpTuned.framework = fsdpDefaults.framework = Framework::Fsdp;
    EXPECT_EQ(evaluate(plan, topo, m, fsdpTuned).iterationTime, evaluate(plan, topo, m, fsdpDefaults).iterationTime);
}

TEST(Evaluator, dataParallelSyncAndZero)
{
    const Topology topo = tinyCluster();
    const ModelProfile model = tinyModel();
    // tp 1, dp 2: replicas on devices 0 and 1 (same node). Params per device 4.01e8.
    const double p = 4.01e8;
    const double ar = 2 * 0.5 * p * 4 / 100e9;  // all-reduce of fp32 gradients
    const double rs = ar / 2;
    const double agW = 0.5 * p * 2 / 100e9;     // all-gather of bf16 weights
    for (int zero = 0; zero <= 3; ++zero) {
        const StageCost c = evaluate(onePlan(1, 2, zero), topo, model, plainOptions()).stages[0].cost;
        const double fb = c.forward + c.backward;
        ASSERT_TRUE(fb > 0);
        switch (zero) {
        case 0:
            ASSERT_TRUE(close(c.dpSync, ar));
            ASSERT_TRUE(close(c.optimizerState, p * 12));
            break;
        case 1:
            ASSERT_TRUE(close(c.dpSync, rs));
            ASSERT_TRUE(close(c.zeroGather, agW));
            ASSERT_TRUE(close(c.optimizerState, p * 12 / 2));
            ASSERT_TRUE(close(c.gradients, p * 4));
            break;
        case 2:
            ASSERT_TRUE(close(c.zeroComm, rs));  // every micro-batch
            ASSERT_TRUE(close(c.gradients, p * 4 / 2));
            ASSERT_TRUE(close(c.weights, p * 2));
            break;
        case 3:
            ASSERT_TRUE(close(c.zeroComm, 2 * agW + rs));
            // Sharded weights plus the gathered largest layer and its prefetch.
            ASSERT_TRUE(close(c.weights, p * 2 / 2 + 2 * 1e8 * 2));
            break;
        }
        ASSERT_TRUE(close(c.optimizer, (zero >= 1 ? p / 2 : p) * 30 / 0.8e12));
    }
}

TEST(Evaluator, decompositionContract)
{
    // stageCost() in parts (Evaluator.h): the geometry depends only on the shape of the
    // device set, the base on neither the position nor the links, and finishStageCost()
    // adds exactly the position- and link-dependent terms.
    const Topology topo = tinyCluster();
    const ModelProfile model = tinyModel();
    const CostOptions o = plainOptions();
    StagePlan a;
    a.firstLayer = 1;
    a.endLayer = 3;
    a.tp = 2;
    a.zero = 1;
    a.devices = {{0, 1}, {4, 5}};
    StagePlan b = a;
    b.devices = {{2, 3}, {6, 7}};  // the same shape, one pair over
    const StageGeometry ga = stageGeometry(topo, a, 2, o), gb = stageGeometry(topo, b, 2, o);
    ASSERT_EQ(ga.devices, 4);
    ASSERT_QFUZZY_EQ(ga.rates.rate(), 50e12);
    ASSERT_QFUZZY_EQ(ga.capacity, 80e9);
    ASSERT_QFUZZY_EQ(ga.rates.hbm, 0.8e12);  // 80 % of the data sheet's 1 TB/s (ComputeModel.cpp)
    // TP pairs inside a node: 2 * 1/2 S / 100 GB/s; DP pairs {0, 4}: across nodes at
    // 10 GB/s, 2 * 1/2 S / 10 GB/s (zero latencies).
    ASSERT_TRUE(close(ga.comm.tp.perByte, 1.0 / 100e9));
    ASSERT_TRUE(close(ga.comm.denseAllReduce.perByte, 1.0 / 10e9));
    ASSERT_QFUZZY_EQ(gb.comm.tp.perByte, ga.comm.tp.perByte);
    ASSERT_QFUZZY_EQ(gb.comm.denseAllReduce.perByte, ga.comm.denseAllReduce.perByte);
    ASSERT_QFUZZY_EQ(gb.comm.denseReduceScatter.perByte, ga.comm.denseReduceScatter.perByte);

    StageContext ctx;
    ctx.topology = &topo;
    ctx.model = &model;
    ctx.options = o;
    ctx.stage = &a;
    ctx.dp = 2;
    ctx.microBatch = 2;
    ctx.numMicroBatches = 4;
    ctx.numStages = 4;
    ctx.stageIndex = 1;
    ctx.prev = BoundaryLink{1, {10e9, 0, 1}};
    ctx.next = BoundaryLink{0, {100e9, 0, 1}};
    const StageCost whole = stageCost(ctx);
    const StageCost base = stageCostBase(ctx, gb, stageLayerSums(ctx, gb.rates));
    StageCost parts = base;
    finishStageCost(parts, ctx);
    ASSERT_QFUZZY_EQ(parts.perMicroBatch, whole.perMicroBatch);  // bit for bit
    ASSERT_QFUZZY_EQ(parts.iterationExtra, whole.iterationExtra);
    ASSERT_QFUZZY_EQ(parts.memoryTotal, whole.memoryTotal);
    // 1F1B stage 1 of 4 with 4 micro-batches holds min(4 - 1, 4) = 3.
    ASSERT_QFUZZY_EQ(whole.stashedMicroBatches, 3.0);
    // p2p: layer 2's output, 1e6 B per sample x 2 samples / 2 shards, to the next stage at
    // 100 GB/s; layer 0's to the previous one at 10 GB/s.
    ASSERT_TRUE(close(whole.p2pForward, 1e6 / 100e9));
    ASSERT_TRUE(close(whole.p2pBackward, 1e6 / 10e9));

    // The same base at another position with other links.
    StageContext first = ctx;
    first.stageIndex = 0;
    first.numStages = 2;
    first.prev.reset();
    first.next = BoundaryLink{1, {10e9, 0, 1}};
    StageCost moved = base;
    finishStageCost(moved, first);
    const StageCost direct = stageCost(first);
    ASSERT_QFUZZY_EQ(moved.perMicroBatch, direct.perMicroBatch);
    ASSERT_QFUZZY_EQ(moved.memoryTotal, direct.memoryTotal);
    ASSERT_QFUZZY_EQ(direct.stashedMicroBatches, 2.0);  // min(2 - 0, 4)
    ASSERT_TRUE(close(direct.p2pForward, 1e6 / 10e9));
    ASSERT_QFUZZY_EQ(direct.p2pBackward, 0.0);
    // Only p2p and the stash moved.
    ASSERT_QFUZZY_EQ(direct.forward, whole.forward);
    ASSERT_QFUZZY_EQ(direct.tpComm, whole.tpComm);
    ASSERT_QFUZZY_EQ(direct.iterationExtra, whole.iterationExtra);
    ASSERT_QFUZZY_EQ(direct.weights + direct.optimizerState, whole.weights + whole.optimizerState);
    ASSERT_TRUE(close(direct.perMicroBatch - direct.p2p, whole.perMicroBatch - whole.p2p, 1e-12));
    ASSERT_TRUE(close(whole.stash - direct.stash, whole.stashPerMicroBatch));
}

TEST(Evaluator, iterationTimeClosedForms)
{
    Plan plan;
    plan.globalBatch = 8;
    plan.microBatch = 1;
    plan.dp = 1;
    plan.stages.resize(4);
    std::vector<StageCost> c(4);
    const double t[4] = {1.0, 2.0, 1.5, 0.5};
    const double e[4] = {0.1, 0.3, 0.2, 0.4};
    for (int i = 0; i < 4; ++i) {
        c[i].perMicroBatch = t[i];
        c[i].iterationExtra = e[i];
    }
    // 1F1B over 4 stages, m = 8: (8 + 3) * 2.0 + 0.4.
    ASSERT_TRUE(close(iterationTime(c, plan), 11 * 2.0 + 0.4));
    // Interleaved, 2 devices x 2 chunks: device 0 = stages 0 and 2 (2.5 s, extra 0.3),
    // device 1 = stages 1 and 3 (2.5 s, extra 0.7): (8 + (2-1)/2) * 2.5 + 0.7.
    plan.schedule = Schedule::Interleaved;
    plan.virtualStages = 2;
    ASSERT_TRUE(close(iterationTime(c, plan), 8.5 * 2.5 + 0.7));
}

namespace {

// A plan skeleton of `depth` x `chunks` interleaved stages and 8 micro-batches of 1 (dp 1):
// what queueInterleavedSyncs() and iterationTime() read of a plan.
Plan interleavedPlanOf(int depth, int chunks)
{
    Plan plan;
    plan.globalBatch = 8;
    plan.microBatch = 1;
    plan.dp = 1;
    plan.stages.resize(static_cast<size_t>(depth * chunks));
    plan.schedule = Schedule::Interleaved;
    plan.virtualStages = chunks;
    return plan;
}

} // namespace

TEST(Evaluator, interleavedGradSyncQueues)
{
    // queueInterleavedSyncs(), gradients by hand: 2 devices x 2 chunks, m = 8, so the last group
    // holds S = 2 micro-batches of each chunk. Device 0 = stages 0 (chunk 0) and 2 (chunk 1).
    Plan plan = interleavedPlanOf(2, 2);
    std::vector<StageCost> c(4);
    const double serial[4] = {0.3, 0.05, 0.5, 0.05};
    const double window[4] = {0.2, 0.2, 0.1, 0.1};
    for (int i = 0; i < 4; ++i) {
        c[i].perMicroBatch = 1.0;
        c[i].optimizer = 0.01;
        c[i].gradSyncSerial = serial[i];
        c[i].gradSyncWindow = window[i];
        c[i].syncContention = 0.1;
        c[i].dpSync = 9;  // the per-stage value, replaced
        c[i].iterationExtra = 9;
    }
    std::vector<StageCost> q = c;
    queueInterleavedSyncs(q, plan);
    // Device 0: chunk 1 launches at -S x window(chunk 0) = -0.4 and runs 0.5 s, to 0.1: 0.1 s
    // exposed, 0.4 s hidden (+ 0.1 x 0.4). Chunk 0 launches at 0, waits for it, runs 0.1 ->
    // 0.4: 0.3 s exposed.
    ASSERT_TRUE(close(q[2].dpSync, 0.1 + 0.1 * 0.4));
    ASSERT_TRUE(close(q[0].dpSync, 0.3));
    ASSERT_TRUE(close(q[0].iterationExtra, 0.3 + 0.01));
    // Device 1: chunk 1 runs -0.4 -> -0.35, hidden; chunk 0 runs 0 -> 0.05, exposed.
    ASSERT_TRUE(close(q[3].dpSync, 0.1 * 0.05));
    ASSERT_TRUE(close(q[1].dpSync, 0.05));
    // T = (8 + 1/2) x 2.0 + device 0's extras (0.14 + 0.3 + 2 x 0.01).
    ASSERT_TRUE(close(iterationTime(q, plan), 8.5 * 2.0 + 0.14 + 0.3 + 0.02));
    // Each chunk behind its own backward alone would have left 0.41 + 0.12 exposed on device 0.
    // A stage without a queued reduction keeps its own dpSync; 1F1B plans are left alone.
    c[1].gradSyncSerial = 0;
    c[3].gradSyncSerial = 0;
    q = c;
    queueInterleavedSyncs(q, plan);
    ASSERT_EQ(q[1].dpSync, 9.0);
    ASSERT_EQ(q[3].iterationExtra, 9.0);
    plan.schedule = Schedule::OneFOneB;
    plan.virtualStages = 1;
    q = c;
    queueInterleavedSyncs(q, plan);
    ASSERT_EQ(q[0].dpSync, 9.0);
    ASSERT_EQ(q[2].dpSync, 9.0);
}

TEST(Evaluator, interleavedParamGathersQueue)
{
    // queueInterleavedSyncs(), parameters by hand: 2 devices x 3 chunks, m = 8 (S = 2).
    // Device 0 = stages 0, 2, 4; device 1 gathers nothing.
    const Plan plan = interleavedPlanOf(2, 3);
    std::vector<StageCost> c(6);
    for (StageCost &x : c) {
        x.perMicroBatch = 1.0;
        x.syncContention = 0.1;
        x.zeroGather = 7;
        x.iterationExtra = 9;
    }
    const double gather[3] = {0.3, 0.5, 0.2}, forward[3] = {0.1, 0.05, 0.1};
    for (int k = 0; k < 3; ++k) {
        c[2 * k].paramGatherSerial = gather[k];
        c[2 * k].paramGatherWindow = forward[k];
    }
    queueInterleavedSyncs(c, plan);
    // Chunk 0 gathers 0 -> 0.3; its first forward (0.1 s) ends at 0.3: 0.2 s waited, 0.1 hid.
    // Its second forward runs 0.3 -> 0.4.
    ASSERT_TRUE(close(c[0].zeroGather, 0.2 + 0.1 * 0.1));
    // Chunk 1 (launched at 0 with chunk 0) gathers 0.3 -> 0.8; its first forward starts at
    // 0.4 and ends at 0.8 instead of 0.45: 0.35 s waited. Its second forward ends at 0.85.
    ASSERT_TRUE(close(c[2].zeroGather, 0.35 + 0.1 * 0.15));
    // Chunk 2 launches when chunk 1 starts (0.4), queues to 0.8, gathers to 1.0; its first
    // forward starts at 0.85 and ends at 1.0 instead of 0.95: 0.05 s waited.
    ASSERT_TRUE(close(c[4].zeroGather, 0.05 + 0.1 * 0.15));
    ASSERT_TRUE(close(c[4].iterationExtra, c[4].zeroGather));
    ASSERT_EQ(c[1].zeroGather, 7.0);
    ASSERT_EQ(c[1].iterationExtra, 9.0);
}

TEST(Evaluator, stashFollowsSchedule)
{
    const Topology topo = tinyCluster();
    const ModelProfile model = tinyModel();
    UniformLayout u;
    u.pp = 4;
    u.microBatch = 1;
    u.globalBatch = 6;
    u.seqLength = 128;
    const Plan plan = *buildUniformPlan(u, topo, model);
    const Report r = evaluate(plan, topo, model, plainOptions());
    // 1F1B: stage s holds min(S - s, m) micro-batches; the first holds S = 4.
    for (int s = 0; s < 4; ++s)
        ASSERT_QFUZZY_EQ(r.stages[s].cost.stashedMicroBatches, double(std::min(4 - s, 6)));
    u.schedule = Schedule::GPipe;
    const Report g = evaluate(*buildUniformPlan(u, topo, model), topo, model, plainOptions());
    for (int s = 0; s < 4; ++s)
        ASSERT_QFUZZY_EQ(g.stages[s].cost.stashedMicroBatches, 6.0);
}

TEST(Evaluator, pipelineP2pUsesBoundaryLink)
{
    // pp 2 with tp 4: stage 0 on node 0, stage 1 on node 1; each of the 4 shards sends
    // 1e6 * 1 / 4 B over the 10 GB/s link: 2.5e-5 s each way.
    const Topology topo = tinyCluster();
    UniformLayout u;
    u.tp = 4;
    u.pp = 2;
    u.microBatch = 1;
    u.globalBatch = 4;
    u.seqLength = 128;
    const Plan plan = *buildUniformPlan(u, topo, tinyModel());
    const BoundaryLink bl = boundaryLink(topo, plan.stages[0], plan.stages[1]);
    ASSERT_EQ(bl.level, 1);
    const Report r = evaluate(plan, topo, tinyModel(), plainOptions());
    ASSERT_TRUE(close(r.stages[0].cost.p2pForward, 2.5e-5));
    ASSERT_TRUE(close(r.stages[1].cost.p2pBackward, 2.5e-5));
    ASSERT_QFUZZY_EQ(r.stages[0].cost.p2pBackward, 0.0);
}

TEST(Evaluator, memoryInfeasibleIsAResult)
{
    CostOptions o = plainOptions();
    o.runtimeOverheadBytes = 79.9e9;
    const Report r = evaluate(onePlan(1, 1), tinyCluster(), tinyModel(), o);
    ASSERT_TRUE(!r.feasible);
    ASSERT_EQ(r.reasons.size(), size_t(1));
    ASSERT_TRUE(r.reasons[0].find("needs") != std::string::npos);
    ASSERT_TRUE(r.iterationTime > 0);
}

TEST(Evaluator, invalidPlanReasons)
{
    Plan plan = onePlan(2, 1);
    plan.stages[0].devices[0][1] = 99;
    const Report r = evaluate(plan, tinyCluster(), tinyModel());
    ASSERT_TRUE(!r.feasible);
    ASSERT_TRUE(!r.reasons.empty());
    ASSERT_TRUE(r.reasons[0].find("device 99") != std::string::npos);
}

// --- properties -------------------------------------------------------------------------
TEST(Evaluator, fasterLinksNeverSlower)
{
    UniformLayout u;
    u.tp = 2;
    u.pp = 2;
    u.dp = 2;
    u.microBatch = 1;
    u.globalBatch = 8;
    u.seqLength = 128;
    const ModelProfile model = tinyModel();
    const Plan plan = *buildUniformPlan(u, tinyCluster(), model);
    const double base = evaluate(plan, tinyCluster(), model).iterationTime;
    for (double scale : {1.1, 2.0, 100.0})
        ASSERT_TRUE(evaluate(plan, tinyCluster(scale), model).iterationTime <= base);
}

TEST(Evaluator, widerTpNeverRaisesWeights)
{
    double prev = 1e300;
    for (int tp : {1, 2, 4, 8}) {
        const double w = evaluate(onePlan(tp, 1), tinyCluster(), tinyModel()).stages[0].cost.weights;
        ASSERT_TRUE(w <= prev);
        prev = w;
    }
}

TEST(Evaluator, zero3BelowZero1)
{
    for (int dp : {2, 4, 8}) {
        const double z1 = evaluate(onePlan(1, dp, 1), tinyCluster(), tinyModel()).peakMemoryBytes;
        const double z3 = evaluate(onePlan(1, dp, 3), tinyCluster(), tinyModel()).peakMemoryBytes;
        ASSERT_TRUE(z3 < z1);
    }
}

// --- published numbers --------------------------------------------------------------------
TEST(Evaluator, zeroPaperModelStates)
{
    // Rajbhandari et al. SC'20, Figure 1: 7.5B parameters, Nd = 64, K = 12, fp16
    // gradients: model states per device 120 GB (baseline), 31.4 GB (Pos),
    // 16.6 GB (Pos+g), 1.9 GB (Pos+g+p).
    ModelProfile m;
    m.seqLength = 128;
    LayerProfile l;
    l.kind = LayerKind::Transformer;
    l.params = 7.5e9;
    m.layers.push_back(l);
    DeviceSpec dev{"big", 100e12, 1e15, 1e12, 0.5, ""};
    const Topology topo =
        Topology::uniform("z", dev, {{"node", 8, {100e9, 0, 1}}, {"cluster", 8, {10e9, 0, 1}}});
    CostOptions o = plainOptions();
    o.gradBytesPerParam = 2;
    const double published[4] = {120, 31.4, 16.6, 1.9};
    for (int zero = 0; zero <= 3; ++zero) {
        UniformLayout u;
        u.dp = 64;
        u.zero = zero;
        u.globalBatch = 64;
        u.seqLength = 128;
        const Plan plan = *buildUniformPlan(u, topo, m);
        const StageCost c = evaluate(plan, topo, m, o).stages[0].cost;
        double states = c.weights + c.gradients + c.optimizerState;
        if (zero == 3)
            states -= 2 * 7.5e9 * 2;  // our gather buffers are not model states
        ASSERT_TRUE(std::abs(states / 1e9 - published[zero]) / published[zero] < 0.02) 
            << "ZeRO-" << zero << ": " << states / 1e9 << " GB";
    }
}

namespace {

struct ThroughputRow {
    std::string name;
    std::string model;
    int layers;
    int hidden;
    int heads;
    int tp;
    int pp;
    int gpus;
    int batch;
    double measured;  // teraFLOP/s per GPU, eq. (3) of the paper
};

void PrintTo(const ThroughputRow &row, std::ostream *os) { *os << row.name; }

// Narayanan et al., SC'21, Table 1 (weak scaling) and Table 2 (PTD-P rows): A100-80GB,
// Selene (8 GPUs per node on NVLink, 8 x 200 Gb/s HDR per node), s = 2048, V = 51200,
// micro-batch 1, full activation recomputation.
const std::vector<ThroughputRow> throughputRows = {
    {"T1 1.7B 32 GPUs", "1.7B", 24, 2304, 24, 1, 1, 32, 512, 137.0},
    {"T1 18.4B 256 GPUs", "18.4B", 40, 6144, 48, 8, 1, 256, 1024, 135.0},
    {"T1 39.1B 512 GPUs", "39.1B", 48, 8192, 64, 8, 2, 512, 1536, 138.0},
    {"T1 145.6B 1536 GPUs", "145.6B", 80, 12288, 96, 8, 8, 1536, 2304, 148.0},
    {"T1 1008B 3072 GPUs", "1008B", 128, 25600, 160, 8, 64, 3072, 3072, 163.0},
    {"T2 174.6B 384 GPUs", "174.6B", 96, 12288, 96, 8, 12, 384, 1536, 153.0},
    {"T2 174.6B 1536 GPUs", "174.6B", 96, 12288, 96, 8, 12, 1536, 1536, 141.0},
    {"T2 529.6B 2240 GPUs", "529.6B", 105, 20480, 128, 8, 35, 2240, 2240, 159.0},
};

class EvaluatorPublished : public ::testing::TestWithParam<ThroughputRow> {};

} // namespace

TEST_P(EvaluatorPublished, publishedThroughput)
{
    const ThroughputRow &row = GetParam();
    const std::string &model = row.model;
    const int layers = row.layers, hidden = row.hidden, heads = row.heads, tp = row.tp, pp = row.pp,
              gpus = row.gpus, batch = row.batch;
    const double measured = row.measured;
    ModelConfig c = *modelPreset("gpt3-175b");
    c.name = model;
    c.layers = layers;
    c.hidden = hidden;
    c.heads = c.kvHeads = heads;
    c.ffnHidden = 4 * hidden;
    c.vocab = 51200;
    c.seqLength = 2048;
    c.globalBatch = batch;
    const ModelProfile m = buildProfile(c);
    const DeviceSpec a100 = *devicePreset("a100-80gb");
    // NVLink 3: 300 GB/s per direction; HDR InfiniBand: 25 GB/s per GPU.
    const Topology topo = Topology::uniform(
        "selene", a100, {{"node", 8, {300e9, 3e-6, 1}}, {"cluster", gpus / 8, {25e9, 5e-6, 1}}});
    UniformLayout u;
    u.tp = tp;
    u.pp = pp;
    u.dp = gpus / (tp * pp);
    u.globalBatch = batch;
    u.seqLength = 2048;
    u.recompute = Recompute::Full;
    const Plan plan = *buildUniformPlan(u, topo, m);
    CostOptions o;
    o.framework = Framework::MegatronLM;  // the paper's 2021 Megatron-LM
    const Report r = evaluate(plan, topo, m, o);
    ASSERT_TRUE(r.feasible) << "the published configuration ran on 80 GB A100s";
    // Eq. (3): F = 96 B s l h^2 (1 + s/6h + V/16lh), counted with recomputation.
    const double s = 2048, h = hidden, l = layers, V = 51200;
    const double flops = 96.0 * batch * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    const double predicted = flops / (r.iterationTime * gpus) / 1e12;
    const double err = (predicted - measured) / measured;
    std::printf("%s: predicted %.1f TFLOP/s/GPU, measured %.0f, error %+.1f%%\n", row.name.c_str(), predicted,
                measured, 100 * err);
    ASSERT_TRUE(std::abs(err) < 0.20);
}

INSTANTIATE_TEST_SUITE_P(Rows, EvaluatorPublished, ::testing::ValuesIn(throughputRows),
                         [](const auto &p) { return rowName(p.param.name); });

TEST(Evaluator, publishedH100)
{
    // NVIDIA NeMo AutoModel performance summary, DGX-H100 BF16 pre-training: Llama3 70B,
    // 64 GPUs, GBS 128, MBS 1, seq 8192, TP 1, PP 1, CP 2, FSDP: 866.77 tokens/s/GPU.
    // FSDP = ZeRO-3 over the 32 data-parallel replicas; 80 GB needs full recomputation.
    // The llama preset uses flash attention (no s x s saved tensors, docs/cost-model.md):
    // predicted 755 tokens/s/GPU, -12.9 %; with Korthikanti's materialised attention it
    // was 702, -19.0 % (the s^2 bytes inflated the element-wise time).
    ModelOptions mo;
    mo.seqLength = 8192;
    mo.globalBatch = 128;
    const ModelProfile m = *resolveModel("llama3-70b", mo);
    const DeviceSpec h100 = *devicePreset("h100-sxm-80gb");
    // NVLink 4: 450 GB/s per direction; 400 Gb/s NDR per GPU = 50 GB/s.
    const Topology topo =
        Topology::uniform("dgx-h100", h100, {{"node", 8, {450e9, 3e-6, 1}}, {"cluster", 8, {50e9, 5e-6, 1}}});
    UniformLayout u;
    u.cp = 2;
    u.dp = 32;
    u.zero = 3;
    u.recompute = Recompute::Full;
    u.globalBatch = 128;
    u.seqLength = 8192;
    const Plan plan = *buildUniformPlan(u, topo, m);
    CostOptions o;
    o.framework = Framework::Fsdp;  // NeMo AutoModel: PyTorch FSDP2
    const Report r = evaluate(plan, topo, m, o);
    ASSERT_TRUE(r.feasible);
    const double perGpu = r.tokensPerSecond / 64;
    const double err = (perGpu - 866.77) / 866.77;
    std::printf("Llama3-70B on 64 H100: predicted %.0f tokens/s/GPU, measured 866.77, error %+.1f%%, "
                "peak memory %.2f GB\n",
          perGpu, 100 * err, r.peakMemoryBytes / 1e9);
    ASSERT_TRUE(std::abs(err) < 0.20);
}

// DeepSpeed's pipeline engine as it runs (issue 23, point 3; docs/cost-model.md §1b): the
// TrainSchedule's step stream, blocking p2p, the gradient reduction after the flush and the
// BF16_Optimizer's memory, DeepSpeedZeroOptimizer's gradient buffers (issue 50, point 4), each
// against a hand computation on a tiny instance.
#include "Evaluator.h"
#include "FrameworkProfile.h"
#include "Pipeline.h"
#include "PlanBuilder.h"
#include "Simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace nest;

namespace {

bool close(double a, double b, double rel = 1e-9)
{
    return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

// 16 devices: 4 nodes of 4 at 100 GB/s inside (1 us), 10 GB/s between (5 us).
// 100 TFLOP/s at efficiency 0.5 = 50 TFLOP/s, 80 GB, 1 TB/s HBM.
Topology cluster()
{
    DeviceSpec dev{"ds", 100e12, 80e9, 1e12, 0.5, ""};
    return Topology::uniform("ds", dev, {{"node", 4, {100e9, 1e-6, 1}}, {"cluster", 4, {10e9, 5e-6, 1}}});
}

// `blocks` transformer layers without shapes: 1 s forward and 2 s backward per sample at
// 50 TFLOP/s, `params` parameters each, 1 MB output per sample.
ModelProfile chain(int blocks, double params)
{
    ModelProfile m;
    m.seqLength = 128;
    for (int i = 0; i < blocks; ++i) {
        LayerProfile l;
        l.kind = LayerKind::Transformer;
        l.fwdFlops = 50e12;
        l.bwdFlops = 100e12;
        l.params = l.tpParams = params;
        l.outputBytes = 1e6;
        l.stashTpBytes = 1e6;
        m.layers.push_back(l);
    }
    return m;
}

CostOptions options(Framework f)
{
    CostOptions o;
    o.framework = f;
    o.stack = Stack::Tuned;  // overlap_comm on, as Megatron-DeepSpeed's configs set it
    o.elementwiseTraffic = false;
    o.runtimeOverheadBytes = 0;
    o.optimizerStepBytesPerParam = 0;  // no optimizer time: the schedule alone
    return o;
}

Plan pipeline(int pp, int dp, int globalBatch, const ModelProfile &m, int zero = 0)
{
    UniformLayout u;
    u.pp = pp;
    u.dp = dp;
    u.globalBatch = globalBatch;
    u.microBatch = 1;
    u.seqLength = 128;
    u.zero = zero;
    return *buildUniformPlan(u, cluster(), m);
}

// One transfer of a 1 MB activation inside a node: latency + bytes / bandwidth.
constexpr double kTransfer = 1e-6 + 1e6 / 100e9;

} // namespace

TEST(DeepSpeedPipeline, trainScheduleStepCount)
{
    // runtime/pipe/schedule.py TrainSchedule.steps(): total_steps = 2 * (micro_batches + stages - 1).
    EXPECT_EQ(deepSpeedSteps(2, 2), 6);
    EXPECT_EQ(deepSpeedSteps(8, 4), 22);
    EXPECT_EQ(deepSpeedSteps(240, 35), 548);  // MT-NLG 530B on 2240 GPUs: 1920 / 8 micro-batches
    // Half a micro-batch's time per step: the same closed form as 1F1B.
    EXPECT_EQ(deepSpeedSteps(8, 4) / 2.0, pipelineWeight(8, 4));
    const FrameworkProfile &ds = frameworkProfile(Framework::DeepSpeed);
    EXPECT_TRUE(ds.trainScheduleSteps && ds.blockingP2p && ds.bf16Optimizer);
    EXPECT_FALSE(ds.pipelineGradReduceOverlap);
    EXPECT_TRUE(frameworkProfile(Framework::MegatronCore).pipelineGradReduceOverlap);
    EXPECT_FALSE(frameworkProfile(Framework::MegatronLM).trainScheduleSteps);
}

TEST(DeepSpeedPipeline, blockingP2pDoublesTheExchange)
{
    // pp 2 in one node. Megatron batches the activation send with the gradient receive: one
    // transfer per neighbour per micro-batch (kTransfer = 1 us + 1e6 B / 100 GB/s = 11 us).
    // DeepSpeed's p2p.send / p2p.recv are separate blocking calls: two, one after the other.
    const ModelProfile m = chain(2, 0);
    const Plan plan = pipeline(2, 1, 2, m);
    const Report lm = evaluate(plan, cluster(), m, options(Framework::MegatronLM));
    const Report ds = evaluate(plan, cluster(), m, options(Framework::DeepSpeed));
    ASSERT_TRUE(lm.feasible && ds.feasible);
    EXPECT_TRUE(close(lm.stages[0].cost.p2pForward, kTransfer));
    EXPECT_TRUE(close(ds.stages[0].cost.p2pForward, 2 * kTransfer));
    EXPECT_TRUE(close(ds.stages[1].cost.p2pBackward, 2 * kTransfer));
    EXPECT_EQ(ds.stages[0].cost.p2pBackward, 0.0);
    // Closed form: (m + S - 1) (f + b + p2p) = 3 x (1 + 2 + 2 x 11 us).
    EXPECT_TRUE(close(ds.iterationTime, 3 * (3 + 2 * kTransfer)));
}

TEST(DeepSpeedPipeline, simulatorRunsTheStepStream)
{
    // S = 2, M = 2, f = 1 s, b = 2 s, x = one transfer (11 us). TrainSchedule, by step
    // (stage 0 forwards in steps 0, 2, backwards in 3, 5; stage 1 forwards in 1, 3,
    // backwards in 2, 4); "meet" = both partners done with the previous step:
    //   0: s0 F0 [0, 1]
    //   1: s0 sends F0's activation, s1 receives it: meet 1, 1 transfer; s1 F0 [1+x, 2+x]
    //   2: s0 F1 [1+x, 2+x] (no neighbour before it); s1 B0 [2+x, 4+x] (none after it)
    //   3: s0 sends F1's activation and receives B0's gradient, s1 the reverse: meet 4+x,
    //      2 transfers; s0 B0 [4+3x, 6+3x], s1 F1 [4+3x, 5+3x]
    //   4: s1 B1 [5+3x, 7+3x]; s0 has no micro-batch
    //   5: s0 receives B1's gradient: meet 7+3x, 1 transfer; s0 B1 [7+4x, 9+4x]
    // Makespan 9 + 4x; the closed form charges every micro-batch both exchanges, 9 + 6x (an
    // upper bound); Megatron's batched exchange gives 9 + 3x.
    const ModelProfile m = chain(2, 0);
    const Plan plan = pipeline(2, 1, 2, m);
    const SimulationResult sim = simulate(plan, cluster(), m, options(Framework::DeepSpeed));
    ASSERT_TRUE(sim.error.empty()) << sim.error;
    EXPECT_TRUE(close(sim.makespan, 9 + 4 * kTransfer)) << sim.makespan;
    double b1Start = -1;
    int computations = 0;
    for (const TimelineEvent &e : sim.events) {
        if (e.kind == "forward" || e.kind == "backward")
            ++computations;
        if (e.stage == 0 && e.microBatch == 1 && e.kind == "backward")
            b1Start = e.start;
    }
    EXPECT_EQ(computations, 8);  // 2 stages x 2 micro-batches x (forward, backward)
    EXPECT_TRUE(close(b1Start, 7 + 4 * kTransfer));
    const double closed = evaluate(plan, cluster(), m, options(Framework::DeepSpeed)).iterationTime;
    EXPECT_TRUE(close(closed, 9 + 6 * kTransfer));
    EXPECT_LE(sim.makespan, closed);
}

TEST(DeepSpeedPipeline, simulatorAgreesOnBalancedPipelines)
{
    // 4 stages, 8 micro-batches, no communication: the step stream is 1F1B's timing
    // exactly, (8 + 3) x 3 s (the blocking exchanges only add their transfers).
    const ModelProfile m = chain(4, 0);
    const Plan plan = pipeline(4, 1, 8, m);
    CostOptions o = options(Framework::DeepSpeed);
    const SimulationResult sim = simulate(plan, cluster(), m, o);
    ASSERT_TRUE(sim.error.empty());
    const double closed = evaluate(plan, cluster(), m, o).iterationTime;
    EXPECT_LT(std::abs(sim.makespan - closed) / closed, 0.01) << sim.makespan << " vs " << closed;
    EXPECT_NEAR(sim.makespan, 33.0, 33.0 * 1e-3);
}

// NeMo's gradient bucket, 50 MiB (Collectives.h kGradientBucketBytes), written out here.
constexpr double kBucket = 50.0 * 1024 * 1024;

TEST(DeepSpeedPipeline, gradientReductionAfterTheFlush)
{
    // pp 2, dp 2 (replicas side by side in one node), ZeRO 0, 1e8 parameters per stage.
    // The BF16_Optimizer all-reduces its fp32 buffer: S = 4 B x 1e8 = 4e8 B over 2 devices
    // at 100 GB/s: 2 x [(2-1)/2 x S / B + 1 us] = 4e8 / 100e9 + 2 us per call, issued in
    // 50 MiB buckets whose calls each pay the 2 us (Collectives.h, bucketed: S / bucket + 1
    // calls): 4e8 / 100e9 + 2 us x (4e8 / 52428800 + 1) = 4.017 ms.
    const double allReduce = 4e8 / 100e9 + 2e-6 * (4e8 / kBucket + 1);
    const ModelProfile m = chain(2, 1e8);
    const Plan piped = pipeline(2, 2, 4, m);
    const Report ds = evaluate(piped, cluster(), m, options(Framework::DeepSpeed));
    ASSERT_TRUE(ds.feasible);
    // The pipeline engine reduces after the last backward: fully exposed.
    EXPECT_TRUE(close(ds.stages[0].cost.dpSync, allReduce)) << ds.stages[0].cost.dpSync;
    EXPECT_TRUE(close(ds.stages[0].cost.iterationExtra, allReduce));
    // The knob: overlapped as without a pipeline, behind the last backward (2 s): only the
    // contention remains, kappa = 0.1 of the hidden time.
    CostOptions on = options(Framework::DeepSpeed);
    on.pipelineGradOverlap = 1;
    const Report overlapped = evaluate(piped, cluster(), m, on);
    EXPECT_TRUE(close(overlapped.stages[0].cost.dpSync, 0.1 * allReduce));
    // Without a pipeline, DeepSpeed's engine overlaps it (overlap_comm).
    const ModelProfile one = chain(1, 1e8);
    const Plan flat = pipeline(1, 2, 4, one);
    const Report dsFlat = evaluate(flat, cluster(), one, options(Framework::DeepSpeed));
    EXPECT_TRUE(close(dsFlat.stages[0].cost.dpSync, 0.1 * allReduce));
    // Megatron-Core keeps overlapping when pipelined.
    const Report mc = evaluate(piped, cluster(), m, options(Framework::MegatronCore));
    EXPECT_LT(mc.stages[0].cost.dpSync, 0.5 * allReduce);
}

TEST(DeepSpeedPipeline, gradientReduceOverlapKnob)
{
    // One stage, dp 2, ZeRO 0, 1e8 parameters; Megatron-LM's 2021 profile keeps FP32 main
    // gradients (4 B) and all-reduces them after the backward (its local DDP): 4e8 B over 2
    // devices at 100 GB/s in 50 MiB buckets, as in gradientReductionAfterTheFlush above.
    const double allReduce = 4e8 / 100e9 + 2e-6 * (4e8 / kBucket + 1);
    const ModelProfile one = chain(1, 1e8);
    const Plan flat = pipeline(1, 2, 4, one);
    const Report local = evaluate(flat, cluster(), one, options(Framework::MegatronLM));
    EXPECT_TRUE(close(local.stages[0].cost.dpSync, allReduce)) << local.stages[0].cost.dpSync;
    // --DDP-impl torch (PyTorch DDP) all-reduces bucket by bucket during the backward (2 s):
    // CostOptions::gradReduceOverlap = 1 hides it, leaving the contention, 0.1 x the time.
    CostOptions torchDdp = options(Framework::MegatronLM);
    torchDdp.gradReduceOverlap = 1;
    const Report overlapped = evaluate(flat, cluster(), one, torchDdp);
    EXPECT_TRUE(close(overlapped.stages[0].cost.dpSync, 0.1 * allReduce)) << overlapped.stages[0].cost.dpSync;
    // And 0 exposes a framework's own overlap (Megatron-Core tuned, --overlap-grad-reduce,
    // whose recipes reduce BF16 gradients: 2e8 B).
    const double bf16AllReduce = 2e8 / 100e9 + 2e-6 * (2e8 / kBucket + 1);
    CostOptions off = options(Framework::MegatronCore);
    off.gradReduceOverlap = 0;
    const Report exposed = evaluate(flat, cluster(), one, off);
    EXPECT_TRUE(close(exposed.stages[0].cost.dpSync, bf16AllReduce)) << exposed.stages[0].cost.dpSync;
    const Report own = evaluate(flat, cluster(), one, options(Framework::MegatronCore));
    EXPECT_TRUE(close(own.stages[0].cost.dpSync, 0.1 * bf16AllReduce)) << own.stages[0].cost.dpSync;
}

TEST(DeepSpeedPipeline, bf16OptimizerMemory)
{
    // P = 1e8 parameters per device (one block per stage), dp 2, ZeRO 1 (the BF16_Optimizer):
    //   weights      2 B x P               = 2e8  (bf16)
    //   gradients    4 B x P + 2 B x P     = 6e8  (fp32 accumulation buffer, never sharded,
    //                                              + the bf16 grads autograd keeps)
    //   optimizer    12 B x P / 2          = 6e8  (fp32 master + Adam m, v for the shard)
    // 14 B per parameter where the distributed optimizer's bf16 accounting had 4 + 12 / 2 = 10.
    const ModelProfile m = chain(2, 1e8);
    const Report ds = evaluate(pipeline(2, 2, 4, m, 1), cluster(), m, options(Framework::DeepSpeed));
    ASSERT_TRUE(ds.feasible);
    const StageCost &c = ds.stages[0].cost;
    EXPECT_TRUE(close(c.weights, 2e8));
    EXPECT_TRUE(close(c.gradients, 6e8));
    EXPECT_TRUE(close(c.optimizerState, 6e8));
    // Its ZeRO-1 sync is the fp32 all-reduce (above), not a reduce-scatter, and the bf16
    // weights are all-gathered after the step: (2-1)/2 x 2e8 B / 100 GB/s + 1 us.
    // Both in 50 MiB buckets, each call paying its latency (as above).
    EXPECT_TRUE(close(c.dpSync, 4e8 / 100e9 + 2e-6 * (4e8 / kBucket + 1))) << c.dpSync;
    EXPECT_TRUE(close(c.zeroGather, 0.5 * 2e8 / 100e9 + 1e-6 * (2e8 / kBucket + 1))) << c.zeroGather;
    // An explicit --grad-bytes style override still wins for the buffer.
    CostOptions fp16 = options(Framework::DeepSpeed);
    fp16.gradBytesPerParam = 2;
    const Report over = evaluate(pipeline(2, 2, 4, m, 1), cluster(), m, fp16);
    EXPECT_TRUE(close(over.stages[0].cost.gradients, 4e8));  // 2 B buffer + 2 B bf16 grads
}

TEST(DeepSpeedPipeline, zeroOptimizerGradientBuffers)
{
    // Issue 50, point 4. Gradients accumulated in the training dtype (--grad-accum-dtype fp16 /
    // bf16; DeepSpeed's default under ZeRO, runtime/engine.py get_data_types()): ZeRO-1 runs
    // DeepSpeedZeroOptimizer (zero/stage_1_and_2.py), not the BF16_Optimizer. P = 1e8
    // parameters per device, dp 2:
    //   weights      2 B x P           = 2e8
    //   gradients    2 B x P           = 2e8   (param.grad in fp16, not sharded at stage 1; no
    //                                           fp32 buffer, no second copy)
    //   optimizer    12 B x P / 2      = 6e8
    //   reduce buffer reduce_bucket_size 5e8 elements x 2 B = 1e9 (contiguous_gradients)
    CostOptions half = options(Framework::DeepSpeed);
    half.gradAccumDtype = GradAccumDtype::Half;
    constexpr double kBuffer = 5e8 * 2;

    // Pipelined (pp 2, one block per stage): reduce_gradients(pipeline_parallel=True) makes one
    // buffer after the flush, when stash and working activations are freed, so the peak is
    // max(states + stash + activations, states + buffer) = states + buffer here (1 MB
    // activations): 2e8 + 2e8 + 6e8 + 1e9 = 2e9, the buffer shown in the gradients.
    {
        const ModelProfile m = chain(2, 1e8);
        const Report r = evaluate(pipeline(2, 2, 4, m, 1), cluster(), m, half);
        ASSERT_TRUE(r.feasible);
        const StageCost &c = r.stages[0].cost;
        EXPECT_TRUE(close(c.weights, 2e8));
        EXPECT_TRUE(close(c.optimizerState, 6e8));
        EXPECT_TRUE(close(c.memoryTotal, 2e8 + 2e8 + 6e8 + kBuffer)) << c.memoryTotal;
        EXPECT_TRUE(close(c.gradients, 2e8 + kBuffer - c.stash - c.activations)) << c.gradients;
        // Its ZeRO-1 sync is a reduce-scatter of 2 B gradients, not the fp32 all-reduce:
        // less than half of the BF16_Optimizer's.
        const Report bf16 = evaluate(pipeline(2, 2, 4, m, 1), cluster(), m, options(Framework::DeepSpeed));
        EXPECT_LT(c.dpSync, 0.5 * bf16.stages[0].cost.dpSync);
        // --grad-accum-dtype fp32 is the BF16_Optimizer's 4 + 2 B, as without the option.
        CostOptions fp32 = options(Framework::DeepSpeed);
        fp32.gradAccumDtype = GradAccumDtype::Fp32;
        const Report f = evaluate(pipeline(2, 2, 4, m, 1), cluster(), m, fp32);
        EXPECT_TRUE(close(f.stages[0].cost.gradients, 6e8));
        EXPECT_TRUE(close(bf16.stages[0].cost.gradients, 6e8));
    }
    // Not pipelined: backward() makes the buffer before the backward runs, two with
    // overlap_comm (the profile's overlapped reduction): 2e8 + 2 x 1e9 of gradients.
    {
        const ModelProfile m = chain(1, 1e8);
        const Report r = evaluate(pipeline(1, 2, 4, m, 1), cluster(), m, half);
        ASSERT_TRUE(r.feasible);
        const StageCost &c = r.stages[0].cost;
        EXPECT_TRUE(close(c.gradients, 2e8 + 2 * kBuffer)) << c.gradients;
        EXPECT_TRUE(close(c.memoryTotal, 2e8 + 2e8 + 2 * kBuffer + 6e8 + c.stash + c.activations));
        // ZeRO-2 shards the gradients over dp (2e8 / 2) and keeps the same buffers.
        const Report z2 = evaluate(pipeline(1, 2, 4, m, 2), cluster(), m, half);
        EXPECT_TRUE(close(z2.stages[0].cost.gradients, 1e8 + 2 * kBuffer)) << z2.stages[0].cost.gradients;
    }
    // Megatron-Core has no such buffer: the option only sets its gradient width (2 B).
    {
        const ModelProfile m = chain(1, 1e8);
        CostOptions mc = options(Framework::MegatronCore);
        mc.gradAccumDtype = GradAccumDtype::Fp32;
        const Report r = evaluate(pipeline(1, 2, 4, m, 1), cluster(), m, mc);
        EXPECT_TRUE(close(r.stages[0].cost.gradients, 4e8));
    }
}

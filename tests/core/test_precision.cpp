// Precisions (issue 46): which operations a low precision changes (one test per operation
// class), the memory of the low-precision weight copies, the devices' peaks, the default and
// explicit precision lists, the search over them (the best of the single-precision searches,
// verified by the evaluator), the plan file, and the CLI's refusals. Expected values are worked
// out by hand below from the documented formulas (docs/cost-model.md, "Precision"), never
// read back from the code under test.
#include "ClusterTemplates.h"
#include "ComputeModel.h"
#include "DeviceSpec.h"
#include "Evaluator.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "PlanBuilder.h"
#include "PlanIO.h"
#include "PlannerRegistry.h"
#include "PrecisionSearch.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace nest;
using namespace coretest;

namespace {

// roundDevice() (CoreTestSupport.h) in round numbers: 1,000 TFLOP/s BF16, 2,000 FP8 and MXFP8,
// 4,000 NVFP4, 1 TB/s HBM, a large-GEMM efficiency of 0.5 (an unknown class: the FP8 / MXFP8 /
// NVFP4 efficiency ratios are the ones Transformer Engine's GEMM profiling tutorial measured,
// 0.95 / 0.92 / 0.58: H200 FP8 16.785 against BF16 31.968 ms per layer at twice the peak, B300
// MXFP8 7.161 and NVFP4 3.764 against 13.102 ms at twice and six times the peak).

double shape(double x) { return x / (x + 128); }

const Precision kFp8{NumberFormat::Fp8, Fp8Recipe::Delayed};
const Precision kMxfp8{NumberFormat::Mxfp8, Fp8Recipe::Delayed};
const Precision kNvfp4{NumberFormat::Nvfp4, Fp8Recipe::Delayed};

LayerProfile layerWith(std::vector<GemmShape> gemms, LayerKind kind = LayerKind::Transformer)
{
    LayerProfile l;
    l.kind = kind;
    l.gemms = std::move(gemms);
    return l;
}

} // namespace

TEST(PrecisionGemm, aLinearGemmInFp8RunsAtTheFp8PeakPlusItsQuantisation)
{
    const ComputeRates r = computeRates(roundDevice(), 0, true, 1, kFp8);
    const double m = 8192, n = 8192, k = 8192;
    // compute: 2mnk / (2000e12 x 0.5 x 0.95 x f(m) f(n) f(k)); operands 1 B each, result 2 B
    // at 0.8 TB/s; the first operand (m x k) quantised: read 2 B, write 1 B + its transpose 1 B
    // (delayed scaling: the scale comes from the amax history, no pass before the cast).
    const double compute = 2 * m * n * k / (2000e12 * 0.5 * 0.95 * shape(m) * shape(n) * shape(k));
    const double memory = (m * k + k * n + 2 * m * n) / 0.8e12;
    const double quantise = 4 * m * k / 0.8e12;
    EXPECT_TRUE(qFuzzyEqual(gemmSeconds(m, n, k, r, true), std::max(compute, memory) + quantise));
    // Not a linear layer's GEMM: the BF16 formula, as before precisions.
    const double bf16 = std::max(2 * m * n * k / (1000e12 * 0.5 * std::pow(shape(8192), 3)),
                                 2 * (m * k + k * n + m * n) / 0.8e12);
    EXPECT_TRUE(qFuzzyEqual(gemmSeconds(m, n, k, r, false), bf16));
    // BF16 rates leave a linear GEMM in BF16.
    const ComputeRates bf = computeRates(roundDevice(), 0, true, 1, {});
    EXPECT_DOUBLE_EQ(gemmSeconds(m, n, k, bf, true), gemmSeconds(m, n, k, bf, false));
}

TEST(PrecisionGemm, microscalingAndNvfp4CarryTheirScales)
{
    const double m = 4096, n = 4096, k = 4096;
    // MXFP8: 1 B + one E8M0 byte per 32 elements; quantising writes both copies: 2 + 2 x 33/32.
    const ComputeRates mx = computeRates(roundDevice(), 0, true, 1, kMxfp8);
    const double mxCompute = 2 * m * n * k / (2000e12 * 0.5 * 0.92 * std::pow(shape(4096), 3));
    const double mxMemory = ((1 + 1.0 / 32) * (m * k + k * n) + 2 * m * n) / 0.8e12;
    EXPECT_TRUE(qFuzzyEqual(gemmSeconds(m, n, k, mx, true),
                            std::max(mxCompute, mxMemory) + (2 + 2 * (1 + 1.0 / 32)) * m * k / 0.8e12));
    // NVFP4: half a byte + one E4M3 byte per 16 elements, at the FP4 peak and ratio 0.58; its
    // per-tensor FP32 scale needs the operand's amax first: one more 2 B read.
    const ComputeRates fp4 = computeRates(roundDevice(), 0, true, 1, kNvfp4);
    const double fpCompute = 2 * m * n * k / (4000e12 * 0.5 * 0.58 * std::pow(shape(4096), 3));
    const double fpMemory = ((0.5 + 1.0 / 16) * (m * k + k * n) + 2 * m * n) / 0.8e12;
    EXPECT_TRUE(qFuzzyEqual(gemmSeconds(m, n, k, fp4, true),
                            std::max(fpCompute, fpMemory) + (2 + 2 + 2 * (0.5 + 1.0 / 16)) * m * k / 0.8e12));
}

// One test per operation class: what FP8 may change and what it must leave alone.
TEST(PrecisionOps, fp8ChangesTheLinearGemmsOnly)
{
    const ComputeRates bf = computeRates(roundDevice(), 0, true, 1, {});
    const ComputeRates f8 = computeRates(roundDevice(), 0, true, 1, kFp8);
    StageConfig w;
    auto times = [&](const LayerProfile &l, const ComputeRates &r) { return layerTimes(l, 4096, 1, w, r, true); };
    using S = GemmShape::Split;
    // Linear projections: faster.
    const LayerProfile linear = layerWith({{1, 8192, 8192, 1, S::Column, false, false}});
    EXPECT_LT(times(linear, f8).forward, 0.75 * times(linear, bf).forward);
    EXPECT_LT(times(linear, f8).backward, 0.75 * times(linear, bf).backward);
    // Expert FFNs (grouped GEMMs): faster over forward and backward (a narrow expert's forward
    // alone can lose to its input's cast: 1,024 tokens x 8,192 cast for an n of 2,048).
    const LayerProfile experts = layerWith({{2, 2048, 8192, 8, S::Column, true, false}});
    EXPECT_LT(times(experts, f8).forward + times(experts, f8).backward,
              times(experts, bf).forward + times(experts, bf).backward);
    // The router: unchanged (FP32 logits in Megatron-Core).
    const LayerProfile router = layerWith({{1, 64, 8192, 1, S::None, false, false, true}});
    EXPECT_DOUBLE_EQ(times(router, f8).forward, times(router, bf).forward);
    EXPECT_DOUBLE_EQ(times(router, f8).backward, times(router, bf).backward);
    // Materialised attention scores and the fused attention kernel: unchanged.
    const LayerProfile scores = layerWith({{1, 4096, 128, 32, S::Heads, false, true}});
    EXPECT_DOUBLE_EQ(times(scores, f8).forward, times(scores, bf).forward);
    LayerProfile fused;
    fused.attentionFlops = 4 * 4096.0 * 4096 * 4096;
    EXPECT_DOUBLE_EQ(times(fused, f8).forward, times(fused, bf).forward);
    EXPECT_DOUBLE_EQ(times(fused, f8).attention, times(fused, bf).attention);
    // Norms and element-wise kernels: unchanged.
    LayerProfile elementwise;
    elementwise.elementwiseSpBytes = 1e9;
    elementwise.attentionFlops = 1;  // has shapes
    EXPECT_DOUBLE_EQ(times(elementwise, f8).forward, times(elementwise, bf).forward);
    // The embedding and the output layer stay BF16 even with linear GEMMs.
    const LayerProfile head = layerWith({{1, 50000, 8192, 1, S::Column, false, false}}, LayerKind::Head);
    EXPECT_DOUBLE_EQ(times(head, f8).forward, times(head, bf).forward);
    const LayerProfile embedding = layerWith({{1, 8192, 8192, 1, S::Column, false, false}}, LayerKind::Embedding);
    EXPECT_DOUBLE_EQ(times(embedding, f8).forward, times(embedding, bf).forward);
}

TEST(PrecisionMemory, lowPrecisionCopiesOfTheLinearWeights)
{
    // A GPT of 2 blocks, hidden 256, FFN 1024: per block the linear weights are QKV 256 x 768,
    // output 256 x 256 and the MLP 256 x 1024 twice: 786,432 parameters (biases, norms,
    // embedding and head are not linear weights of a block).
    const double linearPerBlock = 256.0 * 768 + 256.0 * 256 + 2 * 256.0 * 1024;
    ASSERT_DOUBLE_EQ(linearPerBlock, 786432);
    const ModelProfile model = buildProfile(tinyGptConfig(2));
    const Topology topo = Topology::uniform("one", roundDevice(), {{"node", 1, linkOf(100e9, 1e-6)}});
    UniformLayout u;
    u.globalBatch = 16;
    u.seqLength = 256;
    const Plan bf16 = *buildUniformPlan(u, topo, model);
    auto weights = [&](const Plan &p, Framework fw, Stack stack = Stack::Tuned) {
        CostOptions o;
        o.framework = fw;
        o.stack = stack;  // the recipes' --fp8-param-gather
        return evaluate(p, topo, model, o).stages.at(0).cost.weights;
    };
    Plan fp8 = bf16;
    fp8.precision = kFp8;
    // FSDP (llm-foundry, Transformer Engine FP8): BF16 weights kept, plus an FP8 copy and its
    // transpose, 2 B per linear weight.
    EXPECT_DOUBLE_EQ(weights(fp8, Framework::Fsdp) - weights(bf16, Framework::Fsdp), 2 * 2 * linearPerBlock);
    // Megatron-Core without its distributed optimizer (ZeRO 0): --fp8-param-gather needs it,
    // so the BF16 weights stay and the copies come on top, as under FSDP.
    EXPECT_DOUBLE_EQ(weights(fp8, Framework::MegatronCore) - weights(bf16, Framework::MegatronCore),
                     2 * 2 * linearPerBlock);
    // With it (ZeRO 1, one replica: nothing sharded), --fp8-param-gather: the FP8 copies
    // replace the BF16 ones (2 B for 2 B).
    auto zero1 = [](Plan p) {
        p.stages.at(0).zero = 1;
        return p;
    };
    EXPECT_DOUBLE_EQ(weights(zero1(fp8), Framework::MegatronCore), weights(zero1(bf16), Framework::MegatronCore));
    // Megatron-LM's defaults gather BF16 (no --fp8-param-gather): the copies come on top.
    EXPECT_DOUBLE_EQ(weights(zero1(fp8), Framework::MegatronCore, Stack::Defaults) -
                         weights(zero1(bf16), Framework::MegatronCore, Stack::Defaults),
                     2 * 2 * linearPerBlock);
    // MXFP8: 2 x (1 + 1/32) B replace 2 B.
    Plan mx = bf16;
    mx.precision = kMxfp8;
    EXPECT_TRUE(qFuzzyEqual(weights(zero1(mx), Framework::MegatronCore) - weights(zero1(bf16), Framework::MegatronCore),
                            2 * linearPerBlock * (2 * (1 + 1.0 / 32) - 2)));
    // NVFP4: Megatron-Bridge's preset (bf16_with_nvfp4_mixed) sets no parameter gather in the
    // low precision, so the BF16 weights stay and 2 x (1/2 + 1/16) B per linear weight of the
    // two blocks come on top.
    Plan fp4 = bf16;
    fp4.precision = kNvfp4;
    EXPECT_TRUE(qFuzzyEqual(weights(zero1(fp4), Framework::MegatronCore) - weights(zero1(bf16), Framework::MegatronCore),
                            2 * linearPerBlock * 2 * (0.5 + 1.0 / 16)));
    // Blockwise FP8 (bf16_with_fp8_subchannel_scaling_mixed: fp8_param_gather False) alike:
    // its copies, 2 x (1 + 4/128) B, on top of the BF16 weights.
    Plan block = bf16;
    block.precision = {NumberFormat::Fp8, Fp8Recipe::Blockwise};
    EXPECT_TRUE(qFuzzyEqual(weights(zero1(block), Framework::MegatronCore) - weights(zero1(bf16), Framework::MegatronCore),
                            2 * linearPerBlock * 2 * (1 + 4.0 / 128)));
    // FP8 current scaling (bf16_with_fp8_current_scaling_mixed: fp8_param_gather True) gathers
    // FP8: its copies replace the BF16 weights, as delayed scaling's.
    Plan current = bf16;
    current.precision = {NumberFormat::Fp8, Fp8Recipe::Current};
    EXPECT_DOUBLE_EQ(weights(zero1(current), Framework::MegatronCore), weights(zero1(bf16), Framework::MegatronCore));
}

TEST(PrecisionGather, whichPrecisionsEachFrameworkGathersLowerThanBf16)
{
    const Precision current{NumberFormat::Fp8, Fp8Recipe::Current};
    const Precision block{NumberFormat::Fp8, Fp8Recipe::Blockwise};
    // Megatron-Bridge's presets: fp8_param_gather True for delayed, current and MXFP8, False
    // for blockwise and NVFP4; nothing in BF16, nothing under Megatron-LM's defaults.
    const FrameworkProfile &mcore = frameworkProfile(Framework::MegatronCore, Stack::Tuned);
    EXPECT_TRUE(mcore.gathersLowPrecision(kFp8));
    EXPECT_TRUE(mcore.gathersLowPrecision(current));
    EXPECT_TRUE(mcore.gathersLowPrecision(kMxfp8));
    EXPECT_FALSE(mcore.gathersLowPrecision(block));
    EXPECT_FALSE(mcore.gathersLowPrecision(kNvfp4));
    EXPECT_FALSE(mcore.gathersLowPrecision({}));
    EXPECT_FALSE(frameworkProfile(Framework::MegatronCore, Stack::Defaults).gathersLowPrecision(kFp8));
    // torchtitan: FSDP2 float8 all-gathers for tensor-wise FP8 ([float8]
    // enable_fsdp_float8_all_gather); its [mx] converter has no such switch.
    const FrameworkProfile &titan = frameworkProfile(Framework::Torchtitan, Stack::Tuned);
    EXPECT_TRUE(titan.gathersLowPrecision(current));
    EXPECT_FALSE(titan.gathersLowPrecision(kMxfp8));
    // llm-foundry's FSDP gathers BF16.
    EXPECT_FALSE(frameworkProfile(Framework::Fsdp, Stack::Tuned).gathersLowPrecision(kFp8));
}

TEST(PrecisionGemm, aPerTensorScaleFromTheTensorCostsOneMoreRead)
{
    // Current scaling and NVFP4 reduce the operand's amax before casting it: 2 B more per
    // element than delayed scaling, whose scale is already known; block scales need no pass.
    const double m = 4096, n = 4096, k = 4096;
    auto quantise = [&](const Precision &p) {
        const ComputeRates r = computeRates(roundDevice(), 0, true, 1, p);
        return gemmSeconds(m, n, k, r, true) - gemmSeconds(m, n, k, r, true, false);
    };
    EXPECT_TRUE(qFuzzyEqual(quantise(kFp8), (2 + 2) * m * k / 0.8e12));
    EXPECT_TRUE(qFuzzyEqual(quantise({NumberFormat::Fp8, Fp8Recipe::Current}), (2 + 2 + 2) * m * k / 0.8e12));
    EXPECT_TRUE(qFuzzyEqual(quantise({NumberFormat::Fp8, Fp8Recipe::Blockwise}),
                            (2 + 2 * (1 + 4.0 / 128)) * m * k / 0.8e12));
    EXPECT_TRUE(qFuzzyEqual(quantise(kMxfp8), (2 + 2 * (1 + 1.0 / 32)) * m * k / 0.8e12));
    EXPECT_TRUE(qFuzzyEqual(quantise(kNvfp4), (2 + 2 + 2 * (0.5 + 1.0 / 16)) * m * k / 0.8e12));
}

TEST(PrecisionMemory, linearInputsAreStashedQuantised)
{
    // The same GPT (2 blocks, h 256, f 1024, s 256, micro-batch 1, tp 1). Transformer Engine
    // saves each Linear's quantized input for the weight gradient, not the BF16 one: per block
    // the two norm outputs (2 x 2sh B) and the MLP's down-projection input (2sf B) shrink to
    // half in FP8 (per-tensor scale: 1 B per element), and the output projection saves its
    // FP8 copy of the attention output (sh B) beside the BF16 one: s(f + 2h) - sh = s(f + h)
    // fewer bytes per block.
    const ModelProfile model = buildProfile(tinyGptConfig(2));
    const Topology topo = Topology::uniform("one", roundDevice(), {{"node", 1, linkOf(100e9, 1e-6)}});
    UniformLayout u;
    u.globalBatch = 16;
    u.seqLength = 256;
    const Plan bf16 = *buildUniformPlan(u, topo, model);
    Plan fp8 = bf16;
    fp8.precision = kFp8;
    auto stash = [&](const Plan &p) {
        CostOptions o;
        o.framework = Framework::Serial;  // no fragmentation on the stash
        return evaluate(p, topo, model, o).stages.at(0).cost.stashPerMicroBatch;
    };
    const double s = 256, h = 256, f = 1024;
    EXPECT_NEAR(stash(bf16) - stash(fp8), 2 * s * (f + h), 1e-6);
    // MXFP8: 1 + 1/32 B per saved element: (1 - (1 + 1/32) / 2) of the inputs saved, the
    // attention output's copy costs (1 + 1/32) / 2 of its BF16 bytes.
    Plan mx = bf16;
    mx.precision = kMxfp8;
    const double r = (1 + 1.0 / 32) / 2;
    EXPECT_NEAR(stash(bf16) - stash(mx), 2 * ((1 - r) * (2 * s * f + 4 * s * h) - r * 2 * s * h), 1e-6);
}

TEST(PrecisionMemory, fp8AttentionKeepsQKVAndTheOutputInFp8)
{
    // The same GPT (2 blocks, h 256, s 256, micro-batch 1, tp 1, MHA): the core attention
    // keeps Q, K, V and its output, 4 x 2sh B per block in BF16; Transformer Engine's FP8
    // attention keeps them in FP8, 4sh B less per block.
    const ModelProfile model = buildProfile(tinyGptConfig(2));
    const double s = 256, h = 256;
    for (const LayerProfile &l : model.layers)
        if (l.kind == LayerKind::Transformer)
            EXPECT_DOUBLE_EQ(l.attentionQkvoStashBytes, 4 * 2 * s * h);
    const Topology topo = Topology::uniform("one", roundDevice(), {{"node", 1, linkOf(100e9, 1e-6)}});
    UniformLayout u;
    u.globalBatch = 16;
    u.seqLength = 256;
    const Plan bf16 = *buildUniformPlan(u, topo, model);
    auto stash = [&](const Plan &p, bool fp8Attention) {
        CostOptions o;
        o.framework = Framework::Serial;  // no fragmentation on the stash
        o.fp8Attention = fp8Attention;
        return evaluate(p, topo, model, o).stages.at(0).cost.stashPerMicroBatch;
    };
    for (const Precision &p : {kFp8, kMxfp8}) {
        Plan low = bf16;
        low.precision = p;
        EXPECT_NEAR(stash(low, false) - stash(low, true), 2 * 4 * s * h, 1e-6) << precisionLabel(p);
    }
    // No FP8 recipe, no FP8 attention: BF16 and NVFP4 keep their stash.
    EXPECT_DOUBLE_EQ(stash(bf16, true), stash(bf16, false));
    Plan fp4 = bf16;
    fp4.precision = kNvfp4;
    EXPECT_DOUBLE_EQ(stash(fp4, true), stash(fp4, false));
}

TEST(PrecisionDevices, presetsCarryTheirDataSheetPeaks)
{
    struct Row {
        const char *name;
        double bf16, fp8, mxfp8, nvfp4, memoryGB;
    };
    // Dense TFLOP/s from each data sheet (half the sparse figure where only that is given).
    // Memory as the devices report it: nvidia-smi's MiB totals (H200 143,771, B200 183,359,
    // GB200 189,471), the full-GPU MIG profiles' GiB (B300 7g.269gb, GB300 7g.278gb), ROCm's
    // byte count (MI300X), the data sheets' 80 GiB (H800) and decimal 288 GB (MI355X).
    const double MiB = 1048576.0 / 1e9, GiB = 1.073741824;
    const Row rows[] = {{"h800", 989, 1979, 0, 0, 80 * GiB},
                        {"h200", 989, 1979, 0, 0, 143771 * MiB},
                        {"b200", 2250, 4500, 4500, 9000, 183359 * MiB},
                        {"b300", 2250, 4500, 4500, 13500, 269 * GiB},
                        {"gb200", 2500, 5000, 5000, 10000, 189471 * MiB},
                        {"gb300", 2500, 5000, 5000, 15000, 278 * GiB},
                        {"mi300x", 1307.4, 2614.9, 0, 0, 205.822885888},
                        {"mi355x", 2516.6, 5033.2, 5033.2, 0, 288}};
    for (const Row &r : rows) {
        auto d = devicePreset(r.name);
        ASSERT_TRUE(d) << r.name;
        EXPECT_NEAR(d->peakFlops, r.bf16 * 1e12, 1e6) << r.name;
        EXPECT_NEAR(d->peakFor(NumberFormat::Fp8), r.fp8 * 1e12, 1e6) << r.name;
        EXPECT_NEAR(d->peakFor(NumberFormat::Mxfp8), r.mxfp8 * 1e12, 1e6) << r.name;
        EXPECT_NEAR(d->peakFor(NumberFormat::Nvfp4), r.nvfp4 * 1e12, 1e6) << r.name;
        EXPECT_NEAR(d->memoryBytes, r.memoryGB * 1e9, 1e6) << r.name;
        EXPECT_FALSE(d->source.empty()) << r.name;
    }
    EXPECT_FALSE(devicePreset("a100-80gb")->supports(NumberFormat::Fp8));
    // An inline device's low-precision peaks survive the JSON round trip.
    DeviceSpec d = roundDevice();
    d.matmulEfficiency = 0;
    EXPECT_EQ(deviceFromJson(deviceToJson(d), "device"), d);
}

TEST(PrecisionDevices, blackwellUltraHoldsTheFractionOfItsPeakTransformerEngineMeasured)
{
    // By hand from the GEMM profiling tutorial's BF16 per-layer times: H200 31.968 ms, B300
    // 13.102 ms for the same GEMMs, peaks 989 and 2,250 TFLOP/s: 31.968 / 13.102 = 2.43993,
    // x 989 / 2250 = 1.07249, x the H100 chip's fitted 0.618 = 0.66280. The GB300 is the B300
    // chip; B200 and GB200 were not measured and keep their stated 0.60.
    const double ultra = 0.6628;
    EXPECT_NEAR(classGemmEfficiency(*devicePreset("b300")), ultra, 5e-5);
    EXPECT_NEAR(classGemmEfficiency(*devicePreset("gb300")), ultra, 5e-5);
    EXPECT_NEAR(classGemmEfficiency(*devicePreset("h200")), 0.618, 1e-12);
    EXPECT_NEAR(classGemmEfficiency(*devicePreset("b200")), 0.60, 1e-12);
    EXPECT_NEAR(classGemmEfficiency(*devicePreset("gb200")), 0.60, 1e-12);
    // The low-precision ratios apply to it as to any Blackwell: MXFP8 at 0.92 of it.
    const ComputeRates mx = computeRates(*devicePreset("gb300"), 0, true, 1, kMxfp8);
    EXPECT_NEAR(mx.linearEfficiency, ultra * 0.92, 1e-4);
    EXPECT_NEAR(mx.linearPeak, 5000e12, 1e6);
}

TEST(PrecisionLists, defaultsAreWhatTheDevicesAndTheFrameworkSupport)
{
    auto labels = [](const Result<std::vector<Precision>> &r) {
        std::string s;
        for (const Precision &p : *r)
            s += (s.empty() ? "" : " ") + precisionLabel(p);
        return s;
    };
    auto cluster = [](const char *device) { return *makeCluster("fat-tree", {}, device); };
    const Topology h100 = cluster("h100-sxm-80gb"), b200 = cluster("b200"), a100 = cluster("a100-80gb"),
                   mi355 = cluster("mi355x");
    const Fp8Recipe d = Fp8Recipe::Delayed;
    EXPECT_EQ(labels(searchPrecisions({}, d, false, h100, Framework::MegatronCore)), "bf16 fp8-delayed");
    EXPECT_EQ(labels(searchPrecisions({}, d, false, b200, Framework::MegatronCore)), "bf16 fp8-delayed mxfp8 nvfp4");
    EXPECT_EQ(labels(searchPrecisions({}, d, false, a100, Framework::MegatronCore)), "bf16");
    EXPECT_EQ(labels(searchPrecisions({}, d, false, mi355, Framework::MegatronCore)), "bf16 fp8-delayed mxfp8");
    // torchtitan's float8 is current scaling: the default recipe follows the framework.
    EXPECT_EQ(labels(searchPrecisions({}, d, false, h100, Framework::Torchtitan)), "bf16 fp8-current");
    EXPECT_EQ(labels(searchPrecisions({}, d, false, h100, Framework::DeepSpeed)), "bf16");
    // Explicit lists: as given, or refused with the reason.
    EXPECT_EQ(labels(searchPrecisions({NumberFormat::Fp8}, Fp8Recipe::Blockwise, true, h100, Framework::MegatronCore)),
              "fp8-blockwise");
    const auto nvfp4 = searchPrecisions({NumberFormat::Nvfp4}, d, false, h100, Framework::MegatronCore);
    ASSERT_FALSE(nvfp4);
    EXPECT_TRUE(contains(nvfp4.error(), "h100-sxm-80gb")) << nvfp4.error();
    EXPECT_TRUE(contains(nvfp4.error(), "bf16, fp8")) << nvfp4.error();
    const auto titan = searchPrecisions({NumberFormat::Fp8}, d, true, h100, Framework::Torchtitan);
    ASSERT_FALSE(titan);
    EXPECT_TRUE(contains(titan.error(), "torchtitan")) << titan.error();
}

TEST(PrecisionSearch, theBestOfTheSinglePrecisionSearches)
{
    ModelConfig c = tinyGptConfig(4);
    c.hidden = 2048;
    c.heads = 16;
    c.kvHeads = 16;
    c.ffnHidden = 8192;
    c.seqLength = 2048;
    c.globalBatch = 64;
    const ModelProfile model = buildProfile(c);
    const Topology topo = Topology::uniform("h100x8", *devicePreset("h100-sxm-80gb"),
                                            {{"node", 4, linkOf(450e9, 1e-6)}, {"rack", 2, linkOf(50e9, 2e-6)}});
    const auto planner = makePlanner("nest");
    SearchOptions o;
    o.precisions = {{}, kFp8};
    const PlanResult both = planPrecisions(*planner, topo, model, o, {}, CancelToken{});
    ASSERT_TRUE(both.found) << both.message;
    EXPECT_TRUE(both.verified) << both.message;
    double best = std::numeric_limits<double>::infinity();
    Precision bestPrecision;
    for (const Precision &p : o.precisions) {
        SearchOptions one;
        one.cost.precision = p;
        const PlanResult r = planner->plan(topo, model, one);
        ASSERT_TRUE(r.found);
        EXPECT_EQ(r.plan.precision, p);
        EXPECT_TRUE(r.verified) << r.message;
        if (r.objective < best) {
            best = r.objective;
            bestPrecision = p;
        }
    }
    EXPECT_DOUBLE_EQ(both.objective, best);
    EXPECT_EQ(both.plan.precision, bestPrecision);
    // A GEMM-heavy model on H100: FP8 wins.
    EXPECT_EQ(both.plan.precision, kFp8);
    // The plan evaluates to its objective under its own precision whatever the options say.
    EXPECT_DOUBLE_EQ(evaluate(both.plan, topo, model, {}).iterationTime, both.objective);
}

TEST(PrecisionPlanFile, roundTripAndRefusals)
{
    const ModelProfile model = buildProfile(tinyGptConfig(2));
    const Topology topo = Topology::uniform("one", roundDevice(), {{"node", 1, linkOf(100e9, 1e-6)}});
    UniformLayout u;
    u.globalBatch = 16;
    u.seqLength = 256;
    Plan p = *buildUniformPlan(u, topo, model);
    EXPECT_FALSE(planToJson(p).contains("precision"));  // bf16 plans read as before
    p.precision = {NumberFormat::Fp8, Fp8Recipe::Blockwise};
    const Json j = planToJson(p);
    EXPECT_EQ(j.at("precision"), "fp8");
    EXPECT_EQ(j.at("fp8_recipe"), "blockwise");
    EXPECT_EQ(planFromJson(j, "plan.json")->precision, p.precision);
    Json bad = j;
    bad["precision"] = "mxfp8";
    const auto recipe = planFromJson(bad, "plan.json");
    ASSERT_FALSE(recipe);
    EXPECT_TRUE(contains(recipe.error(), "fp8_recipe")) << recipe.error();
    bad["precision"] = "fp9";
    bad.erase("fp8_recipe");
    const auto unknown = planFromJson(bad, "plan.json");
    ASSERT_FALSE(unknown);
    EXPECT_TRUE(contains(unknown.error(), "bf16, fp8, mxfp8, nvfp4")) << unknown.error();
    // A device without FP8: the plan is not one the cluster can run.
    const Topology a100 = Topology::uniform("a100", *devicePreset("a100-80gb"), {{"node", 1, linkOf(100e9, 1e-6)}});
    p.precision = kFp8;
    const std::vector<std::string> errors = planErrors(p, a100, model);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_TRUE(contains(errors.front(), "a100-80gb")) << errors.front();
}

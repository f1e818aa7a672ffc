#include "ComputeModel.h"

#include <algorithm>
#include <string>

namespace nest {

namespace {

constexpr double kTile = 128;          // GEMM tile edge: the half-efficiency dimension
constexpr double kHbmEfficiency = 0.8; // streaming kernels reach 80 % of the data sheet's HBM
                                       // bandwidth (STREAM-like copy/triad on A100 and H100:
                                       // 1.6-1.8 of 2.0 TB/s, 2.6-3.0 of 3.35 TB/s)
constexpr double kAttentionBackward = 2.5;  // FlashAttention backward: 5 matmuls vs 2
// Eager PyTorch's RMSNorm and rotary embedding over their fused kernels' 4 B per element (read
// a BF16 element, write one). RMSNorm (transformers' LlamaRMSNorm, fms's
// LayerNormParameterized, ATen's rms_norm composite behind torch.nn.RMSNorm): x.float() reads
// 2 writes 4, pow(2) reads 4 writes 4, mean() reads 4, x * rsqrt(...) reads 4 writes 4,
// .type_as(x) reads 4 writes 2, weight * x reads 2 writes 2: 36 B, 9 times. The complex
// rotary embedding of torchtitan's and fms's apply_rotary_emb: .float() reads 2 writes 4, the
// complex product reads 4 writes 4, .type_as() reads 4 writes 2: 20 B, 5 times.
constexpr double kEagerRmsNorm = 36.0 / 4;
constexpr double kEagerRotary = 20.0 / 4;
// The low-precision GEMMs' large-GEMM efficiency relative to BF16's (docs/cost-model.md,
// "Precision"): Transformer Engine's own measurements of the twelve GEMMs of a training layer
// (TE docs, "GEMM Profiling Tutorial", benchmarks/gemm/benchmark_gemm.py, pre-quantized mode:
// kernels only, quantisation costed apart; M = 15,872 tokens, hidden 4,096, FFN 16,384).
// Per-layer times over the BF16 one, divided by the format's peak over BF16's:
//   H200:  BF16 31.968 ms, FP8 (tensor-wise) 16.785 ms: 1.90x of 2x    -> 0.95;
//   B300:  BF16 13.102 ms, FP8 6.812 ms: 1.92x of 2x                     -> 0.96,
//          MXFP8 7.161 ms: 1.83x of 2x                                   -> 0.92,
//          NVFP4 3.764 ms: 3.48x of 6x (13.5 of 2.25 PFLOP/s dense)      -> 0.58.
// B200 / GB200 / GB300 are taken as the B300 (the one Blackwell TE measured). Classes TE did
// not measure keep the data-sheet-era estimate: cuBLAS FP8 on H100 at ~1,300 of 1,979 TFLOP/s
// against ~750 of 989 BF16 (0.87); CUTLASS NVFP4 on B200 at ~6-6.5 of 9 PFLOP/s against 0.80
// of the BF16 peak (0.85).
constexpr double kFp8Ratio = 0.87;
constexpr double kFp4Ratio = 0.85;
constexpr double kHopperFp8 = 0.95;
constexpr double kBlackwellFp8 = 0.96;
constexpr double kBlackwellMxfp8 = 0.92;
constexpr double kBlackwellFp4 = 0.58;

// The large-GEMM BF16 efficiency of the H100 chip (H100, H200, H800), fitted by
// tests/validation/fit.py on the 3 H100 calibration rows.
constexpr double kHopperGemm = 0.618;
// Blackwell Ultra (B300, GB300): the same TE measurement of the twelve BF16 GEMMs of one
// training layer (above) took 31.968 ms on H200 and 13.102 ms on B300, 2.440 times faster
// against data-sheet peaks 2.275 times apart (2,250 / 989 TFLOP/s dense), so the B300
// reaches 1.0725 times the Hopper fraction of its peak: 0.663 with H100's fitted 0.618. Same
// kernels, same shapes, no training row: a ratio of two measurements, not a fit. The GB300 is
// the B300 chip at its own data-sheet peak. B200 and GB200 were not measured and keep the
// Hopper-like assumption: a format's speed over BF16 on one chip is its tensor cores' (which
// is why the ratios above are carried over), but the fraction of its peak a chip holds
// depends on its clocks under its own power limit, which the two chips do not share.
constexpr double kBlackwellUltraGemm = kHopperGemm * (31.968 / 13.102) * (989.0 / 2250.0);

struct ClassRates {
    const char *prefix;
    double gemm;       // large-GEMM efficiency (fitted, derived from a measurement, or assumed)
    double attention;  // Transformer Engine fused attention (published kernel benchmarks)
    double fa2;        // FlashAttention-2
    // The large-GEMM efficiency of FP8, MXFP8 and NVFP4 as a fraction of the BF16 one
    // (docs/cost-model.md, "Precision"): one measured ratio per class and format.
    double fp8 = kFp8Ratio;
    double mxfp8 = kFp8Ratio;
    double fp4 = kFp4Ratio;
};

// Sources in docs/cost-model.md ("Compute from shapes"). The GEMM column is the one free
// parameter per class: fitted on the calibration rows of tests/validation/runs.json (A100,
// H100), derived from a kernel measurement (B300, above), or a stated assumption; the
// attention column is the forward+backward throughput FlashAttention reports at head
// dimension 128 (A100: FlashAttention-2, Dao 2023, Fig. 4-6, ~60 %; H100: cuDNN / FA3
// fused attention in Transformer Engine, Shah et al. 2024, ~50 %; V100 has no fused kernel,
// so models there use materialised attention and this column is unused).
// FlashAttention-2 on H100 reaches 335-350 TFLOP/s forward+backward (Dao 2023, Fig. 7;
// Shah et al. 2024, Fig. 5), 35 % of peak; on A100 it is the fused kernel of record.
constexpr ClassRates kClasses[] = {
    {"v100", 0.70, 0.40, 0.40},  // not calibrated: assumed like A100
    {"a100", 0.734, 0.60, 0.60},  // tests/validation/fit.py, 4 A100 calibration rows
    {"h100", kHopperGemm, 0.50, 0.35, kHopperFp8, kHopperFp8},  // tests/validation/fit.py, 3 H100 calibration rows
    {"h200", kHopperGemm, 0.50, 0.35, kHopperFp8, kHopperFp8},  // the H100 chip
    {"h800", kHopperGemm, 0.50, 0.35, kHopperFp8, kHopperFp8},  // the H100 chip
    {"b200", 0.60, 0.45, 0.30, kBlackwellFp8, kBlackwellMxfp8, kBlackwellFp4},  // not calibrated: assumed like H100
    {"b300", kBlackwellUltraGemm, 0.45, 0.30, kBlackwellFp8, kBlackwellMxfp8, kBlackwellFp4},  // TE's B300 / H200 ratio
    {"gb200", 0.60, 0.45, 0.30, kBlackwellFp8, kBlackwellMxfp8, kBlackwellFp4},  // the B200 chip
    {"gb300", kBlackwellUltraGemm, 0.45, 0.30, kBlackwellFp8, kBlackwellMxfp8, kBlackwellFp4},  // the B300 chip
    {"mi300x", 0.50, 0.35, 0.35},  // not calibrated
    {"mi355x", 0.50, 0.35, 0.35},  // not calibrated: assumed like MI300X
    {"tpuv4", 0.60, 0.50, 0.50},
    {"tpu-v4", 0.60, 0.50, 0.50},
};
// Unknown devices: assumed like H100, with the low-precision ratios TE measured (FP8 on
// Hopper, MXFP8 and NVFP4 on the one Blackwell).
constexpr ClassRates kDefault = {"", 0.62, 0.50, 0.35, kHopperFp8, kBlackwellMxfp8, kBlackwellFp4};

const ClassRates &classOf(const DeviceSpec &d)
{
    for (const ClassRates &c : kClasses)
        if (d.name.rfind(c.prefix, 0) == 0)
            return c;
    return kDefault;
}

double shape(double x)
{
    return x / (x + kTile);
}

} // namespace

double classGemmEfficiency(const DeviceSpec &device)
{
    return device.matmulEfficiency > 0 ? device.matmulEfficiency : classOf(device).gemm;
}

double lowPrecisionEfficiencyRatio(const DeviceSpec &device, NumberFormat format)
{
    const ClassRates &c = classOf(device);
    switch (format) {
    case NumberFormat::Bf16: return 1.0;
    case NumberFormat::Fp8: return c.fp8;
    case NumberFormat::Mxfp8: return c.mxfp8;
    case NumberFormat::Nvfp4: return c.fp4;
    }
    return 1.0;
}

ComputeRates computeRates(const DeviceSpec &device, double gemmEfficiencyOverride, bool fusedAttention,
                          double elementwisePasses, const Precision &precision)
{
    const ClassRates &c = classOf(device);
    ComputeRates r;
    r.peak = device.peakFlops;
    r.gemmEfficiency = gemmEfficiencyOverride > 0 ? gemmEfficiencyOverride : classGemmEfficiency(device);
    // An overridden GEMM efficiency scales attention alike (the same tensor cores).
    r.attentionEfficiency = (fusedAttention ? c.attention : c.fa2) * r.gemmEfficiency / c.gemm;
    r.elementwisePasses = elementwisePasses;
    r.hbm = device.memoryBandwidth * kHbmEfficiency;
    if (precision.lowPrecision() && device.supports(precision.format)) {
        r.linearPeak = device.peakFor(precision.format);
        r.linearEfficiency = r.gemmEfficiency * lowPrecisionEfficiencyRatio(device, precision.format);
        const FormatBytes bytes = formatBytes(precision);
        r.linearOperandBytes = bytes.operand + bytes.scale;
        r.linearQuantizeBytes = quantizeBytes(precision);
    }
    return r;
}

double gemmSeconds(double m, double n, double k, const ComputeRates &r, bool linear, bool quantise)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return 0.0;
    if (linear && r.lowPrecision()) {
        // Low-precision operands (with their scales), a BF16 result; the first operand is
        // quantised before the GEMM by a memory-bound cast (the weights' copies are made
        // once per step, their cost counted with the memory: Precision.h).
        const double flops = 2 * m * n * k;
        const double compute = flops / (r.linearPeak * r.linearEfficiency * shape(m) * shape(n) * shape(k));
        const double memory = (r.linearOperandBytes * (m * k + k * n) + 2 * m * n) / r.hbm;
        return std::max(compute, memory) + (quantise ? r.linearQuantizeBytes * m * k / r.hbm : 0.0);
    }
    const double flops = 2 * m * n * k;
    const double compute = flops / (r.rate() * shape(m) * shape(n) * shape(k));
    const double memory = 2 * (m * k + k * n + m * n) / r.hbm;  // BF16 operands and result
    return std::max(compute, memory);
}

bool hasShapes(const LayerProfile &layer)
{
    return !layer.gemms.empty() || layer.attentionFlops > 0;
}

LayerTimes layerTimes(const LayerProfile &l, int seq, double b, const StageConfig &w, const ComputeRates &r,
                      bool elementwise, double expertLoad)
{
    LayerTimes t;
    // The embedding and the output layer stay in BF16 (Precision.h).
    const bool blockLinears = l.kind != LayerKind::Embedding && l.kind != LayerKind::Head;
    const double tp = std::max(w.tp, 1), cp = std::max(w.cp, 1), ep = std::max(w.ep, 1);
    const double etp = std::max(w.expertTp(), 1);
    const double tokens = b * seq / cp;  // this device's tokens (context parallelism splits them)
    for (const GemmShape &g : l.gemms) {
        double m = g.perSequence ? seq / cp : tokens * g.rowsPerToken;
        double n = g.n, k = g.k, count = g.count * (g.perSequence ? b : 1);
        const double split = g.expert ? etp : tp;
        switch (g.split) {
        case GemmShape::Split::Column: n /= split; break;
        case GemmShape::Split::Row: k /= split; break;
        case GemmShape::Split::Heads: count /= split; break;
        case GemmShape::Split::None: break;
        }
        if (g.expert) {
            // A rank holds count / ep experts, one grouped GEMM each, and computes them on the
            // routed tokens of its etp x ep grid: its own b s / (cp tp) sequence-parallel
            // tokens, exchanged over ep ranks and gathered over etp (Megatron-Core's
            // dispatcher), expertLoad times the mean on the most loaded rank. A small
            // expert's GEMM gets the tile factor of its own m and n (shape()).
            m = m * ep * etp / (tp * g.count) * expertLoad;
            count = g.count / ep;
        }
        const bool linear = blockLinears && isLinearGemm(g);
        const double fwd = count * gemmSeconds(m, n, k, r, linear);
        // Data gradient (its output gradient cast), weight gradient (both operands' copies
        // exist already: the forward's and the data gradient's casts wrote them).
        const double bwd = count * (gemmSeconds(m, k, n, r, linear) + gemmSeconds(k, n, m, r, linear, false));
        t.forward += fwd;
        t.backward += bwd;
        if (g.perSequence)
            t.attention += fwd;  // materialised attention: what selective recompute reruns
        else
            t.gemm += fwd;
        if (g.shared)
            t.sharedExpert += fwd;
        if (g.mlaUp)
            t.mlaUp += fwd;
    }
    if (l.attentionFlops > 0) {
        // Per device: its heads (tp) and its query block (cp) against the whole sequence.
        const double flops = l.attentionFlops * b / (tp * cp);
        const double eff = r.attentionEfficiency * shape(seq / cp) * shape(seq);
        const double fused = flops / (r.peak * eff);
        t.attention += fused;
        t.forward += fused;
        t.backward += kAttentionBackward * fused;
    }
    if (elementwise) {
        // An eager stack runs every fused kernel as about elementwisePasses passes, except the
        // RMSNorm and the rotary embedding, whose PyTorch op chains are counted op by op.
        const double eagerSp = r.eager() ? (kEagerRmsNorm - r.elementwisePasses) * l.rmsNormSpBytes : 0.0;
        const double eagerTp = r.eager() ? (kEagerRotary - r.elementwisePasses) * l.rotaryTpBytes : 0.0;
        const double bytes = (r.elementwisePasses * l.elementwiseSpBytes + eagerSp) / (w.sp ? tp : 1) * b / cp +
                             (r.elementwisePasses * l.elementwiseTpBytes + eagerTp) / tp * b / cp;
        t.forward += bytes / r.hbm;
        t.backward += 2 * bytes / r.hbm;
        t.norms = r.elementwisePasses * l.normSpBytes / (w.sp ? tp : 1) * b / cp / r.hbm;
        t.expertActivation = r.elementwisePasses * l.expertActivationTpBytes / tp * b / cp / r.hbm;
    }
    return t;
}

} // namespace nest

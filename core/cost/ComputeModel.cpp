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

struct ClassRates {
    const char *prefix;
    double gemm;       // large-GEMM efficiency (calibrated: tests/validation/fit.py)
    double attention;  // Transformer Engine fused attention (published kernel benchmarks)
    double fa2;        // FlashAttention-2
};

// Sources in docs/cost-model.md ("Compute from shapes"). The GEMM column is the one free
// parameter per class, fitted on the calibration rows of tests/validation/runs.json; the
// attention column is the forward+backward throughput FlashAttention reports at head
// dimension 128 (A100: FlashAttention-2, Dao 2023, Fig. 4-6, ~60 %; H100: cuDNN / FA3
// fused attention in Transformer Engine, Shah et al. 2024, ~50 %; V100 has no fused kernel,
// so models there use materialised attention and this column is unused).
// FlashAttention-2 on H100 reaches 335-350 TFLOP/s forward+backward (Dao 2023, Fig. 7;
// Shah et al. 2024, Fig. 5), 35 % of peak; on A100 it is the fused kernel of record.
constexpr ClassRates kClasses[] = {
    {"v100", 0.70, 0.40, 0.40},  // not calibrated: assumed like A100
    {"a100", 0.733, 0.60, 0.60},  // tests/validation/fit.py, 4 A100 calibration rows
    {"h100", 0.612, 0.50, 0.35},  // tests/validation/fit.py, 3 H100 calibration rows
    {"h200", 0.612, 0.50, 0.35},  // the H100 chip
    {"b200", 0.60, 0.45, 0.30},  // not calibrated: assumed like H100
    {"mi300x", 0.50, 0.35, 0.35},  // not calibrated
    {"tpuv4", 0.60, 0.50, 0.50},
    {"tpu-v4", 0.60, 0.50, 0.50},
};
constexpr ClassRates kDefault = {"", 0.62, 0.50, 0.35};  // unknown devices: assumed like H100

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

ComputeRates computeRates(const DeviceSpec &device, double gemmEfficiencyOverride, bool fusedAttention,
                          double elementwisePasses)
{
    const ClassRates &c = classOf(device);
    ComputeRates r;
    r.peak = device.peakFlops;
    r.gemmEfficiency = gemmEfficiencyOverride > 0 ? gemmEfficiencyOverride : classGemmEfficiency(device);
    // An overridden GEMM efficiency scales attention alike (the same tensor cores).
    r.attentionEfficiency = (fusedAttention ? c.attention : c.fa2) * r.gemmEfficiency / c.gemm;
    r.elementwisePasses = elementwisePasses;
    r.hbm = device.memoryBandwidth * kHbmEfficiency;
    return r;
}

double gemmSeconds(double m, double n, double k, const ComputeRates &r)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return 0.0;
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
                      bool elementwise)
{
    LayerTimes t;
    const double tp = std::max(w.tp, 1), cp = std::max(w.cp, 1), ep = std::max(w.ep, 1);
    const double tokens = b * seq / cp;  // this device's tokens (context parallelism splits them)
    for (const GemmShape &g : l.gemms) {
        double m = g.perSequence ? seq / cp : tokens * g.rowsPerToken;
        double n = g.n, k = g.k, count = g.count * (g.perSequence ? b : 1);
        switch (g.split) {
        case GemmShape::Split::Column: n /= tp; break;
        case GemmShape::Split::Row: k /= tp; break;
        case GemmShape::Split::Heads: count /= tp; break;
        case GemmShape::Split::None: break;
        }
        if (g.expert) {
            // ep ranks each hold count/ep experts and receive ep x their share of tokens.
            m = m * ep / g.count;
            count = g.count / ep;
        }
        const double fwd = count * gemmSeconds(m, n, k, r);
        const double bwd = count * (gemmSeconds(m, k, n, r) + gemmSeconds(k, n, m, r));
        t.forward += fwd;
        t.backward += bwd;
        if (g.perSequence)
            t.attention += fwd;  // materialised attention: what selective recompute reruns
        else
            t.gemm += fwd;
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
        const double bytes = r.elementwisePasses *
                             (l.elementwiseSpBytes / (w.sp ? tp : 1) + l.elementwiseTpBytes / tp) * b / cp;
        t.forward += bytes / r.hbm;
        t.backward += 2 * bytes / r.hbm;
    }
    return t;
}

} // namespace nest

#pragma once
// How long one device takes for a layer's operators, from their shapes (docs/cost-model.md,
// "Compute from shapes"):
//  - a GEMM of m x n x k runs at the device class's large-GEMM efficiency times a shape
//    factor f(m) f(n) f(k), f(x) = x / (x + 128): the fixed per-tile and per-k-step costs of
//    128-wide kernel tiles (NVIDIA, "Matrix Multiplication Background User's Guide": tile
//    and wave quantisation), and never faster than moving its operands through HBM;
//  - fused (flash) attention runs at its own efficiency, its backward executes 2.5x the
//    forward FLOPs (five matmuls for two: Dao 2023, Alg. 2);
//  - memory-bound kernels (norms, residuals, activations, rotary, softmax, dropout, the
//    loss) move their bytes at the achieved HBM bandwidth; backward moves twice the bytes.
// Layers without shapes (profiles) are timed from their FLOPs at the large-GEMM efficiency.
#include "DeviceSpec.h"
#include "ModelProfile.h"
#include "StageConfig.h"

namespace nest {

// What the cost model believes one device does; presets per device class in
// ComputeModel.cpp with their sources.
struct ComputeRates {
    double peak = 0;                 // dense BF16 FLOP/s (data sheet)
    double gemmEfficiency = 0;       // fraction of peak a large GEMM reaches (calibrated)
    double attentionEfficiency = 0;  // fraction of peak of the attention kernel in use
    double elementwisePasses = 1;    // HBM passes per element-wise op (fused = 1)
    double hbm = 0;                  // achieved HBM bytes/s of streaming kernels
    // The linear layers' GEMMs in a low precision (Precision.h; 0 / bf16 = as above): the
    // format's dense peak, the fraction of it a large GEMM reaches, the bytes of one operand
    // element and the HBM bytes of quantising one BF16 element into it.
    double linearPeak = 0;
    double linearEfficiency = 0;
    double linearOperandBytes = 2;
    double linearQuantizeBytes = 0;
    double rate() const { return peak * gemmEfficiency; }
    // Eager PyTorch kernels (FrameworkProfile::elementwisePasses above 1): the RMSNorm and the
    // rotary embedding run as chains of ops (layerTimes).
    bool eager() const { return elementwisePasses > 1; }
    bool lowPrecision() const { return linearPeak > 0; }
    bool operator==(const ComputeRates &) const = default;
};

// The rates of `device`: its class's defaults; `gemmEfficiencyOverride` > 0 (the CLI's
// --efficiency, a workspace's cost options) or DeviceSpec::matmulEfficiency > 0 replaces
// the large-GEMM efficiency.
// `fusedAttention`: Transformer Engine's kernels (else FlashAttention-2); passes: see
// FrameworkProfile::elementwisePasses.
// `precision`: the linear layers' format (bf16 = the BF16 rates alone); the device must
// support it (DeviceSpec::supports), else the BF16 rates are used.
ComputeRates computeRates(const DeviceSpec &device, double gemmEfficiencyOverride = 0,
                          bool fusedAttention = true, double elementwisePasses = 1, const Precision &precision = {});

// The large-GEMM efficiency of the device's class (DeviceSpec::matmulEfficiency when set).
double classGemmEfficiency(const DeviceSpec &device);

// Seconds for one m x n x k GEMM (2mnk FLOPs, BF16 operands); `linear`: a linear layer's
// GEMM, which runs in the rates' low precision when they have one, its first operand (m x k)
// quantised first unless `quantise` is off (the weight-gradient GEMM reads the copies the
// forward and data-gradient casts wrote; docs/cost-model.md, "Precision").
double gemmSeconds(double m, double n, double k, const ComputeRates &r, bool linear = false, bool quantise = true);
// The large-GEMM efficiency of `format` on the device's class relative to its BF16 one
// (1 for bf16).
double lowPrecisionEfficiencyRatio(const DeviceSpec &device, NumberFormat format);

// One device's share of a layer for a micro-batch of `b` samples of `seq` tokens, under the
// stage choice `w` (its tp, cp, ep and sp).
struct LayerTimes {
    double forward = 0, backward = 0;  // seconds
    double attention = 0;              // the forward's core attention (selective recompute)
    double gemm = 0;                   // forward GEMM seconds (what TP overlap hides behind)
    double sharedExpert = 0;           // the forward's shared-expert GEMMs (part of gemm)
    double mlaUp = 0;                  // the forward's MLA up projections (part of gemm)
    // The forward's block norms and routed experts' activation (part of the element-wise
    // time): what recomputing the layernorm / moe_act modules reruns (RecomputeModules.h).
    double norms = 0, expertActivation = 0;
};
// Needs layer.gemms or attentionFlops (hasShapes()); otherwise use the FLOP form.
// `expertLoad`: the routed tokens of the most loaded expert rank over the mean
// (CostOptions::moeLoad()); the experts' GEMMs are split by the choice's expertTp().
LayerTimes layerTimes(const LayerProfile &layer, int seq, double b, const StageConfig &w,
                      const ComputeRates &r, bool elementwise, double expertLoad = 1.0);
bool hasShapes(const LayerProfile &layer);

} // namespace nest

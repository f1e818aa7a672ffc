#include "FrameworkProfile.h"

#include "TextCase.h"

#include <algorithm>
#include <array>

namespace nest {

namespace {

// Sources and the contention factor's derivation: docs/cost-model.md ("Framework profiles").
constexpr double kContention = 0.1;  // NCCL kernels hold ~8-16 of 108-132 SMs while they run

constexpr size_t kFrameworkCount = 6;

constexpr std::array<FrameworkProfile, kFrameworkCount> makeProfiles()
{
    FrameworkProfile mcore;  // Megatron-Core / NeMo 2024+ defaults for large runs
    mcore.id = Framework::MegatronCore;
    mcore.name = "megatron-core";
    mcore.tpOverlap = true;
    mcore.tpBackwardOverlap = true;
    mcore.fusedAttention = true;
    mcore.gradReduceOverlap = true;
    mcore.paramGatherOverlap = true;
    mcore.p2pOverlap = true;
    mcore.cpOverlap = true;
    mcore.gradBytesPerParam = 2;  // NeMo distributed optimizer: bf16 grad sync, fp32 master shards
    mcore.fragmentation = 0.05;
    mcore.contention = kContention;
    // Transformer Engine 2.x recipes (DelayedScaling, Float8CurrentScaling,
    // Float8BlockScaling, MXFP8BlockScaling, NVFP4BlockScaling) behind Megatron-Core's
    // --fp8-format / --fp8-recipe and NeMo's fp8 / fp8_recipe. Megatron-Bridge's presets
    // (training/mixed_precision.py) set fp8_param_gather for delayed, current (tensorwise)
    // and MXFP8 scaling, and not for blockwise (bf16_with_fp8_subchannel_scaling_mixed) or
    // NVFP4 (bf16_with_nvfp4_mixed): those gather BF16.
    mcore.precisions = kAllPrecisionBits;
    mcore.lowPrecisionGather = precisionBit({NumberFormat::Fp8, Fp8Recipe::Delayed}) |
                               precisionBit({NumberFormat::Fp8, Fp8Recipe::Current}) |
                               precisionBit({NumberFormat::Mxfp8, Fp8Recipe::Delayed});
    mcore.sharedExpertOverlap = true;
    mcore.epA2aOverlap = true;
    mcore.moeProbsInActivation = true;

    FrameworkProfile mlm;  // Megatron-LM 2021-2022 (the SC'21 and MLSys'23 papers)
    mlm.id = Framework::MegatronLM;
    mlm.name = "megatron-lm";
    mlm.tpBackwardOverlap = true;
    mlm.gradBytesPerParam = 4;
    mlm.fragmentation = 0.05;
    mlm.contention = kContention;

    // DeepSpeed with bf16 (Megatron-DeepSpeed: BLOOM, MT-NLG): ZeRO's overlap_comm without a
    // pipeline; with one, its PipelineEngine (TrainSchedule, blocking p2p, gradient reduction
    // after the flush) and, at ZeRO 0/1, the BF16_Optimizer's fp32 gradients.
    FrameworkProfile ds;
    ds.id = Framework::DeepSpeed;
    ds.name = "deepspeed";
    ds.gradReduceOverlap = true;
    ds.pipelineGradReduceOverlap = false;
    ds.blockingP2p = true;
    ds.trainScheduleSteps = true;
    ds.bf16Optimizer = true;
    ds.gradBytesPerParam = 2;  // ZeRO-2/3 (DeepSpeedZeroOptimizer): bf16 gradient partitions
    ds.reduceBucketElements = 5e8;  // zero_optimization.reduce_bucket_size default (zero/config.py)
    ds.fragmentation = 0.05;
    ds.contention = kContention;

    // PyTorch FSDP as MosaicML llm-foundry / Composer run it: prefetching all-gathers, bf16
    // compute, FlashAttention-2 and its fused cross-entropy, eager norms and activations.
    FrameworkProfile fsdp;
    fsdp.id = Framework::Fsdp;
    fsdp.name = "fsdp";
    fsdp.gradReduceOverlap = true;
    fsdp.paramGatherOverlap = true;
    fsdp.gradBytesPerParam = 2;
    fsdp.elementwisePasses = 2;

    fsdp.fragmentation = 0.05;
    fsdp.contention = kContention;
    // llm-foundry's precision: amp_fp8 (Transformer Engine, delayed scaling).
    fsdp.precisions = precisionBit({}) | precisionBit({NumberFormat::Fp8, Fp8Recipe::Delayed});

    // torchtitan (FSDP2, eager PyTorch loss, no compile; its selective activation
    // checkpointing is the op-level policy of its llama configs). Copied after fsdp's
    // fragmentation and contention are set: before, it silently had neither.
    FrameworkProfile titan = fsdp;
    titan.id = Framework::Torchtitan;
    titan.name = "torchtitan";
    titan.fusedLoss = false;
    titan.selectivePolicy = FrameworkProfile::SelectivePolicy::AlternateMatmuls;
    // torchao float8 training (tensorwise / rowwise dynamic scaling: current scaling) with
    // FSDP2 float8 all-gathers ([float8] enable_fsdp_float8_all_gather), and torchao MXFP8 on
    // Blackwell ([mx] converter), whose configuration has no low-precision all-gather: FSDP2
    // gathers its BF16 weights.
    titan.precisions = precisionBit({}) | precisionBit({NumberFormat::Fp8, Fp8Recipe::Current}) |
                       precisionBit({NumberFormat::Mxfp8, Fp8Recipe::Delayed});
    titan.lowPrecisionGather = precisionBit({NumberFormat::Fp8, Fp8Recipe::Current});
    FrameworkProfile serial;  // every defaults-off switch: nothing overlapped
    serial.id = Framework::Serial;
    serial.name = "serial";
    serial.gradBytesPerParam = 4;
    serial.zeroPrefetch = false;
    serial.precisions = kAllPrecisionBits;
    return {mcore, mlm, ds, fsdp, titan, serial};
}

// Made at compile time, in the enum's order: the cost model asks for a profile for every
// stage it costs, and a table needs no guard on each call.
constexpr std::array<FrameworkProfile, kFrameworkCount> kProfiles = makeProfiles();

// A framework as its command-line defaults run it, without the flags its tuned recipes set
// (docs/cost-model.md, "Stacks", with the sources of each default).
constexpr FrameworkProfile asDefaults(FrameworkProfile p)
{
    switch (p.id) {
    case Framework::MegatronCore:
        // Megatron-LM's arguments.py: --tp-comm-overlap, --overlap-grad-reduce,
        // --overlap-param-gather, --moe-shared-expert-overlap and --fp8-param-gather are all
        // off unless given, and with --bf16 it sets accumulate_allreduce_grads_in_fp32, so the
        // gradients accumulate and are reduced in FP32 (4 B per parameter). NeMo's and
        // Megatron-Bridge's recipes set each of them.
        p.tpOverlap = false;
        p.gradReduceOverlap = false;
        p.paramGatherOverlap = false;
        p.sharedExpertOverlap = false;
        p.lowPrecisionGather = 0;
        p.gradBytesPerParam = 4;
        break;
    case Framework::DeepSpeed:
        // zero_optimization.overlap_comm is false by default at ZeRO 1 and 2 (DeepSpeed's
        // zero/config.py; ZeRO-3 turns it on itself, which zeroPrefetch models).
        p.gradReduceOverlap = false;
        break;
    case Framework::MegatronLM:  // the 2021-22 code overlaps only what it always did
    case Framework::Fsdp:        // FSDP prefetches and overlaps its reduce-scatters by default
    case Framework::Torchtitan:
    case Framework::Serial:
        break;
    }
    return p;
}

constexpr std::array<FrameworkProfile, kFrameworkCount> makeDefaults()
{
    std::array<FrameworkProfile, kFrameworkCount> out = kProfiles;
    for (FrameworkProfile &p : out)
        p = asDefaults(p);
    return out;
}

constexpr std::array<FrameworkProfile, kFrameworkCount> kDefaultProfiles = makeDefaults();

// `f`'s profile in a table made in the enum's order: the index finds it without a scan (the
// scan stays for safety).
const FrameworkProfile &profileIn(const std::array<FrameworkProfile, kFrameworkCount> &table, Framework f)
{
    if (const size_t i = static_cast<size_t>(f); i < table.size() && table[i].id == f)
        return table[i];
    for (const FrameworkProfile &p : table)
        if (p.id == f)
            return p;
    return table.front();
}

} // namespace

const std::vector<FrameworkProfile> &frameworkProfiles()
{
    static const std::vector<FrameworkProfile> profiles(kProfiles.begin(), kProfiles.end());  // immutable after init
    return profiles;
}

const FrameworkProfile &frameworkProfile(Framework f)
{
    return profileIn(kProfiles, f);
}

const FrameworkProfile &frameworkProfile(Framework f, Stack stack)
{
    return profileIn(stack == Stack::Tuned ? kProfiles : kDefaultProfiles, f);
}

std::string frameworkNameList()
{
    std::string known;
    for (const FrameworkProfile &p : frameworkProfiles())
        known += std::string(known.empty() ? "" : ", ") + p.name;
    return known;
}

const char *toString(Framework f)
{
    return frameworkProfile(f).name;
}

std::optional<Framework> frameworkFromString(const std::string &name)
{
    const std::string t = asciiLower(name);
    if (t == "megatron" || t == "nemo" || t == "mcore")
        return Framework::MegatronCore;
    for (const FrameworkProfile &p : frameworkProfiles())
        if (t == p.name)
            return p.id;
    return std::nullopt;
}

const char *toString(Stack s)
{
    return s == Stack::Tuned ? "tuned" : "defaults";
}

std::optional<Stack> stackFromString(const std::string &name)
{
    const std::string t = asciiLower(name);
    if (t == "tuned")
        return Stack::Tuned;
    if (t == "defaults" || t == "default")
        return Stack::Defaults;
    return std::nullopt;
}

} // namespace nest

#pragma once
// A model as an ordered chain of layers with everything the cost model needs per layer.
// All per-layer quantities are for ONE SAMPLE (one sequence of seqLength tokens), for the
// whole unsharded layer; the cost model scales by micro-batch size and divides by the
// parallel widths using the split fields below. Bytes assume BF16 weights/activations.
//
// Sources of the formulas (see docs/cost-model.md):
//  - FLOPs: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
//    Clusters Using Megatron-LM" (SC'21), appendix; 2 FLOPs per multiply-add;
//    backward = 2 x forward.
//  - Activations: Korthikanti et al., "Reducing Activation Recomputation in Large
//    Transformer Models" (MLSys'23), Eq. 1-2 and Table 2: per layer
//    s*b*h*(34 + 5*a*s/h) bytes without parallelism; with tensor parallelism t the
//    10*s*b*h part (layer-norm inputs, dropout masks, residuals) stays replicated unless
//    sequence parallelism is on; with full recomputation a transformer block keeps only
//    its input (2*s*b*h); embedding and head keep their own stash (docs/formats.md (Model inputs)).
#include "ExpertRouting.h"
#include "JsonUtil.h"
#include "LayerStack.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nest {

// Transformer: a block with a dense MLP (or none); Moe: a block with a MoE MLP; Mamba: a
// block whose mixer is Mamba-2 with a dense MLP or none; Mtp: a multi-token-prediction module
// (its projection, one block and the shared head's logits) after the last block.
enum class LayerKind { Embedding, Transformer, Moe, Head, Mamba, Mtp };
// "embedding", "transformer", "moe", "head", "mamba", "mtp"
const char *toString(LayerKind k);
std::optional<LayerKind> layerKindFromString(std::string_view s);
// A decoder block, what a framework's layer count counts: transformer, MoE and Mamba blocks.
bool isDecoderBlock(LayerKind k);
// What full recomputation reruns from the input it keeps: decoder blocks and MTP modules.
bool isRecomputedBlock(LayerKind k);
struct LayerProfile;
// A layer with routed experts, which expert parallelism divides: MoE blocks and MTP modules
// whose block is MoE (DeepSeek-V3).
bool hasExperts(const LayerProfile &l);

// One matrix multiply of a layer's forward pass for one sample: m = tokens * rowsPerToken,
// n output columns, k the inner dimension, all unsharded. The backward runs the two
// gradient GEMMs of the same operands: (m, k, n) for the input, (k, n, m) for the weight.
struct GemmShape {
    enum class Split { Column, Row, Heads, None };
    double rowsPerToken = 1;  // MoE: the top-k routed copies of each token
    double n = 0, k = 0;
    double count = 1;         // identical GEMMs: experts (ep divides) or attention heads
    Split split = Split::Column;  // what tensor parallelism divides: n, k or the heads
    bool expert = false;      // one GEMM per expert: tokens spread over the experts
    bool perSequence = false; // attention scores: m = the sequence, not all tokens
    bool router = false;      // the MoE router's logits (kept in BF16/FP32 at any precision)
    bool shared = false;      // a shared expert's GEMM (what a dispatch can overlap with)
    bool mlaUp = false;       // multi-latent attention's Q or KV up projection (mla_up_proj)
    bool operator==(const GemmShape &) const = default;
};
// Whether a GEMM is a linear layer's, the ones a low precision runs (Precision.h): not the
// attention scores, not the router.
inline bool isLinearGemm(const GemmShape &g) { return !g.perSequence && !g.router; }

// A layer measured at one tensor width (the NEST artifact's nodes[t], docs/formats.md): the
// numbers one device of a width-`tp` group holds and spends, per sample.
struct WidthMeasurement {
    int tp = 1;
    double fwdTime = 0, bwdTime = 0;  // seconds per sample on each device of the group
    double params = 0;                // parameters held per device
    double stashBytes = 0;            // activations per device (artifact: activationSize)
    double tpAllReduceBytes = 0;      // forward all-reduce buffer bytes per device (0: none)
    bool operator==(const WidthMeasurement &) const = default;
};

struct LayerProfile {
    std::string name;
    LayerKind kind = LayerKind::Transformer;
    // The model's name for the layer's kind (its layer pattern's "dense", "moe", "sliding",
    // "mamba", ...; "mtp" for MTP modules), for views that split by kind; empty for
    // embedding, head and profiles that do not say.
    std::string kindLabel;

    // Compute per sample (FLOPs, unsharded). Backward includes weight and input gradients.
    double fwdFlops = 0;
    double bwdFlops = 0;
    // Measured times (seconds per sample at tp = 1) from a profile; < 0 when absent. When
    // present they win over the FLOP-derived estimate.
    double measuredFwdTime = -1;
    double measuredBwdTime = -1;

    // Executed work by operator (ModelBuilder fills these; a profile without them is timed
    // from fwdFlops at the device's large-GEMM efficiency). Per sample, unsharded.
    std::vector<GemmShape> gemms;   // forward matrix multiplies (attention scores included
                                    // when not fused)
    double attentionFlops = 0;      // fused (flash) attention forward FLOPs, causal mask applied
    double elementwiseSpBytes = 0;  // forward HBM bytes of memory-bound kernels that
                                    // tensor parallelism splits only with SP (norms, residuals)
    double elementwiseTpBytes = 0;  // ... that it always splits (activation functions, rotary,
                                    // softmax, the loss)
    // Of those, what the RMSNorms move (in elementwiseSpBytes) and what the rotary embedding
    // moves (in elementwiseTpBytes), fused: read 2 B, write 2 B per element. An eager stack
    // runs both as chains of PyTorch ops instead (ComputeModel.h, kEagerRmsNorm, kEagerRotary).
    double rmsNormSpBytes = 0;
    double rotaryTpBytes = 0;
    // Of those, the forward bytes of the block's norms (in elementwiseSpBytes) and of the
    // routed experts' activation function (in elementwiseTpBytes): what selective
    // recomputation of the `layernorm` and `moe_act` modules reruns (RecomputeModules.h).
    double normSpBytes = 0;
    double expertActivationTpBytes = 0;
    double attentionStashBytes = 0; // part of stashTpBytes that selective recomputation drops
    // Part of stashTpBytes: the Q, K, V and output the core attention keeps for its backward
    // (BF16), which FP8 dot-product attention keeps in FP8 (CostOptions::fp8Attention).
    double attentionQkvoStashBytes = 0;
    // torchtitan's op-level selective checkpointing (FrameworkProfile::SelectivePolicy::
    // AlternateMatmuls): what a block keeps, per sample, when it saves the outputs of every
    // other matmul and of the fused attention and reruns the rest; 0 when the builder did not
    // derive it (profiles, MoE, materialised attention): such layers fall back to Korthikanti's
    // selective recomputation. `opRecomputeGemmShare`: the share of the forward's linear GEMM
    // time the backward reruns.
    double opSelectiveStashSpBytes = 0;
    double opSelectiveStashTpBytes = 0;
    double opRecomputeGemmShare = 0;

    // Parameters (element counts).
    double params = 0;          // all parameters of the layer
    double tpParams = 0;        // the part tensor parallelism divides (rest is replicated)
    double expertParams = 0;    // the part inside experts (expert parallelism divides it)
    double activeParams = 0;    // parameters touched per token (MoE: top-k experts only)
    // Weights shared with an earlier layer (tied input/output embeddings). Not part of
    // params (totals count them once, at their owner); a stage holding this layer but not
    // the owner keeps a copy of this size (split like tpParams) and syncs its gradient.
    double tiedParams = 0;

    // Activations per sample (bytes).
    double outputBytes = 0;        // boundary tensor sent to the next stage (s*h*2)
    double stashTpBytes = 0;       // saved for backward, divided by tp (and by cp)
    double stashSpBytes = 0;       // saved for backward, divided by tp only with SP (and by cp)
    double recomputeStashBytes = 0;// kept with full recomputation (layer input); SP and cp divide it
    // The parts of stashTpBytes / stashSpBytes (BF16 bytes) that are linear layers' inputs:
    // the norm outputs, MLA's down-projection outputs, the MLP's down-projection input, the
    // MoE experts' inputs, Mamba's out_proj input. A low precision keeps them quantized for
    // the weight-gradient GEMM instead (Transformer Engine's Linear saves its quantized
    // input, not the BF16 one), and the attention output (attentionOutputStashBytes, part of
    // stashTpBytes) a second time, quantized by the output projection beside the BF16 copy
    // the fused attention keeps for its own backward.
    double linearInputStashTpBytes = 0, linearInputStashSpBytes = 0;
    double attentionOutputStashBytes = 0;
    // Parts of those a module recomputation discards (RecomputeModules.h): the norm outputs
    // the linear layers read (of linearInputStashSpBytes; `layernorm`), the routed experts'
    // activation outputs, their down projections' input (of linearInputStashTpBytes;
    // `moe_act`), and multi-latent attention's Q, K and V (of attentionQkvoStashBytes;
    // `mla_up_proj`).
    double normOutputStashSpBytes = 0;
    double expertActivationStashTpBytes = 0;
    double mlaUpStashTpBytes = 0;
    // The part of stashSpBytes that is the routed experts' outputs, kept for the
    // probability-weighted combine. A framework that weights the tokens inside the experts'
    // activation instead (FrameworkProfile::moeProbsInActivation) does not keep them.
    double moeCombineStashBytes = 0;
    double workingBytes = 0;       // transient peak while computing the layer (not stashed)

    // Communication volumes per sample per forward pass (bytes of the buffer operated on).
    // Backward moves the same volumes again.
    double tpAllReduceBytes = 0;  // sum of buffers all-reduced across tp (SP: RS+AG of same)
    double epAllToAllBytes = 0;   // dispatch + combine bytes leaving one device's tokens
    // MoE: the routed copies (top-k per token) that the experts' tensor group all-gathers in
    // the dispatch and reduce-scatters in the combine; the MoE sublayer is then not part of
    // tpAllReduceBytes. 0: a layer whose MLP is in tpAllReduceBytes (dense, profiles).
    double etpGatherBytes = 0;
    double cpExchangeBytes = 0;   // K/V bytes passed around the context-parallel ring

    // Measured per tensor width (ascending tp); when present, a stage at width tp takes its
    // times, parameters, stash and TP all-reduce bytes from the entry for tp, and a width
    // without an entry is not allowed (ModelProfile::tensorWidths).
    std::vector<WidthMeasurement> byWidth;
    const WidthMeasurement *measuredAt(int tp) const;

    bool operator==(const LayerProfile &) const = default;
};

struct ModelProfile {
    std::string name;
    std::string family;        // "gpt", "llama", "mixtral", "bert", "profile"
    int seqLength = 2048;
    int hidden = 0;
    int heads = 0;
    int kvHeads = 0;
    int numExperts = 1;
    int topK = 1;
    // Group-limited routing (ModelConfig::routerGroups): 0 = unlimited.
    int routerGroups = 0, routerGroupTopK = 0;
    int vocab = 0;
    int globalBatch = 4096;    // default for plans, overridable
    double bytesPerParam = 2;  // BF16 weights
    std::vector<LayerProfile> layers;
    std::string source;               // where it came from: preset citation or file
    // The device the measured times were taken on (a device name as in DeviceSpec::name:
    // a nest-profile's "measured_on", "tpuv4-like" for the NEST artifact); empty = not said
    // (MeasuredDevice.h reads it against a cluster).
    std::string measuredOn;
    std::vector<std::string> notes;   // non-fatal remarks from an import (approximations)
    // The tensor widths a plan may use (ascending); empty = any. A NEST artifact input lists
    // the widths it measured (its nodes[t]).
    std::vector<int> tensorWidths;
    // Optimizer state in bytes per parameter stated by the file (artifact optimizerAlgorithm:
    // SGD 0, Adam 12 = fp32 copy + two moments); < 0: the cost options' optimizerBytesPerParam.
    double optimizerBytesPerParam = -1;
    // Devices one tensor-parallel shard of a stage stands for (artifact ep_degree x
    // cp_degree: its per-layer numbers are per device of that group). Plans made on the
    // file's own cluster count each group as one planning device (docs/formats.md).
    int groupDevices = 1;
    // The micro-batch size and recomputation the file was measured with (artifact), 0 / unset
    // when the file does not say.
    int measuredMicroBatch = 0;
    std::optional<bool> measuredRecompute;
    bool allowsTensorWidth(int tp) const;

    int layerCount() const { return static_cast<int>(layers.size()); }
    ExpertRouting routing() const { return {numExperts, topK, routerGroups, routerGroupTopK}; }
    double totalParams() const;
    double activeParams() const;
    // Model FLOPs per token for one training step (forward + backward), summed over layers.
    double flopsPerToken() const;
    // Weight memory of the whole model in bytes (totalParams * bytesPerParam).
    double weightBytes() const;

    bool operator==(const ModelProfile &) const = default;
};

// The name a view shows for a layer's kind: its kindLabel, else its LayerKind's name.
std::string layerLabel(const LayerProfile &l);
// The model's blocks and MTP modules as runs of labels ("3*dense, 58*moe, mtp" once
// formatted): the strip the window and inspect show. Embedding and head are left out.
std::vector<LayerRun> layerRuns(const ModelProfile &m);
// Blocks and MTP modules per label, in first-seen order: {"dense", 3}, {"moe", 58}, ...
std::vector<LayerRun> layerKindCounts(const ModelProfile &m);

} // namespace nest
